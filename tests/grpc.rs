//! tonic over HTTP/2 on loopback, behind `RequestTokenLayer`: a client's deadline stops the
//! server's native job with `Timeout` and is answered with `DEADLINE_EXCEEDED` at the deadline;
//! a client that gives up resets its stream and the job stops with `Dropped`; the server's
//! shutdown stops it with `Shutdown`; a deadline travels through a middle hop
//! (`ClientTokenLayer`). The naive server (tonic's deadline and `spawn_blocking`) answers at
//! the deadline and its loop runs on, until the test cleans it up.
//!
//! The service is the `grpc_deadline` example's (`examples/grpc_deadline/work.rs`).

#![cfg(unix)]

#[path = "../examples/grpc_deadline/work.rs"]
#[allow(dead_code)]
mod work;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelSource};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tonic::Code;

use work::{Mode, Report, SpinRequest, Work, call_spin, connect, mono_ns};

/// A server of `mode` on loopback: its address, its reports, and its server-wide source.
struct Server {
    addr: String,
    reports: mpsc::UnboundedReceiver<String>,
    source: CancelSource,
}

async fn start(mode: Mode) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("bound").to_string();
    let (tx, reports) = mpsc::unbounded_channel();
    let report: Report = Arc::new(move |line| {
        let _ = tx.send(line);
    });
    let source = CancelSource::new();
    let (token, stopped) = (source.token(), source.token());
    tokio::spawn(async move {
        Work::new(mode, report)
            .serve(listener, token, async move {
                stopped.cancelled().await;
            })
            .await
            .expect("the server runs");
    });
    Server {
        addr,
        reports,
        source,
    }
}

/// A report line, split: `start ID NS HEADER` or `stop ID REASON NS HEADER`.
async fn next(server: &mut Server, kind: &str) -> Vec<String> {
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), server.reports.recv())
            .await
            .unwrap_or_else(|_| panic!("no `{kind}` report within 10 s"))
            .expect("the server reports");
        let fields: Vec<String> = line.split(' ').map(str::to_owned).collect();
        if fields[0] == kind {
            return fields;
        }
    }
}

fn spin(id: u64) -> SpinRequest {
    SpinRequest { id, max_ms: 60_000 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_deadline_stops_the_job_with_timeout_and_is_answered_at_the_deadline() {
    let mut server = start(Mode::Tethered).await;
    let deadline = Duration::from_millis(300);
    let started = Instant::now();
    let sent = mono_ns();
    let result = call_spin(
        connect(&server.addr).await.unwrap(),
        spin(1),
        Some(deadline),
        None,
    )
    .await;
    let answered = started.elapsed();
    // The layer answers DEADLINE_EXCEEDED; tonic runs its own deadline from the same header on
    // both sides (its channel, and its server outside the layer), and answers CANCELLED when it
    // fires first.
    let code = result.map(|_| ()).map_err(|s| s.code());
    assert!(
        matches!(code, Err(Code::DeadlineExceeded | Code::Cancelled)),
        "{code:?}"
    );
    assert!(
        answered >= deadline,
        "answered before the deadline: {answered:?}"
    );
    assert!(
        answered < deadline + Duration::from_secs(1),
        "answered {answered:?} after the call"
    );

    let stop = next(&mut server, "stop").await;
    assert_eq!(stop[2], "Timeout");
    assert_eq!(stop[4], "300", "the grpc-timeout the server read");
    let stopped: u64 = stop[3].parse().unwrap();
    let late = stopped.saturating_sub(sent + 300_000_000);
    assert!(
        late < 1_000_000_000,
        "the job stopped {late} ns after the deadline"
    );
    server.source.cancel(CancelReason::Shutdown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_naive_server_answers_at_the_deadline_and_its_loop_runs_on() {
    let server = start(Mode::Naive).await;
    let channel = connect(&server.addr).await.unwrap();
    let result = call_spin(
        channel.clone(),
        spin(1),
        Some(Duration::from_millis(200)),
        None,
    )
    .await;
    // tonic's own deadline answers `Cancelled` ("Timeout expired").
    let code = result.map(|_| ()).map_err(|s| s.code());
    assert!(
        matches!(code, Err(Code::Cancelled | Code::DeadlineExceeded)),
        "{code:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = work::status(channel.clone()).await.unwrap();
    assert_eq!(status.naive_running, 1, "the naive loop stopped by itself");
    // Clean up.
    work::stop_naive(channel.clone()).await.unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while work::status(channel.clone()).await.unwrap().naive_running > 0 {
        assert!(Instant::now() < until, "the naive loop did not end");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.source.cancel(CancelReason::Shutdown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_gives_up_resets_the_stream_and_the_job_stops_with_dropped() {
    let mut server = start(Mode::Tethered).await;
    let call = call_spin(connect(&server.addr).await.unwrap(), spin(1), None, None);
    let mut call = Box::pin(call);
    tokio::select! {
        result = &mut call => panic!("the call ended by itself: {result:?}"),
        start = next(&mut server, "start") => assert_eq!(start[3], "-", "no deadline was sent"),
    }
    drop(call);
    let gave_up = mono_ns();
    let stop = next(&mut server, "stop").await;
    assert_eq!(stop[2], "Dropped");
    let late = stop[3].parse::<u64>().unwrap().saturating_sub(gave_up);
    assert!(
        late < 1_000_000_000,
        "the job stopped {late} ns after the reset"
    );
    server.source.cancel(CancelReason::Shutdown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_shutdown_stops_the_job_with_shutdown_and_answers_unavailable() {
    let mut server = start(Mode::Tethered).await;
    let call = tokio::spawn(call_spin(
        connect(&server.addr).await.unwrap(),
        spin(1),
        None,
        None,
    ));
    next(&mut server, "start").await;
    server.source.cancel(CancelReason::Shutdown);
    let stop = next(&mut server, "stop").await;
    assert_eq!(stop[2], "Shutdown");
    let result = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("answered")
        .expect("the call's task ran");
    assert_eq!(
        result.map(|_| ()).map_err(|s| s.code()),
        Err(Code::Unavailable)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_travels_through_a_middle_hop_and_a_cancel_does_too() {
    let mut b = start(Mode::Tethered).await;
    let a = start(Mode::Relay(connect(&b.addr).await.unwrap())).await;
    let to_a = connect(&a.addr).await.unwrap();

    // The client's 300 ms reach B as what was left of them at A.
    let sent = mono_ns();
    let result = call_spin(
        to_a.clone(),
        spin(1),
        Some(Duration::from_millis(300)),
        None,
    )
    .await;
    let code = result.map(|_| ()).map_err(|s| s.code());
    assert!(
        matches!(code, Err(Code::DeadlineExceeded | Code::Cancelled)),
        "{code:?}"
    );
    let start = next(&mut b, "start").await;
    let header: u64 = start[3]
        .parse()
        .expect("B's request carried a grpc-timeout");
    assert!(
        header <= 300,
        "B's deadline, {header} ms, is longer than the client's"
    );
    let stop = next(&mut b, "stop").await;
    // A's own deadline passes at the same instant, and its call to B is reset then: B's job
    // reads whichever came first.
    assert!(
        ["Timeout", "Dropped"].contains(&stop[2].as_str()),
        "{stop:?}"
    );
    let late = stop[3]
        .parse::<u64>()
        .unwrap()
        .saturating_sub(sent + 300_000_000);
    assert!(
        late < 1_000_000_000,
        "B's job stopped {late} ns after the deadline"
    );

    // A client that gives up at A: A's call to B is reset, and B's job stops with Dropped.
    let mut call = Box::pin(call_spin(to_a.clone(), spin(2), None, None));
    tokio::select! {
        result = &mut call => panic!("the call ended by itself: {result:?}"),
        start = next(&mut b, "start") => assert_eq!(start[3], "-"),
    }
    drop(call);
    let stop = next(&mut b, "stop").await;
    assert_eq!(stop[2], "Dropped");
    a.source.cancel(CancelReason::Shutdown);
    b.source.cancel(CancelReason::Shutdown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_stopped_by_its_token_fails_with_the_grpc_status_of_its_reason() {
    let mut server = start(Mode::Tethered).await;
    let channel = connect(&server.addr).await.unwrap();
    for (reason, code) in [
        (CancelReason::Dropped, Code::Cancelled),
        (CancelReason::Timeout, Code::DeadlineExceeded),
    ] {
        let caller = CancelSource::new();
        let call = tokio::spawn(call_spin(
            channel.clone(),
            spin(1),
            None,
            Some(caller.token()),
        ));
        next(&mut server, "start").await;
        caller.cancel(reason);
        let result = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("answered")
            .expect("the call's task ran");
        let status = result.expect_err("the call was stopped");
        assert_eq!(status.code(), code, "{status:?}");
        assert!(
            status.message().starts_with("the call was stopped: "),
            "{status:?}"
        );
        // The call's stream was reset: the server's job went with it.
        let stop = next(&mut server, "stop").await;
        assert_eq!(stop[2], "Dropped");
    }

    // A token cancelled already: the call is never sent.
    let caller = CancelSource::new();
    caller.cancel(CancelReason::Shutdown);
    let status = call_spin(channel.clone(), spin(2), None, Some(caller.token()))
        .await
        .expect_err("stopped before it was sent");
    assert_eq!(status.code(), Code::Cancelled);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        server.reports.try_recv().is_err(),
        "the call reached the server"
    );
    server.source.cancel(CancelReason::Shutdown);
}
