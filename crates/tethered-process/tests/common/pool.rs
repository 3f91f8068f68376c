//! What the pool tests share: a python3 worker speaking a line protocol, and its requests.

use std::io;
use std::process::Command;
use std::sync::mpsc;

use tethered_process::Worker;

/// One request per line: `n` milliseconds of sleep then `done n`; a negative `n` burns CPU
/// forever; `fork` starts a grandchild in the worker's group and answers with its pid.
pub const WORKER: &str = r#"
import os, subprocess, sys, time
for line in sys.stdin:
    line = line.strip()
    if line == "fork":
        child = subprocess.Popen(["sleep", "600"])
        print(child.pid, flush=True)
        continue
    n = int(line)
    if n < 0:
        while True:
            pass
    time.sleep(n / 1000)
    print(f"done {n}", flush=True)
"#;

pub fn python(script: &'static str) -> impl Fn() -> Command + Send + Sync + 'static {
    move || {
        let mut command = Command::new("python3");
        command.args(["-u", "-c", script]);
        command
    }
}

/// A turn that asks for `n` and tells `pid_tx` which worker took it.
pub fn ask(
    n: i64,
    pid_tx: Option<mpsc::Sender<u32>>,
) -> impl FnOnce(&mut Worker) -> io::Result<String> {
    move |worker| {
        if let Some(pid_tx) = pid_tx {
            let _ = pid_tx.send(worker.pid());
        }
        worker.send_line(&n.to_string())?;
        worker.read_line()
    }
}

/// A two-worker tokio runtime.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
