//! What the benchmarks share: reproducible text and percentiles of timings.

use std::time::Duration;

/// A small deterministic generator (xorshift), so that every run and both databases get the
/// same data.
pub struct Words(pub u64);

impl Words {
    /// The next pseudo-random number.
    pub fn number(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A word of a 5,000-word vocabulary, skewed like natural text: low ranks are common.
    pub fn word(&mut self) -> String {
        let r = (self.number() % 10_000) as f64 / 10_000.0;
        let rank = (r * r * 5_000.0) as u64;
        let mut w = String::new();
        let mut n = rank + 26;
        while n > 0 {
            w.push(char::from(b'a' + (n % 26) as u8));
            n /= 26;
        }
        w
    }

    /// A sentence of 8 to 17 words, capitalized, with a full stop.
    pub fn sentence(&mut self) -> String {
        let n = 8 + self.number() % 10;
        let mut s: Vec<String> = (0..n).map(|_| self.word()).collect();
        s[0] = s[0][..1].to_uppercase() + &s[0][1..];
        s.join(" ") + "."
    }
}

/// The `p` quantile (0 to 1) of `sorted` timings.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// `d` in milliseconds, three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}
