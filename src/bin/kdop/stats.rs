//! Streaming statistics of check times: a fixed-size histogram, so that a flight of any
//! length keeps the same few kilobytes instead of a value per step.

/// Buckets per doubling: percentiles are read to within 2^(1/16) - 1, about 4.4 %.
const PER_OCTAVE: f64 = 16.0;
/// The smallest time told apart, in microseconds (1 ns); shorter times share bucket 0.
const SMALLEST_US: f64 = 1e-3;
/// 44 octaves above 1 ns: about 4.8 hours per check, far beyond any real check.
const BUCKETS: usize = 44 * 16;

/// Count, mean, maximum and percentiles of a stream of times in microseconds.
#[derive(Clone, Debug)]
pub struct TimeStats {
    counts: Box<[u64; BUCKETS]>,
    n: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Default for TimeStats {
    fn default() -> Self {
        TimeStats {
            counts: Box::new([0; BUCKETS]),
            n: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: 0.0,
        }
    }
}

fn bucket(us: f64) -> usize {
    if us.is_nan() || us <= SMALLEST_US {
        return 0;
    }
    let b = ((us / SMALLEST_US).log2() * PER_OCTAVE) as usize;
    b.min(BUCKETS - 1)
}

/// The upper edge of bucket `b`.
fn upper_edge(b: usize) -> f64 {
    SMALLEST_US * ((b + 1) as f64 / PER_OCTAVE).exp2()
}

impl TimeStats {
    /// Records one time.
    pub fn record(&mut self, us: f64) {
        self.counts[bucket(us)] += 1;
        self.n += 1;
        self.sum += us;
        self.min = self.min.min(us);
        self.max = self.max.max(us);
    }

    /// How many times were recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The mean (0 for none).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }

    /// The largest time (0 for none).
    pub fn max(&self) -> f64 {
        self.max
    }

    /// The `p`-quantile (0 < p <= 1) to within the bucket width, and never outside the
    /// smallest and largest times recorded (0 for none).
    pub fn percentile(&self, p: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((self.n as f64 * p).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper_edge(b).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_a_bucket_of_the_sorted_values() {
        let mut s = TimeStats::default();
        let mut all = Vec::new();
        let mut x = 1u64;
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let us = 0.5 + (x >> 40) as f64 / 1e3;
            s.record(us);
            all.push(us);
        }
        all.sort_by(f64::total_cmp);
        for p in [0.5, 0.9, 0.99] {
            let exact = all[(all.len() as f64 * p).ceil() as usize - 1];
            let got = s.percentile(p);
            assert!(
                got >= exact && got <= exact * 2f64.powf(1.0 / 16.0),
                "{p}: {got} vs {exact}"
            );
        }
        assert_eq!(s.max(), *all.last().unwrap());
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        assert!((s.mean() - mean).abs() < 1e-9 * mean);
    }

    #[test]
    fn empty_tiny_huge_and_nan_times_stay_in_range() {
        let mut s = TimeStats::default();
        assert_eq!((s.mean(), s.percentile(0.5), s.max()), (0.0, 0.0, 0.0));
        for us in [0.0, 1e-9, 1e15, f64::NAN] {
            s.record(us);
        }
        assert_eq!(s.count(), 4);
        assert!(s.percentile(0.99) <= 1e15);
    }
}
