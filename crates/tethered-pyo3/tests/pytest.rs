//! Runs the Python suite (`tests/python`) against the example extension module
//! (`examples/python/ext`) on every CPython 3.10+ the machine has, each with asyncio, the eager
//! task factory (3.12+) and uvloop, so that `cargo test` runs it with everything else.
//! `python/setup.sh` builds the module once as an abi3 wheel and makes a virtualenv per
//! interpreter under `target/py-matrix`; interpreters it leaves out are said with the reason.
//!
//! It fails with pytest's output when any cell fails, including one that ran no test (pytest's
//! exit code 5), and prints the matrix. Needs `python3` (with `venv` and `pip`) and the package
//! registry for the first setup.

#![cfg(unix)]

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tethered_test_support::run_bounded;

/// Far above what each step takes (measured: a fresh setup of four interpreters about 3 min,
/// one run of the suite about 20 s).
const SETUP_LIMIT: Duration = Duration::from_secs(30 * 60);
const SUITE_LIMIT: Duration = Duration::from_secs(15 * 60);

#[test]
fn python_suite_passes_on_every_interpreter_and_loop() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir
        .ancestors()
        .nth(2)
        .expect("the crate sits in crates/ of the workspace");

    let setup = crate_dir.join("python").join("setup.sh");
    let done = run_bounded(Command::new("bash").arg(&setup), SETUP_LIMIT);
    assert!(
        done.success(),
        "{} failed ({}):\n{}",
        setup.display(),
        done.describe(),
        done.out
    );
    // What setup.sh left out, and why, goes to the log.
    for line in done.out.lines().filter(|line| line.contains("skipped")) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    let list = std::fs::read_to_string(root.join("target/py-matrix/interpreters"))
        .expect("setup.sh lists the interpreters");
    let interpreters: Vec<(&str, &str)> = list
        .lines()
        .filter_map(|line| line.split_once(' '))
        .collect();
    assert!(
        !interpreters.is_empty(),
        "no CPython 3.10+ found:\n{}",
        done.out
    );

    let mut matrix = Vec::new();
    let mut failures = Vec::new();
    for (version, python) in interpreters {
        let minor: u32 = version
            .split('.')
            .nth(1)
            .and_then(|minor| minor.parse().ok())
            .unwrap_or(0);
        let mut loops = vec!["asyncio", "uvloop"];
        if minor >= 12 {
            loops.push("eager");
        }
        for event_loop in loops {
            let started = Instant::now();
            let mut pytest = Command::new(python);
            pytest
                .args([
                    "-m",
                    "pytest",
                    "-q",
                    "-rfEs",
                    "--color=no",
                    "-p",
                    "no:cacheprovider",
                ])
                .arg(crate_dir.join("tests").join("python"))
                .current_dir(root)
                .env("TETHERED_TEST_LOOP", event_loop)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .env("RUST_BACKTRACE", "0");
            let done = run_bounded(&mut pytest, SUITE_LIMIT);
            let summary = done
                .out
                .lines()
                .rev()
                .find(|line| {
                    line.contains(" passed")
                        || line.contains(" failed")
                        || line.contains("no tests ran")
                })
                .unwrap_or("(no summary line)")
                .trim()
                .to_owned();
            let cell = format!(
                "{version:<8} {event_loop:<8} {summary} ({:.0?})",
                started.elapsed()
            );
            // Straight to the process's stderr: the harness captures `println!` of passing
            // tests, and the matrix belongs in the log.
            let _ = writeln!(std::io::stderr(), "pytest (tethered-pyo3): {cell}");
            matrix.push(cell);
            if !done.success() {
                failures.push(format!(
                    "Python {version} with {event_loop} failed ({}; exit code 5 means no test \
                     ran):\n{}",
                    done.describe(),
                    done.out
                ));
            }
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "\ntethered-pyo3 matrix (interpreter, loop, pytest):\n{}",
        matrix.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
