//! Runs the Ray suite (`tests/ray`): `ray.cancel` and `ray.kill` stop the native work of Ray
//! tasks and actor calls on a local cluster of three nodes, so that `cargo test` runs it with
//! everything else. `python/ray-setup.sh` makes `target/ray-venv` (Ray pinned, with the
//! example module's wheel) on one interpreter, python3.
//!
//! Where Ray cannot be installed (no wheel for this Python or platform), the setup says why
//! and this test reports the suite as skipped, with that reason, on stderr. Otherwise it fails
//! with pytest's output when a test fails or none ran, and prints each path's time from the
//! cancel to the native loop's stop.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tethered_test_support::run_bounded;

/// Far above what each step takes (measured on a 2-core machine: a fresh setup about 40 s,
/// the suite about 20 s).
const SETUP_LIMIT: Duration = Duration::from_secs(30 * 60);
const SUITE_LIMIT: Duration = Duration::from_secs(10 * 60);

#[test]
fn ray_suite_passes_on_a_local_cluster() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir
        .ancestors()
        .nth(2)
        .expect("the crate sits in crates/ of the workspace");

    let setup = crate_dir.join("python").join("ray-setup.sh");
    let done = run_bounded(Command::new("bash").arg(&setup), SETUP_LIMIT);
    assert!(
        done.success(),
        "{} failed ({}):\n{}",
        setup.display(),
        done.describe(),
        done.out
    );
    if let Ok(reason) = std::fs::read_to_string(root.join("target/ray-venv.unavailable")) {
        let _ = writeln!(
            std::io::stderr(),
            "Ray suite SKIPPED: Ray cannot be installed here: {}",
            reason.trim()
        );
        return;
    }

    let started = Instant::now();
    let mut pytest = Command::new(root.join("target/ray-venv/bin/python"));
    pytest
        .args([
            "-m",
            "pytest",
            "-q",
            "-s",
            "-rfEs",
            "--color=no",
            "-p",
            "no:cacheprovider",
            "-o",
            "timeout=300",
        ])
        .arg(crate_dir.join("tests").join("ray"))
        .current_dir(root)
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RUST_BACKTRACE", "0");
    let done = run_bounded(&mut pytest, SUITE_LIMIT);
    let times: Vec<&str> = done
        .out
        .lines()
        .filter(|line| line.contains(": cancel to native stop"))
        .collect();
    let _ = writeln!(
        std::io::stderr(),
        "Ray suite: {} in {:.0?}\n{}",
        done.describe(),
        started.elapsed(),
        times.join("\n")
    );
    assert!(
        done.success(),
        "the Ray suite failed ({}; exit code 5 means no test ran):\n{}",
        done.describe(),
        done.out
    );
    assert!(
        !done.out.contains(" skipped"),
        "a Ray test was skipped:\n{}",
        done.out
    );
}
