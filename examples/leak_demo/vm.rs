//! The sandboxed work: a toy register machine running an untrusted script, which checks a stop
//! signal every [`CHECK_EVERY`] instructions, as a real interpreter checks an epoch or fuel.

/// Instructions run between two checks of the stop signal.
pub(crate) const CHECK_EVERY: u64 = 1024;

/// One instruction.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// `r[reg] += value`
    Add(usize, i64),
    /// `r[into] += r[from]`
    AddReg(usize, usize),
    /// `if r[reg] < value { goto target }`
    JumpIfLess(usize, i64, usize),
    /// Stop; the script is done.
    Halt,
}

/// `while r0 < i64::MAX { r0 += 1; r1 += r0 }`: a script that, at a few hundred million steps
/// a second, runs for centuries. A user's accidental (or deliberate) endless loop.
pub(crate) const ENDLESS: &[Op] = &[
    Op::Add(0, 1),
    Op::AddReg(1, 0),
    Op::JumpIfLess(0, i64::MAX, 0),
    Op::Halt,
];

/// Runs `program` until it halts or `stop()` says so; returns the instructions executed.
pub(crate) fn run(program: &[Op], stop: impl Fn() -> bool) -> u64 {
    let mut registers = [0i64; 4];
    let mut pc = 0;
    let mut steps: u64 = 0;
    loop {
        if steps.is_multiple_of(CHECK_EVERY) && stop() {
            return steps;
        }
        steps += 1;
        match program[pc] {
            Op::Add(reg, value) => registers[reg] = registers[reg].wrapping_add(value),
            Op::AddReg(into, from) => {
                registers[into] = registers[into].wrapping_add(registers[from])
            }
            Op::JumpIfLess(reg, value, target) if registers[reg] < value => {
                pc = target;
                continue;
            }
            Op::JumpIfLess(..) => {}
            Op::Halt => {
                std::hint::black_box(registers);
                return steps;
            }
        }
        pc += 1;
    }
}
