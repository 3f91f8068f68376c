//! Untrusted Lua scripts (mlua, with a vendored Lua 5.4) on tokio's blocking pool, behind a
//! deadline (`cancel_after`). A hook runs every 10,000 VM instructions and checks the running
//! job's `CancelToken` (one atomic load); once the token is cancelled the hook raises an error
//! that ends the script, even one that catches errors with `pcall` and loops, and the same Lua
//! state runs the next script.
//!
//! Run with: cargo run --example lua_sandbox

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mlua::{HookTriggers, Lua, LuaOptions, StdLib, VmState};
use tethered::{CancelReason, CancelToken, NativeError, Tethered};

/// How long a script may run.
const DEADLINE: Duration = Duration::from_millis(200);
/// VM instructions between two checks of the token.
const CHECK_EVERY: u32 = 10_000;

/// Runs once in a new state, with the Rust function `check` as its argument. Every way Lua has to
/// catch an error is wrapped to check the token again when it returns, so a script that catches
/// the stop and carries on is stopped again at once, one level up, until nothing is left to run.
/// And no reading of files.
const PRELUDE: &str = r#"
local check, raw_pcall, raw_xpcall, raw_resume = ..., pcall, xpcall, coroutine.resume
local function checked(...) check() return ... end
function _G.pcall(...) return checked(raw_pcall(...)) end
function _G.xpcall(...) return checked(raw_xpcall(...)) end
function coroutine.resume(...) return checked(raw_resume(...)) end
dofile, loadfile = nil, nil
"#;

/// A Lua state for untrusted scripts: each run stops once the token it was given is cancelled.
pub(crate) struct Sandbox {
    lua: Lua,
}

impl Sandbox {
    pub(crate) fn new() -> mlua::Result<Self> {
        // No `io`, `os`, `package` or `debug` (`debug.sethook` would remove the hook).
        let libs = StdLib::COROUTINE | StdLib::TABLE | StdLib::STRING | StdLib::UTF8 | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        // Poll: a global hook, so it also runs in the coroutines a script creates.
        let every = HookTriggers::new().every_nth_instruction(CHECK_EVERY);
        lua.set_global_hook(every, |lua, _debug| check(lua).map(|()| VmState::Continue))?;
        let check = lua.create_function(|lua, ()| check(lua))?;
        lua.load(PRELUDE).set_name("prelude").call::<()>(check)?;
        Ok(Sandbox { lua })
    }

    /// Runs `script` until it returns (its value, as text), fails, or `token` is cancelled: then
    /// it fails with "script stopped: <the reason>".
    pub(crate) fn run(&self, script: &str, token: &CancelToken) -> mlua::Result<String> {
        self.lua.set_app_data(token.clone());
        let value = self
            .lua
            .load(script)
            .set_name("untrusted")
            .eval::<mlua::Value>();
        // Disarm: the next script must not be stopped by this one's token.
        self.lua.remove_app_data::<CancelToken>();
        value?.to_string()
    }
}

/// `Err` once the token of the running script is cancelled.
fn check(lua: &Lua) -> mlua::Result<()> {
    match lua.app_data_ref::<CancelToken>() {
        Some(token) => token.check().map_err(|cancelled| {
            mlua::Error::runtime(format!("script stopped: {}", cancelled.reason()))
        }),
        None => Ok(()),
    }
}

/// The first line of a Lua error (the rest is its traceback).
pub(crate) fn headline(err: &mlua::Error) -> String {
    let text = err.to_string();
    text.lines().next().unwrap_or_default().to_owned()
}

/// What [`run`] gives: the job's result (`Err(NativeError::Cancelled { returned: Some(..), .. })`
/// once the deadline stopped the script), and then the time from the deadline to the script's
/// return.
pub(crate) type Ran = (
    Result<mlua::Result<String>, NativeError<mlua::Result<String>>>,
    Option<Duration>,
);

/// Runs `script` in `sandbox` on tokio's blocking pool with [`DEADLINE`]: `cancel_after` cancels
/// the job with `Timeout` once the deadline has passed (the hook sees it and stops the script),
/// and awaiting the job waits until the script has returned.
pub(crate) async fn run(sandbox: &Arc<Mutex<Sandbox>>, script: &'static str) -> io::Result<Ran> {
    let sandbox = sandbox.clone();
    let job = tethered_tokio::spawn_native(move |token| {
        let sandbox = sandbox.lock().unwrap_or_else(PoisonError::into_inner);
        sandbox.run(script, &token)
    });
    job.cancel_after(DEADLINE)?;
    let token = job.token().clone();
    let value = job.await;
    // The job's token carries its deadline; it is cancelled only if the deadline stopped it.
    let cancel_to_return = token
        .deadline()
        .filter(|_| token.is_cancelled())
        .map(|deadline| deadline.elapsed());
    Ok((value, cancel_to_return))
}

pub(crate) const SUM: &str = "local s = 0 for i = 1, 10000 do s = s + i end return s";
pub(crate) const ENDLESS: &str = "local x = 0 while true do x = x + 1 end";
pub(crate) const CATCHES_AND_LOOPS: &str =
    "while true do pcall(function() while true do end end) end";
pub(crate) const IN_A_COROUTINE: &str =
    "local co = coroutine.create(function() while true do end end) return coroutine.resume(co)";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sandbox = Sandbox::new()?;
    let version: String = sandbox.lua.globals().get("_VERSION")?;
    println!("{version}, each script with a {DEADLINE:?} deadline");
    let sandbox = Arc::new(Mutex::new(sandbox));

    let (value, _) = run(&sandbox, SUM).await?;
    println!("sum of 1..10000: {}", value??);

    for (name, script) in [
        ("endless loop", ENDLESS),
        ("pcall in a loop", CATCHES_AND_LOOPS),
        ("in a coroutine", IN_A_COROUTINE),
    ] {
        let (value, cancel_to_return) = run(&sandbox, script).await?;
        // The deadline stopped the job, and the closure returned the script's error.
        let err = match value {
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: Some(returned),
                ..
            }) => match *returned {
                Err(err) => err,
                Ok(value) => {
                    return Err(
                        format!("{name}: never ends by itself: finished with {value:?}").into(),
                    );
                }
            },
            other => return Err(format!("{name}: never ends by itself: {other:?}").into()),
        };
        let cancel_to_return = cancel_to_return.ok_or("the deadline passed")?;
        println!(
            "{name}: {}; cancel to return: {cancel_to_return:.2?}",
            headline(&err)
        );
    }

    let started = Instant::now();
    let (value, _) = run(&sandbox, SUM).await?;
    println!(
        "the same Lua state, next script: sum of 1..10000 = {} in {:.1?}",
        value??,
        started.elapsed()
    );
    Ok(())
}
