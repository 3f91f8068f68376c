//! A thread blocked waiting for a child process, ended on cancel (here its deadline,
//! `cancel_after`) by killing the child, without ever signalling a pid that may belong to another
//! process by then. The job blocks in `waitid(WEXITED | WNOWAIT)`, which returns once the child
//! has exited but leaves it unreaped, so its pid stays its own; a kill armed with `token.arm`
//! runs on cancel; and the job reaps the child only after it has disarmed that kill, which gives
//! the `Child` back. (The `subprocess` example adds a process group, SIGTERM and a grace period.)
//!
//! Run with: cargo run --example unblock_child_wait

#[cfg(target_os = "linux")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("this example needs waitid(WNOWAIT) on Linux");
}

#[cfg(target_os = "linux")]
pub(crate) mod linux {
    use std::io;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Child, Command, ExitStatus};
    use std::time::{Duration, Instant};

    use nix::errno::Errno;
    use nix::sys::signal::Signal;
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    use nix::unistd::Pid;
    use tethered::{CancelReason, CancelToken, NativeError, Tethered};

    /// How long the child may run.
    const DEADLINE: Duration = Duration::from_millis(200);

    /// Waits for `child` to exit, or kills it once `token` is cancelled; returns its status
    /// after reaping it (no zombie is left either way).
    pub(crate) fn wait_or_kill(child: Child, token: &CancelToken) -> io::Result<ExitStatus> {
        let pid = Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?);
        // The kill, armed: a cancel runs it once, from the cancelling thread, while this thread
        // blocks below. The child is not reaped before it is disarmed, so its pid is still its
        // own; and std's `kill` refuses a child it has reaped anyway.
        let armed = token.arm(child, |child, _reason| {
            let _ = child.kill();
        });
        // Blocks until the child has exited (by itself or killed), leaving it a zombie: a kill
        // that comes before this call, or while it blocks, ends it all the same.
        loop {
            match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                Ok(_) => break,
                Err(Errno::EINTR) => continue,
                Err(errno) => return Err(errno.into()),
            }
        }
        // Disarm first (this waits for a kill that is running, and no kill comes after), then
        // reap: from here on the pid may be reused, and nothing will signal it.
        let mut child = armed.disarm();
        child.wait() // at once: it has exited
    }

    #[tokio::main]
    pub(crate) async fn main() -> Result<(), Box<dyn std::error::Error>> {
        // Exits by itself before the deadline: `Ok`, with what the closure returned.
        let quick = Command::new("true").spawn()?;
        let job = tethered_tokio::spawn_native(move |token| wait_or_kill(quick, &token));
        job.cancel_after(DEADLINE)?;
        println!("`true`: {}", job.await??);

        let child = Command::new("sleep").arg("60").spawn()?;
        let pid = child.id();
        println!("`sleep 60` (pid {pid}), waited for with a {DEADLINE:?} deadline");
        let started = Instant::now();
        let job = tethered_tokio::spawn_native(move |token| wait_or_kill(child, &token));
        // At the deadline the job's token is cancelled with `Timeout`, and the armed kill runs;
        // awaiting the job waits until the child is reaped.
        job.cancel_after(DEADLINE)?;
        let token = job.token().clone();
        let status = job.await;
        let deadline = token.deadline().ok_or("the job has a deadline")?;
        let cancel_to_return = deadline.elapsed();
        // The deadline stopped the job, and the closure returned the killed child's status.
        let status = match status {
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: Some(status),
                ..
            }) => (*status)?,
            other => return Err(format!("`sleep 60` outlasts the deadline: {other:?}").into()),
        };
        assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
        println!(
            "the wait ended after {:.1?}: {status}, reaped",
            started.elapsed()
        );
        println!("cancel to return: {cancel_to_return:.2?}");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok();
        println!(
            "pid {pid} in /proc: {}",
            if zombie {
                "still there"
            } else {
                "gone (no zombie)"
            }
        );
        Ok(())
    }
}
