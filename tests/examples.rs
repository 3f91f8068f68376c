//! Runs the examples' binaries as a user would, and checks what they print and how they exit.
//!
//! `cargo test` builds every example before it runs the tests, into
//! `target/<profile>/examples/`, next to this test's own binary in `target/<profile>/deps/`.
//! Each example must end by itself within seconds; one that hangs is killed and fails its test.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long any example may run here, far above what each needs (at most about a second).
const LIMIT: Duration = Duration::from_secs(20);

/// The compiled example `name`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    // `cargo test` builds the examples; `cargo test --test examples` alone does not, and would
    // run whatever binaries an earlier build left.
    let built = std::fs::metadata(&path).and_then(|meta| meta.modified());
    let Ok(built) = built else {
        panic!(
            "{} is missing: run `cargo build --examples` (or all of `cargo test`) first",
            path.display()
        );
    };
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let single_file = examples.join(format!("{name}.rs"));
    let sources = match single_file.exists() {
        true => single_file,
        false => examples.join(name),
    };
    if let Some(edited) = newest_change(&sources).filter(|&edited| edited > built) {
        panic!(
            "{} is older than its source ({:?} newer): run `cargo build --examples` (or all \
             of `cargo test`) first",
            path.display(),
            edited.duration_since(built).unwrap_or_default()
        );
    }
    path
}

/// When `path`, or a file under it, last changed.
fn newest_change(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| newest_change(&entry.path()))
        .max()
}

/// What an example did.
#[derive(Debug)]
struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Ran {
    #[track_caller]
    fn assert_success(&self) -> &Self {
        assert!(self.status.success(), "the example failed: {self:#?}");
        self
    }

    #[track_caller]
    fn assert_prints(&self, text: &str) -> &Self {
        assert!(
            self.stdout.contains(text),
            "expected `{text}` in the output: {self:#?}"
        );
        self
    }

    /// The columns of the table row that starts with `label`, split on runs of 3+ spaces.
    #[track_caller]
    fn row(&self, label: &str) -> Vec<String> {
        let line = self
            .stdout
            .lines()
            .find(|line| line.starts_with(label))
            .unwrap_or_else(|| panic!("no row `{label}`: {self:#?}"));
        line.split("   ")
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Runs example `name` with `args`; kills it if it outlives [`LIMIT`].
fn run(name: &str, args: &[&str]) -> Ran {
    let started = Instant::now();
    let mut child = Command::new(example(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start example {name}: {err}"));
    // Drain both pipes on their own threads, so a chatty example never blocks on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("example {name} still ran after {LIMIT:?}; killed it");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Ran {
        status,
        stdout: stdout.join().expect("the stdout reader does not panic"),
        stderr: stderr.join().expect("the stderr reader does not panic"),
        took: started.elapsed(),
    }
}

#[test]
fn dropped_future_stops_the_native_loop() {
    run("dropped_future", &[])
        .assert_success()
        .assert_prints("native closures still running: 0");
}

#[test]
fn sandbox_returns_a_partial_result_that_says_why() {
    run("sandbox", &[])
        .assert_success()
        .assert_prints("finished with 50005000 after")
        .assert_prints("cancelled (the deadline passed) after");
}

#[test]
fn http_disconnect_stops_the_job_when_the_client_hangs_up() {
    run("http_disconnect", &[])
        .assert_success()
        .assert_prints("got `HTTP/1.1 200 OK`: rendered 20 slices")
        .assert_prints("its token said: the caller gave up")
        .assert_prints("got `HTTP/1.1 504 Gateway Timeout` after")
        .assert_prints("its token said: the deadline passed")
        .assert_prints("no native job is left running");
}

#[cfg(unix)]
#[test]
fn grpc_deadline_stops_the_job_at_the_deadline_through_a_middle_hop() {
    run("grpc_deadline", &[])
        .assert_success()
        .assert_prints("deadline 300 ms, client -> A -> B: the client got Err(")
        .assert_prints("; B's job stopped with Timeout, ")
        .assert_prints("client gave up after 200 ms: B's job stopped with Dropped, ")
        .assert_prints("1 loop(s) still running")
        .assert_prints("(the naive loop was cleaned up by hand)");
}

#[cfg(unix)]
#[test]
fn subprocess_terminates_kills_and_reaps_the_child() {
    run("subprocess", &[])
        .assert_success()
        .assert_prints("polite: pid")
        .assert_prints("exited on SIGTERM")
        .assert_prints("ignored SIGTERM, got SIGKILL after the grace period")
        .assert_prints("no zombie");
}

#[cfg(unix)]
#[test]
fn worker_pool_replaces_the_worker_of_a_dropped_request() {
    run("worker_pool", &[])
        .assert_success()
        .assert_prints("request 40 ms: done 40 ms")
        .assert_prints("its future was dropped")
        .assert_prints("on worker 2 (pid")
        .assert_prints("request 10 ms: done 10 ms; request 20 ms: done 20 ms")
        .assert_prints("workers live: 1; stopped mid-turn: 1, replaced: 1, turns served: 3")
        .assert_prints("every worker process reaped");
}

#[test]
fn select_and_timeout_tell_dropped_from_timeout() {
    run("select_and_timeout", &[])
        .assert_success()
        .assert_prints("quick returned after 20 rounds: ran to the end")
        .assert_prints("thorough returned after")
        .assert_prints("the caller got its answer at the deadline (")
        .assert_prints("awaiting the kept handle: the closure stopped after");
}

#[test]
fn interruptible_sleep_wakes_on_cancel() {
    let ran = run("interruptible_sleep", &[]);
    ran.assert_success()
        .assert_prints("sleeping with wait_timeout");
}

#[test]
fn callback_bridge_calls_the_engines_cancel_on_drop() {
    run("callback_bridge", &[])
        .assert_success()
        .assert_prints("still runs 1 query")
        .assert_prints("the engine stopped it");
}

#[test]
fn scoped_shutdown_reports_the_stuck_job_by_name() {
    run("scoped_shutdown", &[])
        .assert_success()
        .assert_prints("9 job(s) cancelled, 8 returned")
        .assert_prints("\"legacy-import\"")
        .assert_prints("jobs left in the scope: 0");
}

/// Every "cancel to return: <Duration>" an example printed, each asserted to be under 2 s (far
/// above what the engines need: they return in well under a millisecond to a few).
#[track_caller]
fn assert_prompt_returns(ran: &Ran) -> usize {
    let times: Vec<Duration> = ran
        .stdout
        .split("cancel to return: ")
        .skip(1)
        .map(|rest| {
            let printed = rest.split([';', '\n']).next().unwrap_or_default();
            parse_duration(printed).unwrap_or_else(|| panic!("not a duration: {printed:?}"))
        })
        .collect();
    assert!(!times.is_empty(), "no cancel-to-return time: {ran:#?}");
    for took in &times {
        assert!(*took < Duration::from_secs(2), "{took:?}: {ran:#?}");
    }
    times.len()
}

/// A `Duration` as its `Debug` prints it: `140.14µs`, `3.12ms`, `1.50s`.
fn parse_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit {
        "ns" => number / 1e9,
        "µs" => number / 1e6,
        "ms" => number / 1e3,
        "s" => number,
        _ => return None,
    };
    Some(Duration::from_secs_f64(seconds))
}

#[test]
fn sqlite_interrupt_stops_the_query_and_keeps_the_connection() {
    let ran = run("sqlite_interrupt", &[]);
    ran.assert_success()
        .assert_prints("sum_to(10000): 50005000")
        .assert_prints(": interrupted (SQLITE_INTERRUPT)")
        .assert_prints("the same connection, next query: sum_to(10000) = 50005000");
    assert_eq!(assert_prompt_returns(&ran), 1);
}

#[test]
fn lua_sandbox_stops_endless_scripts_and_keeps_the_state() {
    let ran = run("lua_sandbox", &[]);
    ran.assert_success()
        .assert_prints("sum of 1..10000: 50005000")
        .assert_prints("endless loop: runtime error: script stopped: the deadline passed")
        .assert_prints("pcall in a loop: runtime error: script stopped: the deadline passed")
        .assert_prints("in a coroutine: runtime error: script stopped: the deadline passed")
        .assert_prints("the same Lua state, next script: sum of 1..10000 = 50005000");
    assert_eq!(assert_prompt_returns(&ran), 3);
}

#[test]
fn unblock_socket_read_shuts_the_socket_down_on_cancel() {
    let ran = run("unblock_socket_read", &[]);
    ran.assert_success()
        .assert_prints(": cancelled: the deadline passed")
        .assert_prints("native jobs still running: 0");
    assert_eq!(assert_prompt_returns(&ran), 1);
}

#[test]
fn unblock_channel_recv_sends_the_stop_on_cancel() {
    let ran = run("unblock_channel_recv", &[]);
    ran.assert_success()
        .assert_prints("a producer that ends: Done { total: 6 }")
        .assert_prints("Stopped { total: 6, reason: Timeout }");
    assert_eq!(assert_prompt_returns(&ran), 1);
}

#[cfg(target_os = "linux")]
#[test]
fn unblock_child_wait_kills_and_reaps_the_child_on_cancel() {
    let ran = run("unblock_child_wait", &[]);
    ran.assert_success()
        .assert_prints("`true`: exit status: 0")
        .assert_prints("signal: 9 (SIGKILL), reaped")
        .assert_prints("gone (no zombie)");
    assert_eq!(assert_prompt_returns(&ran), 1);
}

#[test]
fn rayon_pool_stops_every_worker_and_serves_the_next_request() {
    let ran = run("rayon_pool", &[]);
    ran.assert_success()
        .assert_prints("cancelled: the deadline passed, after")
        .assert_prints("items run after the return: 0")
        .assert_prints("the next request, 2000 items: digest");
    assert_eq!(assert_prompt_returns(&ran), 1);
}

#[test]
fn each_adapter_example_times_out_its_job() {
    for (name, runtime) in [
        ("tokio_adapter", "tokio"),
        ("smol_adapter", "smol"),
        ("async_std_adapter", "async-std"),
    ] {
        run(name, &[]).assert_success().assert_prints(&format!(
            "{runtime}: timed out; the closure was told: the deadline passed"
        ));
    }
}

#[test]
fn leak_demo_shows_the_naive_leak_and_the_tethered_cure() {
    let dir = std::env::temp_dir().join(format!("tethered-leak-demo-{}", std::process::id()));
    let chart = dir.join("chart.svg");
    let ran = run(
        "leak_demo",
        &[
            "--jobs",
            "6",
            "--pool",
            "2",
            "--timeout=50ms",
            "--observe",
            "300ms",
            "--out",
            chart.to_str().expect("a UTF-8 temp path"),
        ],
    );
    ran.assert_success();
    // The naive closures hold both pool threads and the rest wait behind them; the tethered
    // ones returned, and the queued ones were skipped.
    assert_eq!(ran.row("jobs timed out")[1..], ["6 of 6", "6 of 6"]);
    assert_eq!(
        ran.row("blocking-pool slots held")[1..],
        ["2 of 2", "0 of 2"]
    );
    assert_eq!(ran.row("closures still running")[1..], ["2", "0"]);
    assert_eq!(ran.row("queued jobs still to run")[1], "4");
    assert!(ran.row("a fresh job waits")[1].contains("still waiting"));
    assert!(ran.row("runtime shutdown_timeout")[2].starts_with("returned in"));
    let svg = std::fs::read_to_string(&chart).expect("the chart was written");
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("naive: 2 running") && svg.contains("tethered: 0 running"));
    let _ = std::fs::remove_dir_all(&dir);
    // It ends by itself, leaked threads and all: exit() after the report.
    assert!(ran.took < Duration::from_secs(10), "{ran:#?}");
}

#[test]
fn leak_demo_explains_its_options() {
    run("leak_demo", &["--help"])
        .assert_success()
        .assert_prints("Usage: cargo run --release --example leak_demo")
        .assert_prints("--jobs <N>")
        .assert_prints("--out <PATH>");
}

#[test]
fn leak_demo_rejects_bad_arguments_with_a_message_and_exit_code_2() {
    for (args, message) in [
        (
            &["--jobs", "many"][..],
            "--jobs takes a whole number from 1 to 100000, not 'many'",
        ),
        (
            &["--pool", "0"][..],
            "--pool takes a whole number from 1 to 64, not '0'",
        ),
        (
            &["--timeout", "300"][..],
            "--timeout takes a time from 1ms to 60s",
        ),
        (&["--out"][..], "--out needs a value"),
        (&["--frobnicate"][..], "unknown argument '--frobnicate'"),
    ] {
        let ran = run("leak_demo", args);
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {ran:#?}");
        assert!(ran.stderr.contains(message), "{args:?}: {ran:#?}");
        assert!(ran.stderr.contains("--help"), "{args:?}: {ran:#?}");
        assert!(ran.stdout.is_empty(), "{args:?}: {ran:#?}");
    }
}

/// Sends `GET path` and reads the whole answer (the server closes after it).
#[cfg(unix)]
fn get(address: &str, path: &str) -> std::io::Result<String> {
    get_then(address, path, || ())
}

/// [`get`], calling `sent` once the request is written.
fn get_then(address: &str, path: &str, sent: impl FnOnce()) -> std::io::Result<String> {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )?;
    sent();
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The server recipe (`examples/server.rs`) under load, sent SIGTERM: 20 concurrent requests,
/// one of them stuck in a native call that never looks at its token, and a 5 s overall
/// deadline. The process exits within 6 s, every other request is answered, and the report
/// names the stuck job.
#[cfg(unix)]
#[test]
fn server_sigterm_under_load_exits_within_the_deadline_and_names_the_stuck_job() {
    let (mut server, address, mut stdout) = start_server("5");

    // One stuck request, nineteen that take 300 ms each, four at a time.
    let mut clients = Vec::new();
    let stuck_address = address.clone();
    clients.push(std::thread::spawn(move || get(&stuck_address, "/stuck")));
    std::thread::sleep(Duration::from_millis(100)); // the stuck job takes its slot first
    let (sent_tx, sent) = std::sync::mpsc::channel();
    for _ in 0..19 {
        let address = address.clone();
        let sent_tx = sent_tx.clone();
        clients.push(std::thread::spawn(move || {
            get_then(&address, "/work/300", move || {
                let _ = sent_tx.send(());
            })
        }));
    }
    // Every request written (on a loaded machine a client thread can start late), then time for
    // the server to read them: a connection whose request the server has not read yet is idle
    // to hyper, and a graceful shutdown closes it unanswered, as any HTTP server would.
    for _ in 0..19 {
        sent.recv_timeout(Duration::from_secs(10))
            .expect("every client sends its request");
    }
    std::thread::sleep(Duration::from_millis(200));

    let signalled = Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = loop {
        if let Some(status) = server.try_wait().expect("waitable") {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(20) {
            let _ = server.kill();
            let _ = server.wait();
            panic!("the server still ran 20 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = signalled.elapsed();
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);
    println!(
        "exited {status} {took:.1?} after SIGTERM; it said: {}",
        rest.trim()
    );
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(6),
        "exited {took:?} after SIGTERM"
    );
    assert!(rest.contains("shutdown on SIGTERM"), "{rest}");
    assert!(
        rest.contains("still running, now detached:") && rest.contains("\"stuck-job\""),
        "{rest}"
    );

    // Every request but the stuck one was answered: done, or stopped by the shutdown.
    let answers: Vec<_> = clients
        .into_iter()
        .map(|client| client.join().unwrap())
        .collect();
    let answered = answers[1..]
        .iter()
        .filter(|answer| {
            // Done (200), or stopped by the shutdown: the layer's 503.
            answer.as_ref().is_ok_and(|text| {
                text.starts_with("HTTP/1.1 200 ") || text.starts_with("HTTP/1.1 503 ")
            })
        })
        .count();
    assert_eq!(answered, 19, "{answers:#?}");
}

/// Starts the server example with a shutdown deadline of `deadline` seconds; returns it, the
/// address it listens on and the rest of its output.
#[cfg(unix)]
fn start_server(
    deadline: &str,
) -> (
    std::process::Child,
    String,
    std::io::BufReader<std::process::ChildStdout>,
) {
    use std::io::BufRead;
    let mut server = Command::new(example("server"))
        .arg(deadline)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example server starts");
    let mut stdout = std::io::BufReader::new(server.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("it says where it listens");
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    (server, address, stdout)
}

/// The value of the sample `name` (with its labels, as rendered) in a Prometheus scrape.
fn sample(scrape: &str, name: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// Finding code that ignores its token, as an operator would: two clients go away, one from a
/// request whose job checks its token and one from `/stuck`, whose job never does. A scrape of
/// `/metrics` a second and a half later counts both cancels by reason, times the job that
/// returned by name, and shows the other as stubborn.
#[cfg(unix)]
#[test]
fn server_metrics_name_the_job_that_ignores_its_cancel() {
    use std::io::Write;
    let (mut server, address, mut output) = start_server("2");
    let go_away = |path: &str| {
        let mut stream = std::net::TcpStream::connect(&address).expect("connects");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .expect("sends");
        stream
    };
    let stuck = go_away("/stuck");
    let honest = go_away("/work/30000");
    // Both jobs run (the scope has 4 slots), then both clients disconnect.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let scrape = get(&address, "/metrics").expect("scrapes");
        if sample(&scrape, "tethered_jobs_running") == Some(2.0) {
            break;
        }
        assert!(Instant::now() < until, "the two jobs never ran: {scrape}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stuck);
    drop(honest);
    let until = Instant::now() + Duration::from_secs(20);
    let scrape = loop {
        let scrape = get(&address, "/metrics").expect("scrapes");
        if sample(&scrape, "tethered_jobs_stubborn{job=\"stuck-job\"}") == Some(1.0) {
            break scrape;
        }
        assert!(Instant::now() < until, "never stubborn: {scrape}");
        std::thread::sleep(Duration::from_millis(100));
    };
    println!("{scrape}");
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let _ = server.wait();
    let mut report = String::new();
    let _ = output.read_to_string(&mut report);
    assert!(report.contains("\"stuck-job\""), "{report}");

    let body = scrape.split("\r\n\r\n").nth(1).expect("a body");
    assert_eq!(
        sample(
            body,
            "tethered_cancels_reached_running_total{reason=\"dropped\"}"
        ),
        Some(2.0),
        "{body}"
    );
    assert_eq!(
        sample(
            body,
            "tethered_jobs_returned_after_cancel_total{reason=\"dropped\"}"
        ),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        sample(body, "tethered_jobs_stubborn_total"),
        Some(1.0),
        "{body}"
    );
    assert_eq!(sample(body, "tethered_jobs_running"), Some(1.0), "{body}");
    assert_eq!(
        sample(
            body,
            "tethered_cancel_to_return_seconds_count{job=\"work 30000 ms\"}"
        ),
        Some(1.0),
        "{body}"
    );
    let within_a_second = sample(
        body,
        "tethered_cancel_to_return_seconds_bucket{job=\"work 30000 ms\",le=\"1\"}",
    );
    assert_eq!(within_a_second, Some(1.0), "{body}");
    assert!(
        body.contains("# HELP tethered_cancel_to_return_seconds"),
        "described: {body}"
    );
}
