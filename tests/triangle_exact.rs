//! The fast exact triangle test against the independent LP reference.

mod common;

use common::Rng;
use glam::DVec3;
use kdop::oracle::reference_triangles_intersect;
use kdop::{
    Triangle, intersecting_pairs, intersecting_pairs_screened, triangles_intersect,
    triangles_intersect_screened,
};

fn check(t1: &Triangle, t2: &Triangle, what: &str) -> bool {
    let fast = triangles_intersect(t1, t2);
    let refr = reference_triangles_intersect(t1, t2);
    assert_eq!(
        fast, refr,
        "{what}: fast={fast} reference={refr}\n t1={t1:?}\n t2={t2:?}"
    );
    // Without the box rejection the answer is the same, whether or not the boxes meet
    // (these sets hold both kinds of pairs).
    assert_eq!(
        triangles_intersect_screened(t1, t2),
        refr,
        "{what}: screened\n t1={t1:?}\n t2={t2:?}"
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

/// The batch forms, with and without the box rejection, list exactly the reference's
/// intersecting pairs, in order, over sets mixing every route a pair can take: boxes apart,
/// general position, touching and coplanar grid pairs, degenerate triangles, near-parallel
/// float pairs, and lengths that are not a multiple of the 64-pair chunk.
#[test]
fn batch_forms_list_the_reference_hits() {
    let mut rng = Rng::new(8);
    for len in [0usize, 1, 63, 64, 65, 1000] {
        let pairs: Vec<(Triangle, Triangle)> = (0..len)
            .map(|i| match i % 4 {
                0 | 1 => (
                    [rng.grid(3), rng.grid(3), rng.grid(3)],
                    [rng.grid(3), rng.grid(3), rng.grid(3)],
                ),
                2 => (
                    [rng.vec(0.0, 1.0), rng.vec(0.0, 1.0), rng.vec(0.0, 1.0)],
                    [rng.vec(0.0, 1.0), rng.vec(0.0, 1.0), rng.vec(0.0, 1.0)],
                ),
                _ => {
                    // A triangle and its copy nudged along the normal: near-parallel.
                    let t = [rng.vec(0.0, 1.0), rng.vec(0.0, 1.0), rng.vec(0.0, 1.0)];
                    let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize_or_zero();
                    let off = n * rng.range(-1e-12, 1e-12);
                    (t, [t[0] + off, t[1] - off, t[2] + off * 0.5])
                }
            })
            .collect();
        let want: Vec<usize> = (0..len)
            .filter(|&i| reference_triangles_intersect(&pairs[i].0, &pairs[i].1))
            .collect();
        if len == 1000 {
            assert!(want.len() > 100 && want.len() < 900, "{}", want.len());
        }
        let (mut boxed, mut screened) = (Vec::new(), Vec::new());
        intersecting_pairs(&pairs, &mut boxed);
        intersecting_pairs_screened(&pairs, &mut screened);
        assert_eq!(boxed, want, "intersecting_pairs, length {len}");
        assert_eq!(screened, want, "intersecting_pairs_screened, length {len}");
    }
}

/// Non-finite corners, which meshes refuse but the public tests accept: the batch answers
/// as the pairwise test does, and the screened forms as `triangles_intersect` (whose box
/// test keeps NaN pairs apart), without panicking.
#[test]
fn screened_forms_answer_non_finite_pairs_as_the_boxed_test() {
    let a = [DVec3::ZERO, DVec3::X, DVec3::Y];
    let across = [
        DVec3::new(0.2, 0.2, -1.0),
        DVec3::new(0.2, 0.2, 1.0),
        DVec3::new(0.3, 0.3, 1.0),
    ];
    let mut pairs = vec![(a, across)];
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX] {
        for k in 0..3 {
            for axis in 0..3 {
                let mut t = across;
                t[k][axis] = bad;
                pairs.push((a, t));
                pairs.push((t, a));
                let mut u = a;
                u[k] = DVec3::splat(bad);
                pairs.push((u, across));
                pairs.push((u, u));
            }
        }
    }
    for (i, (t1, t2)) in pairs.iter().enumerate() {
        assert_eq!(
            triangles_intersect_screened(t1, t2),
            triangles_intersect(t1, t2),
            "pair {i}: {t1:?} {t2:?}"
        );
    }
    let want: Vec<usize> = (0..pairs.len())
        .filter(|&i| triangles_intersect(&pairs[i].0, &pairs[i].1))
        .collect();
    assert!(want.contains(&0));
    let (mut boxed, mut screened) = (Vec::new(), Vec::new());
    intersecting_pairs(&pairs, &mut boxed);
    intersecting_pairs_screened(&pairs, &mut screened);
    assert_eq!(boxed, want);
    assert_eq!(screened, want);
}
