//! [`serve_stdio`]: a server over stdin and stdout whose tool calls are tethered, that stops
//! as soon as its calls have stopped when the server shuts down, and whose stdin is never read
//! on tokio's blocking pool (a read there cannot be cancelled, and a runtime's shutdown waits
//! for it).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::service::{QuitReason, ServerInitializeError};
use rmcp::transport::IntoTransport;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

use crate::jobs::ToolJobs;
use crate::transport::Tethered;

/// Serves `handler` over this process's stdin and stdout, with every tool call tethered (see
/// [`Tethered`]), until the client goes (stdin ends: every call still running is stopped at
/// once) or `jobs`' server token is cancelled (a shutdown: every call is stopped with
/// `Shutdown`, rmcp sends their answers, and this returns as soon as the last call returned).
///
/// Run it as the main future of a `tethered_server::Server` to stop on SIGTERM: the process
/// then exits as soon as its jobs have stopped, not at the end of the grace.
///
/// ```no_run
/// use std::time::Duration;
/// # #[derive(Clone)] struct Tools;
/// # impl rmcp::ServerHandler for Tools {}
///
/// let server = tethered_server::Server::new()?;
/// let jobs = tethered_rmcp::ToolJobs::of(&server);
/// let report = server.run(Duration::from_secs(2), tethered_rmcp::serve_stdio(Tools, jobs));
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// When stdin and stdout are pipes (as an MCP client starts a server), they are read and
/// written on tokio's reactor ([`rmcp::transport::stdio_pipes`]); otherwise stdin is read by
/// a thread of its own, which the process's exit ends.
///
/// It returns once the service has ended, however: the client went, the server shut down.
///
/// # Errors
///
/// The MCP initialisation's error (the client spoke no MCP, or went away before it).
pub async fn serve_stdio<H: ServerHandler>(
    handler: H,
    jobs: ToolJobs,
) -> Result<(), ServerInitializeError> {
    let quit = if pipes() {
        serve(handler, jobs, rmcp::transport::stdio_pipes()).await?
    } else {
        serve(handler, jobs, (ThreadStdin::start(), tokio::io::stdout())).await?
    };
    // However the service ended (the client went, the server shut down, a broken pipe), the
    // calls have stopped: nothing for the caller to handle.
    drop(quit);
    Ok(())
}

async fn serve<H, R, W>(
    handler: H,
    jobs: ToolJobs,
    io: (R, W),
) -> Result<QuitReason, ServerInitializeError>
where
    H: ServerHandler,
    R: AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let transport = Tethered::new(
        IntoTransport::<RoleServer, io::Error, _>::into_transport(io),
        &jobs,
    );
    run(handler, jobs, transport).await
}

async fn run<H, T>(
    handler: H,
    jobs: ToolJobs,
    transport: Tethered<T>,
) -> Result<QuitReason, ServerInitializeError>
where
    H: ServerHandler,
    T: rmcp::transport::Transport<RoleServer> + 'static,
{
    let ct = tokio_util::sync::CancellationToken::new();
    let server = jobs.server().clone();
    let service = handler.serve_with_ct(transport, ct.clone()).await?;
    // The server's shutdown cancels rmcp's service after the calls' tokens heard it (they are
    // its descendants), so each call reads `Shutdown`; rmcp then drains their answers, and
    // `waiting` returns once the last call returned.
    let stop = tokio::spawn(async move {
        server.cancelled().await;
        ct.cancel();
    });
    let quit = service.waiting().await;
    stop.abort();
    Ok(quit.unwrap_or(QuitReason::Closed))
}

/// Whether stdin and stdout are both pipes.
fn pipes() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let fifo = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned()
            .map(std::fs::File::from)
            .and_then(|file| file.metadata())
            .is_ok_and(|meta| meta.file_type().is_fifo())
    };
    cfg!(target_os = "linux") && fifo(io::stdin().as_fd()) && fifo(io::stdout().as_fd())
}

/// Stdin read by a thread of its own: a read blocked there holds no runtime's shutdown, and
/// the process's exit ends it.
struct ThreadStdin {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    /// What the last chunk had left.
    rest: Vec<u8>,
    at: usize,
}

impl ThreadStdin {
    fn start() -> ThreadStdin {
        let (send, chunks) = mpsc::channel(4);
        let refused = send.clone();
        let started = std::thread::Builder::new()
            .name("tethered-rmcp-stdin".into())
            .spawn(move || {
                use std::io::Read;
                let mut stdin = io::stdin().lock();
                let mut buf = vec![0; 64 * 1024];
                loop {
                    let read = match stdin.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => Ok(buf[..n].to_vec()),
                        Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                        Err(err) => Err(err),
                    };
                    let failed = read.is_err();
                    if send.blocking_send(read).is_err() || failed {
                        break;
                    }
                }
            });
        if let Err(err) = started {
            // No thread: the first read fails with the OS's refusal.
            let _ = refused.try_send(Err(err));
        }
        ThreadStdin {
            chunks,
            rest: Vec::new(),
            at: 0,
        }
    }
}

impl AsyncRead for ThreadStdin {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at == self.rest.len() {
            match self.chunks.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                // The end of input, or the thread's end.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(err)),
                Poll::Ready(Some(Ok(chunk))) => {
                    self.rest = chunk;
                    self.at = 0;
                }
            }
        }
        let n = buf.remaining().min(self.rest.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.rest[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}
