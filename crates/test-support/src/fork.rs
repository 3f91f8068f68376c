//! [`in_forked_child`]: runs a test body in a real `fork()` of this process.

use std::time::Duration;

/// Runs `body` in a child made by a real `fork()` of this process, as gunicorn's preload,
/// `multiprocessing`'s fork start method and a daemonising service do, and returns the
/// child's exit code: `body`'s return value, 101 if it panicked, or `None` if it was still
/// running `limit` later (it is then killed): a hang shows as a failure, not a stuck test.
///
/// The child ends with `_exit`, without running the parent's exit handlers or unwinding into
/// the test harness.
///
/// # Panics
///
/// If `fork` fails.
#[cfg(unix)]
pub fn in_forked_child(limit: Duration, body: impl FnOnce() -> i32) -> Option<i32> {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::ForkResult;

    // SAFETY: the child runs Rust after the fork, which is sound as long as it does not wait
    // for a lock another thread of the parent held at the fork (only the forking thread
    // exists in the child). `body` is the code under test for exactly that: the library must
    // not touch state its parent's threads owned. The allocator (glibc's) is fork-safe: it
    // resets its arenas' locks in the child (its own `pthread_atfork` handlers).
    #[allow(unsafe_code)]
    let forked = unsafe { nix::unistd::fork() }.expect("fork");
    match forked {
        ForkResult::Child => {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
            // SAFETY: `_exit` ends the process at once; nothing of this process is used after.
            #[allow(unsafe_code)]
            unsafe {
                libc::_exit(code)
            }
        }
        ForkResult::Parent { child } => {
            let deadline = std::time::Instant::now() + limit;
            loop {
                match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::Exited(_, code)) => return Some(code),
                    Ok(WaitStatus::Signaled(..)) => return Some(128),
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(err) => panic!("waitpid: {err}"),
                }
                if std::time::Instant::now() >= deadline {
                    let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
                    let _ = waitpid(child, None);
                    return None;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
