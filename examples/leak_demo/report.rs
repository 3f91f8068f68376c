//! What the demo shows: the table, the explanation under it, and the chart.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::args::Options;
use crate::chart::{Chart, Series};
use crate::{Run, SHUTDOWN_LIMIT, Way, vm};

pub(crate) fn print_table(options: &Options, naive: &Run, tethered: &Run) {
    let observe = show(options.observe);
    let row = |label: &str, value: &dyn Fn(&Run) -> String| {
        [label.to_owned(), value(naive), value(tethered)]
    };
    let rows = [
        [String::new(), "naive".to_owned(), "tethered".to_owned()],
        [
            String::new(),
            "spawn_blocking + flag".to_owned(),
            "spawn_native + timeout".to_owned(),
        ],
        row("jobs timed out", &|r| {
            format!("{} of {}", r.observed.timed_out, options.jobs)
        }),
        row(&format!("closures still running {observe} later"), &|r| {
            r.observed.running_after.to_string()
        }),
        row(
            "last closure returned",
            &|r| match r.all_returned_after_timeouts() {
                Some(after) => format!("{} after the first timeout", show(after)),
                None => "not yet".to_owned(),
            },
        ),
        row(
            "CPU burnt after the timeouts",
            &|r| match r.observed.cpu_after_timeouts {
                Some(cpu) => format!("{:.2} s in {observe}", cpu.as_secs_f64()),
                None => "n/a (no /proc)".to_owned(),
            },
        ),
        row("blocking-pool slots held", &|r| {
            format!("{} of {}", r.observed.running_after, options.pool)
        }),
        row(
            "queued jobs still to run",
            &|r| match r.observed.queued_after {
                Some(queued) => format!("{queued} ({} skipped unrun)", r.never_started()),
                None => r.never_started().to_string(),
            },
        ),
        row(
            "a fresh job waits for a thread",
            &|r| match r.observed.fresh_wait {
                Some(waited) => show(waited),
                None => format!("> {observe} (still waiting)"),
            },
        ),
        row(
            &format!("runtime shutdown_timeout({})", show(SHUTDOWN_LIMIT)),
            &|r| {
                if r.shutdown >= SHUTDOWN_LIMIT {
                    format!(
                        "gave up after {}; {} closures run on",
                        show(r.shutdown),
                        r.still_running_at_exit()
                    )
                } else {
                    format!("returned in {}", show(r.shutdown))
                }
            },
        ),
    ];
    let width = |column: usize| rows.iter().map(|r| r[column].len()).max().unwrap_or(0);
    let (first, second) = (width(0), width(1));
    for [label, naive, tethered] in &rows {
        println!("{label:<first$}   {naive:<second$}   {tethered}");
    }
}

pub(crate) fn explain(naive: &Run, tethered: &Run) {
    println!(
        "naive:    the timeouts dropped the futures, and nothing told the closures: {} spin on,\n          \
         holding {} of the pool's threads.",
        naive.observed.running_after, naive.observed.running_after,
    );
    if naive.never_started() > 0 {
        println!(
            "          The {} queued job(s) will run, and spin, whenever a thread frees up.",
            naive.never_started()
        );
    }
    if naive.still_running_at_exit() > naive.observed.running_after {
        println!(
            "          The shutdown started {} more: tokio's worker thread is a pool thread too, \
             and once\n          it stopped it took a queued job.",
            naive.still_running_at_exit() - naive.observed.running_after
        );
    }
    println!(
        "tethered: each timeout cancelled its job's token with `Timeout`: the running scripts saw it\n          \
         within {} instructions and returned, and the {} queued job(s) were skipped unrun.",
        vm::CHECK_EVERY,
        tethered.never_started()
    );
}

pub(crate) fn write_chart(
    out: &Path,
    options: &Options,
    naive: &Run,
    tethered: &Run,
) -> std::io::Result<()> {
    // Each run on its own clock, 0 where its first timeout fired.
    let since_timeout = |run: &Run| -> Vec<(f64, usize)> {
        let fired = run
            .tally
            .first_timeout()
            .unwrap_or(options.timeout)
            .as_secs_f64();
        let samples = run.samples.iter();
        samples
            .map(|&(at, n)| (at.as_secs_f64() - fired, n))
            .collect()
    };
    let (naive_samples, tethered_samples) = (since_timeout(naive), since_timeout(tethered));
    let chart = Chart {
        title: "Closures still running after their timeouts".to_owned(),
        subtitle: format!(
            "{} sandbox jobs, {} timeout, tokio blocking pool of {} threads",
            options.jobs,
            show(options.timeout),
            options.pool
        ),
        series: [(naive, &naive_samples), (tethered, &tethered_samples)]
            .into_iter()
            .map(|(run, samples)| Series {
                label: run.way.name(),
                detail: match run.way {
                    Way::Naive => "spawn_blocking + stop flag",
                    Way::Tethered => "spawn_native + timeout",
                },
                color: match run.way {
                    Way::Naive => "#d62728",
                    Way::Tethered => "#1f77b4",
                },
                width: match run.way {
                    Way::Naive => 6.0,
                    Way::Tethered => 2.5,
                },
                samples,
            })
            .collect(),
    };
    if let Some(dir) = out.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(out, chart.to_svg())
}

/// `<target>/leak_demo.svg`, for a binary at `<target>/<profile>/examples/leak_demo`; else the
/// current directory.
pub(crate) fn default_chart_path() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let examples = exe.parent()?;
            (examples.file_name()? == "examples")
                .then(|| examples.parent()?.parent())
                .flatten()
                .map(|target| target.join("leak_demo.svg"))
        })
        .unwrap_or_else(|| PathBuf::from("leak_demo.svg"))
}

/// `path` relative to the current directory, where it is inside it.
pub(crate) fn relative(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}

/// A duration for people: `0.35 ms`, `12 ms`, `1.5 s`.
pub(crate) fn show(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        let text = format!("{:.2}", ms / 1000.0);
        format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
    }
}
