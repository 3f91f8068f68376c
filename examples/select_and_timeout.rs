//! Native jobs in `tokio::select!` and behind timeouts. The job that loses a race is dropped, and
//! its closure stops with `CancelReason::Dropped`; the job's own `timeout` (`Tethered::timeout`)
//! stops it with `CancelReason::Timeout`, so native code can tell a deadline from a caller that
//! went away, and answers at the deadline (`Abandoned` while the closure still runs); given
//! `&mut job` it keeps the handle, which then gives what the closure returned. A plain
//! `tokio::time::timeout` drops the job, which stops it too.
//!
//! Run with: cargo run --example select_and_timeout

use std::time::Duration;

use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
use tokio::sync::mpsc;

/// What a search's closure reports as it returns, from its own thread.
#[derive(Debug)]
struct Finished {
    name: &'static str,
    rounds: u64,
    reason: Option<CancelReason>,
}

/// A search that needs `rounds` rounds of 1 ms, checking its token between rounds.
fn search(
    name: &'static str,
    rounds: u64,
    report: mpsc::UnboundedSender<Finished>,
) -> AbortableNative<u64> {
    tethered_tokio::spawn_native(move |token| {
        let mut done = 0;
        while done < rounds && !token.is_cancelled() {
            std::thread::sleep(Duration::from_millis(1)); // one round of blocking work
            done += 1;
        }
        let _ = report.send(Finished {
            name,
            rounds: done,
            reason: token.reason(),
        });
        done
    })
}

async fn finished(reports: &mut mpsc::UnboundedReceiver<Finished>) -> Finished {
    tokio::time::timeout(Duration::from_secs(5), reports.recv())
        .await
        .expect("a cancelled closure returns within 5 s")
        .expect("the sender lives in the closure")
}

#[tokio::main]
async fn main() {
    let (report, mut reports) = mpsc::unbounded_channel();

    // 1. A race: two strategies for the same answer; the first one wins, the other is dropped.
    println!("1. select!: a quick search (20 rounds) races a thorough one (10,000 rounds)");
    let quick = search("quick", 20, report.clone());
    let thorough = search("thorough", 10_000, report.clone());
    let winner = tokio::select! {
        rounds = quick => format!("quick, after {} rounds", rounds.expect("it ran")),
        rounds = thorough => format!("thorough, after {} rounds", rounds.expect("it ran")),
    };
    println!("   winner: {winner}");
    for _ in 0..2 {
        let done = finished(&mut reports).await;
        let how = done
            .reason
            .map_or("ran to the end".to_owned(), |r| format!("stopped: {r}"));
        println!(
            "   {} returned after {} rounds: {how}",
            done.name, done.rounds
        );
    }

    // 2. A deadline with the job's own timeout: the closure hears `Timeout`, and the caller
    //    gets its answer at the deadline, without waiting for the closure. Given `&mut job`, the
    //    timeout leaves the handle to the caller, who can still wait for what the closure returns.
    println!("2. job.timeout(50 ms) around a 10,000-round search");
    let mut job = search("deadline", 10_000, report.clone());
    let result = (&mut job).timeout(Duration::from_millis(50)).await;
    let stopped = match result {
        // Answered at the deadline while the closure still ran: the kept handle waits for it.
        Err(NativeError::Abandoned {
            reason: CancelReason::Timeout,
            ..
        }) => {
            println!("   the caller got its answer at the deadline (Abandoned: still running)");
            job.await
        }
        // (It saw the cancel and returned before the timeout looked again: its stop, already.)
        answered => {
            println!("   the caller got its answer at the deadline (Cancelled: already stopped)");
            answered
        }
    };
    let returned = match stopped {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(rounds),
            ..
        }) => *rounds,
        other => panic!("the closure returns once it hears the timeout: {other:?}"),
    };
    let done = finished(&mut reports).await;
    assert_eq!(done.reason, Some(CancelReason::Timeout));
    assert_eq!(done.rounds, returned);
    println!(
        "   awaiting the kept handle: the closure stopped after {returned} rounds: {}",
        CancelReason::Timeout
    );

    // 3. A plain tokio::time::timeout works as well: it drops the job, so the closure hears
    //    `Dropped` rather than `Timeout`.
    println!("3. tokio::time::timeout(50 ms) around a 10,000-round search");
    let job = search("dropped", 10_000, report);
    let result = tokio::time::timeout(Duration::from_millis(50), job).await;
    assert!(result.is_err());
    let done = finished(&mut reports).await;
    assert_eq!(done.reason, Some(CancelReason::Dropped));
    println!(
        "   the caller got Elapsed; the closure stopped after {} rounds: {}",
        done.rounds,
        CancelReason::Dropped
    );
}
