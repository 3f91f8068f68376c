//! A thread blocked in `std::sync::mpsc::Receiver::recv`, woken on cancel (here its deadline,
//! `cancel_after`): the job's `on_cancel` callback sends the receiver a `Stop` message through a
//! clone of the sender, so the blocked `recv` returns at once with it. The first producer here
//! ends with `Done`; the second sends three items and goes quiet, like a subscription that may
//! never fire again, and the stopped job hands back what the consumer had summed.
//!
//! Run with: cargo run --example unblock_channel_recv

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelToken, NativeError, Tethered};

/// How long the consumer may wait.
const DEADLINE: Duration = Duration::from_millis(200);

/// What the consumer receives: work, the producers' end, or the stop from its token.
#[derive(Debug)]
pub(crate) enum Event {
    Item(u64),
    Done,
    Stop(CancelReason),
}

/// How the consumer ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Consumed {
    /// The producers said they were done.
    Done { total: u64 },
    /// The token was cancelled.
    Stopped { total: u64, reason: CancelReason },
}

/// Sums the items from `events` until the producers are done or `token` is cancelled; `wake` is
/// a sender of the same channel, for the cancel callback.
///
/// The callback's sender keeps the channel open while the job runs, so `recv` cannot report
/// that every producer has gone: the producers end with `Event::Done` instead. A channel whose
/// end is the senders' drop needs a `recv_timeout` loop that checks the token (no extra
/// message, but it stops only at its next timeout).
pub(crate) fn consume(
    events: &Receiver<Event>,
    wake: Sender<Event>,
    token: &CancelToken,
) -> Consumed {
    // Unblock: the message waits in the channel if `recv` is not blocked yet, so a cancel that
    // comes early is not lost.
    let _wake_on_cancel = token.on_cancel(move |reason| {
        let _ = wake.send(Event::Stop(reason)); // Err: the receiver is gone already
    });
    let mut total = 0;
    loop {
        match events.recv() {
            Ok(Event::Item(value)) => total += value,
            Ok(Event::Stop(reason)) => return Consumed::Stopped { total, reason },
            // `RecvError` cannot come first: the callback sends `Stop` before it drops its sender.
            Ok(Event::Done) | Err(mpsc::RecvError) => return Consumed::Done { total },
        }
    }
}

/// Starts a producer that sends `values`, then `Event::Done` after `then_wait`, and a consumer
/// job with [`DEADLINE`] (`cancel_after`); returns what the job gave once the consumer returned,
/// and the time from the deadline to that return, if the deadline stopped it.
async fn consume_with_deadline(
    values: Vec<u64>,
    then_wait: Duration,
) -> std::io::Result<(Result<Consumed, NativeError<Consumed>>, Option<Duration>)> {
    let (events, receiver) = mpsc::channel();
    let wake = events.clone();
    std::thread::spawn(move || {
        for value in values {
            let _ = events.send(Event::Item(value));
        }
        std::thread::sleep(then_wait);
        let _ = events.send(Event::Done);
    });
    let job = tethered_tokio::spawn_native(move |token| consume(&receiver, wake, &token));
    job.cancel_after(DEADLINE)?;
    let token = job.token().clone();
    let consumed = job.await;
    // The job's token carries its deadline; it is cancelled only if the deadline stopped it.
    let cancel_to_return = token
        .deadline()
        .filter(|_| token.is_cancelled())
        .map(|deadline| deadline.elapsed());
    Ok((consumed, cancel_to_return))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("a consumer blocked in recv, deadline {DEADLINE:?}");
    let (consumed, _) = consume_with_deadline(vec![1, 2, 3], Duration::ZERO).await?;
    let consumed = consumed?;
    assert_eq!(consumed, Consumed::Done { total: 6 });
    println!("a producer that ends: {consumed:?}");

    // This producer goes quiet for a minute after three items; the process ends long before.
    let started = Instant::now();
    let (consumed, cancel_to_return) =
        consume_with_deadline(vec![1, 2, 3], Duration::from_secs(60)).await?;
    // The deadline stopped the job, and the consumer returned what it had summed.
    let consumed = match consumed {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(consumed),
            ..
        }) => *consumed,
        other => return Err(format!("the producer never ends: {other:?}").into()),
    };
    let cancel_to_return = cancel_to_return.ok_or("the deadline passed")?;
    assert_eq!(
        consumed,
        Consumed::Stopped {
            total: 6,
            reason: CancelReason::Timeout
        }
    );
    println!(
        "a producer that goes quiet: recv returned after {:.1?}: {consumed:?}",
        started.elapsed()
    );
    println!("cancel to return: {cancel_to_return:.2?}");
    Ok(())
}
