//! The suites of the Python and Node MCP example servers (`examples/mcp-python`,
//! `examples/mcp-node`), run as their READMEs say, so that `cargo test` runs them with
//! everything else: each drives its server with that SDK's own client through every way a call
//! can end. They run one at a time (each starts 200 busy native jobs at one point).
//!
//! Needs `python3` 3.10+ (with `venv` and `pip`), `node` and `npm` 20+, and the package
//! registries for the first set-up; later runs install nothing.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tethered_test_support::{Finished, run_bounded};

/// Far above what each step takes on a 2-core machine (measured: a fresh Python set-up about
/// 2 min, a fresh addon build about 1 min; each suite about 25 s).
const SETUP_LIMIT: Duration = Duration::from_secs(30 * 60);
const SUITE_LIMIT: Duration = Duration::from_secs(10 * 60);

/// One suite at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[track_caller]
fn must_pass(what: &str, finished: &Finished) {
    assert!(
        finished.success(),
        "{what} failed ({}):\n{}",
        finished.describe(),
        finished.out
    );
}

/// Makes `examples/mcp-python/.venv` (idempotent); the example's folder.
fn python_setup() -> std::path::PathBuf {
    let here = root().join("examples/mcp-python");
    let setup = run_bounded(Command::new("bash").arg(here.join("setup.sh")), SETUP_LIMIT);
    must_pass("examples/mcp-python/setup.sh", &setup);
    here
}

/// Installs `examples/mcp-node`'s packages (only when its lock changed) and builds the addon;
/// the example's folder.
fn node_setup() -> std::path::PathBuf {
    let here = root().join("examples/mcp-node");
    // `npm ci` only when package-lock.json changed since the last install.
    let install = run_bounded(
        Command::new("sh")
            .args([
                "-c",
                "cmp -s package-lock.json node_modules/.tethered-lock 2>/dev/null || \
                 { npm ci --no-audit --no-fund --loglevel=error && \
                   cp package-lock.json node_modules/.tethered-lock; }",
            ])
            .current_dir(&here),
        SETUP_LIMIT,
    );
    must_pass("npm ci in examples/mcp-node", &install);
    let build = run_bounded(
        Command::new("npm")
            .args(["run", "build"])
            .current_dir(&here),
        SETUP_LIMIT,
    );
    must_pass("npm run build in examples/mcp-node", &build);
    here
}

#[test]
fn python_mcp_server_suite_passes() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let here = python_setup();
    let suite = run_bounded(
        Command::new(here.join(".venv/bin/python"))
            .args(["-m", "pytest", "-q", "-rfEs", "--color=no"])
            .arg(&here)
            .current_dir(root())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("RUST_BACKTRACE", "0"),
        SUITE_LIMIT,
    );
    must_pass("pytest examples/mcp-python", &suite);
    let summary = suite
        .out
        .lines()
        .rev()
        .find(|line| line.contains(" passed"));
    assert!(
        summary.is_some_and(|line| !line.contains("failed")),
        "pytest printed no summary of passed tests:\n{}",
        suite.out
    );
    eprintln!(
        "examples/mcp-python: {}",
        summary.unwrap_or_default().trim()
    );
    for line in suite
        .out
        .lines()
        .filter(|line| line.contains("cancel-to-return"))
    {
        eprintln!("{line}");
    }
}

#[test]
fn node_mcp_server_suite_passes() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let here = node_setup();
    let suite = run_bounded(
        Command::new("npm")
            .arg("test")
            .current_dir(&here)
            .env("RUST_BACKTRACE", "0"),
        SUITE_LIMIT,
    );
    must_pass("npm test in examples/mcp-node", &suite);
    let passed = suite
        .out
        .lines()
        .find_map(|line| line.trim().strip_prefix("ℹ pass "))
        .and_then(|count| count.trim().parse::<u32>().ok());
    assert!(
        passed.is_some_and(|count| count > 0),
        "node --test ran no test:\n{}",
        suite.out
    );
    eprintln!("examples/mcp-node: {} tests passed", passed.unwrap_or(0));
    for line in suite
        .out
        .lines()
        .filter(|line| line.contains("cancel-to-return"))
    {
        eprintln!("{line}");
    }
}

/// The compiled Rust example server (`cargo test` builds the examples first).
fn rust_server() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/<profile>/deps");
    let path = profile.join("examples").join("mcp_server");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --examples` (or all of `cargo test`) first",
        path.display()
    );
    path
}

/// Each SDK's client against the servers of the other languages, over stdio and streamable
/// HTTP: the Python SDK's (`examples/mcp-python/other_servers.py`) against the Rust and Node
/// servers, the TypeScript SDK's (`examples/mcp-node/test/rust-server.mjs`) against the Rust
/// one. Every way a call ends stops its job whatever the client.
#[test]
fn other_sdks_clients_stop_the_jobs_of_every_server() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let python = python_setup();
    let node = node_setup();
    let rust_server = rust_server();
    let node_server = node.join("server.mjs");
    let pytest = run_bounded(
        Command::new(python.join(".venv/bin/python"))
            .args(["-m", "pytest", "-q", "-rfEs", "--color=no"])
            .arg(python.join("other_servers.py"))
            .current_dir(&python)
            .env("TETHERED_MCP_RUST_SERVER", &rust_server)
            .env("TETHERED_MCP_NODE_SERVER", &node_server)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("RUST_BACKTRACE", "0"),
        SUITE_LIMIT,
    );
    must_pass(
        "the Python SDK's client against the Rust and Node servers",
        &pytest,
    );
    let summary = pytest
        .out
        .lines()
        .rev()
        .find(|line| line.contains(" passed"));
    assert!(
        summary.is_some_and(|line| !line.contains("failed") && !line.contains("skipped")),
        "the Python SDK's client: a test failed or was skipped:\n{}",
        pytest.out
    );
    let typescript = run_bounded(
        Command::new("node")
            .args(["--test", "--test-reporter=spec", "test/rust-server.mjs"])
            .current_dir(&node)
            .env("TETHERED_MCP_RUST_SERVER", &rust_server)
            .env("RUST_BACKTRACE", "0"),
        SUITE_LIMIT,
    );
    must_pass(
        "the TypeScript SDK's client against the Rust server",
        &typescript,
    );
    let count = |what: &str| {
        typescript
            .out
            .lines()
            .find_map(|line| line.trim().strip_prefix(what))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    assert!(
        count("ℹ pass ").is_some_and(|n| n > 0) && count("ℹ skipped ") == Some(0),
        "the TypeScript SDK's client: no test passed, or one was skipped:\n{}",
        typescript.out
    );
    eprintln!(
        "other SDKs' clients: Python {}; TypeScript {} passed",
        summary.unwrap_or_default().trim(),
        count("ℹ pass ").unwrap_or(0)
    );
}
