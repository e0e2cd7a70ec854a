//! The cluster roles' log: Ballista's `log` records, one line each, to standard error or to a
//! file, at the level `--log-level` (or `PBG_LOG`) asks for.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use crate::error::{PbgError, Result};

struct Logger {
    level: log::LevelFilter,
    out: Mutex<Box<dyn Write + Send>>,
}

impl log::Log for Logger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= self.level
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        if let Ok(mut out) = self.out.lock() {
            let _ = writeln!(
                out,
                "{now:.3} {} {} {}",
                record.level(),
                record.target(),
                record.args()
            );
        }
    }

    fn flush(&self) {
        if let Ok(mut out) = self.out.lock() {
            let _ = out.flush();
        }
    }
}

/// Sends the log at `level` (error, warn, info, debug, trace, off) to `file` (appended) or, when
/// none is given, to standard error. Once per process; later calls change nothing.
pub fn init(level: &str, file: Option<&Path>) -> Result<()> {
    let level: log::LevelFilter = level.parse().map_err(|_| {
        PbgError::argument(
            "log-level",
            format!("unknown log level `{level}` (error, warn, info, debug, trace, off)"),
        )
    })?;
    let out: Box<dyn Write + Send> = match file {
        Some(path) => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| PbgError::io(path, e))?,
        ),
        None => Box::new(std::io::stderr()),
    };
    let logger = Logger {
        level,
        out: Mutex::new(out),
    };
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(level);
    }
    Ok(())
}
