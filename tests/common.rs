//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

use pbg::{Dataset, Evaluator, Profile};

/// A path inside the repository.
pub fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// An evaluator for a profile shipped in `datasets/`.
pub fn evaluator(profile: &str) -> Evaluator {
    evaluator_at(&repo(profile))
}

/// The evaluator of the profile at `path`.
pub fn evaluator_at(path: &std::path::Path) -> Evaluator {
    let p = Profile::from_toml_file(path).expect("profile loads");
    Evaluator::new(Arc::new(Dataset::load(&p).expect("dataset loads"))).expect("evaluator")
}

/// Runs the `pbg` binary.
pub fn pbg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pbg"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("pbg runs")
}

/// Runs `pbg`, asserts success and parses its standard output as JSON.
pub fn pbg_json(args: &[&str]) -> serde_json::Value {
    let out = pbg(args);
    assert!(
        out.status.success(),
        "pbg {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// Makes a named pipe at `path` (with the system's `mkfifo`).
pub fn mkfifo(path: &std::path::Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Runs `pbg` with `args` from the repository; fails the test (killing it) when it has not ended
/// within 60 s (a read that waits on a named pipe never ends).
pub fn pbg_within_a_minute(args: &[&str]) -> Output {
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_pbg"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pbg runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pbg {args:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
