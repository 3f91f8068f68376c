//! The negative control: a deliberately broken wait that loom must catch, proving that the
//! suite can fail.
//!
//! The waiter checks the flag, then waits on the condition variable without checking again
//! under the lock: a cancel between the check and the wait is lost. tethered's waits check
//! under the same lock the cancel takes (see `wait.rs`), which is exactly what this lacks.

use loom_tests::{
    sync::{Arc, AtomicBool, Condvar, Mutex, Ordering},
    thread,
};

fn broken_wait_model() {
    let flag = Arc::new(AtomicBool::new(false));
    let signal = Arc::new((Mutex::new(()), Condvar::new()));
    let canceller = {
        let flag = flag.clone();
        let signal = signal.clone();
        thread::spawn(move || {
            flag.store(true, Ordering::SeqCst);
            signal.1.notify_all();
        })
    };
    if !flag.load(Ordering::SeqCst) {
        let guard = signal.0.lock().unwrap();
        // BUG (deliberate): no second check of `flag` here.
        drop(signal.1.wait(guard).unwrap());
    }
    canceller.join().unwrap();
}

/// loom finds the interleaving where the wake-up is lost and reports a deadlock. loom aborts
/// the process after reporting one, so the broken model runs in a child process (this test
/// binary, filtered to the ignored test below) and the test asserts that it failed, saying why.
#[cfg(tethered_loom)]
#[test]
fn loom_catches_a_wait_without_the_second_check() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "broken_wait_model_under_loom",
            "--exact",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .output()
        .expect("the test binary runs itself");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "loom did not catch the broken model"
    );
    assert!(
        stderr.contains("deadlock"),
        "the broken model failed, but not with loom's deadlock report: {stderr}"
    );
}

/// The broken model itself, run only by the test above.
#[cfg(tethered_loom)]
#[test]
#[ignore = "the negative control's broken model: loom must fail it (run by loom_catches_a_wait_without_the_second_check)"]
fn broken_wait_model_under_loom() {
    loom_tests::model("negative_control_lost_wakeup", broken_wait_model);
}

/// Proof that the suite really runs under loom: a two-thread race is explored in more than one
/// interleaving. Only compiled with the cfg; the loom command in `.ci/run` requires this test.
#[cfg(tethered_loom)]
#[test]
fn models_run_under_loom() {
    let iterations = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = iterations.clone();
    loom::model(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let flag = Arc::new(AtomicBool::new(false));
        let other = flag.clone();
        let setter = thread::spawn(move || other.store(true, Ordering::SeqCst));
        let _ = flag.load(Ordering::SeqCst);
        setter.join().unwrap();
    });
    assert!(iterations.load(std::sync::atomic::Ordering::Relaxed) > 1);
}

/// Without the cfg the broken model is not run at all: on plain threads it could hang.
#[cfg(not(tethered_loom))]
#[test]
fn negative_control_only_runs_under_loom() {
    let _ = broken_wait_model as fn();
}
