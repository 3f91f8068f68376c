//! [`Builder`]: where a job runs, its name and its parent token, then the promise.

use std::fmt;
use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{Object, PromiseRaw};
use tethered::{AbortableNative, CancelToken, NativeScope, Spawner, ThreadSpawner};

use crate::job::{self, Start};
use crate::output::IntoJsResult;

/// Starts a native job with options: a name, a parent token, a spawner or a scope.
///
/// [`spawn_native`](crate::spawn_native) and [`spawn_native_joined`](crate::spawn_native_joined)
/// are `Builder::new().spawn(..)` and `Builder::new().spawn_joined(..)`.
///
/// ```
/// use std::sync::LazyLock;
/// use napi::Env;
/// use napi::bindgen_prelude::{Object, PromiseRaw};
/// use tethered::{CancelToken, NativeScope};
///
/// /// One scope for the addon: at most 4 renders at a time, and `shutdown()` stops them all.
/// static RENDERS: LazyLock<NativeScope> = LazyLock::new(|| NativeScope::new().with_max_running(4));
///
/// /// `render(frames, signal?)`: a promise of the frames rendered.
/// fn render<'env>(
///     env: &'env Env,
///     frames: u32,
///     signal: Option<Object<'env>>,
/// ) -> napi::Result<PromiseRaw<'env, u32>> {
///     tethered_napi::Builder::new()
///         .name("render") // the thread's name, in reports and traces
///         .scope(&RENDERS) // queued ones never start if their signal fires first
///         .spawn(env, signal, move |token: CancelToken| {
///             let mut done = 0;
///             while done < frames && !token.is_cancelled() {
///                 done += 1; // render one frame
///             }
///             done
///         })
/// }
///
/// fn shutdown() {
///     RENDERS.cancel_all(tethered::CancelReason::Shutdown);
/// }
/// ```
#[derive(Clone, Default)]
#[must_use = "a builder does nothing until `spawn` or `spawn_joined` is called"]
pub struct Builder<'a> {
    name: Option<Arc<str>>,
    parent: Option<CancelToken>,
    place: Place<'a>,
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
    /// parent's reason (and rejects its promise, as any cancel does).
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

    /// Starts `f` on a native thread and returns a promise of its value that rejects at once
    /// when the job is cancelled; see [`spawn_native`](crate::spawn_native).
    ///
    /// # Errors
    ///
    /// An `InvalidArg` error when `signal` is no `AbortSignal`; an error when
    /// the environment is shutting down or Node-API refuses a call. A spawner or scope that
    /// refuses the job rejects the promise instead.
    pub fn spawn<'env, F, R, M>(
        self,
        env: &'env Env,
        signal: Option<Object<'env>>,
        f: F,
    ) -> napi::Result<PromiseRaw<'env, R::Value>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoJsResult<M>,
    {
        self.start(env, signal, f, false)
    }

    /// Starts `f` on a native thread and returns a promise that settles only once `f` has
    /// returned, also after a cancel; see [`spawn_native_joined`](crate::spawn_native_joined).
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub fn spawn_joined<'env, F, R, M>(
        self,
        env: &'env Env,
        signal: Option<Object<'env>>,
        f: F,
    ) -> napi::Result<PromiseRaw<'env, R::Value>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoJsResult<M>,
    {
        self.start(env, signal, f, true)
    }

    fn start<'env, F, R, M>(
        self,
        env: &'env Env,
        signal: Option<Object<'env>>,
        f: F,
        joined: bool,
    ) -> napi::Result<PromiseRaw<'env, R::Value>>
    where
        F: FnOnce(CancelToken) -> R + Send + 'static,
        R: IntoJsResult<M>,
    {
        let Builder {
            name,
            parent,
            place,
        } = self;
        let closure = move |token: CancelToken| job::convert(f(token).into_js_result());
        let spawn = move |parent: &tethered::CancelSource| {
            let mut job = AbortableNative::builder().child_of(&parent.token());
            if let Some(name) = name {
                job = job.name(name);
            }
            match place {
                Place::Thread => job.spawn_on(&ThreadSpawner::new(), closure),
                Place::Spawner(spawner) => job.spawn_on(spawner, closure),
                Place::Scope(scope) => job.spawn_in(scope, closure),
            }
        };
        job::start(
            env,
            signal,
            Start {
                joined,
                spawn: Box::new(spawn),
                parent,
            },
        )
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
            .finish()
    }
}
