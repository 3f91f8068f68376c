//! The compile errors the `Tethered` trait gives for the common mistakes: they name the
//! mistake and its fix, not a private module path or rustc's advice to remove the `.await`.
//!
//! Each case compiles a few lines with the same `rustc` that built this crate, against the
//! crate's own rlib, and reads the error.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The newest `libtethered-*.rlib` beside this test binary.
fn tethered_rlib(deps: &Path) -> PathBuf {
    std::fs::read_dir(deps)
        .expect("the deps directory of this test binary")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("libtethered-") && name.ends_with(".rlib"))
        })
        .max_by_key(|path| path.metadata().and_then(|meta| meta.modified()).ok())
        .expect("cargo built the tethered rlib before its tests")
}

/// Compiles `source` as a library that uses `tethered`; returns rustc's error output.
fn compile_error(source: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "tethered-diagnostics-{}-{case}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("case.rs");
    std::fs::write(&file, source).unwrap();
    let output = Command::new("rustc")
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .arg("--out-dir")
        .arg(&dir)
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("--extern")
        .arg(format!("tethered={}", tethered_rlib(deps).display()))
        .arg(&file)
        .output()
        .expect("rustc runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!output.status.success(), "the case compiled: {source}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_spawn_result_passed_as_a_handle_asks_for_the_question_mark() {
    let error = compile_error(
        r#"
        fn timeout<J: tethered::Tethered>(_after: std::time::Duration, _job: J) {}
        pub fn handler(scope: &tethered::NativeScope) {
            timeout(std::time::Duration::from_secs(1), scope.spawn(|_token| 42));
        }
        "#,
    );
    assert!(error.contains("is not a tethered handle"), "{error}");
    assert!(error.contains("add `?`"), "{error}");
}

#[test]
fn a_borrowed_handle_is_a_handle() {
    // The same call with `&mut job` compiles: only a case that fails has an error to read.
    let error = compile_error(
        r#"
        fn timeout<J: tethered::Tethered>(_after: std::time::Duration, _job: J) {}
        pub fn handler(scope: &tethered::NativeScope) -> Result<(), tethered::SpawnError> {
            let mut job = scope.spawn(|_token| 42)?;
            timeout(std::time::Duration::from_secs(1), &mut job);
            let _still_mine: tethered::AbortableNative<i32> = job;
            compile_error!("the lines above compiled");
        }
        "#,
    );
    assert!(error.contains("the lines above compiled"), "{error}");
    assert!(!error.contains("is not a tethered handle"), "{error}");
}
