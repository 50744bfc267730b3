//! An exact reference for triangle intersection that shares no logic with [`crate::tri`].
//!
//! Two closed triangles `P` and `Q` intersect iff there are barycentric weights
//! `l, m >= 0` with `sum(l) = 1`, `sum(m) = 1` and `sum(l_i P_i) = sum(m_j Q_j)`: a linear
//! feasibility problem with 6 unknowns and 5 equations. If it is feasible, a solution of
//! minimal support exists, and the columns of its support are linearly independent
//! (otherwise a null vector could zero one more weight). So the problem is feasible iff, for
//! some set `S` of linearly independent columns, the system restricted to `S` is consistent
//! and its unique solution is non-negative. We try every `S` in exact integer arithmetic
//! (all `f64` inputs scaled to integers by a common power of two) with division-free
//! Gauss–Jordan elimination. Slow (tens of microseconds to milliseconds) and obviously right.

use crate::exact::bigint::to_integers;
use crate::tri::Triangle;
use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, Zero};

/// Exact, slow reference for [`crate::triangles_intersect`] by linear feasibility.
///
/// Use it to check the fast test; it accepts any finite coordinates, including degenerate
/// triangles.
#[must_use]
pub fn reference_triangles_intersect(t1: &Triangle, t2: &Triangle) -> bool {
    let mut vals = [0.0f64; 18];
    for (i, p) in t1.iter().chain(t2.iter()).enumerate() {
        vals[3 * i] = p.x;
        vals[3 * i + 1] = p.y;
        vals[3 * i + 2] = p.z;
    }
    let ints = to_integers(vals);
    // Columns: l1, l2, l3 (corners of t1) then m1, m2, m3 (corners of t2, negated).
    // Rows: x, y, z equations, then sum(l) = 1, sum(m) = 1.
    let mut cols: Vec<[BigInt; 5]> = Vec::with_capacity(6);
    for c in 0..6 {
        let side = c / 3;
        let coord = |k: usize| -> BigInt {
            let v = ints[3 * c + k].clone();
            if side == 0 { v } else { -v }
        };
        let one = |s: usize| BigInt::from((side == s) as i32);
        cols.push([coord(0), coord(1), coord(2), one(0), one(1)]);
    }
    let rhs: [BigInt; 5] = [0, 0, 0, 1, 1].map(BigInt::from);

    for mask in 1u32..64 {
        let left = mask & 0b111;
        let right = mask >> 3;
        if left == 0 || right == 0 || mask.count_ones() > 5 {
            continue;
        }
        let chosen: Vec<usize> = (0..6).filter(|c| mask & (1 << c) != 0).collect();
        if solve_nonnegative(&cols, &chosen, &rhs) {
            return true;
        }
    }
    false
}

/// Whether `A_S x = b` has a unique solution with `x >= 0`, for the columns `S` of `A`.
fn solve_nonnegative(cols: &[[BigInt; 5]], chosen: &[usize], rhs: &[BigInt; 5]) -> bool {
    let s = chosen.len();
    // Augmented matrix, 5 rows by s + 1 columns.
    let mut m: Vec<Vec<BigInt>> = (0..5)
        .map(|r| {
            let mut row: Vec<BigInt> = chosen.iter().map(|&c| cols[c][r].clone()).collect();
            row.push(rhs[r].clone());
            row
        })
        .collect();
    for k in 0..s {
        // Pivot for column k among the rows not yet used.
        let Some(p) = (k..5).find(|&r| !m[r][k].is_zero()) else {
            return false; // column k depends on the previous ones
        };
        m.swap(k, p);
        for r in 0..5 {
            if r == k || m[r][k].is_zero() {
                continue;
            }
            let f = m[r][k].clone();
            let g = m[k][k].clone();
            let pivot_row = m[k].clone();
            for (x, p) in m[r].iter_mut().zip(&pivot_row) {
                *x = &g * &*x - &f * p;
            }
            normalize(&mut m[r]);
        }
    }
    // Rows beyond the pivots must read 0 = 0.
    if (s..5).any(|r| !m[r][s].is_zero()) {
        return false;
    }
    // Row k now reads m[k][k] * x_k = m[k][s].
    (0..s).all(|k| m[k][s].is_zero() || m[k][s].is_positive() == m[k][k].is_positive())
}

/// Divides a row by the gcd of its entries (keeps numbers small; signs unchanged).
fn normalize(row: &mut [BigInt]) {
    let mut g = BigInt::zero();
    for v in row.iter() {
        g = g.gcd(v);
    }
    if g > BigInt::from(1) {
        for v in row.iter_mut() {
            *v = &*v / &g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DVec3;

    fn t(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> Triangle {
        [DVec3::from(a), DVec3::from(b), DVec3::from(c)]
    }

    /// Cases whose answers follow from elementary geometry, to anchor the reference itself.
    #[test]
    fn reference_on_hand_made_cases() {
        let base = t([0., 0., 0.], [4., 0., 0.], [0., 4., 0.]);
        // Pierces the interior.
        assert!(reference_triangles_intersect(
            &base,
            &t([1., 1., -1.], [1., 1., 1.], [2., 2., 1.])
        ));
        // Parallel, one unit above.
        assert!(!reference_triangles_intersect(
            &base,
            &t([0., 0., 1.], [4., 0., 1.], [0., 4., 1.])
        ));
        // Shares exactly one corner.
        assert!(reference_triangles_intersect(
            &base,
            &t([4., 0., 0.], [5., 0., 1.], [5., 1., 1.])
        ));
        // Coplanar, disjoint across the hypotenuse x + y = 4.
        assert!(!reference_triangles_intersect(
            &base,
            &t([3., 2., 0.], [5., 2., 0.], [3., 4., 0.])
        ));
        // Coplanar, touching the hypotenuse at (2, 2, 0).
        assert!(reference_triangles_intersect(
            &base,
            &t([2., 2., 0.], [5., 2., 0.], [2., 5., 0.])
        ));
        // Degenerate: a point on the edge, a point just off it.
        assert!(reference_triangles_intersect(
            &base,
            &t([2., 0., 0.], [2., 0., 0.], [2., 0., 0.])
        ));
        assert!(!reference_triangles_intersect(
            &base,
            &t([2., -1e-9, 0.], [2., -1e-9, 0.], [2., -1e-9, 0.])
        ));
        // Degenerate segment crossing the face.
        assert!(reference_triangles_intersect(
            &base,
            &t([1., 1., -1.], [1., 1., 1.], [1., 1., 0.5])
        ));
    }
}
