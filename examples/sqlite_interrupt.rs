//! An embedded SQLite database (rusqlite, with its bundled SQLite) on tokio's blocking pool: a
//! query that would run for hours, behind a deadline (`cancel_after`). The job's `on_cancel`
//! callback calls the connection's `InterruptHandle::interrupt` from the cancelling thread,
//! SQLite abandons the query with `SQLITE_INTERRUPT`, and the same connection answers the next
//! query at once.
//!
//! Run with: cargo run --example sqlite_interrupt

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};
use tethered::{CancelReason, CancelToken, NativeError, Tethered};

/// How long a query may run.
const DEADLINE: Duration = Duration::from_millis(200);
/// VM steps between two reads of the token by the progress handler (see [`query`]).
const POLL_EVERY: i32 = 100_000;

/// `1 + 2 + ... + n` by a recursive CTE: a row per step, so `n` sets how long it runs.
pub(crate) fn sum_to(n: u64) -> String {
    format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) \
         SELECT sum(i) FROM n"
    )
}

/// One connection shared by every request, one query at a time: a pool of one.
pub(crate) type Db = Arc<Mutex<Connection>>;

/// Runs `sql` (one row, one integer) on `db` until it finishes or `token` is cancelled; then it
/// fails with SQLite's own `SQLITE_INTERRUPT` error ("interrupted").
pub(crate) fn query(
    db: &Mutex<Connection>,
    sql: &str,
    token: &CancelToken,
) -> rusqlite::Result<i64> {
    let conn = db.lock().unwrap_or_else(PoisonError::into_inner);
    // Push: the cancelling thread interrupts the statement that runs right now.
    let interrupt = conn.get_interrupt_handle();
    let interrupt_on_cancel = token.on_cancel(move |_reason| interrupt.interrupt());
    // SQLite forgets an interrupt that comes while no statement runs, so a cancel landing just
    // before the statement's first step would be lost. A progress handler that reads the token
    // (one atomic load every POLL_EVERY steps) closes that gap.
    let poll = token.clone();
    conn.progress_handler(POLL_EVERY, Some(move || poll.is_cancelled()))?;
    let answer = conn.query_row(sql, [], |row| row.get(0));
    // Disarm both before the connection goes back to the pool, so that neither this token nor
    // a late cancel can stop the next request's query. Dropping the guard waits for an
    // `interrupt` that is running on another thread.
    conn.progress_handler(0, None::<fn() -> bool>)?;
    drop(interrupt_on_cancel);
    answer
}

/// What [`run`] gives: the job's result (`Err(NativeError::Cancelled { returned: Some(..), .. })`
/// once the deadline stopped the query), and then the time from the deadline to the query's
/// return.
pub(crate) type Answer = (
    Result<rusqlite::Result<i64>, NativeError<rusqlite::Result<i64>>>,
    Option<Duration>,
);

/// Runs `sql` on tokio's blocking pool with [`DEADLINE`]: `cancel_after` cancels the job with
/// `Timeout` once the deadline has passed (its `on_cancel` callback interrupts the query), and
/// awaiting the job waits until the query has returned.
pub(crate) async fn run(db: &Db, sql: String) -> std::io::Result<Answer> {
    let db = db.clone();
    let job = tethered_tokio::spawn_native(move |token| query(&db, &sql, &token));
    job.cancel_after(DEADLINE)?;
    let token = job.token().clone();
    let answer = job.await;
    // The job's token carries its deadline; it is cancelled only if the deadline stopped it.
    let cancel_to_return = token
        .deadline()
        .filter(|_| token.is_cancelled())
        .map(|deadline| deadline.elapsed());
    Ok((answer, cancel_to_return))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db: Db = Arc::new(Mutex::new(Connection::open_in_memory()?));
    println!(
        "SQLite {}, each query with a {DEADLINE:?} deadline",
        rusqlite::version()
    );

    let (answer, _) = run(&db, sum_to(10_000)).await?;
    println!("sum_to(10000): {}", answer??);

    let started = Instant::now();
    let (answer, cancel_to_return) = run(&db, sum_to(1_000_000_000_000)).await?;
    // The deadline stopped the job, and the closure returned the query's own error.
    let err = match answer {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(returned),
            ..
        }) => match *returned {
            Err(err) => err,
            Ok(value) => {
                return Err(format!("a trillion rows take hours: finished with {value:?}").into());
            }
        },
        other => return Err(format!("a trillion rows take hours: {other:?}").into()),
    };
    let cancel_to_return = cancel_to_return.ok_or("the deadline passed")?;
    assert_eq!(
        err.sqlite_error_code(),
        Some(ErrorCode::OperationInterrupted)
    );
    println!(
        "sum_to(1e12):  failed after {:.1?}: {err} (SQLITE_INTERRUPT)",
        started.elapsed()
    );
    println!("cancel to return: {cancel_to_return:.2?}");

    let started = Instant::now();
    let (answer, _) = run(&db, sum_to(10_000)).await?;
    println!(
        "the same connection, next query: sum_to(10000) = {} in {:.1?}",
        answer??,
        started.elapsed()
    );
    Ok(())
}
