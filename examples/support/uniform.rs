//! A small seeded generator the examples share (`#[path]`-included): values in `[0, 1)`.

/// A generator of values in `[0, 1)` seeded by `seed` (a linear congruential step, the
/// top 53 bits).
pub fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}
