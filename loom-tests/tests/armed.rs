//! `Armed`: an unblock action racing its disarm. The action runs at most once, never after
//! `disarm` returned, and the resource comes back exactly once.

use loom_tests::{
    model,
    sync::{Arc, AtomicBool, Ordering},
    thread,
};
use tethered::{CancelReason, CancelSource};

#[test]
fn arm_cancel_vs_disarm() {
    model("armed_cancel_vs_disarm", || {
        let source = CancelSource::new();
        let disarmed = Arc::new(AtomicBool::new(false));
        let late = Arc::new(AtomicBool::new(false));
        let armed = {
            let disarmed = disarmed.clone();
            let late = late.clone();
            source.token().arm(0u32, move |runs, _| {
                *runs += 1;
                if disarmed.load(Ordering::SeqCst) {
                    late.store(true, Ordering::SeqCst);
                }
            })
        };
        let canceller = thread::spawn(move || source.cancel(CancelReason::Requested));
        let fired = armed.fired();
        let runs = armed.disarm();
        disarmed.store(true, Ordering::SeqCst);
        assert!(canceller.join().unwrap());
        assert!(runs <= 1, "the action ran {runs} times");
        if fired {
            assert_eq!(runs, 1, "an action seen started had finished by the disarm");
        }
        assert!(
            !late.load(Ordering::SeqCst),
            "the action ran after disarm returned"
        );
    });
}
