//! The fast exact triangle test against the independent LP reference.

mod common;

use common::Rng;
use glam::DVec3;
use kdop::oracle::reference_triangles_intersect;
use kdop::{Triangle, triangles_intersect};

fn check(t1: &Triangle, t2: &Triangle, what: &str) -> bool {
    let fast = triangles_intersect(t1, t2);
    let refr = reference_triangles_intersect(t1, t2);
    assert_eq!(
        fast, refr,
        "{what}: fast={fast} reference={refr}\n t1={t1:?}\n t2={t2:?}"
    );
    // The answer cannot depend on argument or corner order.
    assert_eq!(triangles_intersect(t2, t1), fast, "{what}: symmetry");
    let rot = [t1[1], t1[2], t1[0]];
    let flip = [t2[0], t2[2], t2[1]];
    assert_eq!(
        triangles_intersect(&rot, &flip),
        fast,
        "{what}: corner order"
    );
    fast
}

/// Small integer grids: a large share of pairs are coplanar, touch at a corner or an edge,
/// share edges, or have collinear corners.
#[test]
fn integer_grid_pairs_match_reference() {
    let mut rng = Rng::new(1);
    let mut hits = 0;
    for n in [2u64, 3, 4] {
        for i in 0..6000 {
            let t1 = [rng.grid(n), rng.grid(n), rng.grid(n)];
            let t2 = [rng.grid(n), rng.grid(n), rng.grid(n)];
            hits += check(&t1, &t2, &format!("grid {n} #{i}")) as usize;
        }
    }
    // Both answers must be well represented for the comparison to mean anything.
    assert!(hits > 3000 && hits < 15000, "hits {hits}");
}

/// Pairs made to touch exactly: shared corner, corner on an edge midpoint, shared edge,
/// coplanar edge contact; each then moved off by one ulp-scale step.
#[test]
fn constructed_contacts_match_reference() {
    let mut rng = Rng::new(2);
    for i in 0..3000 {
        let a = rng.grid(8);
        let b = rng.grid(8);
        let c = rng.grid(8);
        let t1 = [a, b, c];
        let mid = (a + b) * 0.5; // exact: integers halved
        let d = rng.grid(8);
        let e = rng.grid(8);
        let cases: [Triangle; 5] = [
            [a, d, e],
            [mid, d, e],
            [a, b, d],
            [mid, (a + c) * 0.5, d],
            [(a + b + c * 2.0) * 0.25, d, e],
        ];
        for (k, t2) in cases.iter().enumerate() {
            check(&t1, t2, &format!("touch {i}/{k}"));
            let nudged = [t2[0] + DVec3::splat(1e-9), t2[1], t2[2]];
            check(&t1, &nudged, &format!("nudged {i}/{k}"));
        }
    }
}

/// General position and near-parallel pairs with arbitrary floating-point coordinates.
#[test]
fn float_pairs_match_reference() {
    let mut rng = Rng::new(3);
    let mut hits = 0;
    for i in 0..4000 {
        let t1 = [rng.vec(0.0, 1.0), rng.vec(0.0, 1.0), rng.vec(0.0, 1.0)];
        let t2 = if i % 2 == 0 {
            [rng.vec(0.0, 1.0), rng.vec(0.0, 1.0), rng.vec(0.0, 1.0)]
        } else {
            // Nearly parallel and very close: offset along the normal by ~1e-13.
            let n = (t1[1] - t1[0]).cross(t1[2] - t1[0]).normalize();
            let off = n * rng.range(-1e-13, 1e-13);
            let shift = rng.vec(-0.3, 0.3);
            let shift = shift - n * shift.dot(n);
            [t1[0] + off + shift, t1[1] + off + shift * 0.5, t1[2] + off]
        };
        hits += check(&t1, &t2, &format!("float #{i}")) as usize;
    }
    assert!(hits > 500, "hits {hits}");
}

/// Exact symmetries (axis permutations, sign flips, power-of-two scaling, integer shifts)
/// map floating-point coordinates to floating-point coordinates without rounding, so they
/// must not change any answer.
#[test]
fn exact_symmetries_preserve_answers() {
    let mut rng = Rng::new(4);
    for i in 0..3000 {
        let t1 = [rng.grid(4), rng.grid(4), rng.grid(4)];
        let t2 = [rng.grid(4), rng.grid(4), rng.grid(4)];
        let base = triangles_intersect(&t1, &t2);
        let perm = rng.below(6) as usize;
        let flips = DVec3::new(
            if rng.below(2) == 0 { 1.0 } else { -1.0 },
            if rng.below(2) == 0 { 1.0 } else { -1.0 },
            if rng.below(2) == 0 { 1.0 } else { -1.0 },
        );
        let scale = [0.125, 0.5, 1.0, 1024.0][rng.below(4) as usize];
        let shift = rng.grid(100) - DVec3::splat(50.0);
        let f = |p: DVec3| {
            let q = match perm {
                0 => p,
                1 => DVec3::new(p.y, p.x, p.z),
                2 => DVec3::new(p.z, p.y, p.x),
                3 => DVec3::new(p.x, p.z, p.y),
                4 => DVec3::new(p.y, p.z, p.x),
                _ => DVec3::new(p.z, p.x, p.y),
            };
            q * flips * scale + shift
        };
        assert_eq!(
            triangles_intersect(&t1.map(f), &t2.map(f)),
            base,
            "symmetry changed answer at {i}"
        );
    }
}

/// Coordinates at the extremes of the accepted range and far below it.
#[test]
fn extreme_magnitudes_match_reference() {
    let mut rng = Rng::new(5);
    for scale in [1e-300, 1e-200, 1e-20, 1e11] {
        for i in 0..300 {
            let t1 = [
                rng.grid(3) * scale,
                rng.grid(3) * scale,
                rng.grid(3) * scale,
            ];
            let t2 = [
                rng.grid(3) * scale,
                rng.grid(3) * scale,
                rng.grid(3) * scale,
            ];
            check(&t1, &t2, &format!("scale {scale:e} #{i}"));
        }
    }
}

#[test]
fn distance_agrees_with_intersection_and_sampling() {
    let mut rng = Rng::new(6);
    for i in 0..400 {
        let t1 = [rng.vec(0.0, 1.0), rng.vec(0.0, 1.0), rng.vec(0.0, 1.0)];
        let t2 = [rng.vec(0.5, 1.5), rng.vec(0.5, 1.5), rng.vec(0.5, 1.5)];
        let d = kdop::triangle_distance(&t1, &t2);
        if triangles_intersect(&t1, &t2) {
            assert_eq!(d, 0.0);
            continue;
        }
        assert!(d > 0.0);
        // Sampled points give an upper bound on the distance; a fine grid comes close.
        let sample = |t: &Triangle, u: f64, v: f64| t[0] + (t[1] - t[0]) * u + (t[2] - t[0]) * v;
        let n = 24;
        let mut best = f64::INFINITY;
        for a in 0..=n {
            for b in 0..=(n - a) {
                let p = sample(&t1, a as f64 / n as f64, b as f64 / n as f64);
                for c in 0..=n {
                    for e in 0..=(n - c) {
                        let q = sample(&t2, c as f64 / n as f64, e as f64 / n as f64);
                        best = best.min(p.distance(q));
                    }
                }
            }
        }
        assert!(d <= best + 1e-12, "#{i}: distance {d} above sampled {best}");
        // The grid spacing bounds how far above the true distance a sample can be.
        let h = t1
            .iter()
            .chain(t2.iter())
            .map(|p| p.length())
            .fold(0.0, f64::max)
            * 2.0
            / n as f64;
        assert!(
            d >= best - 2.0 * h,
            "#{i}: distance {d} far below sampled {best}"
        );
    }
}
