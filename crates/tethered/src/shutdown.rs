//! [`Shutdown`]: anything that shuts down with a grace and reports what it left running, so
//! that a server stops all of it within one deadline.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::report::ShutdownReport;

/// The future of a [`Shutdown`]: resolves to the report.
pub type ShutdownFuture = Pin<Box<dyn Future<Output = ShutdownReport> + Send + 'static>>;

/// Something that can be shut down within a grace: it stops taking work, cancels what it runs
/// with [`CancelReason::Shutdown`](crate::CancelReason::Shutdown), and resolves, once all of
/// it has stopped or the grace has passed, to a [`ShutdownReport`] that names what is still
/// running. [`NativeScope`](crate::NativeScope) is one; so is `tethered_process::Pool`; a
/// `tethered_server::Server` shuts down every part it was given within one deadline.
///
/// ```
/// use std::time::Duration;
/// use tethered::{NativeScope, Shutdown};
///
/// let scope = NativeScope::new();
/// scope.spawn(|token| token.wait())?.detach();
/// let parts: Vec<Box<dyn Shutdown>> = vec![Box::new(scope)];
/// for part in &parts {
///     let report = futures_executor::block_on(Shutdown::shutdown(&**part, Duration::from_secs(5)));
///     assert!(report.is_clean(), "{report}");
/// }
/// # Ok::<(), tethered::SpawnError>(())
/// ```
pub trait Shutdown: Send + Sync {
    /// Begins the shutdown now (everything is cancelled and no new work is taken before this
    /// returns) and gives a future of its report, ready at the latest `grace` from now.
    fn shutdown(&self, grace: Duration) -> ShutdownFuture;
}

impl<S: Shutdown + ?Sized> Shutdown for std::sync::Arc<S> {
    fn shutdown(&self, grace: Duration) -> ShutdownFuture {
        (**self).shutdown(grace)
    }
}
