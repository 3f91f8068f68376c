//! [`Server`]: a service's tokio runtime, its server-wide token, its native-job scopes and the
//! other parts it shuts down (worker pools), all stopped within one deadline.

use std::fmt;
use std::future::Future;
use std::io;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, resume_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelSource, CancelToken, NativeScope, Shutdown, ShutdownReport};
use tethered_tokio::TokioSpawner;
use tokio::runtime::{Handle, Runtime};

use crate::report::{ServerError, ServerReport, ShutdownCause};
use crate::signal::first_signal;

/// A service's runtime (multi-threaded, every driver on), a server-wide [`CancelToken`], the
/// [`NativeScope`]s its handlers spawn native jobs in (on the runtime's blocking pool, tied to
/// the token), and any other part it shuts down (a `tethered_process::Pool`, anything
/// [`Shutdown`]), all stopped together within one deadline by [`run`](Self::run).
///
/// The shutdown begins on SIGTERM or SIGINT (Ctrl-C where there are no Unix signals), when the
/// server's source is cancelled ([`source`](Self::source)), or when the main future returns
/// (with `Ok` or an error). Then, all within the one deadline (`grace` from the beginning):
///
/// 1. the server's token is cancelled with [`CancelReason::Shutdown`]: every request's token
///    (a `tethered_tower::RequestTokenLayer` makes them its children) and every job spawned
///    under it hears it; an HTTP server given `token.cancelled()` as its graceful-shutdown
///    signal starts draining;
/// 2. every scope and every added part is shut down: their unfinished jobs and workers are
///    cancelled, and the report follows each of them, so a job stuck at shutdown is named in
///    it;
/// 3. the main future (the HTTP drain) is awaited, until the deadline, unless it returned
///    already;
/// 4. the runtime is shut down with what is left of the deadline: a closure stuck on the
///    blocking pool no longer holds the process (dropping `#[tokio::main]`'s runtime would wait
///    for it forever).
///
/// # Tying a job to the shutdown
///
/// One way, whatever the service: spawn into the server's scope, as a child of the request.
/// [`scope`](Self::scope) before `run`, moved into the router's state (axum's `State`, a tonic
/// service's field, an MCP server's handler), and in the handler
/// `JobOptions::new().in_scope(&scope).child_of(&request_token)`. Then:
///
/// - the request ending early (a disconnect, its deadline, a client's cancel) stops the job
///   with the request's reason;
/// - the shutdown stops it with [`CancelReason::Shutdown`], every time, even when the same
///   shutdown also makes the request end (an HTTP drain closing connections, an SDK cancelling
///   its requests as it hears the server's token): the scope is a child of the server's token,
///   so the server's cancel, which came first, decides the job's reason;
/// - the shutdown's report counts the job, and names it if it does not return in time.
///
/// A job that is only `child_of(server.token())` stops with `Shutdown` too, but the report
/// never sees it.
///
/// ```no_run
/// use std::time::Duration;
/// use tethered_server::Server;
///
/// let server = Server::new()?;
/// let token = server.token().clone();
/// let scope = server.scope(); // hand it to the handlers
/// let outcome = server.run(Duration::from_secs(5), async move {
///     // axum::serve(listener, app).with_graceful_shutdown(token.cancelled()).await
///     token.cancelled().await;
///     Ok::<(), std::io::Error>(())
/// });
/// match outcome {
///     Ok(report) => println!("{report}"),
///     Err(failed) => eprintln!("{failed}: {}", failed.error),
/// }
/// # drop(scope);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Server {
    /// `None` only while `run` shuts it down (or in a `Server` being dropped).
    runtime: Option<Runtime>,
    source: CancelSource,
    token: CancelToken,
    /// The default scope, shared with the handlers that spawn in it.
    scope: Arc<NativeScope>,
    /// Every part the shutdown stops, the default scope first.
    parts: Vec<Arc<dyn Shutdown>>,
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
        let token = source.token();
        let scope = Arc::new(new_scope(runtime.handle(), &token, None));
        Server {
            runtime: Some(runtime),
            source,
            token,
            parts: vec![scope.clone()],
            scope,
        }
    }

    /// Bounds how many of the default scope's jobs run at once (see
    /// [`NativeScope::with_max_running`]).
    ///
    /// # Panics
    ///
    /// If the scope was shared already ([`scope`](Self::scope)): set the limit first.
    pub fn with_max_running(mut self, max: NonZeroUsize) -> Server {
        self.parts.remove(0);
        let scope = Arc::into_inner(std::mem::replace(
            &mut self.scope,
            Arc::new(NativeScope::new()),
        ))
        .expect("Server::with_max_running: set the limit before sharing the scope");
        self.scope = Arc::new(scope.with_max_running(max));
        self.parts.insert(0, self.scope.clone());
        self
    }

    /// The server-wide token: a parent for every request's token, cancelled with `Shutdown`
    /// when the shutdown begins.
    pub fn token(&self) -> &CancelToken {
        &self.token
    }

    /// The server-wide source: cancelling it begins the shutdown.
    pub fn source(&self) -> &CancelSource {
        &self.source
    }

    /// The default scope for the service's native jobs, on the runtime's blocking pool: share
    /// it with the handlers (an axum `State`, say); [`run`](Self::run) shuts it down and
    /// reports on it.
    pub fn scope(&self) -> Arc<NativeScope> {
        self.scope.clone()
    }

    /// Another scope, on the same pool and shut down with the rest, with a limit of its own:
    /// for a second kind of work that must not starve the first (or be starved by it), as one
    /// limit shared by both would let happen.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    ///
    /// let mut server = tethered_server::Server::new()?;
    /// let renders = server.scope();
    /// let scripts = server.add_scope(NonZeroUsize::new(4).unwrap());
    /// assert_eq!(scripts.max_running(), NonZeroUsize::new(4));
    /// # drop((renders, scripts));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[expect(
        clippy::missing_panics_doc,
        reason = "the runtime is held until `run`, which takes the server: the expect never fires"
    )]
    pub fn add_scope(&mut self, max_running: NonZeroUsize) -> Arc<NativeScope> {
        let runtime = self.runtime.as_ref().expect("held until `run`");
        let scope = Arc::new(new_scope(runtime.handle(), &self.token, Some(max_running)));
        self.parts.push(scope.clone());
        scope
    }

    /// Adds a part the shutdown stops within the same deadline and reports on (a
    /// `tethered_process::Pool` of worker processes, a scope made elsewhere, anything
    /// [`Shutdown`]), and hands it back shared, for the handlers, as [`scope`](Self::scope) and
    /// [`add_scope`](Self::add_scope) do.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::NativeScope;
    ///
    /// let mut server = tethered_server::Server::new()?;
    /// // A part made elsewhere (a worker pool, say): the server keeps it, the handlers use it.
    /// let renders = server.add(NativeScope::new().child_of(server.token()));
    /// renders.spawn(|token| token.wait())?.detach();
    /// let report = server.run(Duration::from_secs(5), async { Ok::<(), std::io::Error>(()) })?;
    /// assert_eq!(report.shutdown.returned, 1, "{report}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add<S: Shutdown + 'static>(&mut self, part: S) -> Arc<S> {
        let part = Arc::new(part);
        self.parts.push(part.clone());
        part
    }

    /// The runtime's handle.
    #[expect(
        clippy::missing_panics_doc,
        reason = "the runtime is held until `run`, which takes the server: the expect never fires"
    )]
    pub fn handle(&self) -> &Handle {
        self.runtime.as_ref().expect("held until `run`").handle()
    }

    /// Runs `main` on the runtime until the shutdown begins, then shuts everything down within
    /// `grace` (see the type's docs) and reports.
    ///
    /// # Errors
    ///
    /// If `main` returned an error (which began the shutdown, if nothing else had), it comes
    /// back in a [`ServerError`], with the report of the shutdown that followed.
    ///
    /// # Panics
    ///
    /// If the signal handlers cannot be installed (the runtime has no IO driver). If `main`
    /// panics, the shutdown runs as for an error and the panic is then resumed here; a stuck
    /// native job never turns it into a hang, as the runtime is let go within the deadline
    /// either way.
    pub fn run<F, E>(mut self, grace: Duration, main: F) -> Result<ServerReport, ServerError<E>>
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: Send + 'static,
    {
        let runtime = self.runtime.take().expect("held until `run`");
        let source = self.source.clone();
        let token = self.token.clone();
        let parts = std::mem::take(&mut self.parts);
        let mut guard = RuntimeGuard {
            runtime: Some(runtime),
            deadline: None,
        };
        let runtime = guard.runtime.as_ref().expect("just set");
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(async {
                let mut main = tokio::spawn(main);
                let (cause, finished) = tokio::select! {
                    joined = &mut main => (ShutdownCause::MainReturned, Some(joined)),
                    signal = first_signal() => (ShutdownCause::Signal(signal), None),
                    reason = token.cancelled() => (ShutdownCause::Cancelled(reason), None),
                };
                let began = Instant::now();
                // The parts first: each counts what runs now, before the server-wide cancel
                // reaches the jobs tied to it and lets them return uncounted.
                let shutdowns: Vec<_> = parts.iter().map(|part| part.shutdown(grace)).collect();
                source.cancel(CancelReason::Shutdown);
                let drain = async {
                    if let Some(joined) = finished {
                        return Some(joined);
                    }
                    match began.checked_add(grace) {
                        Some(until) => tokio::time::timeout_at(until.into(), &mut main).await.ok(),
                        None => Some((&mut main).await),
                    }
                };
                let mut report = ShutdownReport::new(grace, Duration::ZERO);
                let (joined, reports) = tokio::join!(drain, join_all(shutdowns));
                for part in reports {
                    report.merge(part);
                }
                if joined.is_none() {
                    main.abort();
                }
                (cause, began, joined, report)
            })
        }));
        let (cause, began, joined, mut shutdown) = match outcome {
            Ok(done) => done,
            // A panic of ours (or of a part's shutdown): the guard lets the runtime go without
            // waiting for stuck blocking threads, and the panic goes on.
            Err(payload) => resume_unwind(payload),
        };
        guard.deadline = began.checked_add(grace);
        drop(guard);
        shutdown.elapsed = began.elapsed();
        let drained = joined.is_some();
        let report = ServerReport {
            cause,
            drained,
            shutdown,
        };
        match joined {
            Some(Ok(Ok(()))) | None => Ok(report),
            Some(Ok(Err(error))) => Err(ServerError { error, report }),
            // `main` panicked: the service is shut down; the panic is the caller's to see.
            Some(Err(joined)) => match joined.try_into_panic() {
                Ok(payload) => resume_unwind(payload),
                // Only an abort cancels the task, and it is aborted only when it did not drain.
                Err(_) => Ok(report),
            },
        }
    }
}

/// A scope on `handle`'s blocking pool, tied to `token`.
fn new_scope(handle: &Handle, token: &CancelToken, max: Option<NonZeroUsize>) -> NativeScope {
    let scope = NativeScope::with_spawner(TokioSpawner::new(handle.clone())).child_of(token);
    match max {
        Some(max) => scope.with_max_running(max),
        None => scope,
    }
}

/// Awaits every shutdown. They began when they were made, so awaiting them one after another
/// takes as long as the slowest.
async fn join_all(futures: Vec<tethered::ShutdownFuture>) -> Vec<ShutdownReport> {
    let mut reports = Vec::with_capacity(futures.len());
    for future in futures {
        reports.push(future.await);
    }
    reports
}

/// Lets the runtime go within the deadline, on every way out of `run` (an unwind included):
/// `Runtime`'s own drop would wait for every blocking thread, forever for a stuck one.
struct RuntimeGuard {
    runtime: Option<Runtime>,
    /// `None` until the shutdown began: an unwind before that lets go at once.
    deadline: Option<Instant>,
}

impl Drop for RuntimeGuard {
    fn drop(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        let left = self.deadline.map_or(Duration::ZERO, |until| {
            until.saturating_duration_since(Instant::now())
        });
        runtime.shutdown_timeout(left);
    }
}

impl Drop for Server {
    /// A server dropped without running: its jobs are cancelled (its scopes close) and its
    /// runtime is let go without waiting for stuck blocking threads.
    fn drop(&mut self) {
        self.source.cancel(CancelReason::Shutdown);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("token", &self.token)
            .field("jobs", &self.scope.len())
            .field("parts", &self.parts.len())
            .finish_non_exhaustive()
    }
}
