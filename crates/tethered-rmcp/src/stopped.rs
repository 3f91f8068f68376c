//! [`CallStopped`]: how a tool call's job ended early, as a tool error an MCP client can act on.

use std::fmt;

use rmcp::ErrorData;
use rmcp::model::{ContentBlock, IntoContents};
use tethered::{CancelReason, Cause, JobId, NativeError, SpawnError};

/// A tool call whose native job did not finish: it was stopped (the call ended early, or the
/// server's limit passed, or the server shuts down), it panicked, or it could not start.
///
/// A tool returns it as its error (`Result<T, CallStopped>`): rmcp answers with a tool error
/// (`isError: true`) whose text says what happened in words a client can act on:
///
/// | What ended the call | The answer's text |
/// | --- | --- |
/// | the client's cancel, its timeout, its disconnect, its closed session | `cancelled by the client` (the client never reads it: rmcp drops the answer of a cancelled call) |
/// | the server's own limit ([`ToolJobs::timeout`](crate::ToolJobs::timeout)) | `timed out: the call took longer than the server allows` |
/// | the server's shutdown | `server shutting down: the call was stopped; try again later` |
/// | the job panicked | `the tool failed: it panicked (…)` |
/// | the job could not start | `the tool could not start: …` |
///
/// For a tool that answers `Result<_, ErrorData>`, `?` turns it into a JSON-RPC internal
/// error with the same text.
///
/// ```
/// use tethered::CancelReason;
/// use tethered_rmcp::CallStopped;
///
/// fn answer(stopped: &CallStopped) -> String {
///     match stopped.reason() {
///         Some(CancelReason::Shutdown) => "retry on another server".into(),
///         _ => stopped.to_string(),
///     }
/// }
/// # let _ = answer;
/// ```
#[derive(Clone, Debug)]
pub struct CallStopped {
    tool: String,
    job: Option<JobId>,
    what: What,
}

#[derive(Clone, Debug)]
enum What {
    /// Cancelled, with this reason and cause.
    Cancelled(CancelReason, Option<Cause>),
    /// The job panicked, with this message.
    Panicked(String),
    /// The job did not start: the spawn's error, in one line.
    NotStarted(String),
}

impl CallStopped {
    pub(crate) fn stopped(tool: &str, job: JobId, err: NativeError<()>) -> Self {
        let what = match err {
            NativeError::Panicked(panic) => {
                What::Panicked(panic.message().unwrap_or("a panic").to_owned())
            }
            other => What::Cancelled(
                other.cancel_reason().unwrap_or(CancelReason::Requested),
                other.cause().cloned(),
            ),
        };
        CallStopped {
            tool: tool.to_owned(),
            job: Some(job),
            what,
        }
    }

    pub(crate) fn not_started(tool: &str, err: &SpawnError) -> Self {
        CallStopped {
            tool: tool.to_owned(),
            job: None,
            what: What::NotStarted(tethered::__private::error_chain(err)),
        }
    }

    /// Why the job was stopped, if it was (not for a panic or a job that never started).
    pub fn reason(&self) -> Option<CancelReason> {
        match &self.what {
            What::Cancelled(reason, _) => Some(*reason),
            What::Panicked(_) | What::NotStarted(_) => None,
        }
    }

    /// The stop's cause, if it gave one (the client's reason text, for a cancel).
    pub fn cause(&self) -> Option<&Cause> {
        match &self.what {
            What::Cancelled(_, cause) => cause.as_ref(),
            What::Panicked(_) | What::NotStarted(_) => None,
        }
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The job's id, if it started.
    pub fn job(&self) -> Option<JobId> {
        self.job
    }
}

impl fmt::Display for CallStopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.what {
            What::Cancelled(CancelReason::Timeout, _) => {
                f.write_str("timed out: the call took longer than the server allows")
            }
            What::Cancelled(CancelReason::Shutdown, _) => {
                f.write_str("server shutting down: the call was stopped; try again later")
            }
            What::Cancelled(CancelReason::Failed, Some(cause)) => {
                write!(f, "stopped: {cause}")
            }
            What::Cancelled(_, _) => f.write_str("cancelled by the client"),
            What::Panicked(message) => write!(f, "the tool failed: it panicked ({message})"),
            What::NotStarted(why) => write!(f, "the tool could not start: {why}"),
        }
    }
}

impl std::error::Error for CallStopped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause().map(Cause::as_error).map(|e| e as _)
    }
}

/// A tool's error (`Result<T, CallStopped>`) becomes a tool error whose text is this one's.
impl IntoContents for CallStopped {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.to_string())]
    }
}

/// For a tool that answers `Result<_, ErrorData>`: a JSON-RPC internal error with the same text.
impl From<CallStopped> for ErrorData {
    fn from(stopped: CallStopped) -> Self {
        ErrorData::internal_error(stopped.to_string(), None)
    }
}
