//! Each crate against what a user would use instead, paired and interleaved in one run: the
//! Rust half of the "against its peer" table in `BENCHMARKS.md` (the Node and Python halves are
//! `crates/tethered-napi/tests/js/peers.mjs` and `crates/tethered-pyo3/tests/python/bench_peers.py`).
//!
//! Every timed case runs rounds; each round times one batch of tethered and one of the peer,
//! back to back, in an order that alternates from round to round, and the result is the median
//! of the per-round ratio tethered / peer with its quartiles. A batch lasts from tens of
//! microseconds to milliseconds, and on a shared two-core machine the cost of a thread wake-up
//! or a `fork` drifts by more than the differences measured here within seconds: the variants
//! are never measured one fully after the other.
//!
//! | case | tethered | peer |
//! |---|---|---|
//! | `concurrent_20000` | 20,000 `tethered_tokio::spawn_native` jobs spawned at once, then awaited | tokio's `spawn_blocking` (`concurrent_paired` does 2,000) |
//! | `group_100`, `group_1000` | a `JobGroup` of N jobs on tokio's blocking pool, joined with `join_next` | tokio's `JoinSet` with `spawn_blocking` |
//! | `child_idle`, `child_10000`, `child_100000` | `CancelToken::child` created and dropped under a parent with 0, 10,000 or 100,000 live children | tokio-util's `child_token` |
//! | `any_of` | `CancelSource::any_of` of two parents, created and dropped | tokio-util's `child_token` of one (tokio-util has no any-of) |
//! | `process_spawn` | `tethered_process::Process::spawn` of `true`, awaited | `tokio::process::Command` with `kill_on_drop(true)`, `status()` |
//! | `pool_turn` | a `Pool` turn on a `cat` worker: a line out, the line back | a hand-written pipe worker: one `cat` child, tokio's async pipes |
//! | `tower` | an axum server on loopback with `RequestTokenLayer`, HTTP/1.1 keep-alive GETs from a client on the same one-thread runtime | the same server without the layer |
//!
//! Two cases are not ratios: `pool_replace` times, from the drop of a turn blocked on its
//! worker to the next turn's answer, a fresh worker taking the place of the stopped one
//! (against the 7.7 ms pydantic-monty 1.4's pool takes, its own figure); `children_1000` and
//! `children_10000` count the threads and the resident memory this process adds while 1,000
//! or 10,000 children run, for each crate in turn.
//!
//! Results go to `target/tethered-bench/peers-rust.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench peers_paired

use std::hint::black_box;
use std::io::Write as _;
use std::num::NonZeroUsize;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchmarks::{Invocation, quartiles, write_results};
use tethered::{CancelSource, JobGroup, JobOptions};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The command this benchmark's results say to run.
const COMMAND: &str = "cargo bench -p benchmarks --bench peers_paired";

/// One row of the table: tethered against its peer, per-round ratios.
struct Row {
    case: &'static str,
    crate_name: &'static str,
    measured: String,
    peer: &'static str,
    goal: &'static str,
    goal_ratio: Option<f64>,
    this: Vec<Duration>,
    other: Vec<Duration>,
    ratios: Vec<f64>,
    notes: String,
}

impl Row {
    fn new(case: &'static str, crate_name: &'static str, measured: impl Into<String>) -> Row {
        Row {
            case,
            crate_name,
            measured: measured.into(),
            peer: "",
            goal: "reported",
            goal_ratio: None,
            this: Vec::new(),
            other: Vec::new(),
            ratios: Vec::new(),
            notes: String::new(),
        }
    }

    fn peer(mut self, peer: &'static str) -> Row {
        self.peer = peer;
        self
    }

    fn goal(mut self, goal: &'static str, ratio: f64) -> Row {
        self.goal = goal;
        self.goal_ratio = Some(ratio);
        self
    }

    /// One round: each variant's time for `units` of its work.
    fn push(&mut self, this: Duration, other: Duration, units: u32) {
        self.ratios.push(this.as_secs_f64() / other.as_secs_f64());
        self.this.push(this / units);
        self.other.push(other / units);
    }

    fn to_json(&self) -> String {
        let micros = |values: &[Duration]| {
            let values: Vec<f64> = values.iter().map(|d| d.as_secs_f64() * 1e6).collect();
            quartiles(&values)[1]
        };
        let [q1, ratio, q3] = quartiles(&self.ratios);
        let (this_us, peer_us) = (micros(&self.this), micros(&self.other));
        println!(
            "{:<18} tethered {this_us:>10.3} µs  peer {peer_us:>10.3} µs  ratio median {ratio:.3} \
             (quartiles {q1:.3}-{q3:.3}, {} rounds)",
            self.case,
            self.ratios.len()
        );
        let goal_ratio = self
            .goal_ratio
            .map_or_else(|| "null".to_owned(), |goal| goal.to_string());
        format!(
            "{{\"case\": {}, \"crate\": {}, \"measured\": {}, \"peer\": {}, \"goal\": {}, \
             \"goal_ratio\": {goal_ratio}, \"rounds\": {}, \"ratio_median\": {ratio:.4}, \
             \"ratio_q1\": {q1:.4}, \"ratio_q3\": {q3:.4}, \"this_us\": {this_us:.4}, \
             \"peer_us\": {peer_us:.4}, \"command\": {}, \"notes\": {}}}",
            json_string(self.case),
            json_string(self.crate_name),
            json_string(&self.measured),
            json_string(self.peer),
            json_string(self.goal),
            self.ratios.len(),
            json_string(&format!("{COMMAND} {}", self.case)),
            json_string(&self.notes),
        )
    }
}

/// A row whose result is not a ratio (a count, a time against a fixed figure).
fn plain_row(
    case: &str,
    crate_name: &str,
    measured: &str,
    peer: &str,
    goal: &str,
    result: &str,
    met: bool,
) -> String {
    println!("{case:<18} {result}");
    format!(
        "{{\"case\": {}, \"crate\": {}, \"measured\": {}, \"peer\": {}, \"goal\": {}, \
         \"result\": {}, \"met\": {met}, \"command\": {}}}",
        json_string(case),
        json_string(crate_name),
        json_string(measured),
        json_string(peer),
        json_string(goal),
        json_string(result),
        json_string(&format!("{COMMAND} {case}")),
    )
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Times `this` and `other` alternately for `rounds` rounds after `warm_up`, each batch of
/// `units`.
async fn paired<A, B, FA, FB>(
    row: &mut Row,
    warm_up: usize,
    rounds: usize,
    units: u32,
    mut this: A,
    mut other: B,
) where
    A: FnMut() -> FA,
    B: FnMut() -> FB,
    FA: Future<Output = Duration>,
    FB: Future<Output = Duration>,
{
    for round in 0..warm_up + rounds {
        let (a, b) = if round % 2 == 0 {
            let a = this().await;
            (a, other().await)
        } else {
            let b = other().await;
            (this().await, b)
        };
        if round >= warm_up {
            row.push(a, b, units);
        }
    }
}

/// As [`paired`], for synchronous batches.
fn paired_sync(
    row: &mut Row,
    warm_up: usize,
    rounds: usize,
    units: u32,
    mut this: impl FnMut() -> Duration,
    mut other: impl FnMut() -> Duration,
) {
    for round in 0..warm_up + rounds {
        let (a, b) = if round % 2 == 0 {
            let a = this();
            (a, other())
        } else {
            let b = other();
            (this(), b)
        };
        if round >= warm_up {
            row.push(a, b, units);
        }
    }
}

/// The time `op` takes `units` times over.
fn timed(units: u32, mut op: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..units {
        op();
    }
    start.elapsed()
}

/// How many rounds: many when measuring, two for `cargo test --benches`'s smoke pass.
#[derive(Clone, Copy)]
struct Budget {
    measure: bool,
}

impl Budget {
    fn rounds(self, measured: usize) -> (usize, usize) {
        if self.measure { (3, measured) } else { (0, 2) }
    }
}

async fn concurrent(budget: Budget, jobs: u32) -> Row {
    let mut row = Row::new(
        "concurrent_20000",
        "core",
        format!("{jobs} concurrent jobs spawned, then awaited"),
    )
    .peer("`spawn_blocking`")
    .goal("≤ 1.05×", 1.05);
    let (warm_up, rounds) = budget.rounds(40);
    paired(
        &mut row,
        warm_up,
        rounds,
        jobs,
        || async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..jobs)
                .map(|_| tethered_tokio::spawn_native(|_token| black_box(1u64)))
                .collect();
            for handle in handles {
                black_box(handle.await.expect("the job ran"));
            }
            start.elapsed()
        },
        || async move {
            let start = Instant::now();
            let handles: Vec<_> = (0..jobs)
                .map(|_| tokio::task::spawn_blocking(|| black_box(1u64)))
                .collect();
            for handle in handles {
                black_box(handle.await.expect("the job ran"));
            }
            start.elapsed()
        },
    )
    .await;
    row
}

async fn group(budget: Budget, case: &'static str, jobs: u32) -> Row {
    let mut row = Row::new(
        case,
        "core",
        format!("a `JobGroup` of {jobs} jobs, joined with `join_next`"),
    )
    .peer("tokio `JoinSet` + `spawn_blocking`");
    let (warm_up, rounds) = budget.rounds(if jobs > 100 { 100 } else { 400 });
    paired(
        &mut row,
        warm_up,
        rounds,
        jobs,
        || async move {
            let start = Instant::now();
            let mut group: JobGroup<u64, std::convert::Infallible> = JobGroup::new();
            let spawner = tethered_tokio::TokioSpawner::current();
            for _ in 0..jobs {
                group
                    .spawn(JobOptions::new().on(spawner.clone()), |_token| {
                        Ok(black_box(1u64))
                    })
                    .expect("the group spawns");
            }
            while let Some(joined) = group.join_next().await {
                black_box(joined.expect("the job ran").expect("the job succeeded"));
            }
            start.elapsed()
        },
        || async move {
            let start = Instant::now();
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..jobs {
                set.spawn_blocking(|| black_box(1u64));
            }
            while let Some(joined) = set.join_next().await {
                black_box(joined.expect("the job ran"));
            }
            start.elapsed()
        },
    )
    .await;
    row
}

/// Child tokens created and dropped, 1,000 per batch, under a parent with `live` children.
fn children(budget: Budget, case: &'static str, live: usize) -> Row {
    const BATCH: u32 = 1_000;
    let mut row = Row::new(
        case,
        "core",
        if live == 0 {
            "child token create + drop, idle parent".to_owned()
        } else {
            format!("child token create + drop, parent with {live} live children")
        },
    )
    .peer("tokio-util `child_token`")
    .goal("≤ 1.0×", 1.0);
    let parent = CancelSource::new();
    let parent_token = parent.token();
    let kept: Vec<_> = (0..live).map(|_| parent_token.child()).collect();
    let peer_parent = tokio_util::sync::CancellationToken::new();
    let peer_kept: Vec<_> = (0..live).map(|_| peer_parent.child_token()).collect();
    let (warm_up, rounds) = budget.rounds(2_000);
    paired_sync(
        &mut row,
        warm_up,
        rounds,
        BATCH,
        || timed(BATCH, || drop(black_box(parent_token.child()))),
        || timed(BATCH, || drop(black_box(peer_parent.child_token()))),
    );
    drop((kept, peer_kept));
    row
}

fn any_of(budget: Budget) -> Row {
    const BATCH: u32 = 1_000;
    let mut row = Row::new(
        "any_of",
        "core",
        "`CancelSource::any_of` of two parents, create + drop",
    )
    .peer("tokio-util `child_token` of one parent");
    row.notes = "tokio-util has no any-of: a hand-written one adds a task per token".to_owned();
    let (a, b) = (CancelSource::new(), CancelSource::new());
    let (a, b) = (a.token(), b.token());
    let peer_parent = tokio_util::sync::CancellationToken::new();
    let (warm_up, rounds) = budget.rounds(2_000);
    paired_sync(
        &mut row,
        warm_up,
        rounds,
        BATCH,
        || timed(BATCH, || drop(black_box(CancelSource::any_of([&a, &b])))),
        || timed(BATCH, || drop(black_box(peer_parent.child_token()))),
    );
    row
}

async fn process_spawn(budget: Budget) -> Row {
    const BATCH: u32 = 8;
    let mut row = Row::new("process_spawn", "process", "spawn + wait of `true`")
        .peer("`tokio::process::Command` + `kill_on_drop`")
        .goal("≤ 1.10×", 1.10);
    let (warm_up, rounds) = budget.rounds(150);
    paired(
        &mut row,
        warm_up,
        rounds,
        BATCH,
        || async {
            let start = Instant::now();
            for _ in 0..BATCH {
                let output = tethered_process::Process::new(Command::new("true"))
                    .spawn()
                    .expect("true starts")
                    .await
                    .expect("true ran");
                assert!(output.success());
            }
            start.elapsed()
        },
        || async {
            let start = Instant::now();
            for _ in 0..BATCH {
                let status = tokio::process::Command::new("true")
                    .kill_on_drop(true)
                    .status()
                    .await
                    .expect("true ran");
                assert!(status.success());
            }
            start.elapsed()
        },
    )
    .await;
    row
}

fn cat_pool() -> tethered_process::Pool {
    tethered_process::Pool::builder(|| Command::new("cat"))
        .size(NonZeroUsize::MIN)
        .build()
        .expect("a pool of cat")
}

/// One turn on a `cat` worker: `line` out, and what came back.
async fn echo(pool: &tethered_process::Pool, line: &'static str) -> String {
    pool.run(move |worker| {
        worker.send_line(line)?;
        worker.read_line()
    })
    .await
    .expect("the turn ran")
    .expect("cat answered")
}

async fn pool_turn(budget: Budget) -> Row {
    const BATCH: u32 = 32;
    let mut row = Row::new(
        "pool_turn",
        "process",
        "pool turn round trip (a line to `cat` and back)",
    )
    .peer("a hand-written pipe worker (`cat`, tokio's pipes)")
    .goal("≤ 1.10×", 1.10);
    let pool = cat_pool();
    let mut child = tokio::process::Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("cat starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    let (warm_up, rounds) = budget.rounds(300);
    for round in 0..warm_up + rounds {
        let mut times = [Duration::ZERO; 2];
        for variant in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let start = Instant::now();
            for _ in 0..BATCH {
                if variant == 0 {
                    let answer = echo(&pool, "ping").await;
                    assert_eq!(answer.trim_end(), "ping");
                } else {
                    stdin.write_all(b"ping\n").await.expect("cat reads");
                    stdin.flush().await.expect("cat reads");
                    line.clear();
                    stdout.read_line(&mut line).await.expect("cat answers");
                    assert_eq!(line.trim_end(), "ping");
                }
            }
            times[variant] = start.elapsed();
        }
        if round >= warm_up {
            row.push(times[0], times[1], BATCH);
        }
    }
    drop(stdin);
    let _ = child.wait().await;
    let _report = pool.shutdown(Duration::from_secs(2)).await;
    row
}

/// From the drop of a turn blocked on its worker to the next turn's answer.
async fn pool_replace(budget: Budget) -> String {
    let pool = cat_pool();
    let rounds = if budget.measure { 100 } else { 2 };
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        // Warm: a worker is up and has served a turn.
        echo(&pool, "warm").await;
        // A turn that waits for a line that never comes, given up on.
        let mut stuck = Box::pin(pool.run(|worker| worker.read_line()));
        tokio::select! {
            _ = &mut stuck => panic!("the stuck turn answered"),
            () = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
        let dropped = Instant::now();
        drop(stuck);
        let answer = echo(&pool, "next").await;
        samples.push(dropped.elapsed().as_secs_f64() * 1e3);
        assert_eq!(answer.trim_end(), "next");
    }
    let _report = pool.shutdown(Duration::from_secs(2)).await;
    let [_, median, _] = quartiles(&samples);
    let worst = samples.iter().copied().fold(0.0, f64::max);
    plain_row(
        "pool_replace",
        "process",
        "a turn's drop to the next turn served by a fresh worker",
        "pydantic-monty 1.4's pool: 7.7 ms (its own figure)",
        "ahead of 7.7 ms",
        &format!("median {median:.2} ms, worst {worst:.2} ms ({rounds} drops)"),
        median < 7.7,
    )
}

/// This process's thread count and resident memory, from `/proc/self/status`.
/// `count` with a comma before its last three digits (counts here stay below a million).
fn thousands(count: usize) -> String {
    if count < 1_000 {
        count.to_string()
    } else {
        format!("{},{:03}", count / 1_000, count % 1_000)
    }
}

fn threads_and_rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|value| value.parse().ok())
            .unwrap_or(0)
    };
    (field("Threads:"), field("VmRSS:"))
}

/// Threads and memory this process adds while `count` children run, for each crate in turn
/// (10 without `--bench`, to check that the case works).
async fn children_live(budget: Budget, case: &str, count: usize) -> String {
    let count = if budget.measure { count } else { 10 };
    let sleeper = || {
        let mut command = Command::new("sleep");
        command.arg("600");
        command
    };
    let (threads_before, rss_before) = threads_and_rss();
    let peers: Vec<_> = (0..count)
        .map(|_| {
            tokio::process::Command::from(sleeper())
                .kill_on_drop(true)
                .spawn()
                .expect("sleep starts")
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (threads_peer, rss_peer) = threads_and_rss();
    drop(peers);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (threads_between, rss_between) = threads_and_rss();
    let jobs: Vec<_> = (0..count)
        .map(|_| {
            tethered_process::Process::new(sleeper())
                .spawn()
                .expect("sleep starts")
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (threads_this, rss_this) = threads_and_rss();
    drop(jobs);
    let added_threads = threads_this.saturating_sub(threads_between);
    let per_child = |kib: u64| kib as f64 / count as f64;
    let (this_kib, peer_kib) = (
        rss_this.saturating_sub(rss_between),
        rss_peer.saturating_sub(rss_before),
    );
    let result = format!(
        "tethered +{added_threads} threads, +{this_kib} KiB ({:.2} KiB a child); \
         tokio +{} threads, +{peer_kib} KiB ({:.2} KiB a child) ({count} children)",
        per_child(this_kib),
        threads_peer.saturating_sub(threads_before),
        per_child(peer_kib),
    );
    // Let the supervisor reap them before the next case.
    tokio::time::sleep(Duration::from_millis(500)).await;
    plain_row(
        case,
        "process",
        &format!(
            "{} live children: threads and memory added",
            thousands(count)
        ),
        "`tokio::process::Command` + `kill_on_drop`",
        "≤ 64 threads",
        &result,
        added_threads <= 64,
    )
}

/// An axum server on loopback answering `GET /` with `ok`, with or without the layer.
async fn serve(layered: bool) -> std::net::SocketAddr {
    use axum::routing::get;
    let server = CancelSource::new();
    let mut router = axum::Router::new().route("/", get(|| async { "ok" }));
    if layered {
        router = router.layer(tethered_tower::RequestTokenLayer::new(&server.token()));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        let _server = server;
        axum::serve(listener, router)
            .await
            .expect("the server runs");
    });
    address
}

/// A keep-alive HTTP/1.1 client of one connection.
struct Client {
    stream: BufReader<TcpStream>,
    line: String,
}

impl Client {
    async fn connect(address: std::net::SocketAddr) -> Client {
        let stream = TcpStream::connect(address)
            .await
            .expect("the server accepts");
        stream.set_nodelay(true).expect("nodelay");
        Client {
            stream: BufReader::new(stream),
            line: String::new(),
        }
    }

    async fn get(&mut self) {
        self.stream
            .get_mut()
            .write_all(b"GET / HTTP/1.1\r\nhost: bench\r\n\r\n")
            .await
            .expect("the server reads");
        let mut length = 0;
        loop {
            self.line.clear();
            self.stream
                .read_line(&mut self.line)
                .await
                .expect("the server answers");
            let header = self.line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("a length");
            }
        }
        let mut body = vec![0; length];
        self.stream
            .read_exact(&mut body)
            .await
            .expect("the body arrives");
        assert_eq!(body, b"ok");
    }
}

async fn tower(budget: Budget) -> Row {
    const BATCH: u32 = 64;
    let mut row = Row::new(
        "tower",
        "tower",
        "an HTTP/1.1 request through the layer (axum, loopback, one thread)",
    )
    .peer("the same server without it")
    .goal("≤ 1.02×", 1.02);
    let mut layered = Client::connect(serve(true).await).await;
    let mut bare = Client::connect(serve(false).await).await;
    let (warm_up, rounds) = budget.rounds(600);
    for round in 0..warm_up + rounds {
        let mut times = [Duration::ZERO; 2];
        for variant in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let client = if variant == 0 {
                &mut layered
            } else {
                &mut bare
            };
            let start = Instant::now();
            for _ in 0..BATCH {
                client.get().await;
            }
            times[variant] = start.elapsed();
        }
        if round >= warm_up {
            row.push(times[0], times[1], BATCH);
        }
    }
    row
}

fn main() {
    let invocation = Invocation::from_args();
    let budget = Budget {
        measure: invocation.measure,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut rows = Vec::new();
    let mut push = |row: String| {
        rows.push(row);
        let _ = std::io::stdout().flush();
    };
    let selects = |case: &str| invocation.selects(case);

    runtime.block_on(async {
        // First, while the process has no idle blocking-pool threads that could exit during
        // the count.
        for (case, count) in [("children_1000", 1_000), ("children_10000", 10_000)] {
            if selects(case) {
                push(children_live(budget, case, count).await);
            }
        }
        if selects("process_spawn") {
            push(process_spawn(budget).await.to_json());
        }
        if selects("pool_turn") {
            push(pool_turn(budget).await.to_json());
        }
        if selects("pool_replace") {
            push(pool_replace(budget).await);
        }
    });
    if selects("tower") {
        // On one thread: the client and both servers' tasks take turns on it, so neither
        // variant's requests depend on whether a wake-up crossed to the other worker (on a
        // multi-thread runtime that made the per-round ratio bimodal, 0.85 to 2.5).
        let one_thread = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime");
        push(one_thread.block_on(tower(budget)).to_json());
    }
    runtime.block_on(async {
        if selects("concurrent_20000") {
            let jobs = if budget.measure { 20_000 } else { 200 };
            push(
                tokio::spawn(concurrent(budget, jobs))
                    .await
                    .expect("the rounds ran")
                    .to_json(),
            );
        }
        for (case, jobs) in [("group_100", 100), ("group_1000", 1_000)] {
            if selects(case) {
                push(
                    tokio::spawn(group(budget, case, jobs))
                        .await
                        .expect("the rounds ran")
                        .to_json(),
                );
            }
        }
    });
    for (case, live) in [
        ("child_idle", 0),
        ("child_10000", 10_000),
        ("child_100000", 100_000),
    ] {
        if selects(case) {
            push(children(budget, case, live).to_json());
        }
    }
    if selects("any_of") {
        push(any_of(budget).to_json());
    }
    if invocation.measure && invocation.filter.is_none() {
        write_results("peers-rust", &format!("[\n{}\n]\n", rows.join(",\n")));
    }
}
