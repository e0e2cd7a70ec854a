//! Progress on stderr: bars and stage spinners, drawn only when stderr is a terminal and
//! `--quiet` was not given.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: no progress at all.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

fn shown() -> bool {
    !QUIET.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

/// A spinner naming the stage a command is in, with the time spent; cleared when dropped.
pub struct Stages(ProgressBar);

impl Stages {
    /// A spinner for `command` (hidden unless progress is shown).
    pub fn new(command: &str) -> Self {
        if !shown() {
            return Stages(ProgressBar::hidden());
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template(&format!("{{spinner}} {command}: {{msg}} {{elapsed}}"))
        {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        Stages(bar)
    }

    /// Shows that `name` started.
    pub fn stage(&self, name: &str) {
        self.0.set_message(name.to_string());
    }
}

impl Drop for Stages {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar counting `unit`s up to `len`.
pub fn progress_bar(len: u64, unit: &str) -> ProgressBar {
    if !shown() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template(&format!("{{bar:40}} {{pos}}/{{len}} {unit} {{elapsed}}"))
    {
        bar.set_style(style);
    }
    bar
}
