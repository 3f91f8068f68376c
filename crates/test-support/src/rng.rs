//! [`XorShift`]: random cancel points that a fixed seed makes repeatable.

/// xorshift64: random enough for cancel points, and reproducible by seed; the races it sets up
/// stay real.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator started from `seed`, which must not be zero (zero is a fixed point).
    pub fn new(seed: u64) -> Self {
        assert_ne!(seed, 0, "xorshift never leaves a zero state");
        XorShift(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// The next number, reduced to `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_repeats_its_sequence() {
        let mut a = XorShift::new(0x7e7e_7e7e_d00d_f00d);
        let mut b = a.clone();
        let first: Vec<u64> = (0..100).map(|_| a.below(1_000)).collect();
        assert!(first.iter().all(|&n| n < 1_000));
        assert_eq!(first, (0..100).map(|_| b.below(1_000)).collect::<Vec<_>>());
        assert_ne!(XorShift::new(1).next_u64(), XorShift::new(2).next_u64());
    }
}
