//! [`Builder`]: where a job runs, its name and its parent token, then the awaitable.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyCFunction;
use tethered::{AbortableNative, CancelToken, NativeScope, SpawnError, Spawner, ThreadSpawner};

use crate::blocking::{self, Limits};
use crate::event_loop::{loop_token, running_loop};
use crate::exit;
use crate::glue::glue;
use crate::into_py_result::IntoPyResult;
use crate::link::{Link, reason_from_message};
use crate::outcome::Convert;

/// Spawns a native job with options: a name, a parent token, a spawner or a scope.
///
/// [`spawn_native`](crate::spawn_native) and [`spawn_native_joined`](crate::spawn_native_joined)
/// are `Builder::new().spawn(..)` and `Builder::new().spawn_joined(..)`.
///
/// ```no_run
/// use pyo3::prelude::*;
/// use tethered::{CancelToken, NativeScope};
///
/// /// One scope for the module: `shutdown()` below cancels every job it runs.
/// static SCOPE: std::sync::LazyLock<NativeScope> =
///     std::sync::LazyLock::new(|| NativeScope::new().with_max_running(4));
///
/// #[pyfunction]
/// fn render(py: Python<'_>, scene: String) -> PyResult<Bound<'_, PyAny>> {
///     tethered_pyo3::Builder::new()
///         .name("render")     // the thread's name, in reports and traces
///         .scope(&SCOPE)      // at most 4 at a time; queued ones never start if cancelled
///         .spawn(py, move |token: CancelToken| {
///             let mut frames = 0u32;
///             while !token.is_cancelled() && frames < 1_000 {
///                 frames += 1; // render one frame of `scene`
///             }
///             (scene, frames)
///         })
/// }
///
/// #[pyfunction]
/// fn shutdown() {
///     SCOPE.cancel_all(tethered::CancelReason::Shutdown);
/// }
/// ```
#[derive(Clone, Default)]
#[must_use = "a builder does nothing until `spawn` or `spawn_joined` is called"]
pub struct Builder<'a> {
    name: Option<Arc<str>>,
    parent: Option<CancelToken>,
    place: Place<'a>,
    limits: Limits,
}

#[derive(Clone, Copy, Default)]
enum Place<'a> {
    /// A new thread per job ([`ThreadSpawner`]).
    #[default]
    Thread,
    Spawner(&'a dyn Spawner),
    Scope(&'a NativeScope),
}

impl<'a> Builder<'a> {
    /// A job on a new thread of its own, with no name and no parent.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Names the job: its thread's name on the default spawner, and its name in the core's
    /// reports and traces.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Ties the job to an outer token too: cancelling `parent` cancels the job with the
    /// parent's reason.
    pub fn child_of(mut self, parent: &CancelToken) -> Self {
        self.parent = Some(parent.clone());
        self
    }

    /// Runs the job through `spawner` (e.g. a pool) instead of a new thread.
    pub fn spawner<S: Spawner>(mut self, spawner: &'a S) -> Self {
        self.place = Place::Spawner(spawner);
        self
    }

    /// Runs the job in `scope`, which bounds, cancels and reports it with its other jobs.
    pub fn scope(mut self, scope: &'a NativeScope) -> Self {
        self.place = Place::Scope(scope);
        self
    }

    /// For [`run`](Self::run) (a synchronous call): cancels the job with
    /// [`CancelReason::Timeout`](tethered::CancelReason::Timeout) once `timeout` has passed,
    /// and raises `TimeoutError` once it returned (within the grace). The awaitables of
    /// [`spawn`](Self::spawn) take asyncio's own timeouts instead.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.limits.timeout = Some(timeout);
        self
    }

    /// For [`run`](Self::run): how long a call that was interrupted (or timed out) waits for
    /// the cancelled closure to return before it raises anyway, leaving the closure to return
    /// by itself (counted in `stats().detached` until then). Unset, it waits as long as the
    /// closure takes; a second Ctrl-C raises at once either way.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.limits.grace = Some(grace);
        self
    }

    /// Runs `f` on a native thread while this thread, the interpreter's, waits for it: the
    /// synchronous twin of [`spawn`](Self::spawn), for a plain `#[pyfunction]`. See
    /// [`run_native`](crate::run_native).
    ///
    /// # Errors
    ///
    /// As [`run_native`](crate::run_native).
    pub fn run<T, F>(self, py: Python<'_>, f: F) -> PyResult<T>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let limits = self.limits;
        let job = self.spawn_job(f).map_err(|err| {
            PyRuntimeError::new_err(format!("the native job did not start: {err}"))
        })?;
        blocking::wait(py, job, limits)
    }

    /// Starts `f` on a native thread and returns a coroutine of its outcome, bound to the
    /// running loop; see [`spawn_native`](crate::spawn_native).
    ///
    /// # Errors
    ///
    /// `RuntimeError` when no event loop runs on this thread, or the spawner refused the job.
    pub fn spawn<'py, F, R, M>(self, py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoPyResult<M>,
    {
        self.call(py, f, false)
    }

    /// Starts `f` on a native thread and returns an awaitable whose cancellation completes
    /// only once `f` has returned; see [`spawn_native_joined`](crate::spawn_native_joined).
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub fn spawn_joined<'py, F, R, M>(self, py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoPyResult<M>,
    {
        self.call(py, f, true)
    }

    /// Starts the job, for the async library that runs the caller, and returns its awaitable:
    /// one code path per library, chosen here.
    fn call<'py, F, R, M>(self, py: Python<'py>, f: F, joined: bool) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoPyResult<M>,
    {
        if exit::exiting() {
            return Err(PyRuntimeError::new_err(
                "the interpreter is exiting (its atexit handlers are running, after \
                 tethered-pyo3's own, which cancelled every native job): no native job starts \
                 now, since nothing could deliver its outcome",
            ));
        }
        let glue = glue(py)?;
        let library = glue.running_library.bind(py).call0()?;
        let library = if library.is_none() {
            None
        } else {
            Some(library.extract::<String>()?)
        };
        match library.as_deref() {
            Some("asyncio") => self.call_asyncio(py, f, joined),
            Some("trio") => self.call_trio(py, f, joined),
            _ => Err(PyRuntimeError::new_err(
                "no running asyncio event loop or trio run on this thread: a tethered native \
                 job is awaited where it starts, so call this function from a coroutine that \
                 asyncio or trio runs (directly or through anyio); from synchronous code, use \
                 run_native",
            )),
        }
    }

    /// asyncio: a future of the running loop, wrapped in the awaitable both variants return.
    fn call_asyncio<'py, F, R, M>(
        self,
        py: Python<'py>,
        f: F,
        joined: bool,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoPyResult<M>,
    {
        let event_loop = running_loop(py)?;
        let loop_token = loop_token(py, &event_loop)?;
        let future = event_loop.call_method0("create_future")?;
        let job = self.start_job(f)?;
        let link = Link::tie(py, job, &loop_token, &future)?;
        glue(py)?
            .call
            .bind(py)
            .call1((future, cancel_function(py, link)?, joined))
    }

    /// trio (directly or as anyio's backend): a coroutine that waits in
    /// `wait_task_rescheduled`, woken through the run's trio token.
    fn call_trio<'py, F, R, M>(
        self,
        py: Python<'py>,
        f: F,
        joined: bool,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoPyResult<M>,
    {
        let exit = exit::exit_token(py)?;
        let glue = glue(py)?;
        let state = glue.trio_state.bind(py).call0()?;
        let job = self.start_job(f)?;
        let link = Link::tie_trio(py, job, &exit, &state)?;
        glue.trio_wait
            .bind(py)
            .call1((state, cancel_function(py, link)?, joined))
    }

    /// Spawns the job whose closure's value the delivery converts under the GIL.
    fn start_job<F, R, M>(&self, f: F) -> PyResult<AbortableNative<Convert>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoPyResult<M>,
    {
        self.spawn_job(move |token| -> Convert {
            let value = f(token);
            Box::new(move |py: Python<'_>| value.into_py_result(py))
        })
        .map_err(|err| PyRuntimeError::new_err(format!("the native job did not start: {err}")))
    }

    fn spawn_job<T, F>(&self, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let mut job = AbortableNative::builder();
        if let Some(name) = &self.name {
            job = job.name(name.clone());
        }
        if let Some(parent) = &self.parent {
            job = job.child_of(parent);
        }
        match self.place {
            Place::Thread => job.spawn_on(&ThreadSpawner::new(), f),
            Place::Spawner(spawner) => job.spawn_on(spawner, f),
            Place::Scope(scope) => job.spawn_in(scope, f),
        }
    }
}

impl fmt::Debug for Builder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = match self.place {
            Place::Thread => "a new thread",
            Place::Spawner(_) => "a spawner",
            Place::Scope(_) => "a scope",
        };
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("child_of", &self.parent)
            .field("runs_on", &place)
            .field("timeout", &self.limits.timeout)
            .field("grace", &self.limits.grace)
            .finish()
    }
}

/// `cancel(message or None)`: what the awaitable calls to cancel the job.
fn cancel_function(py: Python<'_>, link: Arc<Link>) -> PyResult<Bound<'_, PyCFunction>> {
    PyCFunction::new_closure(
        py,
        Some(c"tethered_pyo3_cancel"),
        Some(c"Cancels the native job: cancel(message or None)."),
        move |args, _kwargs| {
            let message = args.get_item(0).ok();
            link.cancel(reason_from_message(message.as_ref()));
        },
    )
}
