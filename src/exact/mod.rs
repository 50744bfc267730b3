//! Exact geometric predicates on `f64` coordinates.
//!
//! J. R. Shewchuk, "Adaptive Precision Floating-Point Arithmetic and Fast Robust Geometric
//! Predicates", Discrete & Computational Geometry 18 (1997), section 4 (error bound
//! `errboundA` of `orient2d`/`orient3d`).
//!
//! Every predicate answers the sign that exact real arithmetic gives for its `f64` inputs.
//! It works in three tiers:
//! 1. a floating-point evaluation with Shewchuk's certified forward error bound (the common
//!    case: a handful of flops);
//! 2. when the bound cannot decide, the adaptive exact predicates of the `robust` crate, as
//!    long as every input lies in an exponent range where they cannot overflow or underflow;
//! 3. otherwise, exact big-integer arithmetic on the dyadic values ([`bigint`]).
//!
//! The filter also carries an absolute floor so that intermediate underflow (subnormal
//! products) can never make it claim a wrong sign.

pub(crate) mod bigint;

use glam::{DVec2, DVec3};
use std::cmp::Ordering;

/// Unit roundoff of `f64` (2^-53).
pub(crate) const EPS: f64 = f64::EPSILON * 0.5;
/// Shewchuk's `o3derrboundA`.
pub(crate) const O3_ERR_A: f64 = (7.0 + 56.0 * EPS) * EPS;
/// Shewchuk's `ccwerrboundA`.
const O2_ERR_A: f64 = (3.0 + 16.0 * EPS) * EPS;
/// Absolute slack that covers intermediate underflow. Validated coordinates are below
/// 2^63 in magnitude, so an underflowed product (error below 2^-1074) times another factor
/// stays far below this.
pub(crate) const FLOOR: f64 = 1e-270;
/// Inputs whose non-zero magnitudes lie in `[SAFE_MIN, SAFE_MAX]` cannot overflow or
/// underflow inside Shewchuk's expansions (products of three differences stay within
/// 2^-760 .. 2^760, far from the subnormal and overflow thresholds).
const SAFE_MIN: f64 = 1.0 / (1u128 << 120) as f64 / (1u128 << 120) as f64; // 2^-240
const SAFE_MAX: f64 = (1u128 << 120) as f64 * (1u128 << 120) as f64; // 2^240

#[inline]
fn safe(v: f64) -> bool {
    let a = v.abs();
    a == 0.0 || (SAFE_MIN..=SAFE_MAX).contains(&a)
}

#[inline]
fn safe3(p: DVec3) -> bool {
    safe(p.x) && safe(p.y) && safe(p.z)
}

#[inline]
fn sign(v: f64) -> i32 {
    if v > 0.0 {
        1
    } else if v < 0.0 {
        -1
    } else {
        0
    }
}

/// Sign of `det[b - a, c - a, d - a] = ((b - a) x (c - a)) . (d - a)`: positive when `d`
/// lies on the side of the plane through `a, b, c` that the normal `(b-a) x (c-a)` points to.
#[inline]
pub(crate) fn orient3d(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> i32 {
    let ba = b - a;
    let ca = c - a;
    let da = d - a;
    let m1 = ba.y * ca.z;
    let m2 = ba.z * ca.y;
    let m3 = ba.z * ca.x;
    let m4 = ba.x * ca.z;
    let m5 = ba.x * ca.y;
    let m6 = ba.y * ca.x;
    let det = da.x * (m1 - m2) + da.y * (m3 - m4) + da.z * (m5 - m6);
    let perm = da.x.abs() * (m1.abs() + m2.abs())
        + da.y.abs() * (m3.abs() + m4.abs())
        + da.z.abs() * (m5.abs() + m6.abs());
    let bound = O3_ERR_A * perm + FLOOR;
    filtered_sign(det, bound, || orient3d_exact(a, b, c, d))
}

/// The sign of `det` if it exceeds `bound` in magnitude, else `exact()`. Branch-free in the
/// common case: data-dependent sign branches mispredict about half the time.
#[inline(always)]
fn filtered_sign(det: f64, bound: f64, exact: impl FnOnce() -> i32) -> i32 {
    let pos = det > bound;
    let neg = -det > bound;
    if !(pos | neg) {
        return exact();
    }
    i32::from(pos) - i32::from(neg)
}

/// The exact tiers of [`orient3d`], without the floating-point filter.
#[cold]
pub(crate) fn orient3d_exact(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> i32 {
    if safe3(a) && safe3(b) && safe3(c) && safe3(d) {
        // robust::orient3d(pa, pb, pc, pd) = det[pa - pd, pb - pd, pc - pd], the opposite
        // sign of ours for the same argument order.
        -sign(robust::orient3d(c3(a), c3(b), c3(c), c3(d)))
    } else {
        bigint::orient3d(a, b, c, d)
    }
}

#[inline]
fn c3(p: DVec3) -> robust::Coord3D<f64> {
    robust::Coord3D {
        x: p.x,
        y: p.y,
        z: p.z,
    }
}

/// Sign of `(b - a) x (c - a)` in 2D: positive when `a, b, c` turn counterclockwise.
#[inline]
pub(crate) fn orient2d(a: DVec2, b: DVec2, c: DVec2) -> i32 {
    let l = (b.x - a.x) * (c.y - a.y);
    let r = (b.y - a.y) * (c.x - a.x);
    let det = l - r;
    let bound = O2_ERR_A * (l.abs() + r.abs()) + FLOOR;
    filtered_sign(det, bound, || orient2d_exact(a, b, c))
}

#[cold]
fn orient2d_exact(a: DVec2, b: DVec2, c: DVec2) -> i32 {
    let ok = [a.x, a.y, b.x, b.y, c.x, c.y].iter().all(|&v| safe(v));
    if ok {
        sign(robust::orient2d(
            robust::Coord { x: a.x, y: a.y },
            robust::Coord { x: b.x, y: b.y },
            robust::Coord { x: c.x, y: c.y },
        ))
    } else {
        bigint::orient2d(a, b, c)
    }
}

/// Drops coordinate `axis` of a point, keeping the cyclic order of the other two, so that
/// the 2D orientation of projected points equals the sign of the `axis` component of the
/// 3D normal `(b-a) x (c-a)`.
#[inline]
pub(crate) fn project(p: DVec3, axis: usize) -> DVec2 {
    match axis {
        0 => DVec2::new(p.y, p.z),
        1 => DVec2::new(p.z, p.x),
        _ => DVec2::new(p.x, p.y),
    }
}

/// The supporting plane of a triangle, prepared for many side-of-plane queries.
///
/// Scalar fields and scalar arithmetic on purpose: built from `DVec3` lanes, the struct was
/// stored in 8-byte pieces and reloaded 16 bytes at a time, a store-forwarding stall that
/// cost more than the arithmetic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plane {
    a: DVec3,
    b: DVec3,
    c: DVec3,
    nx: f64,
    ny: f64,
    nz: f64,
    /// Absolute values of the two products in each normal component (the "permanent").
    px: f64,
    py: f64,
    pz: f64,
}

impl Plane {
    #[inline]
    pub(crate) fn new(a: DVec3, b: DVec3, c: DVec3) -> Plane {
        // u = b - a, v = c - a; n = u x v.
        let (ux, uy, uz) = (b.x - a.x, b.y - a.y, b.z - a.z);
        let (vx, vy, vz) = (c.x - a.x, c.y - a.y, c.z - a.z);
        let m1 = uy * vz;
        let m2 = uz * vy;
        let m3 = uz * vx;
        let m4 = ux * vz;
        let m5 = ux * vy;
        let m6 = uy * vx;
        Plane {
            a,
            b,
            c,
            nx: m1 - m2,
            ny: m3 - m4,
            nz: m5 - m6,
            px: m1.abs() + m2.abs(),
            py: m3.abs() + m4.abs(),
            pz: m5.abs() + m6.abs(),
        }
    }

    /// `orient3d(a, b, c, d)` for this plane's triangle.
    #[inline]
    pub(crate) fn side(&self, d: DVec3) -> i32 {
        let (dx, dy, dz) = (d.x - self.a.x, d.y - self.a.y, d.z - self.a.z);
        let det = dx * self.nx + dy * self.ny + dz * self.nz;
        let bound =
            O3_ERR_A * (dx.abs() * self.px + dy.abs() * self.py + dz.abs() * self.pz) + FLOOR;
        filtered_sign(det, bound, || orient3d_exact(self.a, self.b, self.c, d))
    }

    /// `side` for three points at once, with one *semi-static* error bound: Shewchuk's bound
    /// grows with the coordinate differences `|d - a|`, so their componentwise maxima over
    /// the three points give one bound valid for all three (slightly looser, far cheaper).
    #[inline]
    pub(crate) fn sides3(&self, p: DVec3, q: DVec3, r: DVec3) -> [i32; 3] {
        let d = [p, q, r].map(|x| (x.x - self.a.x, x.y - self.a.y, x.z - self.a.z));
        let det = d.map(|(x, y, z)| x * self.nx + y * self.ny + z * self.nz);
        let mx = max3(d[0].0.abs(), d[1].0.abs(), d[2].0.abs());
        let my = max3(d[0].1.abs(), d[1].1.abs(), d[2].1.abs());
        let mz = max3(d[0].2.abs(), d[1].2.abs(), d[2].2.abs());
        let bound = O3_ERR_A * (mx * self.px + my * self.py + mz * self.pz) + FLOOR;
        let pts = [p, q, r];
        std::array::from_fn(|i| {
            filtered_sign(det[i], bound, || {
                orient3d_exact(self.a, self.b, self.c, pts[i])
            })
        })
    }

    /// Whether the three corners are exactly collinear (the normal is exactly zero).
    #[inline]
    pub(crate) fn is_degenerate(&self) -> bool {
        let sure = |n: f64, p: f64| n.abs() > O2_ERR_A * p + FLOOR;
        if sure(self.nx, self.px) || sure(self.ny, self.py) || sure(self.nz, self.pz) {
            return false;
        }
        self.dominant_axis().is_none()
    }

    /// A coordinate axis along which the exact normal is non-zero, preferring the largest
    /// component; `None` if the triangle is degenerate.
    pub(crate) fn dominant_axis(&self) -> Option<usize> {
        let n = [self.nx.abs(), self.ny.abs(), self.nz.abs()];
        let mut order = [0usize, 1, 2];
        order.sort_by(|&i, &j| n[j].total_cmp(&n[i]));
        order.into_iter().find(|&axis| {
            orient2d(
                project(self.a, axis),
                project(self.b, axis),
                project(self.c, axis),
            ) != 0
        })
    }
}

/// The largest of three values, as plain comparisons (one `maxsd` each): `f64::max`
/// spends several instructions on NaN operands. With a NaN input the result is NaN or the
/// largest of the other values. In the filter bound of [`Plane::sides3`] either keeps the
/// sign certificates sound: a NaN bound certifies nothing, and a NaN point's own
/// determinant is NaN and never certified.
#[inline(always)]
pub(crate) fn max3(a: f64, b: f64, c: f64) -> f64 {
    let m = if a > b { a } else { b };
    if c > m { c } else { m }
}

/// The smallest of three values; the mirror of [`max3`].
#[inline(always)]
pub(crate) fn min3(a: f64, b: f64, c: f64) -> f64 {
    let m = if a < b { a } else { b };
    if c < m { c } else { m }
}

/// Exact comparison of `c . p` with `c . q` for `f64` vectors: filtered, and decided
/// exactly only when the filter cannot tell.
pub(crate) fn cmp_dot(c: DVec3, p: DVec3, q: DVec3) -> Ordering {
    let ca = c.abs();
    // Each dot product has error below 3.01 EPS times its absolute sum; the subtraction
    // adds EPS |diff|.
    let bound = 4.0 * EPS * (ca.dot(p.abs()) + ca.dot(q.abs())) * (1.0 + 4.0 * EPS) + FLOOR;
    let diff = c.dot(p) - c.dot(q);
    if diff > bound {
        Ordering::Greater
    } else if -diff > bound {
        Ordering::Less
    } else {
        cmp_dot_exact(c, p, q)
    }
}

#[cold]
fn cmp_dot_exact(c: DVec3, p: DVec3, q: DVec3) -> Ordering {
    if safe3(c) && safe3(p) && safe3(q) {
        // Hill-climbing meets exact ties all the time (two hull vertices that differ only
        // along a coordinate the direction ignores), and they are decided here without the
        // 12-term expansion when `p - q` is exact: then the sign is that of `c . (p - q)`,
        // whose products are zero exactly when a factor is (no underflow in the safe range)
        // and otherwise are filtered with the bound of a three-term dot product.
        let d = p - q;
        if two_diff_tail(p.x, q.x, d.x) == 0.0
            && two_diff_tail(p.y, q.y, d.y) == 0.0
            && two_diff_tail(p.z, q.z, d.z) == 0.0
        {
            let m = c * d;
            let s = m.x + m.y + m.z;
            let bound = 4.0 * EPS * (m.x.abs() + m.y.abs() + m.z.abs());
            if s > bound {
                return Ordering::Greater;
            }
            if -s > bound {
                return Ordering::Less;
            }
            if m == DVec3::ZERO {
                return Ordering::Equal;
            }
            let mut terms = [0.0f64; 6];
            for k in 0..3 {
                terms[2 * k] = m[k];
                terms[2 * k + 1] = c[k].mul_add(d[k], -m[k]);
            }
            return sum_sign(&terms).cmp(&0);
        }
        // Each product splits exactly into a rounded value and its error (fused
        // multiply-add); the sign of the 12-term sum is then found by an exact expansion.
        let mut terms = [0.0f64; 12];
        for k in 0..3 {
            let hp = c[k] * p[k];
            terms[4 * k] = hp;
            terms[4 * k + 1] = c[k].mul_add(p[k], -hp);
            let hq = c[k] * q[k];
            terms[4 * k + 2] = -hq;
            terms[4 * k + 3] = -(c[k].mul_add(q[k], -hq));
        }
        sum_sign(&terms).cmp(&0)
    } else {
        bigint::cmp_dot(c, p, q)
    }
}

/// The rounding error of `d = a - b` (Knuth's TWO-DIFF tail): zero exactly when the
/// subtraction was exact, for finite operands that do not overflow.
#[inline]
fn two_diff_tail(a: f64, b: f64, d: f64) -> f64 {
    let bv = a - d;
    let av = d + bv;
    (a - av) + (bv - b)
}

/// Exact sign of a sum of floating-point numbers (none of which may be infinite or NaN),
/// using Shewchuk's GROW-EXPANSION: the running sum is kept as a non-overlapping expansion
/// whose largest non-zero component carries the sign.
pub(crate) fn sum_sign(terms: &[f64]) -> i32 {
    let mut e: smallvec::SmallVec<[f64; 16]> = smallvec::SmallVec::new();
    for &t in terms {
        let mut q = t;
        let mut out: smallvec::SmallVec<[f64; 16]> = smallvec::SmallVec::new();
        for &ei in &e {
            let s = q + ei;
            let bv = s - q;
            let av = s - bv;
            let err = (q - av) + (ei - bv);
            if err != 0.0 {
                out.push(err);
            }
            q = s;
        }
        out.push(q);
        e = out;
    }
    e.iter().rev().find(|&&v| v != 0.0).map_or(0, |&v| sign(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::lcg as rng;

    #[test]
    fn orientation_convention() {
        let o = DVec3::ZERO;
        // (x cross y) . z = 1: z is on the positive side.
        assert_eq!(orient3d(o, DVec3::X, DVec3::Y, DVec3::Z), 1);
        assert_eq!(orient3d(o, DVec3::Y, DVec3::X, DVec3::Z), -1);
        assert_eq!(orient3d_exact(o, DVec3::X, DVec3::Y, DVec3::Z), 1);
        assert_eq!(bigint::orient3d(o, DVec3::X, DVec3::Y, DVec3::Z), 1);
        assert_eq!(orient2d(DVec2::ZERO, DVec2::X, DVec2::Y), 1);
        assert_eq!(bigint::orient2d(DVec2::ZERO, DVec2::X, DVec2::Y), 1);
    }

    /// All three tiers agree on near-degenerate inputs: points snapped to a plane and then
    /// nudged by a few ulps, where the filter rarely decides.
    #[test]
    fn tiers_agree_near_degenerate() {
        let mut s = 7u64;
        for i in 0..20_000 {
            let a = DVec3::new(rng(&mut s), rng(&mut s), rng(&mut s)) * 10.0;
            let b = DVec3::new(rng(&mut s), rng(&mut s), rng(&mut s)) * 10.0;
            let c = DVec3::new(rng(&mut s), rng(&mut s), rng(&mut s)) * 10.0;
            let (u, v) = (rng(&mut s), rng(&mut s));
            let mut d = a + (b - a) * u + (c - a) * v;
            if i % 3 == 0 {
                d.x = f64::from_bits(d.x.to_bits().wrapping_add((i % 5) as u64));
            }
            let f = orient3d(a, b, c, d);
            let r = orient3d_exact(a, b, c, d);
            let g = bigint::orient3d(a, b, c, d);
            assert_eq!(f, g, "filter vs bigint at {i}");
            assert_eq!(r, g, "robust vs bigint at {i}");
        }
    }

    #[test]
    fn exactly_coplanar_and_collinear() {
        // Integer points on the plane x + y + z = 3 are exactly coplanar.
        let a = DVec3::new(3.0, 0.0, 0.0);
        let b = DVec3::new(0.0, 3.0, 0.0);
        let c = DVec3::new(0.0, 0.0, 3.0);
        assert_eq!(orient3d(a, b, c, DVec3::new(1.0, 1.0, 1.0)), 0);
        assert_eq!(orient3d(a, b, c, DVec3::new(1.0, 1.0, 1.0 + 1e-15)), 1);
        let p = Plane::new(a, b, c);
        assert_eq!(p.side(DVec3::new(-1.0, 2.0, 2.0)), 0);
        assert!(!p.is_degenerate());
        let q = Plane::new(a, a * 2.0, a * 0.5);
        assert!(q.is_degenerate());
    }

    #[test]
    fn tiny_and_huge_magnitudes_use_bigint_correctly() {
        let t = 1e-300;
        let a = DVec3::ZERO;
        let b = DVec3::new(t, 0.0, 0.0);
        let c = DVec3::new(0.0, t, 0.0);
        // Products of three such differences underflow to zero in f64, yet the exact sign
        // is plainly positive.
        assert_eq!(orient3d(a, b, c, DVec3::new(0.0, 0.0, t)), 1);
        assert_eq!(orient3d(a, b, c, DVec3::new(0.0, 0.0, -t)), -1);
        assert_eq!(orient3d(a, b, c, DVec3::new(t, t, 0.0)), 0);
    }

    #[test]
    fn cmp_dot_ties_and_near_ties() {
        let c = DVec3::new(0.1, 0.2, 0.3);
        let p = DVec3::new(1.0, 2.0, 3.0);
        assert_eq!(cmp_dot(c, p, p), Ordering::Equal);
        let q = DVec3::new(1.0, 2.0, f64::from_bits(3.0f64.to_bits() + 1));
        assert_eq!(cmp_dot(c, p, q), Ordering::Less);
        assert_eq!(bigint::cmp_dot(c, p, q), Ordering::Less);
        let mut s = 3u64;
        for _ in 0..5000 {
            let c = DVec3::new(rng(&mut s) - 0.5, rng(&mut s) - 0.5, rng(&mut s) - 0.5);
            let p = DVec3::new(rng(&mut s), rng(&mut s), rng(&mut s));
            // q differs from p by a vector nearly orthogonal to c.
            let w = c.cross(DVec3::new(rng(&mut s), rng(&mut s), rng(&mut s)));
            let q = p + w * 1e-3;
            assert_eq!(cmp_dot(c, p, q), bigint::cmp_dot(c, p, q));
            assert_eq!(cmp_dot_exact(c, p, q), bigint::cmp_dot(c, p, q));
        }
    }

    /// The exact-difference stage of `cmp_dot_exact`: ties where `p - q` lies along axes
    /// that `c` ignores (what a hull turning about z gives), and differences `d` for which
    /// `c . d` is a single rounding error, so that only the expansion can decide.
    #[test]
    fn cmp_dot_exact_differences() {
        let mut s = 11u64;
        let mut decided = [0usize; 3];
        for i in 0..20_000 {
            // Dyadic coordinates, so that p - q is exact.
            let grid = |v: f64| (v * 1024.0).round() / 1024.0;
            let p = DVec3::new(grid(rng(&mut s)), grid(rng(&mut s)), grid(rng(&mut s)));
            let (c, d) = if i % 2 == 0 {
                // A tie: c has no z, p and q differ in z only.
                let c = DVec3::new(rng(&mut s) - 0.5, rng(&mut s) - 0.5, 0.0);
                (c, DVec3::new(0.0, 0.0, grid(rng(&mut s))))
            } else {
                // c . d = c1 * x - fl(c1 * x): zero or one rounding error of either sign.
                let (x, c1) = (grid(rng(&mut s)) + 0.5, rng(&mut s) - 0.5);
                let c = DVec3::new(-(c1 * x), c1, rng(&mut s));
                (c, DVec3::new(1.0, x, 0.0))
            };
            let q = p - d;
            let want = bigint::cmp_dot(c, p, q);
            assert_eq!(cmp_dot(c, p, q), want, "c {c} p {p} q {q}");
            assert_eq!(cmp_dot_exact(c, p, q), want);
            decided[(want as i8 + 1) as usize] += 1;
        }
        // The cases are not all ties: both strict orders occur.
        assert!(decided.iter().all(|&n| n > 100), "{decided:?}");
    }

    #[test]
    fn sum_sign_cancellation() {
        assert_eq!(sum_sign(&[1e100, 1.0, -1e100]), 1);
        assert_eq!(sum_sign(&[1e100, -1.0, -1e100]), -1);
        assert_eq!(sum_sign(&[0.1, 0.2, -0.3]), 1); // 0.1 + 0.2 - 0.3 in binary is > 0
        assert_eq!(sum_sign(&[0.5, 0.25, -0.75]), 0);
        assert_eq!(sum_sign(&[]), 0);
    }
}
