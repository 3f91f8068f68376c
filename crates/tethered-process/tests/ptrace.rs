//! A child under a tracer (`strace`, a debugger): when it exits, its pidfd turns readable before
//! the tracer has let its exit through to us, and the waiter must not spin meanwhile.
//!
//! Alone in its test binary, so that the process's CPU time is the waiter's.

#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::SLACK;
use tethered_process::Process;

/// This process's CPU time (user and system), from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let text = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let rest = &text[text.rfind(')').expect("a command name") + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime: fields 14 and 15 of stat(5), 12 and 13 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // `/proc` counts in USER_HZ, which is 100 on every Linux.
    Duration::from_millis(ticks * 10)
}

/// A tracer that attaches with `PTRACE_SEIZE` (the tracee runs on, unstopped) and then never
/// waits for it for `hold` seconds: the tracee's exit stays the tracer's to see, so its parent
/// cannot reap it yet. In Python, through `ctypes`: no tracer program needs installing.
const TRACER: &str = r#"
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:  # PTRACE_SEIZE
    print("refused", ctypes.get_errno(), flush=True)
    sys.exit(3)
print("attached", flush=True)
time.sleep(float(sys.argv[2]))
"#;

#[test]
fn a_traced_childs_exit_held_by_its_tracer_costs_the_waiter_no_spin() {
    use std::io::BufRead;
    let mut sleep = Command::new("sleep");
    sleep.arg("1").stdin(Stdio::null());
    let job = Process::new(sleep).spawn().expect("sleep starts");
    let child = job.pid().expect("started");
    let Ok(mut tracer) = Command::new("python3")
        .args(["-c", TRACER, &child.to_string(), "2.5"])
        .stdout(Stdio::piped())
        .spawn()
    else {
        println!("skipped: no python3 to trace the child with");
        return;
    };
    let mut said = String::new();
    std::io::BufReader::new(tracer.stdout.take().expect("piped"))
        .read_line(&mut said)
        .expect("the tracer says whether it attached");
    if said.trim() != "attached" {
        let _ = tracer.wait();
        println!("skipped: ptrace refused here ({})", said.trim());
        return;
    }
    // The child exits 1 s after it started; its tracer holds the exit until 2.5 s after it
    // attached (the tracer's own start takes a moment, well under a second).
    std::thread::sleep(Duration::from_millis(1300));
    let before = cpu_time();
    std::thread::sleep(Duration::from_millis(500));
    let burnt = cpu_time().saturating_sub(before);
    let started = Instant::now();
    let output = job.join_blocking().expect("the child exited by itself");
    let _ = tracer.wait();
    assert!(output.success(), "{:?}", output.ended);
    assert!(started.elapsed() < SLACK);
    println!("CPU burnt in 500 ms while the tracer held the exit: {burnt:?}");
    assert!(
        burnt < Duration::from_millis(150),
        "the waiter spun while the tracer held the child's exit: {burnt:?} of CPU in 500 ms"
    );
}
