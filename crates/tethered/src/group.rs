//! [`JobGroup`]: a fail-fast set of jobs, collected as they finish; the first failure cancels
//! the rest with a reason that names it (Go's `errgroup`, Kotlin's `coroutineScope`).
//!
//! # Invariants
//!
//! 1. A member is in `members` from its insertion until `join_next` hands its result out;
//!    its index is in the ready queue whenever its handle may have progressed since it was
//!    last polled (it was just inserted, or its waker was woken). An index may be in the queue
//!    more than once, or stay after its member left (or its slot was reused): polling a
//!    pending or absent member is harmless.
//! 2. `failed` is set once, by the first member whose result is a failure; from then on every
//!    member still running has been cancelled with [`CancelReason::Failed`] and that cause.
//! 3. No user code (a waker, a handle's drop) runs while the ready queue's lock is held.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

use crate::contain::drop_contained;
use crate::error::NativeError;
use crate::job_id::JobId;
use crate::native::Tethered;
use crate::native::{AbortableNative, spawn};
use crate::options::{JobOptions, Placement};
use crate::reason::{CancelReason, Cause};
use crate::spawn_error::SpawnError;
use crate::sync::{self, Arc, Mutex};
use crate::token::{CancelSource, CancelToken};

/// What a member of a [`JobGroup`] resolves to: its handle's result, with the error a closure
/// returned shared behind an `Arc`: a failure is also the cause its siblings read
/// ([`GroupFailure::error`]), the same value.
pub type Joined<T, E> = Result<Result<T, Arc<E>>, NativeError<Result<T, Arc<E>>>>;

/// A fail-fast group of jobs whose closures return `Result<T, E>`: the first to fail (return
/// `Err`, or panic) cancels every other with [`CancelReason::Failed`] and a [`Cause`] that names
/// it ([`GroupFailure`]), and results are collected as they come with
/// [`join_next`](Self::join_next), as tokio's `JoinSet` does.
///
/// Each result reads as its handle's would: the failing job's own `Ok(Err(e))` or
/// `Err(NativeError::Panicked(..))`, and its siblings' `Err(NativeError::Cancelled { reason:
/// Failed, .. })` with what each returned. The error a closure returned comes back shared
/// (`Arc<E>`, an `Error` too): the first one is also the source of the siblings' cause, so
/// they can read what failed, typed ([`Cause::downcast_ref`] finds it), as `cancel_with_cause`
/// gives its error itself. Dropping the group cancels every job still in it
/// with [`CancelReason::Dropped`]; a cancel from outside (a parent token, [`cancel_all`](Self::cancel_all))
/// is not a failure.
///
/// ```
/// use tethered::{CancelReason, JobGroup, JobOptions};
///
/// let mut group = JobGroup::new();
/// group.spawn(JobOptions::new().name("parse"), |_| Err::<u32, _>(std::fmt::Error))?;
/// group.spawn(JobOptions::new().name("render"), |token| {
///     token.wait(); // runs until the failure stops it
///     Ok(1)
/// })?;
/// let (mut failed, mut stopped) = (0, 0);
/// while let Some(joined) = futures_executor::block_on(group.join_next()) {
///     match joined {
///         Ok(Err(_)) => failed += 1, // "parse" failed (its error, shared: an `Arc<fmt::Error>`)...
///         Err(stop) => {
///             // ...which stopped "render", with a cause that names "parse".
///             assert_eq!(stop.cancel_reason(), Some(CancelReason::Failed));
///             assert!(stop.cause().unwrap().to_string().contains("\"parse\" failed"));
///             stopped += 1;
///         }
///         Ok(Ok(_)) => unreachable!("render only returns when stopped"),
///     }
/// }
/// assert_eq!((failed, stopped), (1, 1));
/// assert_eq!(group.failure().unwrap().name(), Some("parse"));
/// # Ok::<(), tethered::SpawnError>(())
/// ```
pub struct JobGroup<T, E> {
    /// Members by index; `None` for a free slot (listed in `free`).
    members: Vec<Option<Member<T, E>>>,
    free: Vec<usize>,
    len: usize,
    ready: Arc<Ready>,
    parent: Option<CancelToken>,
    /// The first failure (invariant 2).
    failed: Option<Arc<GroupFailure>>,
}

struct Member<T, E> {
    handle: AbortableNative<Result<T, E>>,
    waker: Waker,
}

/// The indices of members to poll, and the waker of whoever waits in `join_next`.
#[derive(Default)]
struct Ready {
    queue: Mutex<(VecDeque<usize>, Option<Waker>)>,
}

/// A member's waker: queues the member and wakes the group's waiter.
struct MemberWaker {
    ready: Arc<Ready>,
    index: usize,
}

impl Wake for MemberWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let waiter = {
            let mut queue = sync::lock(&self.ready.queue);
            queue.0.push_back(self.index);
            queue.1.take()
        };
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

/// The cause a [`JobGroup`] cancels the other members with when one fails: which job failed,
/// and how, with the error it returned (or its panic's message) as its
/// [`source`](std::error::Error::source). Read it from a cancelled sibling's token or error:
/// [`Cause::downcast_ref`] finds the `GroupFailure`, and the job's own error type too, which is
/// this failure's source.
///
/// ```
/// use tethered::{GroupFailure, JobGroup, JobOptions, Tethered};
///
/// let mut group = JobGroup::new();
/// let (seen_tx, seen) = std::sync::mpsc::channel();
/// let (started_tx, started) = std::sync::mpsc::channel();
/// group.spawn(JobOptions::new(), move |token| {
///     started_tx.send(()).unwrap();
///     token.wait();
///     let cause = token.cause().unwrap();
///     let failure = cause.downcast_ref::<GroupFailure>().unwrap();
///     // The error the failing job returned, typed: the failure's source.
///     let refused = cause.downcast_ref::<std::io::Error>().unwrap();
///     seen_tx.send((failure.to_string(), refused.kind())).unwrap();
///     Ok(())
/// })?;
/// // Once it runs: a job cancelled before it starts is never run at all.
/// started.recv().unwrap();
/// group.spawn(JobOptions::new().name("fetch"), |_| {
///     Err::<(), _>(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused"))
/// })?;
/// while futures_executor::block_on(group.join_next()).is_some() {}
/// let (failure, kind) = seen.recv().unwrap();
/// assert!(failure.ends_with("\"fetch\" failed: refused"));
/// assert_eq!(kind, std::io::ErrorKind::ConnectionRefused);
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[derive(Clone, Debug)]
pub struct GroupFailure {
    job: JobId,
    name: Option<Arc<str>>,
    /// The job's error (the same value its result holds), or its panic's message.
    error: Cause,
}

impl GroupFailure {
    /// The job that failed.
    pub fn job(&self) -> JobId {
        self.job
    }

    /// Its name, if it had one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// How it failed: the error its closure returned (the same value as in its result), or,
    /// if it panicked, the panic's message. Also this failure's
    /// [`source`](std::error::Error::source).
    pub fn error(&self) -> &Cause {
        &self.error
    }
}

impl fmt::Display for GroupFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "job {} \"{name}\" failed: {}", self.job, self.error),
            None => write!(f, "job {} failed: {}", self.job, self.error),
        }
    }
}

impl std::error::Error for GroupFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.error.as_error())
    }
}

impl<T, E> JobGroup<T, E>
where
    T: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    /// An empty group.
    pub fn new() -> Self {
        JobGroup {
            members: Vec::new(),
            free: Vec::new(),
            len: 0,
            ready: Arc::new(Ready::default()),
            parent: None,
            failed: None,
        }
    }

    /// An empty group whose jobs are all children of `parent` (a request's token, say): it
    /// cancels them with its reason, which is not a failure.
    pub fn child_of(parent: &CancelToken) -> Self {
        let mut group = JobGroup::new();
        group.parent = Some(parent.clone());
        group
    }

    /// Starts `f` as [`spawn`](crate::spawn) does, with `options`, as a member of the group
    /// (a child of the group's parent, if it has one). A job added after a failure starts
    /// cancelled, and its closure never runs.
    ///
    /// # Errors
    ///
    /// [`spawn`](crate::spawn)'s.
    pub fn spawn<P, F>(&mut self, options: JobOptions<P>, f: F) -> Result<JobId, SpawnError>
    where
        P: Placement,
        F: FnOnce(CancelToken) -> Result<T, E> + Send + 'static,
    {
        let options = match &self.parent {
            Some(parent) => options.child_of(parent),
            None => options,
        };
        // After a failure the job starts cancelled, so its closure never runs (cancelling its
        // handle once spawned would race a thread that picks it up at once).
        let failed = self.failed.as_ref().map(|failure| {
            let failed = CancelSource::new();
            failed.cancel_with_cause(CancelReason::Failed, Cause::from_arc(failure.clone()));
            failed
        });
        let options = match &failed {
            Some(failed) => options.child_of(&failed.token()),
            None => options,
        };
        let handle = spawn(options, f)?;
        Ok(self.insert(handle))
    }

    /// Adds a job started elsewhere (an adapter's `spawn_native`, a scope) to the group.
    pub fn insert(&mut self, handle: AbortableNative<Result<T, E>>) -> JobId {
        let id = handle.id();
        if let Some(failure) = &self.failed {
            handle.cancel_with_cause(CancelReason::Failed, Cause::from_arc(failure.clone()));
        }
        let index = self.free.pop().unwrap_or(self.members.len());
        let waker = Waker::from(Arc::new(MemberWaker {
            ready: self.ready.clone(),
            index,
        }));
        let member = Some(Member { handle, waker });
        if index == self.members.len() {
            self.members.push(member);
        } else {
            self.members[index] = member;
        }
        self.len += 1;
        sync::lock(&self.ready.queue).0.push_back(index);
        id
    }

    /// How many jobs are in the group (not yet handed out by `join_next`).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the group has no job left.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first failure, once a member failed.
    pub fn failure(&self) -> Option<&GroupFailure> {
        self.failed.as_deref()
    }

    /// Cancels every job in the group with `reason` (not a failure: the group's failure stays
    /// unset).
    pub fn cancel_all(&self, reason: CancelReason) {
        for member in self.members.iter().flatten() {
            member.handle.cancel(reason);
        }
    }

    /// Waits for the next job to finish and gives its result, or `None` once the group is
    /// empty. Cancel safe: a result that is ready is never lost by dropping the future.
    pub fn join_next(&mut self) -> JoinNext<'_, T, E> {
        JoinNext { group: self }
    }

    /// [`join_next`](Self::join_next), with the job's id.
    pub fn join_next_with_id(&mut self) -> JoinNextWithId<'_, T, E> {
        JoinNextWithId { group: self }
    }

    /// Polls for the next finished job.
    #[expect(
        clippy::missing_panics_doc,
        reason = "a member is taken only when its index was just popped: the expect never fires"
    )]
    pub fn poll_join_next_with_id(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(JobId, Joined<T, E>)>> {
        if self.len == 0 {
            return Poll::Ready(None);
        }
        loop {
            let next = {
                let mut queue = sync::lock(&self.ready.queue);
                match queue.0.pop_front() {
                    Some(index) => Ok(index),
                    None => {
                        // Registered under the lock a member's wake takes (invariant 3).
                        let replaced = match &queue.1 {
                            Some(stored) if stored.will_wake(cx.waker()) => None,
                            _ => queue.1.replace(cx.waker().clone()),
                        };
                        Err(replaced)
                    }
                }
            };
            let index = match next {
                Ok(index) => index,
                Err(replaced) => {
                    drop_contained(replaced);
                    return Poll::Pending;
                }
            };
            let Some(Some(member)) = self.members.get_mut(index) else {
                continue;
            };
            let mut member_cx = Context::from_waker(&member.waker);
            let Poll::Ready(result) = Pin::new(&mut member.handle).poll(&mut member_cx) else {
                continue;
            };
            let member = self.members[index].take().expect("polled just now");
            self.free.push(index);
            self.len -= 1;
            let id = member.handle.id();
            let name = member.handle.name().map(Arc::from);
            drop(member);
            let result = shared(result);
            if self.failed.is_none() {
                if let Some(error) = failure(&result) {
                    self.fail(GroupFailure {
                        job: id,
                        name,
                        error,
                    });
                }
            }
            return Poll::Ready(Some((id, result)));
        }
    }

    /// The first failure: every other member is cancelled with it (invariant 2).
    fn fail(&mut self, failure: GroupFailure) {
        let failure = Arc::new(failure);
        self.failed = Some(failure.clone());
        let cause = Cause::from_arc(failure);
        for member in self.members.iter().flatten() {
            member
                .handle
                .cancel_with_cause(CancelReason::Failed, cause.clone());
        }
    }
}

/// A member's result with its closure's error put behind an `Arc`, to be shared with the
/// failure its siblings read.
fn shared<T, E>(result: Result<Result<T, E>, NativeError<Result<T, E>>>) -> Joined<T, E> {
    match result {
        Ok(value) => Ok(value.map_err(Arc::new)),
        Err(err) => Err(err.map_returned(|value| value.map_err(Arc::new))),
    }
}

/// How a member's result failed, if it did: its own error (the same `Arc`), or a panic's
/// message. A stop is no failure.
fn failure<T, E>(result: &Joined<T, E>) -> Option<Cause>
where
    E: std::error::Error + Send + Sync + 'static,
{
    match result {
        Ok(Err(error)) => Some(Cause::from_arc(error.clone())),
        Err(NativeError::Panicked(panic)) => Some(Cause::msg(format!("panicked: {panic}"))),
        _ => None,
    }
}

impl<T, E> Default for JobGroup<T, E>
where
    T: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    fn default() -> Self {
        JobGroup::new()
    }
}

impl<T, E> fmt::Debug for JobGroup<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobGroup")
            .field("len", &self.len)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

/// The future of [`JobGroup::join_next`].
#[must_use = "futures do nothing unless polled"]
pub struct JoinNext<'a, T, E> {
    group: &'a mut JobGroup<T, E>,
}

impl<T, E> Future for JoinNext<'_, T, E>
where
    T: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    type Output = Option<Joined<T, E>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.group
            .poll_join_next_with_id(cx)
            .map(|next| next.map(|(_, result)| result))
    }
}

impl<T, E> fmt::Debug for JoinNext<'_, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinNext").finish_non_exhaustive()
    }
}

/// The future of [`JobGroup::join_next_with_id`].
#[must_use = "futures do nothing unless polled"]
pub struct JoinNextWithId<'a, T, E> {
    group: &'a mut JobGroup<T, E>,
}

impl<T, E> Future for JoinNextWithId<'_, T, E>
where
    T: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    type Output = Option<(JobId, Joined<T, E>)>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.group.poll_join_next_with_id(cx)
    }
}

impl<T, E> fmt::Debug for JoinNextWithId<'_, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinNextWithId").finish_non_exhaustive()
    }
}
