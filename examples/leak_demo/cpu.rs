//! CPU time burnt by one run's own threads, from `/proc/self/task/*/stat` (Linux).
//!
//! Each run names its runtime's threads (workers and blocking pool alike), so its CPU time can
//! be told from the other run's even while both have threads alive. Elsewhere, or without
//! procfs, the numbers are `None` and the table says "n/a".

use std::collections::HashMap;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// CPU ticks (user + system) of each live thread with a given name, by thread id.
#[derive(Clone, Debug)]
pub(crate) struct ThreadTimes {
    ticks: HashMap<u64, u64>,
}

impl ThreadTimes {
    /// The threads of this process named `name` right now, or `None` without procfs.
    pub(crate) fn of_threads_named(name: &str) -> Option<ThreadTimes> {
        let mut ticks = HashMap::new();
        for entry in std::fs::read_dir("/proc/self/task").ok()? {
            let Ok(entry) = entry else { continue };
            let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            // A thread may end between the listing and the read: skip it.
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some((comm, used)) = parse_stat(&stat)
                && comm == name
            {
                ticks.insert(tid, used);
            }
        }
        Some(ThreadTimes { ticks })
    }

    /// CPU time these threads used since `earlier`. A thread that started since counts in full;
    /// one that ended since is lost (threads of a tokio blocking pool live for 10 s idle, longer
    /// than any run here).
    pub(crate) fn since(&self, earlier: &ThreadTimes) -> Duration {
        let ticks: u64 = self
            .ticks
            .iter()
            .map(|(tid, now)| now.saturating_sub(earlier.ticks.get(tid).copied().unwrap_or(0)))
            .sum();
        Duration::from_secs_f64(ticks as f64 / ticks_per_second() as f64)
    }
}

/// The thread's name and its user + system ticks, from one `stat` line (proc(5)): the name sits
/// in parentheses and may itself hold spaces or parentheses, so split at the last `)`.
fn parse_stat(stat: &str) -> Option<(&str, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    // After the name: state is field 3, utime field 14, stime field 15.
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

/// `getconf CLK_TCK`: the unit of those ticks (USER_HZ, 100 on Linux).
fn ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .filter(|&ticks| ticks > 0)
            .unwrap_or(100)
    })
}
