//! Two and three hosts, as network namespaces joined by veth pairs: a tonic server behind
//! `RequestTokenLayer` in one, its client in another. The client's deadline and the client's
//! cancel each stop the server's native job (`Timeout`, `Dropped`), 50 times each, timed on the
//! monotonic clock the namespaces share; a deadline passes through a middle hop (client -> A ->
//! B) and stops B's job; the naive server (tonic's deadline, `spawn_blocking`) runs on after the
//! deadline until cleaned up.
//!
//! The hosts run the `grpc_deadline` example's subcommands. Creating namespaces needs root:
//! where `ip netns add` is refused, each test says so on stderr and passes without running. Every
//! namespace (and with it its veth ends) is removed when the test ends, also when it fails.

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The example binary (built by `cargo test`, or `cargo build --examples`).
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/<profile>/deps")
        .join("examples")
        .join("grpc_deadline");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --examples` (or all of `cargo test`) first",
        path.display()
    );
    path
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|err| format!("`ip` could not run: {err}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Network namespaces this test made; dropping removes them (and their veth ends).
struct Hosts {
    names: Vec<String>,
    links: usize,
    tag: String,
}

impl Hosts {
    /// `None` (having said why) where namespaces cannot be made here.
    fn new(tag: &str) -> Option<Hosts> {
        let tag = format!("{tag}{}", std::process::id() % 100_000);
        let probe = format!("tth-{tag}-probe");
        if let Err(why) = ip(&["netns", "add", &probe]) {
            eprintln!("skipped: network namespaces are not available here ({why})");
            return None;
        }
        let _ = ip(&["netns", "del", &probe]);
        let (va, vb) = (format!("tv{tag}pa"), format!("tv{tag}pb"));
        if let Err(why) = ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb]) {
            eprintln!("skipped: veth pairs are not available here ({why})");
            return None;
        }
        let _ = ip(&["link", "del", &va]);
        Some(Hosts {
            names: Vec::new(),
            links: 0,
            tag,
        })
    }

    /// A new namespace, its loopback up.
    fn host(&mut self, name: &str) -> String {
        let full = format!("tth-{}-{name}", self.tag);
        ip(&["netns", "add", &full]).expect("a namespace");
        self.names.push(full.clone());
        ip(&["-n", &full, "link", "set", "lo", "up"]).expect("loopback up");
        full
    }

    /// Joins `a` (`a_addr`) and `b` (`b_addr`), both `/24`, with a veth pair.
    fn link(&mut self, a: &str, a_addr: &str, b: &str, b_addr: &str) {
        self.links += 1;
        // Interface names have at most 15 bytes.
        let (va, vb) = (
            format!("tv{}{}a", self.tag, self.links),
            format!("tv{}{}b", self.tag, self.links),
        );
        ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb]).expect("a veth pair");
        for (ns, dev, addr) in [(a, &va, a_addr), (b, &vb, b_addr)] {
            ip(&["link", "set", dev, "netns", ns]).expect("moved");
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev]).expect("addressed");
            ip(&["-n", ns, "link", "set", dev, "up"]).expect("up");
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// A process of the example in a namespace, its stdout lines on a channel.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn start(ns: &str, args: &[&str]) -> Proc {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(example())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the example starts");
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Proc {
            child,
            stdin,
            lines,
        }
    }

    /// The next line with `prefix`, within `limit`.
    fn expect(&self, prefix: &str, limit: Duration) -> String {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => continue,
                Err(_) => panic!("no `{prefix}` line within {limit:?}"),
            }
        }
    }

    /// Runs to its end (within `limit`) and gives every line.
    fn finish(mut self, limit: Duration) -> Vec<String> {
        drop(self.stdin.take());
        let until = Instant::now() + limit;
        let mut lines = Vec::new();
        loop {
            match self
                .lines
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                Ok(line) => lines.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("still running after {limit:?}"),
            }
        }
        let status = self.child.wait().expect("waited");
        assert!(status.success(), "{status}: {lines:?}");
        lines
    }

    /// Every line so far, without waiting.
    fn drain(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `KIND ID NS` lines of a client, by id.
fn times(lines: &[String], kind: &str) -> Vec<(u64, u64)> {
    lines
        .iter()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            match fields.as_slice() {
                [k, id, ns] if *k == kind => Some((id.parse().ok()?, ns.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// The server's `stop ID REASON NS HEADER` lines, by id.
fn stops(lines: &[String]) -> Vec<(u64, String, u64, String)> {
    lines
        .iter()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            match fields.as_slice() {
                ["stop", id, reason, ns, header] => Some((
                    id.parse().ok()?,
                    (*reason).to_owned(),
                    ns.parse().ok()?,
                    (*header).to_owned(),
                )),
                _ => None,
            }
        })
        .collect()
}

/// Waits (a while) for `count` stop lines of `server`.
fn collect_stops(server: &Proc, count: usize) -> Vec<(u64, String, u64, String)> {
    let mut lines = Vec::new();
    let until = Instant::now() + Duration::from_secs(10);
    while stops(&lines).len() < count && Instant::now() < until {
        lines.extend(server.drain());
        std::thread::sleep(Duration::from_millis(10));
    }
    stops(&lines)
}

fn summary(mut ms: Vec<f64>) -> String {
    ms.sort_by(f64::total_cmp);
    format!(
        "median {:.2} ms, worst {:.2} ms ({} runs)",
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        ms.len()
    )
}

/// 300 ms after its call's deadline, the naive server at `addr` still runs its loop (asked from
/// namespace `from`); then the test cleans it up with `stop-naive` and waits for the loop to end.
fn naive_runs_on_then_clean_up(from: &str, addr: &str) {
    let naive_running = |count: &str| {
        Proc::start(from, &["status", addr])
            .finish(Duration::from_secs(30))
            .iter()
            .any(|l| l.starts_with(&format!("naive_running {count}")))
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        naive_running("1"),
        "the naive loop at {addr} stopped by itself"
    );
    // Clean up.
    Proc::start(from, &["stop-naive", addr]).finish(Duration::from_secs(30));
    let until = Instant::now() + Duration::from_secs(10);
    while !naive_running("0") {
        assert!(
            Instant::now() < until,
            "the naive loop at {addr} did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

const RUNS: u64 = 50;

#[test]
fn across_two_hosts_a_deadline_and_a_cancel_stop_the_servers_job() {
    let Some(mut hosts) = Hosts::new("d") else {
        return;
    };
    let client = hosts.host("client");
    let server = hosts.host("server");
    hosts.link(&client, "10.231.1.1", &server, "10.231.1.2");

    let tethered = Proc::start(&server, &["serve", "10.231.1.2:50051"]);
    tethered.expect("listening", Duration::from_secs(20));

    // The client's deadline: 200 ms, 50 calls.
    let calls = Proc::start(
        &client,
        &[
            "call",
            "10.231.1.2:50051",
            "deadline",
            "200",
            &RUNS.to_string(),
        ],
    )
    .finish(Duration::from_secs(120));
    let deadlines = times(&calls, "deadline");
    assert_eq!(deadlines.len(), RUNS as usize, "{calls:?}");
    assert!(
        calls
            .iter()
            .filter(|l| l.starts_with("result"))
            // The layer's DEADLINE_EXCEEDED, or tonic's own deadline's CANCELLED.
            .all(|l| l.ends_with("DeadlineExceeded") || l.ends_with("Cancelled")),
        "{calls:?}"
    );
    let stopped = collect_stops(&tethered, RUNS as usize);
    let mut late = Vec::new();
    for (id, deadline) in &deadlines {
        let (_, reason, at, header) = stopped
            .iter()
            .find(|stop| stop.0 == *id)
            .unwrap_or_else(|| panic!("call {id}'s job never stopped: {stopped:?}"));
        assert_eq!(reason, "Timeout", "call {id}");
        assert_eq!(header, "200", "call {id}: the deadline the server read");
        let ms = at.saturating_sub(*deadline) as f64 / 1e6;
        assert!(
            ms < 1000.0,
            "call {id}'s job stopped {ms} ms after the deadline"
        );
        late.push(ms);
    }
    eprintln!("two hosts, deadline -> native stop: {}", summary(late));

    // The client's cancel: each call is dropped after 100 ms, which resets its stream.
    let calls = Proc::start(
        &client,
        &["call", "10.231.1.2:50051", "drop", "100", &RUNS.to_string()],
    )
    .finish(Duration::from_secs(120));
    let drops = times(&calls, "dropped");
    assert_eq!(drops.len(), RUNS as usize, "{calls:?}");
    let stopped = collect_stops(&tethered, RUNS as usize);
    let mut late = Vec::new();
    for (id, dropped) in &drops {
        let (_, reason, at, _) = stopped
            .iter()
            .find(|stop| stop.0 == *id)
            .unwrap_or_else(|| panic!("call {id}'s job never stopped: {stopped:?}"));
        assert_eq!(reason, "Dropped", "call {id}");
        let ms = at.saturating_sub(*dropped) as f64 / 1e6;
        assert!(
            ms < 1000.0,
            "call {id}'s job stopped {ms} ms after the reset"
        );
        late.push(ms);
    }
    eprintln!("two hosts, reset -> native stop: {}", summary(late));

    // The naive server: the client gets DEADLINE_EXCEEDED, and the loop runs on.
    let naive = Proc::start(&server, &["serve", "10.231.1.2:50052", "naive"]);
    naive.expect("listening", Duration::from_secs(20));
    let calls = Proc::start(&client, &["call", "10.231.1.2:50052", "deadline", "200"])
        .finish(Duration::from_secs(30));
    // tonic's own deadline answers `Cancelled` ("Timeout expired").
    assert!(
        calls
            .iter()
            .any(|l| l == "result 1 Cancelled" || l == "result 1 DeadlineExceeded"),
        "{calls:?}"
    );
    naive_runs_on_then_clean_up(&client, "10.231.1.2:50052");
}

#[test]
fn across_three_hosts_a_deadline_travels_through_the_middle_hop() {
    let Some(mut hosts) = Hosts::new("r") else {
        return;
    };
    let client = hosts.host("client");
    let a = hosts.host("a");
    let b = hosts.host("b");
    hosts.link(&client, "10.232.1.1", &a, "10.232.1.2");
    hosts.link(&a, "10.232.2.1", &b, "10.232.2.2");

    let server_b = Proc::start(&b, &["serve", "10.232.2.2:50051"]);
    server_b.expect("listening", Duration::from_secs(20));
    let relay_a = Proc::start(&a, &["relay", "10.232.1.2:50051", "10.232.2.2:50051"]);
    relay_a.expect("listening", Duration::from_secs(20));

    let runs = 20;
    let calls = Proc::start(
        &client,
        &[
            "call",
            "10.232.1.2:50051",
            "deadline",
            "200",
            &runs.to_string(),
        ],
    )
    .finish(Duration::from_secs(120));
    let deadlines = times(&calls, "deadline");
    assert_eq!(deadlines.len(), runs, "{calls:?}");
    let stopped = collect_stops(&server_b, runs);
    let mut late = Vec::new();
    for (id, deadline) in &deadlines {
        let (_, reason, at, header) = stopped
            .iter()
            .find(|stop| stop.0 == *id)
            .unwrap_or_else(|| panic!("call {id}'s job at B never stopped: {stopped:?}"));
        // A's deadline passes as B's does, and A then resets its call to B: B's job reads
        // whichever reached it first.
        assert!(
            ["Timeout", "Dropped"].contains(&reason.as_str()),
            "call {id}: {reason}"
        );
        let header: u64 = header
            .parse()
            .unwrap_or_else(|_| panic!("call {id}: B's request carried no grpc-timeout"));
        assert!(
            header <= 200,
            "call {id}: B's deadline {header} ms is longer than the client's"
        );
        let ms = at.saturating_sub(*deadline) as f64 / 1e6;
        assert!(
            ms < 1000.0,
            "call {id}'s job at B stopped {ms} ms after the deadline"
        );
        late.push(ms);
    }
    eprintln!(
        "three hosts, client deadline -> B's native stop: {}",
        summary(late)
    );

    // The same hop to a naive B: the deadline reaches it, A resets its call, and B's
    // spawn_blocking loop runs on.
    let naive_b = Proc::start(&b, &["serve", "10.232.2.2:50052", "naive"]);
    naive_b.expect("listening", Duration::from_secs(20));
    let naive_a = Proc::start(&a, &["relay", "10.232.1.2:50052", "10.232.2.2:50052"]);
    naive_a.expect("listening", Duration::from_secs(20));
    let calls = Proc::start(&client, &["call", "10.232.1.2:50052", "deadline", "200"])
        .finish(Duration::from_secs(30));
    assert!(
        calls.iter().any(|l| l.starts_with("result 1 ")),
        "{calls:?}"
    );
    assert!(!calls.iter().any(|l| l == "result 1 Ok"), "{calls:?}");
    // B is reached from A's namespace: the client's has no route to it.
    naive_runs_on_then_clean_up(&a, "10.232.2.2:50052");
}
