//! A small deterministic generator (xorshift64) for property tests and benchmarks: a seed
//! gives the same sequence on every machine, so a failure replays and a benchmark measures
//! the same data. Never for secrets (those come from the operating system, [`crate::secret`]).

/// xorshift64 (Marsaglia). Seed it with anything but 0 (0 stays 0).
#[derive(Debug, Clone)]
pub struct Xorshift(pub u64);

impl Xorshift {
    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// One of `xs`, which must not be empty.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_xorshift64_and_stays_in_bounds() {
        let mut r = Xorshift(1);
        // Marsaglia's xorshift64 (13, 7, 17) from 1.
        assert_eq!(r.next_u64(), 1_082_269_761);
        let mut r = Xorshift(0x5eed);
        for n in [1, 2, 7, 1000] {
            assert!(r.below(n) < n);
        }
        assert_eq!(r.below(0), 0);
        assert!(["a", "b"].contains(r.pick(&["a", "b"])));
    }
}
