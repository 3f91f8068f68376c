//! The process's CPU time, to show that nothing burns a core once every job was cancelled.

use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::Duration;

/// The process's CPU time (user + system) so far, from `/proc/self/stat`; `None` where there
/// is no procfs.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces:
    // state is field 3, utime field 14, stime field 15 (proc(5)).
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let utime: u64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.get(15 - 3)?.parse().ok()?;
    Some(Duration::from_secs_f64(
        (utime + stime) as f64 / clock_ticks_per_second() as f64,
    ))
}

/// The CPU time the process uses over the next `window` (this thread sleeps through it), as a
/// share of one core; `None` where there is no procfs.
pub fn cpu_share_over(window: Duration) -> Option<f64> {
    let before = cpu_time()?;
    thread::sleep(window);
    let used = cpu_time()?.saturating_sub(before);
    Some(used.as_secs_f64() / window.as_secs_f64())
}

/// `getconf CLK_TCK`: the unit of `/proc/self/stat`'s times (USER_HZ, 100 on Linux for every
/// mainstream architecture, the fallback).
fn clock_ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100)
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn busy_work_shows_in_the_cpu_time() {
        let before = cpu_time().expect("procfs on Linux");
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(200) {
            std::hint::spin_loop();
        }
        let used = cpu_time().expect("procfs on Linux") - before;
        // Tick granularity (10 ms) and a shared machine: only ask for a clear share of it.
        assert!(used >= Duration::from_millis(50), "{used:?}");
    }
}
