//! An axum server whose handler runs a native job as a child of the request's token, which
//! `tethered_tower::RequestTokenLayer` gives every request. When the client disconnects
//! mid-request, the request's token is cancelled with `Dropped`; when the request's deadline
//! (here its `grpc-timeout` header) passes, with `Timeout`, and the client gets its 504 at the
//! deadline. The job stops either way, and knows why. The example serves on 127.0.0.1 (a free
//! port), drives its own clients, and prints what happened.
//!
//! Run with: cargo run --example http_disconnect

use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;
use tethered::{CancelReason, CancelSource, JobOptions};
use tethered_tokio::TokioSpawner;
use tethered_tower::{RequestToken, RequestTokenLayer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What the native job reports, from its own thread.
#[derive(Debug)]
enum JobEvent {
    Started {
        slices: u64,
    },
    Returned {
        done: u64,
        reason: Option<CancelReason>,
        at: Instant,
    },
}

#[derive(Clone)]
struct App {
    events: mpsc::UnboundedSender<JobEvent>,
}

/// `GET /render/{slices}`: renders `slices` slices of 1 ms each on tokio's blocking pool, as a
/// child of the request's token.
async fn render(State(app): State<App>, Path(slices): Path<u64>, request: RequestToken) -> String {
    let options = JobOptions::new()
        .child_of(&request)
        .on(TokioSpawner::current());
    let job = tethered::spawn(options, move |token| {
        let _ = app.events.send(JobEvent::Started { slices });
        let mut done = 0;
        while done < slices && !token.is_cancelled() {
            std::thread::sleep(Duration::from_millis(1)); // one slice of blocking work
            done += 1;
        }
        let _ = app.events.send(JobEvent::Returned {
            done,
            reason: token.reason(),
            at: Instant::now(),
        });
        done
    })
    .expect("on the runtime");
    // If the client goes away, the layer cancels the request's token with `Dropped`; at the
    // request's deadline, with `Timeout`. The job, its child, stops with the same reason.
    match job.await {
        Ok(done) => format!("rendered {done} slices\n"),
        Err(err) => format!("render failed: {err}\n"),
    }
}

fn request(path: &str, extra_headers: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra_headers}\r\n")
}

async fn next_event(events: &mut mpsc::UnboundedReceiver<JobEvent>) -> JobEvent {
    tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("the job reports within 5 s")
        .expect("the server is running")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    // Every request's token is a child of the server's: cancelling it stops them all.
    let server_token = CancelSource::new();
    let app = Router::new()
        .route("/render/{slices}", get(render))
        .with_state(App { events: events_tx })
        .layer(RequestTokenLayer::new(&server_token.token()));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });
    println!("server listening on http://{addr}");

    // 1. A client that waits: the job runs to the end and the client gets the response.
    let mut client = TcpStream::connect(addr).await?;
    client
        .write_all(request("/render/20", "").as_bytes())
        .await?;
    let mut response = String::new();
    client.read_to_string(&mut response).await?;
    let status = response.lines().next().unwrap_or_default();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default().trim();
    println!("client 1: asked for 20 slices, got `{status}`: {body}");
    assert!(matches!(
        next_event(&mut events).await,
        JobEvent::Started { slices: 20 }
    ));
    assert!(matches!(
        next_event(&mut events).await,
        JobEvent::Returned {
            done: 20,
            reason: None,
            ..
        }
    ));

    // 2. A client that gives up: it asks for a minute of work and hangs up once it has started.
    let mut client = TcpStream::connect(addr).await?;
    client
        .write_all(request("/render/60000", "").as_bytes())
        .await?;
    let JobEvent::Started { slices } = next_event(&mut events).await else {
        panic!("the job reports its start first");
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(client);
    let hung_up = Instant::now();
    println!("client 2: asked for {slices} slices (a minute of work), hung up after 50 ms");

    let JobEvent::Returned { done, reason, at } = next_event(&mut events).await else {
        panic!("the job reports its return next");
    };
    println!(
        "server:   the job stopped after {done} of {slices} slices, {:.1?} after the hang-up; \
         its token said: {}",
        at.saturating_duration_since(hung_up),
        reason
            .as_ref()
            .map_or("not cancelled".to_owned(), ToString::to_string)
    );
    assert_eq!(reason, Some(CancelReason::Dropped));
    assert!(done < slices);

    // 3. A client with a deadline: its `grpc-timeout` of 300 ms reaches the job as `Timeout`,
    //    and the client gets its 504 at the deadline.
    let mut client = TcpStream::connect(addr).await?;
    let asked = Instant::now();
    client
        .write_all(request("/render/60000", "grpc-timeout: 300m\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    client.read_to_string(&mut response).await?;
    let answered = asked.elapsed();
    let status = response.lines().next().unwrap_or_default().to_owned();
    assert!(matches!(
        next_event(&mut events).await,
        JobEvent::Started { .. }
    ));
    let JobEvent::Returned { done, reason, .. } = next_event(&mut events).await else {
        panic!("the job reports its return next");
    };
    println!(
        "client 3: asked for 60000 slices with a 300 ms deadline, got `{status}` after \
         {answered:.1?}; the job stopped after {done} slices, its token said: {}",
        reason
            .as_ref()
            .map_or("not cancelled".to_owned(), ToString::to_string)
    );
    assert_eq!(reason, Some(CancelReason::Timeout));
    assert!(status.contains("504"));

    let _ = stop_server.send(());
    server.await??;
    // The proof that nothing leaked, off the async threads: it blocks while it waits.
    tokio::task::spawn_blocking(|| tethered::testing::wait_all_returned(Duration::from_secs(5)))
        .await??;
    println!("server stopped; no native job is left running");
    Ok(())
}
