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

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

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
    let (status, out) = run(Command::new("bash").arg(&setup), SETUP_LIMIT);
    assert!(
        status.is_some_and(|s| s.success()),
        "{} failed ({}):\n{out}",
        setup.display(),
        describe(status)
    );
    // What setup.sh left out, and why, goes to the log.
    for line in out.lines().filter(|line| line.contains("skipped")) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }

    let list = std::fs::read_to_string(root.join("target/py-matrix/interpreters"))
        .expect("setup.sh lists the interpreters");
    let interpreters: Vec<(&str, &str)> = list
        .lines()
        .filter_map(|line| line.split_once(' '))
        .collect();
    assert!(!interpreters.is_empty(), "no CPython 3.10+ found:\n{out}");

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
            let (status, out) = run(&mut pytest, SUITE_LIMIT);
            let summary = out
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
            if !status.is_some_and(|s| s.success()) {
                failures.push(format!(
                    "Python {version} with {event_loop} failed ({}; exit code 5 means no test \
                     ran):\n{out}",
                    describe(status)
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

/// Runs `command` to the end or until `limit`, killing it then; its exit status (`None` if it
/// was killed) and everything it printed, stdout then stderr.
fn run(command: &mut Command, limit: Duration) -> (Option<ExitStatus>, String) {
    let mut child = command
        .process_group(0) // so that a kill reaches pip, maturin or pytest's children too
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("could not start {command:?}: {err}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child, limit);
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    let mut out = stdout;
    if !stderr.is_empty() {
        out.push_str("\n--- stderr ---\n");
        out.push_str(&stderr);
    }
    if status.is_none() {
        out.push_str(&format!("\n--- killed after {limit:?} ---\n"));
    }
    (status, out)
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(50)),
            _ => {
                let group = format!("-{}", child.id());
                let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(status) => status.to_string(),
        None => "killed: it ran too long".to_owned(),
    }
}
