//! Runs the Python suite (`tests/python`) against the example extension module
//! (`examples/python/ext`), in the virtualenv that `python/setup.sh` makes under
//! `target/py-venv`, so that `cargo test` runs it with everything else.
//!
//! The suite fails here with pytest's output when pytest fails, including when it ran no test
//! (pytest's exit code 5). Needs `python3` (3.11 or later, with `venv` and `pip`) and the
//! package registry for the first setup.

#![cfg(unix)]

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Far above what each step takes (measured: a fresh setup about 70 s, the suite about 20 s).
const SETUP_LIMIT: Duration = Duration::from_secs(20 * 60);
const SUITE_LIMIT: Duration = Duration::from_secs(15 * 60);

#[test]
fn python_suite_passes() {
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

    let python: PathBuf = root.join("target/py-venv/bin/python");
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-rfEs", "--color=no"])
        .arg(crate_dir.join("tests").join("python"))
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RUST_BACKTRACE", "0");
    let (status, out) = run(&mut pytest, SUITE_LIMIT);
    let summary = out
        .lines()
        .rev()
        .find(|line| {
            line.contains(" passed") || line.contains(" failed") || line.contains("no tests ran")
        })
        .unwrap_or("(no summary line)");
    // Straight to the process's stderr: the test harness captures `println!` of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "\npytest (tethered-pyo3): {}",
        summary.trim()
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "pytest failed ({}; exit code 5 means no test ran):\n{out}",
        describe(status)
    );
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
