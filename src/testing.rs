//! Helpers for the unit tests.

/// A small seeded generator for test data: the next value in `[0, 1)`.
pub(crate) fn lcg(s: &mut u64) -> f64 {
    *s = s
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*s >> 11) as f64) / ((1u64 << 53) as f64)
}

/// Runs a test function generic over k for k = 6, 14, 18 and 26, in that order:
/// `for_each_k!(one)` calls `one::<6>()`, `one::<14>()`, `one::<18>()`, `one::<26>()`.
macro_rules! for_each_k {
    ($f:ident) => {
        $f::<6>();
        $f::<14>();
        $f::<18>();
        $f::<26>();
    };
}
pub(crate) use for_each_k;
