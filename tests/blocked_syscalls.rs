//! Threads blocked in a system call, where no token check reaches them: a socket read, a channel
//! receive, a wait for a child process. Each first without tethered (the caller gives up and
//! the thread stays blocked), then as the `unblock_*` examples do it (the `on_cancel` callback
//! unblocks the call, and the job returns within moments of the cancel).
//!
//! The examples' own code is compiled in here, so these tests pin what users copy. A naive
//! thread is unblocked by the test before it ends, through the peer, sender or child stdin the
//! test keeps.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelSource, Cancelled, Tethered};

#[allow(dead_code)]
#[path = "../examples/unblock_socket_read.rs"]
mod unblock_socket_read;

#[allow(dead_code)]
#[path = "../examples/unblock_channel_recv.rs"]
mod unblock_channel_recv;

#[cfg(target_os = "linux")]
#[allow(dead_code)]
#[path = "../examples/unblock_child_wait.rs"]
mod unblock_child_wait;

use unblock_channel_recv::{Consumed, Event};

mod stopping;
use stopping::{GIVE_UP_AFTER, STOPS_WITHIN, wait_for};

/// Gives up on `naive` after [`GIVE_UP_AFTER`], and asserts that its closure is still blocked
/// 300 ms later (it sets `returned` when it returns).
async fn give_up_and_see_it_still_blocked<T>(
    naive: tokio::task::JoinHandle<T>,
    returned: &AtomicBool,
) {
    assert!(tokio::time::timeout(GIVE_UP_AFTER, naive).await.is_err());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!returned.load(Ordering::SeqCst), "nothing unblocked it");
}

/// A connected pair on loopback: (ours, the peer's end).
fn connected_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let ours = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (peer, _) = listener.accept().unwrap();
    (ours, peer)
}

/// Whether `err` is the cancel, for `reason`.
fn is_cancel(err: &std::io::Error, reason: CancelReason) -> bool {
    err.get_ref()
        .and_then(|inner| inner.downcast_ref::<Cancelled>())
        .is_some_and(|cancelled| cancelled.reason() == reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_blocking_read_stays_blocked_after_its_caller_gave_up() {
    let (mut ours, mut peer) = connected_pair();
    let returned = Arc::new(AtomicBool::new(false));
    let read = tokio::task::spawn_blocking({
        let returned = returned.clone();
        move || {
            let read = ours.read(&mut [0; 16]);
            returned.store(true, Ordering::SeqCst);
            read
        }
    });
    give_up_and_see_it_still_blocked(read, &returned).await;

    peer.write_all(b"x").unwrap(); // the test's own way to end it
    assert!(wait_for(&returned));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_shuts_the_socket_down_and_ends_the_blocked_read() {
    let (ours, _peer) = connected_pair();
    let job = tethered_tokio::spawn_native(move |token| {
        unblock_socket_read::request(ours, b"PING\n", &token)
    });
    tokio::time::sleep(GIVE_UP_AFTER).await; // the read is blocked by now, or will be
    let cancelled = Instant::now();
    let reply = job.cancel_and_join_with(CancelReason::Timeout).await;
    assert!(
        cancelled.elapsed() < STOPS_WITHIN,
        "{:?}",
        cancelled.elapsed()
    );
    // Cancelled while it ran: the stop, with what the closure returned.
    let stopped = reply.expect_err("cancelled while it ran");
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
    let err = stopped
        .into_returned()
        .expect("the closure ran, and returned")
        .expect_err("the peer never answers");
    assert!(is_cancel(&err, CancelReason::Timeout), "{err:?}");
}

#[test]
fn a_cancel_before_the_read_starts_ends_it_at_once() {
    let (ours, _peer) = connected_pair();
    let source = CancelSource::new();
    source.cancel(CancelReason::Dropped);
    let err = unblock_socket_read::request(ours, b"PING\n", &source.token()).unwrap_err();
    assert!(is_cancel(&err, CancelReason::Dropped), "{err:?}");
}

#[test]
fn a_peer_that_answers_gets_its_reply_read() {
    let (ours, mut peer) = connected_pair();
    let answer = std::thread::spawn(move || {
        let mut request = [0; 5];
        peer.read_exact(&mut request).unwrap();
        peer.write_all(b"PONG\n").unwrap();
        request
    });
    let source = CancelSource::new();
    let reply = unblock_socket_read::request(ours, b"PING\n", &source.token()).unwrap();
    assert_eq!(reply, b"PONG\n");
    assert_eq!(&answer.join().unwrap(), b"PING\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_blocking_recv_stays_blocked_after_its_caller_gave_up() {
    let (sender, receiver) = mpsc::channel::<u64>();
    let returned = Arc::new(AtomicBool::new(false));
    let recv = tokio::task::spawn_blocking({
        let returned = returned.clone();
        move || {
            let received = receiver.recv();
            returned.store(true, Ordering::SeqCst);
            received
        }
    });
    give_up_and_see_it_still_blocked(recv, &returned).await;

    drop(sender); // the test's own way to end it
    assert!(wait_for(&returned));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sends_the_stop_and_ends_the_blocked_recv() {
    let (producer, receiver) = mpsc::channel();
    let wake = producer.clone();
    producer.send(Event::Item(40)).unwrap();
    producer.send(Event::Item(2)).unwrap();
    let job = tethered_tokio::spawn_native(move |token| {
        unblock_channel_recv::consume(&receiver, wake, &token)
    });
    tokio::time::sleep(GIVE_UP_AFTER).await;
    let cancelled = Instant::now();
    let consumed = job.cancel_and_join_with(CancelReason::Timeout).await;
    assert!(
        cancelled.elapsed() < STOPS_WITHIN,
        "{:?}",
        cancelled.elapsed()
    );
    // Cancelled while it ran: the stop, with what the consumer had summed.
    let stopped = consumed.expect_err("cancelled while it ran");
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
    assert_eq!(
        stopped.into_returned(),
        Some(Consumed::Stopped {
            total: 42,
            reason: CancelReason::Timeout
        })
    );
    drop(producer); // held to the end: the stop did not need the producers gone
}

#[test]
fn a_cancel_before_the_recv_starts_ends_it_at_once() {
    let (producer, receiver) = mpsc::channel();
    let source = CancelSource::new();
    source.cancel(CancelReason::Shutdown);
    let consumed = unblock_channel_recv::consume(&receiver, producer.clone(), &source.token());
    assert_eq!(
        consumed,
        Consumed::Stopped {
            total: 0,
            reason: CancelReason::Shutdown
        }
    );
}

#[test]
fn producers_that_finish_end_the_consumer_with_their_total() {
    let (producer, receiver) = mpsc::channel();
    for event in [Event::Item(1), Event::Item(2), Event::Done] {
        producer.send(event).unwrap();
    }
    let source = CancelSource::new();
    let consumed = unblock_channel_recv::consume(&receiver, producer, &source.token());
    assert_eq!(consumed, Consumed::Done { total: 3 });
}

#[cfg(target_os = "linux")]
mod child {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Child, ChildStdin, Command, Stdio};

    use nix::sys::signal::Signal;

    use super::*;

    /// `cat`, which runs until its stdin closes; the stdin, which the test keeps.
    fn cat() -> (Child, ChildStdin) {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        (child, stdin)
    }

    /// Whether `pid` is still a process (a zombie counts).
    fn exists(pid: u32) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn naive_child_wait_stays_blocked_after_its_caller_gave_up() {
        let (mut child, stdin) = cat();
        let returned = Arc::new(AtomicBool::new(false));
        let wait = tokio::task::spawn_blocking({
            let returned = returned.clone();
            move || {
                let status = child.wait();
                returned.store(true, Ordering::SeqCst);
                status
            }
        });
        give_up_and_see_it_still_blocked(wait, &returned).await;

        drop(stdin); // the test's own way to end it: `cat` exits, the wait reaps it
        assert!(wait_for(&returned));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancel_kills_the_child_ends_the_blocked_wait_and_reaps_it() {
        let (child, stdin) = cat();
        let pid = child.id();
        let job = tethered_tokio::spawn_native(move |token| {
            unblock_child_wait::linux::wait_or_kill(child, &token)
        });
        tokio::time::sleep(GIVE_UP_AFTER).await;
        let cancelled = Instant::now();
        let status = job.cancel_and_join_with(CancelReason::Timeout).await;
        assert!(
            cancelled.elapsed() < STOPS_WITHIN,
            "{:?}",
            cancelled.elapsed()
        );
        // Cancelled while it ran: the stop, with the killed child's status.
        let stopped = status.expect_err("cancelled while it ran");
        assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
        let status = stopped
            .into_returned()
            .expect("the closure ran, and returned")
            .unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
        assert!(!exists(pid), "reaped: no zombie");
        drop(stdin);
    }

    #[test]
    fn a_cancel_before_the_wait_starts_kills_the_child_all_the_same() {
        let (child, _stdin) = cat();
        let source = CancelSource::new();
        source.cancel(CancelReason::Dropped);
        let status = unblock_child_wait::linux::wait_or_kill(child, &source.token()).unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    }

    #[test]
    fn a_child_that_exits_by_itself_is_reaped_with_its_status() {
        let child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let pid = child.id();
        let source = CancelSource::new();
        let status = unblock_child_wait::linux::wait_or_kill(child, &source.token()).unwrap();
        assert_eq!(status.code(), Some(3));
        assert!(!exists(pid));
        source.cancel(CancelReason::Requested); // after the reaping: the callback is gone
    }
}
