//! A tiny interpreter for untrusted scripts, run on a native thread: it checks its token every
//! [`CHECK_EVERY`] instructions, so a cancelled request stops it within microseconds.
//!
//! The language: one instruction per line, `#` starts a comment, `name:` is a label.
//!
//! ```text
//! set R X     R = X        (X: a register or an integer)
//! add R X     R = R + X    (wrapping; likewise sub, mul)
//! jnz R L     go to label L if R is not 0
//! jmp L       go to label L
//! halt        stop
//! ```

use std::collections::{BTreeMap, HashMap};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tethered::CancelToken;

/// How many instructions run between two looks at the token (one atomic load each).
const CHECK_EVERY: u64 = 1_000;

/// `await run_script(source, max_steps=None)` runs `source` on a native thread and returns
/// `{"outcome", "reason", "steps", "registers"}`; `outcome` is `"halted"`, `"cancelled"` or
/// `"out of steps"`. A script that does not parse raises `ValueError` at the call.
#[pyfunction]
#[pyo3(signature = (source, max_steps = None))]
pub(crate) fn run_script<'py>(
    py: Python<'py>,
    source: &str,
    max_steps: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let program = Program::parse(source).map_err(PyValueError::new_err)?;
    tethered_pyo3::spawn_native(py, move |token| program.run(&token, max_steps))
}

/// What a run of a script produced.
#[derive(Debug, IntoPyObject)]
pub(crate) struct Report {
    outcome: &'static str,
    /// Why the run was cancelled (`CancelReason`'s message), if it was.
    reason: Option<String>,
    steps: u64,
    registers: BTreeMap<String, i64>,
}

#[derive(Clone, Copy, Debug)]
enum Operand {
    Register(usize),
    Int(i64),
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Set(usize, Operand),
    Add(usize, Operand),
    Sub(usize, Operand),
    Mul(usize, Operand),
    Jnz(usize, usize),
    Jmp(usize),
    Halt,
}

#[derive(Debug)]
struct Program {
    ops: Vec<Op>,
    registers: Vec<String>,
}

impl Program {
    fn parse(source: &str) -> Result<Program, String> {
        let lines: Vec<(usize, &str)> = source
            .lines()
            .enumerate()
            .map(|(n, line)| (n + 1, line.split('#').next().unwrap_or("").trim()))
            .filter(|(_, line)| !line.is_empty())
            .collect();
        let mut labels = HashMap::new();
        let mut pc = 0;
        for &(_, line) in &lines {
            match line.strip_suffix(':') {
                Some(label) => {
                    labels.insert(label.trim(), pc);
                }
                None => pc += 1,
            }
        }
        let mut program = Program {
            ops: Vec::new(),
            registers: Vec::new(),
        };
        for (number, line) in lines {
            if line.ends_with(':') {
                continue;
            }
            let op = program
                .parse_op(line, &labels)
                .map_err(|err| format!("line {number}: {err}: {line:?}"))?;
            program.ops.push(op);
        }
        Ok(program)
    }

    fn parse_op(&mut self, line: &str, labels: &HashMap<&str, usize>) -> Result<Op, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let label = |name: &str| {
            labels
                .get(name)
                .copied()
                .ok_or_else(|| format!("no label {name:?}"))
        };
        Ok(match words.as_slice() {
            ["set", r, x] => Op::Set(self.register(r)?, self.operand(x)?),
            ["add", r, x] => Op::Add(self.register(r)?, self.operand(x)?),
            ["sub", r, x] => Op::Sub(self.register(r)?, self.operand(x)?),
            ["mul", r, x] => Op::Mul(self.register(r)?, self.operand(x)?),
            ["jnz", r, l] => Op::Jnz(self.register(r)?, label(l)?),
            ["jmp", l] => Op::Jmp(label(l)?),
            ["halt"] => Op::Halt,
            _ => return Err("unknown instruction".into()),
        })
    }

    fn register(&mut self, name: &str) -> Result<usize, String> {
        if !name.chars().all(|c| c.is_ascii_alphabetic() || c == '_') {
            return Err(format!("{name:?} is not a register name"));
        }
        Ok(match self.registers.iter().position(|r| r == name) {
            Some(index) => index,
            None => {
                self.registers.push(name.to_owned());
                self.registers.len() - 1
            }
        })
    }

    fn operand(&mut self, word: &str) -> Result<Operand, String> {
        match word.parse() {
            Ok(n) => Ok(Operand::Int(n)),
            Err(_) => self.register(word).map(Operand::Register),
        }
    }

    /// Runs until `halt`, the end of the program, `max_steps`, or a cancel of `token`.
    fn run(&self, token: &CancelToken, max_steps: Option<u64>) -> Report {
        let mut regs = vec![0i64; self.registers.len()];
        let value = |regs: &[i64], x: Operand| match x {
            Operand::Register(r) => regs[r],
            Operand::Int(n) => n,
        };
        let (mut pc, mut steps) = (0, 0u64);
        let outcome = loop {
            if steps % CHECK_EVERY == 0 && token.is_cancelled() {
                break "cancelled";
            }
            if max_steps.is_some_and(|max| steps >= max) {
                break "out of steps";
            }
            let Some(&op) = self.ops.get(pc) else {
                break "halted";
            };
            steps += 1;
            pc += 1;
            match op {
                Op::Set(r, x) => regs[r] = value(&regs, x),
                Op::Add(r, x) => regs[r] = regs[r].wrapping_add(value(&regs, x)),
                Op::Sub(r, x) => regs[r] = regs[r].wrapping_sub(value(&regs, x)),
                Op::Mul(r, x) => regs[r] = regs[r].wrapping_mul(value(&regs, x)),
                Op::Jnz(r, target) if regs[r] != 0 => pc = target,
                Op::Jnz(..) => {}
                Op::Jmp(target) => pc = target,
                Op::Halt => break "halted",
            }
        };
        Report {
            outcome,
            reason: token.reason().map(|reason| reason.to_string()),
            steps,
            registers: self.registers.iter().cloned().zip(regs).collect(),
        }
    }
}
