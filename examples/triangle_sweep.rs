//! Cp against the working-set size: the exact triangle test on `N` random box-overlapping
//! pairs, best of `REPS` passes. Separates branch-prediction effects (the predictor learns
//! the outcomes of a few thousand repeated pairs) from memory effects.
//!
//! `for n in 2000 5000 20000 100000; do N=$n cargo run --release --example triangle_sweep; done`
//!
//! `BATCH=1` times `kdop::intersecting_pairs` over the same pairs instead of one
//! `triangles_intersect` call per pair; `DISJOINT=1` keeps pairs whose boxes do not
//! overlap instead (what a box test alone rejects); `SCREENED=1` times the forms without
//! the box rejection (`triangles_intersect_screened`, `intersecting_pairs_screened`), the
//! test as queries run it after their cached box test.
use glam::DVec3;
use kdop::scene::Rng;
use kdop::{
    Triangle, intersecting_pairs, intersecting_pairs_screened, triangles_intersect,
    triangles_intersect_screened,
};
use std::hint::black_box;

fn var(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let n = var("N", 100_000);
    let reps = var("REPS", 30);
    // The same generator and seed as `benches/triangle.rs`'s random set.
    let mut rng = Rng::new(7);
    let disjoint = var("DISJOINT", 0) != 0;
    let mut pairs = Vec::with_capacity(n);
    while pairs.len() < n {
        let c = rng.in_box(DVec3::ZERO, DVec3::ONE);
        let t1 = [c, c + rng.unit() * 0.3, c + rng.unit() * 0.3];
        let d = rng.in_box(DVec3::ZERO, DVec3::ONE);
        let t2 = [d, d + rng.unit() * 0.3, d + rng.unit() * 0.3];
        let (lo1, hi1) = (t1[0].min(t1[1]).min(t1[2]), t1[0].max(t1[1]).max(t1[2]));
        let (lo2, hi2) = (t2[0].min(t2[1]).min(t2[2]), t2[0].max(t2[1]).max(t2[2]));
        if (lo1.cmple(hi2).all() && lo2.cmple(hi1).all()) != disjoint {
            pairs.push((t1, t2));
        }
    }
    let batch = var("BATCH", 0) != 0;
    let screened = var("SCREENED", 0) != 0;
    let pairs = &pairs[..];
    // Each form called directly (generic helpers, not function pointers), as a user would.
    let (form, (best, hits)) = match (batch, screened) {
        (true, false) => (
            "intersecting_pairs",
            batched(reps, pairs, intersecting_pairs),
        ),
        (true, true) => (
            "intersecting_pairs_screened",
            batched(reps, pairs, intersecting_pairs_screened),
        ),
        (false, false) => (
            "triangles_intersect",
            per_pair(reps, pairs, triangles_intersect),
        ),
        (false, true) => (
            "triangles_intersect_screened",
            per_pair(reps, pairs, triangles_intersect_screened),
        ),
    };
    println!("{n} pairs ({hits} intersect), {form}: best {best:.1} ns per test");
}

type Pair = (Triangle, Triangle);

/// [`best_of`] for `test` called once per pair.
fn per_pair(
    reps: usize,
    pairs: &[Pair],
    test: impl Fn(&Triangle, &Triangle) -> bool,
) -> (f64, usize) {
    best_of(reps, pairs.len(), || {
        pairs
            .iter()
            .filter(|(a, b)| test(black_box(a), black_box(b)))
            .count()
    })
}

/// [`best_of`] for `batch` over all pairs at once.
fn batched(reps: usize, pairs: &[Pair], batch: impl Fn(&[Pair], &mut Vec<usize>)) -> (f64, usize) {
    let mut found = Vec::with_capacity(pairs.len());
    best_of(reps, pairs.len(), || {
        found.clear();
        batch(black_box(pairs), &mut found);
        found.len()
    })
}

/// The best time per pair over `reps` passes of `pass` (over `n` pairs), and its answer.
fn best_of(reps: usize, n: usize, mut pass: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut hits = 0;
    for _ in 0..reps {
        let t = std::time::Instant::now();
        hits = pass();
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    (best, hits)
}
