//! Runs the JavaScript suite (`tests/js`, with Node's own test runner) against the example
//! addon (`examples/node/addon`), so that `cargo test` runs it with everything else.
//!
//! It builds the addon with the cargo running this test (into `target/napi`, a target directory
//! of its own, so that the workspace's feature set is not rebuilt back and forth), copies the
//! library to `tethered_napi_example.node`, and runs `node --test` on the suite with
//! `TETHERED_NAPI_ADDON` naming it. It fails with the runner's output when a test fails, or
//! when no test ran. Needs `node` (20 or later) on `PATH`; nothing is downloaded.

#![cfg(unix)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Far above what each step takes (measured on a 2-core machine: the addon's first build about
/// 40 s, the suite about 30 s).
const BUILD_LIMIT: Duration = Duration::from_secs(20 * 60);
const SUITE_LIMIT: Duration = Duration::from_secs(10 * 60);

#[test]
fn javascript_suite_passes() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir
        .ancestors()
        .nth(2)
        .expect("the crate sits in crates/ of the workspace");
    let addon = build_addon(root);

    let started = Instant::now();
    let mut node = Command::new("node");
    node.args(["--test", "--test-reporter=spec"])
        .arg(crate_dir.join("tests").join("js"))
        .current_dir(root)
        .env("TETHERED_NAPI_ADDON", &addon)
        // The suite's closures panic on purpose: one line each on stderr, not a backtrace.
        .env("RUST_BACKTRACE", "0");
    let (status, out) = run(&mut node, SUITE_LIMIT);
    eprintln!(
        "node --test: {} in {:.1} s",
        describe(status),
        started.elapsed().as_secs_f64()
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "the JavaScript suite failed ({}):\n{out}",
        describe(status)
    );
    let passed = count(&out, "pass");
    assert!(
        passed.is_some_and(|n| n > 0),
        "the JavaScript suite ran no test:\n{out}"
    );
    assert_eq!(count(&out, "fail"), Some(0), "{out}");
    eprintln!(
        "{}",
        out.lines()
            .filter(|l| l.starts_with('ℹ'))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `ℹ pass 12` in the runner's summary.
fn count(out: &str, what: &str) -> Option<u32> {
    out.lines().rev().find_map(|line| {
        line.strip_prefix("ℹ ")?
            .strip_prefix(what)?
            .trim()
            .parse()
            .ok()
    })
}

/// Builds the example addon and gives the path of its `.node` file.
fn build_addon(root: &Path) -> PathBuf {
    let target = root.join("target").join("napi");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--release", "-p", "tethered-napi-example"])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &target)
        // The outer `cargo test` may run with flags meant for it (RUSTFLAGS for a cfg, say);
        // the addon is built as a user would.
        .env_remove("RUSTFLAGS");
    let (status, out) = run(&mut build, BUILD_LIMIT);
    assert!(
        status.is_some_and(|s| s.success()),
        "building the example addon failed ({}):\n{out}",
        describe(status)
    );
    let library = target.join("release").join("libtethered_napi_example.so");
    let addon = target.join("tethered_napi_example.node");
    std::fs::copy(&library, &addon)
        .unwrap_or_else(|err| panic!("copying {} failed: {err}", library.display()));
    addon
}

/// Runs `command` in a process group of its own, killed (with everything it started) after
/// `limit`; its status (`None` when killed) and its output, stdout then stderr.
fn run(command: &mut Command, limit: Duration) -> (Option<ExitStatus>, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command
        .spawn()
        .unwrap_or_else(|err| panic!("could not start {command:?}: {err}"));
    let readers = [
        read_all(
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ),
        read_all(
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ),
    ];
    let status = wait(&mut child, limit);
    let out = readers
        .into_iter()
        .map(|reader| reader.join().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    (status, out)
}

fn read_all(stream: Option<Box<dyn Read + Send>>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stream) = stream {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            // The whole group: node's test runner starts a process per file.
            let _ = Command::new("kill")
                .args(["-KILL", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(status) => status.to_string(),
        None => "killed after its time limit".to_owned(),
    }
}
