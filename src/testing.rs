//! Helpers for the unit tests.

/// A small seeded generator for test data: the next value in `[0, 1)`.
pub(crate) fn lcg(s: &mut u64) -> f64 {
    *s = s
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*s >> 11) as f64) / ((1u64 << 53) as f64)
}
