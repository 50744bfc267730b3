//! Exact arithmetic on `f64` values as big integers.
//!
//! Every finite `f64` is a dyadic rational `m * 2^e` with an integer `m` below 2^53 and
//! `e >= -1074`. Scaling a group of values by their smallest exponent turns them into
//! integers, on which sums, differences and products are exact. This tier is slow
//! (microseconds) and serves only the inputs that the faster tiers cannot handle: values so
//! small or so large that Shewchuk's expansions could underflow or overflow.

use glam::{DVec2, DVec3};
use num_bigint::BigInt;
use num_traits::Signed;
use std::cmp::Ordering;

/// `(mantissa, exponent)` with `value = mantissa * 2^exponent` exactly.
pub(crate) fn decompose(v: f64) -> (i64, i32) {
    if v == 0.0 || !v.is_finite() {
        return (0, 0);
    }
    let bits = v.to_bits();
    let neg = bits >> 63 != 0;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = (bits & ((1u64 << 52) - 1)) as i64;
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1i64 << 52), exp - 1075)
    };
    (if neg { -m } else { m }, e)
}

/// Scales all values by the smallest exponent among them into exact integers.
pub(crate) fn to_integers<const N: usize>(vals: [f64; N]) -> [BigInt; N] {
    let parts = vals.map(decompose);
    let emin = parts
        .iter()
        .filter(|(m, _)| *m != 0)
        .map(|&(_, e)| e)
        .min()
        .unwrap_or(0);
    parts.map(|(m, e)| BigInt::from(m) << ((e - emin) as usize))
}

fn sign(v: &BigInt) -> i32 {
    if v.is_positive() {
        1
    } else if v.is_negative() {
        -1
    } else {
        0
    }
}

/// Exact sign of `det[b - a, c - a, d - a]`.
pub(crate) fn orient3d(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> i32 {
    let [ax, ay, az, bx, by, bz, cx, cy, cz, dx, dy, dz] =
        to_integers([a.x, a.y, a.z, b.x, b.y, b.z, c.x, c.y, c.z, d.x, d.y, d.z]);
    // u = b - a, v = c - a, w = d - a; det[u, v, w] = w . (u x v).
    let (ux, uy, uz) = (&bx - &ax, &by - &ay, &bz - &az);
    let (vx, vy, vz) = (&cx - &ax, &cy - &ay, &cz - &az);
    let (wx, wy, wz) = (&dx - &ax, &dy - &ay, &dz - &az);
    let det = &wx * (&uy * &vz - &uz * &vy)
        + &wy * (&uz * &vx - &ux * &vz)
        + &wz * (&ux * &vy - &uy * &vx);
    sign(&det)
}

/// Exact sign of `(b - a) x (c - a)` in 2D.
pub(crate) fn orient2d(a: DVec2, b: DVec2, c: DVec2) -> i32 {
    let [ax, ay, bx, by, cx, cy] = to_integers([a.x, a.y, b.x, b.y, c.x, c.y]);
    let det = (&bx - &ax) * (&cy - &ay) - (&by - &ay) * (&cx - &ax);
    sign(&det)
}

/// Exact comparison of `c . p` with `c . q`.
pub(crate) fn cmp_dot(c: DVec3, p: DVec3, q: DVec3) -> Ordering {
    // Products are scaled separately: c[k] * p[k] has exponent e_c + e_p, so bring the
    // nine values to integers in two groups and combine with a common shift.
    let cs = to_integers([c.x, c.y, c.z]);
    let pq = to_integers([p.x, p.y, p.z, q.x, q.y, q.z]);
    let diff = &cs[0] * (&pq[0] - &pq[3]) + &cs[1] * (&pq[1] - &pq[4]) + &cs[2] * (&pq[2] - &pq[5]);
    // Both groups were scaled by positive powers of two, which does not change the sign.
    sign(&diff).cmp(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decompose_is_exact() {
        for v in [
            1.0,
            -3.5,
            0.1,
            1e-310,
            -5e-324,
            1.7976931348623157e308,
            123456.789,
        ] {
            let (m, e) = decompose(v);
            // Reconstruct with exact power-of-two scaling in two steps to avoid overflow.
            let r = (m as f64) * 2f64.powi(e / 2) * 2f64.powi(e - e / 2);
            assert_eq!(r, v, "{v}");
        }
    }

    #[test]
    fn integers_preserve_ratios() {
        let [a, b] = to_integers([0.5, 3.0]);
        assert_eq!(&b, &(&a * 6));
    }
}
