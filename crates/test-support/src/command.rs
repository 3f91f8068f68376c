//! A command run to its end or killed at a limit, with everything it printed: how the tests
//! that drive another language's suite (pytest, `node --test`, npm) keep a hang from stalling
//! the run.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How a [`run_bounded`] command ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status; `None` when it ran past the limit and was killed.
    pub status: Option<ExitStatus>,
    /// Everything it printed: stdout, then stderr after a `--- stderr ---` line.
    pub out: String,
}

impl Finished {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|status| status.success())
    }

    /// Its exit status in words, or that it was killed for running too long.
    pub fn describe(&self) -> String {
        match self.status {
            Some(status) => status.to_string(),
            None => "killed: it ran too long".to_owned(),
        }
    }
}

/// Runs `command` with stdin closed to its end or until `limit`; past the limit its whole
/// process group is killed (it gets a group of its own, so a kill reaches pip, maturin, npm or
/// a test runner's children too).
///
/// # Panics
///
/// If the command cannot be started.
pub fn run_bounded(command: &mut Command, limit: Duration) -> Finished {
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("could not start {command:?}: {err}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child, limit);
    let mut out = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !stderr.is_empty() {
        out.push_str("\n--- stderr ---\n");
        out.push_str(&stderr);
    }
    if status.is_none() {
        out.push_str(&format!("\n--- killed after {limit:?} ---\n"));
    }
    Finished { status, out }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(50)),
            _ => {
                if let Ok(leader) = i32::try_from(child.id()) {
                    let group = nix::unistd::Pid::from_raw(leader);
                    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}
