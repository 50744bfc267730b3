//! Helpers for the unit tests.

/// A small seeded generator for test data: the next value in `[0, 1)`.
pub(crate) fn lcg(s: &mut u64) -> f64 {
    *s = s
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*s >> 11) as f64) / ((1u64 << 53) as f64)
}

/// A rayon pool of `threads` threads, for tests that compare thread counts.
pub(crate) fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool")
}

/// A soup of `n` triangles of size about `size` in the cube `[0, 10]^3`.
pub(crate) fn soup(n: usize, size: f64, s: &mut u64) -> crate::mesh::Mesh {
    let p = |s: &mut u64| glam::DVec3::new(lcg(s), lcg(s), lcg(s));
    let tris: Vec<[glam::DVec3; 3]> = (0..n)
        .map(|_| {
            let c = p(s) * 10.0;
            [c, c + (p(s) - 0.5) * size, c + (p(s) - 0.5) * size]
        })
        .collect();
    crate::mesh::Mesh::from_triangles(&tris).unwrap()
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
