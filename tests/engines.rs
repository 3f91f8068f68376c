//! Real engines on tokio's blocking pool: an SQLite query and a Lua script, each first without
//! tethered (the caller gives up and the engine runs on), then as the `sqlite_interrupt` and
//! `lua_sandbox` examples run them (they stop within moments of the cancel, and the engine
//! serves the next request).
//!
//! The examples' own code is compiled in here, so these tests pin what users copy. A naive
//! engine is stopped by the test before it ends: the SQLite query through an interrupt handle
//! the test keeps, the Lua script through a flag it reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tethered::{CancelReason, CancelSource, NativeError};

#[allow(dead_code)]
#[path = "../examples/sqlite_interrupt.rs"]
mod sqlite_interrupt;

#[allow(dead_code)]
#[path = "../examples/lua_sandbox.rs"]
mod lua_sandbox;

mod stopping;
use stopping::{GIVE_UP_AFTER, STOPS_WITHIN, wait_for};

/// A query that would run for hours.
fn endless_query() -> String {
    sqlite_interrupt::sum_to(1_000_000_000_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_spawn_blocking_query_runs_on_after_its_caller_gave_up() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let interrupt = conn.get_interrupt_handle(); // the test's own way to end it
    let returned = Arc::new(AtomicBool::new(false));
    let query = tokio::task::spawn_blocking({
        let returned = returned.clone();
        move || {
            let answer = conn.query_row(&endless_query(), [], |row| row.get::<_, i64>(0));
            returned.store(true, Ordering::SeqCst);
            answer
        }
    });
    assert!(tokio::time::timeout(GIVE_UP_AFTER, query).await.is_err());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !returned.load(Ordering::SeqCst),
        "nothing interrupted the query"
    );

    interrupt.interrupt();
    assert!(wait_for(&returned), "the test's interrupt ends it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_past_its_deadline_fails_interrupted_and_the_connection_answers_the_next() {
    let db: sqlite_interrupt::Db =
        Arc::new(Mutex::new(rusqlite::Connection::open_in_memory().unwrap()));
    let (answer, cancel_to_return) = sqlite_interrupt::run(&db, endless_query()).await.unwrap();
    // Stopped by the deadline while it ran: the stop, with what the closure returned.
    let stopped = answer.expect_err("it never ends by itself");
    assert!(
        matches!(
            stopped,
            NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: Some(_),
                ..
            }
        ),
        "{stopped:?}"
    );
    let err = stopped
        .into_returned()
        .expect("the closure returned")
        .expect_err("it never ends by itself");
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::OperationInterrupted)
    );
    assert_eq!(err.to_string(), "interrupted");
    let cancel_to_return = cancel_to_return.expect("the deadline passed");
    assert!(cancel_to_return < STOPS_WITHIN, "{cancel_to_return:?}");

    let (answer, cancelled) = sqlite_interrupt::run(&db, sqlite_interrupt::sum_to(100))
        .await
        .unwrap();
    assert_eq!(answer.unwrap().unwrap(), 5050);
    assert_eq!(cancelled, None);
}

#[test]
fn a_cancel_that_comes_before_the_query_starts_still_stops_it() {
    // SQLite drops an interrupt that comes while no statement runs: the progress handler is
    // what stops this query.
    let db = Arc::new(Mutex::new(rusqlite::Connection::open_in_memory().unwrap()));
    let interrupt = db.lock().unwrap().get_interrupt_handle();
    let source = CancelSource::new();
    source.cancel(CancelReason::Timeout);
    let returned = Arc::new(AtomicBool::new(false));
    let worker = std::thread::spawn({
        let (db, token, returned) = (db.clone(), source.token(), returned.clone());
        move || {
            let answer = sqlite_interrupt::query(&db, &endless_query(), &token);
            returned.store(true, Ordering::SeqCst);
            answer
        }
    });
    let stopped = wait_for(&returned);
    if !stopped {
        interrupt.interrupt(); // do not leave it running
    }
    let err = worker.join().unwrap().expect_err("it never ends by itself");
    assert!(stopped, "the early cancel was lost");
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::OperationInterrupted)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_lua_script_without_a_hook_runs_on_after_its_caller_gave_up() {
    let lua = mlua::Lua::new();
    let stop = Arc::new(AtomicBool::new(false)); // the test's own way to end it
    let stop_requested = lua
        .create_function({
            let stop = stop.clone();
            move |_, ()| Ok(stop.load(Ordering::SeqCst))
        })
        .unwrap();
    lua.globals().set("stop_requested", stop_requested).unwrap();
    let returned = Arc::new(AtomicBool::new(false));
    let script = tokio::task::spawn_blocking({
        let returned = returned.clone();
        move || {
            let ended = lua.load("while not stop_requested() do end").exec();
            returned.store(true, Ordering::SeqCst);
            ended
        }
    });
    assert!(tokio::time::timeout(GIVE_UP_AFTER, script).await.is_err());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !returned.load(Ordering::SeqCst),
        "nothing stopped the script"
    );

    stop.store(true, Ordering::SeqCst);
    assert!(wait_for(&returned), "the test's flag ends it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_scripts_past_their_deadline_stop_and_the_state_runs_the_next() {
    let sandbox = Arc::new(Mutex::new(lua_sandbox::Sandbox::new().unwrap()));
    for script in [
        lua_sandbox::ENDLESS,
        lua_sandbox::CATCHES_AND_LOOPS,
        lua_sandbox::IN_A_COROUTINE,
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "local co = coroutine.create(function() while true do pcall(function() while true do \
         end end) end end) while true do coroutine.resume(co) end",
    ] {
        let (value, cancel_to_return) = lua_sandbox::run(&sandbox, script).await.unwrap();
        // Stopped by the deadline while it ran: the stop, with what the closure returned.
        let stopped = value.expect_err("it never ends by itself");
        assert!(
            matches!(
                stopped,
                NativeError::Cancelled {
                    reason: CancelReason::Timeout,
                    returned: Some(_),
                    ..
                }
            ),
            "{script}: {stopped:?}"
        );
        let err = stopped
            .into_returned()
            .expect("the closure returned")
            .expect_err("it never ends by itself");
        assert_eq!(
            lua_sandbox::headline(&err),
            "runtime error: script stopped: the deadline passed",
            "{script}"
        );
        let cancel_to_return = cancel_to_return.expect("the deadline passed");
        assert!(
            cancel_to_return < STOPS_WITHIN,
            "{script}: {cancel_to_return:?}"
        );

        let (value, cancelled) = lua_sandbox::run(&sandbox, lua_sandbox::SUM).await.unwrap();
        assert_eq!(value.unwrap().unwrap(), "50005000", "after {script}");
        assert_eq!(cancelled, None);
    }
}

#[test]
fn a_lua_script_that_catches_errors_still_sees_its_own() {
    let sandbox = lua_sandbox::Sandbox::new().unwrap();
    let source = CancelSource::new();
    let token = source.token();
    let caught = sandbox
        .run(
            "local ok, err = pcall(error, 'bad input') return tostring(ok) .. ': ' .. err",
            &token,
        )
        .unwrap();
    assert_eq!(caught, "false: bad input");
}
