//! [`Server`]: a service's tokio runtime, its server-wide token and its native-job scope, shut
//! down as a whole within one deadline.

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelSource, CancelToken, NativeScope, ShutdownReport};
use tokio::runtime::{Handle, Runtime};

use crate::TokioSpawner;

/// A service's runtime (multi-threaded, every driver on), a server-wide [`CancelToken`] and a
/// [`NativeScope`] on the runtime's blocking pool tied to it, shut down together within one
/// deadline by [`run`](Self::run).
///
/// The shutdown begins on SIGTERM or SIGINT (Ctrl-C where there are no Unix signals), when the
/// server's source is cancelled ([`source`](Self::source)), or when the main future returns.
/// Then, all within the one deadline:
///
/// 1. the server's token is cancelled with [`CancelReason::Shutdown`]: every request's token
///    (a `tethered_tower::RequestTokenLayer` makes them its children) and every job spawned
///    under it hears it; an HTTP server given `token.cancelled()` as its graceful-shutdown
///    signal starts draining;
/// 2. the scope is shut down: its jobs unfinished at that moment are cancelled and the report
///    follows each of them, so a job stuck at shutdown is named in it;
/// 3. the main future (the HTTP drain) is awaited, until the deadline;
/// 4. the runtime is shut down with what is left of the deadline (a closure stuck on the
///    blocking pool no longer holds the process: dropping `#[tokio::main]`'s runtime would wait
///    for it forever).
///
/// ```no_run
/// use std::time::Duration;
/// use tethered_tokio::Server;
///
/// let server = Server::new()?;
/// let token = server.token();
/// let report = server.run(Duration::from_secs(5), async move {
///     // axum::serve(listener, app).with_graceful_shutdown(token.cancelled()).await
///     token.cancelled().await;
/// });
/// println!("{report}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Server {
    runtime: Runtime,
    source: CancelSource,
    /// Shared with the handlers that spawn in it; the shutdown report covers it.
    scope: Arc<NativeScope>,
}

/// What began a [`Server`]'s shutdown.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShutdownCause {
    /// A signal: its name (`SIGTERM`, `SIGINT`).
    Signal(&'static str),
    /// The server's source was cancelled, with this reason.
    Cancelled(CancelReason),
    /// The main future returned by itself.
    MainReturned,
}

/// How a [`Server`]'s shutdown went, from [`Server::run`].
#[non_exhaustive]
#[derive(Debug)]
pub struct ServerReport {
    /// What began it.
    pub cause: ShutdownCause,
    /// Whether the main future (the HTTP drain) returned within the deadline.
    pub drained: bool,
    /// The scope's jobs that were unfinished when the shutdown began, and what became of them:
    /// the stragglers are those still running at the deadline.
    pub jobs: ShutdownReport,
    /// From the beginning of the shutdown to the runtime's end.
    pub took: Duration,
    /// The deadline.
    pub deadline: Duration,
}

impl ServerReport {
    /// Whether everything stopped within the deadline.
    pub fn is_clean(&self) -> bool {
        self.drained && self.jobs.is_clean()
    }
}

impl fmt::Display for ServerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cause = match &self.cause {
            ShutdownCause::Signal(name) => format!("on {name}"),
            ShutdownCause::Cancelled(reason) => format!("on a cancel ({reason})"),
            ShutdownCause::MainReturned => "as the main future returned".to_owned(),
        };
        write!(
            f,
            "shutdown {cause}: {:.1?} of a {:.1?} deadline; {}; {} of {} jobs returned",
            self.took,
            self.deadline,
            if self.drained {
                "drained"
            } else {
                "the drain did not finish"
            },
            self.jobs.returned,
            self.jobs.cancelled,
        )?;
        if !self.jobs.stragglers.is_empty() {
            let names: Vec<String> = self
                .jobs
                .stragglers
                .iter()
                .map(ToString::to_string)
                .collect();
            write!(f, "; still running: {}", names.join(", "))?;
        }
        Ok(())
    }
}

impl Server {
    /// A multi-threaded runtime with every driver on, and the server's token and scope.
    ///
    /// # Errors
    ///
    /// The runtime's build error.
    pub fn new() -> io::Result<Server> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        Ok(Server::with_runtime(runtime))
    }

    /// A server on `runtime` (built with the drivers the service needs; the signal handling of
    /// [`run`](Self::run) needs `enable_io`, which `enable_all` includes).
    pub fn with_runtime(runtime: Runtime) -> Server {
        let source = CancelSource::new();
        let scope = NativeScope::with_spawner(TokioSpawner::new(runtime.handle().clone()))
            .child_of(&source.token());
        Server {
            runtime,
            source,
            scope: Arc::new(scope),
        }
    }

    /// Bounds how many of the scope's jobs run at once (see
    /// [`NativeScope::with_max_running`]).
    ///
    /// # Panics
    ///
    /// If `max` is 0, or if the scope was shared already ([`scope`](Self::scope)): set the
    /// limit first.
    pub fn with_max_running(mut self, max: usize) -> Server {
        let scope = Arc::into_inner(self.scope)
            .expect("Server::with_max_running: set the limit before sharing the scope");
        self.scope = Arc::new(scope.with_max_running(max));
        self
    }

    /// The server-wide token: a parent for every request's token, cancelled with `Shutdown`
    /// when the shutdown begins.
    pub fn token(&self) -> CancelToken {
        self.source.token()
    }

    /// The server-wide source: cancelling it begins the shutdown.
    pub fn source(&self) -> CancelSource {
        self.source.clone()
    }

    /// The scope for the service's native jobs, on the runtime's blocking pool: share it with
    /// the handlers (an axum `State`, say); [`run`](Self::run) shuts it down and reports on it.
    pub fn scope(&self) -> Arc<NativeScope> {
        self.scope.clone()
    }

    /// The runtime's handle.
    pub fn handle(&self) -> &Handle {
        self.runtime.handle()
    }

    /// Runs `main` on the runtime until the shutdown begins, then shuts everything down within
    /// `deadline` (see the type's docs) and reports.
    ///
    /// # Panics
    ///
    /// If the signal handlers cannot be installed (the runtime has no IO driver).
    pub fn run<F>(self, deadline: Duration, main: F) -> ServerReport
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let Server {
            runtime,
            source,
            scope,
        } = self;
        let token = source.token();
        let (cause, began, drained, jobs) = runtime.block_on(async move {
            let mut main = tokio::spawn(main);
            let cause = tokio::select! {
                _ = &mut main => ShutdownCause::MainReturned,
                name = signal() => ShutdownCause::Signal(name),
                reason = token.cancelled() => ShutdownCause::Cancelled(reason),
            };
            let began = Instant::now();
            source.cancel(CancelReason::Shutdown);
            let jobs = scope.shutdown(deadline);
            let drain = async {
                match began.checked_add(deadline) {
                    Some(until) => tokio::time::timeout_at(until.into(), &mut main)
                        .await
                        .is_ok(),
                    None => {
                        let _ = (&mut main).await;
                        true
                    }
                }
            };
            let (drained, jobs) = tokio::join!(drain, jobs);
            let drained = drained || main.is_finished();
            if !drained {
                main.abort();
            }
            (cause, began, drained, jobs)
        });
        let left = began.checked_add(deadline).map_or(Duration::MAX, |until| {
            until.saturating_duration_since(Instant::now())
        });
        runtime.shutdown_timeout(left);
        ServerReport {
            cause,
            drained,
            jobs,
            took: began.elapsed(),
            deadline,
        }
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("token", &self.source.token())
            .field("jobs", &self.scope.len())
            .finish_non_exhaustive()
    }
}

/// The first of SIGTERM and SIGINT (Ctrl-C elsewhere).
#[cfg(unix)]
async fn signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler (enable_io)");
    let mut interrupt = signal(SignalKind::interrupt()).expect("SIGINT handler (enable_io)");
    tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = interrupt.recv() => "SIGINT",
    }
}

#[cfg(not(unix))]
async fn signal() -> &'static str {
    let _ = tokio::signal::ctrl_c().await;
    "Ctrl-C"
}
