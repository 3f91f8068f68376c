//! [`BoxError`]: the error of the services that may stop a call.

/// The errors of a [`ClientTokenService`](crate::ClientTokenService) (and of a
/// [`TokenBody`](crate::TokenBody)): the inner service's, or the stop of a call whose token was
/// cancelled first (boxed, as tower's `BoxError`): a [`CallStopped`](crate::CallStopped)
/// carrying the reason (`downcast_ref::<CallStopped>()`), or, for a gRPC call with the `tonic`
/// feature, a `tonic::Status` (`DEADLINE_EXCEEDED` for
/// [`CancelReason::Timeout`](tethered::CancelReason::Timeout), `CANCELLED` otherwise), which a
/// tonic client returns as it is, where it would make any other error `UNKNOWN`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
