//! A gRPC deadline that travels: a client's `grpc-timeout` reaches a server behind
//! `tethered_tower::RequestTokenLayer`, whose native job stops at the deadline with `Timeout`;
//! through a middle hop (`ClientTokenLayer` passes on the time left); a client that gives up
//! resets its stream and the job stops with `Dropped`. Against it, a plain tonic server with
//! `spawn_blocking` answers `DEADLINE_EXCEEDED` and its loop runs on.
//!
//! With no arguments it runs all of that on loopback and prints what happened. The subcommands
//! run one side each, for the two-host test (`tests/two_hosts.rs`, in network namespaces):
//!
//! ```text
//! grpc_deadline serve ADDR [naive]        serve until stdin closes
//! grpc_deadline relay ADDR UPSTREAM       serve, relaying Spin to UPSTREAM
//! grpc_deadline call ADDR (deadline MS | drop MS) [RUNS]
//! grpc_deadline status ADDR | stop-naive ADDR
//! ```
//!
//! The service (hand-derived prost messages, no protoc) is in `work.rs`.

mod work;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelSource};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use work::{Mode, Report, SpinRequest, Work, call_spin, connect, mono_ns};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => demo().await,
        ["serve", addr] => serve(addr, Mode::Tethered).await,
        ["serve", addr, "naive"] => serve(addr, Mode::Naive).await,
        ["relay", addr, upstream] => serve(addr, Mode::Relay(connect(upstream).await?)).await,
        ["call", addr, how, ms] => call(addr, how, ms, 1).await,
        ["call", addr, how, ms, runs] => call(addr, how, ms, runs.parse()?).await,
        ["status", addr] => {
            let status = work::status(connect(addr).await?).await?;
            println!("naive_running {} running {}", status.naive_running, status.running);
            Ok(())
        }
        ["stop-naive", addr] => Ok(work::stop_naive(connect(addr).await?).await?),
        _ => Err("usage: grpc_deadline [serve ADDR [naive] | relay ADDR UPSTREAM | call ADDR (deadline|drop) MS [RUNS] | status ADDR | stop-naive ADDR]".into()),
    }
}

/// One server, printing its reports, until stdin closes.
async fn serve(addr: &str, mode: Mode) -> Result<(), Error> {
    let listener = TcpListener::bind(addr).await?;
    println!("listening {}", listener.local_addr()?);
    let report: Report = Arc::new(|line| println!("{line}"));
    let server = CancelSource::new();
    let stdin_closed = async {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    };
    Work::new(mode, report)
        .serve(listener, server.token(), stdin_closed)
        .await?;
    server.cancel(CancelReason::Shutdown);
    Ok(())
}

/// `runs` calls to `Spin`, one after another, each with a deadline or dropped after `ms`.
/// Prints `sent ID NS`, then `deadline ID NS` (when its deadline passes) or `dropped ID NS`,
/// and `result ID CODE`.
async fn call(addr: &str, how: &str, ms: &str, runs: u64) -> Result<(), Error> {
    let channel = connect(addr).await?;
    let after = Duration::from_millis(ms.parse()?);
    for id in 1..=runs {
        let message = SpinRequest { id, max_ms: 60_000 };
        let sent = mono_ns();
        println!("sent {id} {sent}");
        let code = match how {
            "deadline" => {
                let result = call_spin(channel.clone(), message, Some(after), None).await;
                println!("deadline {id} {}", sent + u64::try_from(after.as_nanos())?);
                result.map_or_else(|status| format!("{:?}", status.code()), |_| "Ok".into())
            }
            "drop" => {
                let call = call_spin(channel.clone(), message, None, None);
                match tokio::time::timeout(after, call).await {
                    Ok(result) => {
                        result.map_or_else(|s| format!("{:?}", s.code()), |_| "Ok".into())
                    }
                    Err(_) => {
                        // The call's future is gone: its HTTP/2 stream is reset.
                        println!("dropped {id} {}", mono_ns());
                        "Dropped".into()
                    }
                }
            }
            _ => return Err(format!("call: `deadline` or `drop`, not {how}").into()),
        };
        println!("result {id} {code}");
        // Let the server see the stop before the next call.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A server of `mode` on loopback, its reports on a channel.
async fn start(
    mode: Mode,
) -> Result<(String, mpsc::UnboundedReceiver<String>, CancelSource), Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    let (tx, rx) = mpsc::unbounded_channel();
    let report: Report = Arc::new(move |line| {
        let _ = tx.send(line);
    });
    let server = CancelSource::new();
    let token = server.token();
    let stopped = server.token();
    tokio::spawn(async move {
        let _ = Work::new(mode, report)
            .serve(listener, token, async move {
                stopped.cancelled().await;
            })
            .await;
    });
    Ok((addr, rx, server))
}

/// The job's stop report: its reason, and when, in ns.
async fn next_stop(reports: &mut mpsc::UnboundedReceiver<String>) -> Result<(String, u64), Error> {
    loop {
        let line = tokio::time::timeout(Duration::from_secs(5), reports.recv())
            .await?
            .ok_or("the server is gone")?;
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["stop", _id, reason, at, _header] => return Ok(((*reason).to_owned(), at.parse()?)),
            ["start", ..] => continue,
            _ => return Err(format!("unexpected report: {line}").into()),
        }
    }
}

async fn demo() -> Result<(), Error> {
    let (b, mut b_reports, b_server) = start(Mode::Tethered).await?;
    let (a, _a_reports, a_server) = start(Mode::Relay(connect(&b).await?)).await?;
    let (naive, _naive_reports, naive_server) = start(Mode::Naive).await?;

    // 1. A 300 ms deadline, through A to B.
    let deadline = Duration::from_millis(300);
    let sent = mono_ns();
    let result = call_spin(
        connect(&a).await?,
        SpinRequest {
            id: 1,
            max_ms: 60_000,
        },
        Some(deadline),
        None,
    )
    .await;
    let (reason, at) = next_stop(&mut b_reports).await?;
    let late = at.saturating_sub(sent + u64::try_from(deadline.as_nanos())?);
    println!(
        "deadline 300 ms, client -> A -> B: the client got {:?}; B's job stopped with {reason}, {:.2} ms after the deadline",
        result.map(|_| ()).map_err(|status| status.code()),
        late as f64 / 1e6
    );

    // 2. A client that gives up after 200 ms, with no deadline: its stream is reset.
    let call = call_spin(
        connect(&b).await?,
        SpinRequest {
            id: 2,
            max_ms: 60_000,
        },
        None,
        None,
    );
    let gave_up = match tokio::time::timeout(Duration::from_millis(200), call).await {
        Ok(result) => return Err(format!("the call ended by itself: {result:?}").into()),
        Err(_) => mono_ns(),
    };
    let (reason, at) = next_stop(&mut b_reports).await?;
    println!(
        "client gave up after 200 ms: B's job stopped with {reason}, {:.2} ms after the reset",
        at.saturating_sub(gave_up) as f64 / 1e6
    );

    // 3. The naive server: tonic answers at the deadline, and its spawn_blocking loop runs on.
    let started = Instant::now();
    let result = call_spin(
        connect(&naive).await?,
        SpinRequest {
            id: 3,
            max_ms: 60_000,
        },
        Some(deadline),
        None,
    )
    .await;
    let answered = started.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = work::status(connect(&naive).await?).await?;
    println!(
        "naive server (tonic's deadline, spawn_blocking): the client got {:?} after {} ms; {:.1} s after the call, {} loop(s) still running",
        result.map(|_| ()).map_err(|status| status.code()),
        answered.as_millis(),
        started.elapsed().as_secs_f64(),
        status.naive_running
    );
    work::stop_naive(connect(&naive).await?).await?;
    println!("(the naive loop was cleaned up by hand)");

    for server in [a_server, b_server, naive_server] {
        server.cancel(CancelReason::Shutdown);
    }
    Ok(())
}
