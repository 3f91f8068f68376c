//! A toy bytecode interpreter for untrusted scripts, on tokio's blocking pool: it checks its
//! `CancelToken` every 1,000 instructions, a deadline (`cancel_after`) cancels a script that runs
//! too long, and the interpreter returns a partial result that says it was cancelled, why, and
//! how far it got. The handle hands that result back with the stop:
//! `Err(NativeError::Cancelled { reason: Timeout, returned: Some(partial), .. })`.
//!
//! Run with: cargo run --example sandbox

use std::fmt;
use std::time::{Duration, Instant};

use tethered::{AbortableNative, CancelReason, CancelToken, NativeError, Tethered};

/// Instructions between two checks of the token: one atomic load per thousand instructions.
const CHECK_EVERY: u64 = 1_000;
/// How long a script may run.
const DEADLINE: Duration = Duration::from_millis(200);

/// One instruction of a small stack machine.
#[derive(Clone, Copy, Debug)]
enum Op {
    Push(i64),
    Add,
    Dup,
    Swap,
    Over,
    Pop,
    /// Pops a value; jumps if it is zero.
    JumpIfZero(usize),
    Jump(usize),
    Halt,
}

/// How a script ended.
#[derive(Debug)]
enum Outcome {
    /// It halted by itself, with this value on top of its stack.
    Finished { value: i64, steps: u64 },
    /// The token was cancelled: the state it had reached, and why it was stopped.
    Cancelled {
        reason: CancelReason,
        steps: u64,
        pc: usize,
        top: Option<i64>,
    },
    /// The script itself was broken.
    Fault { message: &'static str, pc: usize },
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Finished { value, steps } => {
                write!(f, "finished with {value} after {steps} instructions")
            }
            Outcome::Cancelled {
                reason,
                steps,
                pc,
                top,
            } => write!(
                f,
                "cancelled ({reason}) after {steps} instructions, at pc {pc} with {top:?} on top \
                 of the stack"
            ),
            Outcome::Fault { message, pc } => write!(f, "fault at pc {pc}: {message}"),
        }
    }
}

/// Runs `program` until it halts, faults, or `token` is cancelled.
fn interpret(program: &[Op], token: &CancelToken) -> Outcome {
    let mut stack: Vec<i64> = Vec::new();
    let mut pc = 0;
    let mut steps: u64 = 0;
    loop {
        if steps.is_multiple_of(CHECK_EVERY)
            && let Some(reason) = token.reason()
        {
            return Outcome::Cancelled {
                reason,
                steps,
                pc,
                top: stack.last().copied(),
            };
        }
        steps += 1;
        let Some(&op) = program.get(pc) else {
            return Outcome::Fault {
                message: "ran off the end of the program",
                pc,
            };
        };
        pc += 1;
        let underflow = Outcome::Fault {
            message: "stack underflow",
            pc: pc - 1,
        };
        match op {
            Op::Push(value) => stack.push(value),
            Op::Add => match (stack.pop(), stack.pop()) {
                (Some(b), Some(a)) => stack.push(a.wrapping_add(b)),
                _ => return underflow,
            },
            Op::Dup => match stack.last() {
                Some(&top) => stack.push(top),
                None => return underflow,
            },
            Op::Swap => match stack.len() {
                n if n >= 2 => stack.swap(n - 1, n - 2),
                _ => return underflow,
            },
            Op::Over => match stack.len() {
                n if n >= 2 => stack.push(stack[n - 2]),
                _ => return underflow,
            },
            Op::Pop => {
                if stack.pop().is_none() {
                    return underflow;
                }
            }
            Op::JumpIfZero(target) => match stack.pop() {
                Some(0) => pc = target,
                Some(_) => {}
                None => return underflow,
            },
            Op::Jump(target) => pc = target,
            Op::Halt => {
                return match stack.last() {
                    Some(&value) => Outcome::Finished { value, steps },
                    None => underflow,
                };
            }
        }
    }
}

/// `1 + 2 + ... + n`, counting down. Each line: its address, then the stack after it.
fn sum_to(n: i64) -> Vec<Op> {
    use Op::*;
    vec![
        Push(0),        //  0: sum
        Push(n),        //  1: sum n
        Dup,            //  2: sum n n
        JumpIfZero(11), //  3: sum n        (to 11 once n is 0)
        Swap,           //  4: n sum
        Over,           //  5: n sum n
        Add,            //  6: n sum+n
        Swap,           //  7: sum n
        Push(-1),       //  8: sum n -1
        Add,            //  9: sum n-1
        Jump(2),        // 10: sum n
        Pop,            // 11: sum
        Halt,           // 12
    ]
}

/// A script that never halts: `x = 0; loop { x += 1 }`.
fn endless() -> Vec<Op> {
    use Op::*;
    vec![Push(0), Push(1), Add, Jump(1)]
}

/// Starts a script on tokio's blocking pool with a deadline: once [`DEADLINE`] has passed,
/// `cancel_after` cancels the job with `Timeout`, the interpreter sees it at its next check and
/// returns a partial result, and awaiting the job waits for that return.
fn start_script(program: Vec<Op>) -> std::io::Result<AbortableNative<Outcome>> {
    let job = tethered_tokio::spawn_native(move |token| interpret(&program, &token));
    job.cancel_after(DEADLINE)?;
    Ok(job)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("running two scripts, each with a {DEADLINE:?} deadline");

    // Halts before its deadline: `Ok`, with what the interpreter returned.
    let started = Instant::now();
    let outcome = start_script(sum_to(10_000))?.await?;
    println!("sum_to(10000): {outcome} ({:.1?})", started.elapsed());
    assert!(matches!(
        outcome,
        Outcome::Finished {
            value: 50_005_000,
            ..
        }
    ));

    // Stopped by its deadline: `Cancelled`, with the partial result the interpreter returned.
    let started = Instant::now();
    let stopped = start_script(endless())?.await;
    let took = started.elapsed();
    let outcome = match stopped {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(outcome),
            ..
        }) => *outcome,
        other => return Err(format!("only its deadline stops endless(): {other:?}").into()),
    };
    println!("endless():     {outcome} ({took:.1?})");
    assert!(matches!(
        outcome,
        Outcome::Cancelled {
            reason: CancelReason::Timeout,
            ..
        }
    ));
    // The handle resolves only once the closure has returned: no thread is left running.
    println!(
        "the interpreter returned its partial result {:.1?} after the deadline",
        took.saturating_sub(DEADLINE)
    );
    Ok(())
}
