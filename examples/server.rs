//! The server recipe: an axum service whose requests run native jobs, shut down within one
//! deadline.
//!
//! - `tethered_server::Server`: the runtime, one server-wide token, one scope on the blocking
//!   pool (bounded: 4 jobs at a time), and the shutdown on SIGTERM or Ctrl-C.
//! - `tethered_tower::RequestTokenLayer`: every request's token, a child of the server's,
//!   cancelled on a disconnect, at the request's deadline, and at shutdown.
//! - Each handler spawns its job in the scope as a child of its request's token.
//!
//! `GET /work/{ms}` works `ms` milliseconds, checking its token; `GET /stuck` ignores its token
//! for a minute (a native call with no check), so the shutdown report names it. `GET /metrics`
//! serves the core's figures in Prometheus's text format (the `metrics` feature): cancels by
//! reason, the cancel-to-return time by job name, and the stubborn jobs, such as a `/stuck`
//! whose client went away a second ago.
//!
//! Run with: cargo run --example server [deadline-seconds]   (then Ctrl-C)

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tethered::{CancelToReturn, JobOptions, NativeScope};
use tethered_server::Server;
use tethered_tower::{RequestToken, RequestTokenLayer};
use tokio::net::TcpListener;

/// How many jobs of the server's scope run at once; the others wait for a slot.
const MAX_RUNNING: NonZeroUsize = NonZeroUsize::new(4).expect("not zero");

/// The scope the handlers spawn in: the server's.
#[derive(Clone)]
struct Jobs(Arc<NativeScope>);

/// `GET /work/{ms}`: `ms` milliseconds of native work in 1 ms slices.
async fn work(State(jobs): State<Jobs>, Path(ms): Path<u64>, request: RequestToken) -> String {
    let options = JobOptions::new()
        .name(format!("work {ms} ms"))
        .child_of(&request)
        .in_scope(&jobs.0);
    let job = tethered::spawn(options, move |token| {
        let mut done = 0;
        while done < ms && !token.is_cancelled() {
            std::thread::sleep(Duration::from_millis(1));
            done += 1;
        }
        done
    });
    match job {
        Ok(job) => match job.await {
            Ok(done) => format!("worked {done} ms\n"),
            Err(stopped) => format!("stopped: {stopped}\n"),
        },
        Err(refused) => format!("not started: {refused}\n"),
    }
}

/// `GET /stuck`: a minute of native work that never looks at its token.
async fn stuck(State(jobs): State<Jobs>, request: RequestToken) -> String {
    let options = JobOptions::new()
        .name("stuck-job")
        .child_of(&request)
        .in_scope(&jobs.0);
    let job = tethered::spawn(options, |_token| {
        std::thread::sleep(Duration::from_secs(60))
    });
    match job {
        Ok(job) => format!("{:?}\n", job.await.is_ok()),
        Err(refused) => format!("not started: {refused}\n"),
    }
}

/// `GET /metrics`: the figures of this process, as Prometheus scrapes them.
async fn metrics(State(exporter): State<PrometheusHandle>) -> String {
    // The gauges (`stats()`, the stubborn jobs now) are read at the scrape.
    tethered::metrics::record_now();
    exporter.run_upkeep();
    exporter.render()
}

/// Installs the Prometheus recorder: the cancel-to-return histogram in the core's own buckets.
fn prometheus() -> Result<PrometheusHandle, Box<dyn std::error::Error>> {
    let buckets = CancelToReturn::BOUNDS.map(|bound| bound.as_secs_f64());
    let exporter = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("tethered_cancel_to_return_seconds".into()),
            &buckets,
        )?
        .install_recorder()?;
    tethered::metrics::describe();
    Ok(exporter)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let deadline = std::env::args()
        .nth(1)
        .map_or(Ok(5.0), |seconds| seconds.parse::<f64>())?;
    let exporter = prometheus()?;
    let server = Server::new()?.with_max_running(MAX_RUNNING);
    let token = server.token().clone();
    let listener = server.handle().block_on(TcpListener::bind("127.0.0.1:0"))?;
    println!("listening on {}", listener.local_addr()?);
    let app = Router::new()
        .route("/work/{ms}", get(work))
        .route("/stuck", get(stuck))
        .with_state(Jobs(server.scope()))
        .layer(RequestTokenLayer::new(&token))
        .route("/metrics", get(metrics).with_state(exporter));
    let outcome = server.run(Duration::from_secs_f64(deadline), async move {
        let drained = token.clone();
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                drained.cancelled().await;
            })
            .await
    });
    match outcome {
        Ok(report) => println!("{report}"),
        // The HTTP server failed, which began the shutdown: its report, then its error.
        Err(failed) => {
            println!("{}", failed.report);
            return Err(failed.error.into());
        }
    }
    Ok(())
}
