//! Captured stdout and stderr: read while the child runs, so a flood never blocks it.

#![cfg(target_os = "linux")]

mod common;

use std::io::Read;
use std::process::Stdio;

use common::{SLACK, sh};
use tethered::Tethered;
use tethered_process::{Ended, Process};

const MIB: u64 = 1024 * 1024;

/// Writes `mib` MiB of zeros to stdout and to stderr at the same time.
fn flood(mib: u64) -> std::process::Command {
    let bytes = mib * MIB;
    let mut command = sh(&format!(
        "head -c {bytes} /dev/zero & head -c {bytes} /dev/zero >&2; wait"
    ));
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

#[test]
fn a_flood_on_both_pipes_does_not_deadlock_and_is_captured_in_full() {
    let output = Process::new(flood(8))
        .spawn()
        .expect("sh starts")
        .join_blocking()
        .expect("an output");
    assert!(output.success(), "{:?}", output.ended);
    for captured in [output.stdout.unwrap(), output.stderr.unwrap()] {
        assert_eq!(captured.total, 8 * MIB);
        assert_eq!(captured.bytes.len() as u64, 8 * MIB);
        assert!(!captured.truncated && !captured.still_open);
        assert!(captured.bytes.iter().all(|&byte| byte == 0));
    }
}

#[test]
fn past_the_limit_the_pipes_are_read_and_discarded() {
    let output = Process::new(flood(4))
        .capture_limit(1000)
        .spawn()
        .expect("sh starts")
        .join_blocking()
        .expect("an output");
    assert!(output.success(), "{:?}", output.ended);
    for captured in [output.stdout.unwrap(), output.stderr.unwrap()] {
        assert_eq!(captured.bytes.len(), 1000);
        assert_eq!(captured.total, 4 * MIB);
        assert!(captured.truncated);
    }
}

#[test]
fn an_endless_writer_is_cancelled_with_what_it_wrote_so_far() {
    let mut command = sh("yes");
    command.stdout(Stdio::piped());
    let job = Process::new(command)
        .capture_limit(64 * 1024)
        .spawn()
        .expect("yes starts");
    std::thread::sleep(std::time::Duration::from_millis(50));
    // Cancelled while it ran: the stop, with what it wrote until then.
    let output = common::stopped(
        tethered::CancelReason::Requested,
        futures_executor::block_on(job.cancel_and_join()),
    );
    assert!(
        matches!(output.ended, Ended::Stopped(_)),
        "{:?}",
        output.ended
    );
    let stdout = output.stdout.unwrap();
    assert!(stdout.text().starts_with("y\n"));
    assert!(!stdout.still_open);
}

#[test]
fn an_uncaptured_pipe_is_the_callers_to_read() {
    let mut command = sh("echo hello; echo oops >&2");
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut job = Process::new(command)
        .capture_stdout(false)
        .spawn()
        .expect("sh starts");
    let mut stdout = job.take_stdout().expect("piped and not captured");
    assert!(job.take_stderr().is_none(), "stderr is captured");
    let mut text = String::new();
    stdout.read_to_string(&mut text).expect("readable");
    assert_eq!(text, "hello\n");
    let output = job.join_blocking().expect("an output");
    assert!(output.stdout.is_none());
    assert_eq!(output.stderr.unwrap().text(), "oops\n");
}

#[test]
fn a_pipe_held_open_outside_the_group_is_reported_still_open() {
    // Without a group of its own, the background `sleep` is not stopped, and keeps stdout.
    let mut command = sh("sleep 30 & echo $!");
    command.stdout(Stdio::piped());
    let started = std::time::Instant::now();
    let output = Process::new(command)
        .own_group(false)
        .spawn()
        .expect("sh starts")
        .join_blocking()
        .expect("an output");
    let stdout = output.stdout.unwrap();
    assert!(stdout.still_open);
    assert!(started.elapsed() < SLACK + SLACK, "the linger is bounded");
    // Clean up the sleep the test left behind.
    let sleeper = stdout.text().trim().to_owned();
    let _ = std::process::Command::new("kill").arg(&sleeper).status();
}

/// `cat` reading a piped stdin that nobody took: it ends only when its stdin closes.
fn cat_with_untaken_stdin() -> tethered_process::ProcessJob {
    let mut command = std::process::Command::new("cat");
    command.stdin(Stdio::piped()).stdout(Stdio::piped());
    Process::new(command).spawn().expect("cat starts")
}

/// Runs `join` on a thread and fails, instead of hanging, if it takes longer than `SLACK`.
fn within_slack<T: Send + 'static>(what: &str, join: impl FnOnce() -> T + Send + 'static) -> T {
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(join());
    });
    done.recv_timeout(SLACK)
        .unwrap_or_else(|_| panic!("{what} did not return within {SLACK:?}"))
}

#[test]
fn joining_closes_an_untaken_piped_stdin_so_a_reader_of_its_input_ends() {
    let job = cat_with_untaken_stdin();
    let output = within_slack("join_blocking of `cat`", move || {
        job.join_blocking().map_err(|err| err.to_string())
    })
    .expect("cat ended by itself");
    assert!(output.success(), "{:?}", output.ended);
}

#[test]
fn awaiting_closes_an_untaken_piped_stdin_so_a_reader_of_its_input_ends() {
    let job = cat_with_untaken_stdin();
    let output = within_slack("awaiting `cat`", move || {
        futures_executor::block_on(job).map_err(|err| err.to_string())
    })
    .expect("cat ended by itself");
    assert!(output.success(), "{:?}", output.ended);
}

#[test]
fn a_taken_stdin_stays_open_until_its_taker_closes_it() {
    use std::io::Write;
    let mut job = cat_with_untaken_stdin();
    let mut stdin = job.take_stdin().expect("piped");
    let joined = std::thread::spawn(move || job.join_blocking());
    stdin.write_all(b"still open\n").expect("cat reads");
    drop(stdin);
    let output = joined.join().unwrap().expect("cat ended");
    assert_eq!(output.stdout.unwrap().text(), "still open\n");
}

#[test]
fn the_default_capture_limit_bounds_what_a_flood_keeps() {
    // 40 MiB on stdout: more than the default keeps, all of it still read.
    let mut command = sh("head -c 41943040 /dev/zero");
    command.stdout(Stdio::piped());
    let output = Process::new(command)
        .spawn()
        .expect("sh starts")
        .join_blocking()
        .expect("an output");
    let stdout = output.stdout.unwrap();
    assert_eq!(stdout.bytes.len(), tethered_process::DEFAULT_CAPTURE_LIMIT);
    assert_eq!(stdout.total, 40 * MIB);
    assert!(stdout.truncated);
}
