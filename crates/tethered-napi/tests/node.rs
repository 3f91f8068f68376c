//! Runs the JavaScript suite (`tests/js`, with Node's own test runner) against the example
//! addon (`examples/node/addon`), so that `cargo test` runs it with everything else.
//!
//! It builds the addon with the cargo running this test (into `target/napi`, a target directory
//! of its own, so that the workspace's feature set is not rebuilt back and forth), copies the
//! library to `tethered_napi_example.node`, and runs `node --test` on the suite with
//! `TETHERED_NAPI_ADDON` naming it. It fails with the runner's output when a test fails, or
//! when no test ran. Needs `node` (20 or later) on `PATH`; nothing is downloaded.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tethered_test_support::run_bounded;

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
    let done = run_bounded(&mut node, SUITE_LIMIT);
    eprintln!(
        "node --test: {} in {:.1} s",
        done.describe(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        done.success(),
        "the JavaScript suite failed ({}):\n{}",
        done.describe(),
        done.out
    );
    let passed = count(&done.out, "pass");
    assert!(
        passed.is_some_and(|n| n > 0),
        "the JavaScript suite ran no test:\n{}",
        done.out
    );
    assert_eq!(count(&done.out, "fail"), Some(0), "{}", done.out);
    eprintln!(
        "{}",
        done.out
            .lines()
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
    let done = run_bounded(&mut build, BUILD_LIMIT);
    assert!(
        done.success(),
        "building the example addon failed ({}):\n{}",
        done.describe(),
        done.out
    );
    let library = target.join("release").join("libtethered_napi_example.so");
    let addon = target.join("tethered_napi_example.node");
    std::fs::copy(&library, &addon)
        .unwrap_or_else(|err| panic!("copying {} failed: {err}", library.display()));
    addon
}
