//! Whether one triangle can meet a k-DOP: the separating-axis test of a triangle against a
//! box (T. Akenine-Möller, "Fast 3D Triangle-Box Overlap Testing", Journal of Graphics
//! Tools 6(1), 2001), run on the k-DOP's bounding box, plus the k-DOP's other slab
//! directions.
//!
//! It replaces a triangle's own k-DOP where one triangle meets a hierarchy node (a refined
//! environment leaf against flying nodes, a flying leaf's triangles against environment
//! nodes; Klosowski et al. 1998 §4.2 compares bounding volumes only). A large triangle at
//! an angle has a k-DOP far larger than itself, and every node inside that k-DOP would be
//! descended; the triangle's plane and its edge directions separate most of them.
//!
//! # Contract
//! Conservative: `false` only when the closed triangle and the closed k-DOP are disjoint
//! (with `eps > 0`: farther apart than `eps`). Every projection carries a bound on its
//! rounding error, so a grazing contact is never cut.

use super::{TriBox, Triangle};
use crate::dop::{Dop, axes};
use crate::exact::EPS;
use glam::DVec3;

/// Rounding allowance per unit of `|axis|_1 · magnitude`: a projection is a dot product of
/// three terms of inputs of at most that magnitude, compared after one subtraction; 16 unit
/// roundoffs cover that several times over.
const SLACK: f64 = 16.0 * EPS;

/// Whether triangle `t` (with its box `tb`) may meet the k-DOP `d`, or come within `eps` of
/// it. See the module's contract. One call of [`Screen::meets`]; a triangle tested against
/// many k-DOPs is prepared once instead.
#[inline]
pub(crate) fn triangle_meets_dop<const K: usize>(
    t: &Triangle,
    tb: &TriBox,
    d: &Dop<K>,
    eps: f64,
) -> bool {
    Screen::<K>::new(t, tb).meets(d, eps)
}

/// A triangle prepared for [`Screen::meets`]: what the test needs of the triangle alone (its
/// box, its projections on the k-DOP directions, its plane and edge axes and its
/// projections on them), computed once for the many k-DOPs one large triangle screens.
#[derive(Clone, Debug)]
pub(crate) struct Screen<const K: usize> {
    tb: TriBox,
    /// The largest coordinate magnitude of the triangle's corners.
    mag_t: f64,
    /// Per direction of `K` past the coordinate axes (at most 10), the triangle's extremes.
    dir_lo: [f64; 10],
    dir_hi: [f64; 10],
    /// The plane normal, then the edges crossed with x, y and z: each axis, its absolute
    /// value (for a box's radius), its 1-norm, and the triangle's extremes on it.
    axes: [SatAxis; 10],
}

#[derive(Clone, Copy, Debug, Default)]
struct SatAxis {
    a: DVec3,
    abs: DVec3,
    norm1: f64,
    lo: f64,
    hi: f64,
}

impl<const K: usize> Screen<K> {
    /// Prepares triangle `t` with its box `tb`.
    #[inline]
    pub(crate) fn new(t: &Triangle, tb: &TriBox) -> Self {
        let mut dir_lo = [0.0; 10];
        let mut dir_hi = [0.0; 10];
        for (i, a) in axes(K).iter().enumerate().skip(3) {
            let a = DVec3::new(f64::from(a[0]), f64::from(a[1]), f64::from(a[2]));
            let p = [a.dot(t[0]), a.dot(t[1]), a.dot(t[2])];
            (dir_lo[i - 3], dir_hi[i - 3]) = (min3(p), max3(p));
        }
        let axis = |a: DVec3| {
            let p = [a.dot(t[0]), a.dot(t[1]), a.dot(t[2])];
            SatAxis {
                a,
                abs: a.abs(),
                norm1: a.abs().element_sum(),
                lo: min3(p),
                hi: max3(p),
            }
        };
        let e = [t[1] - t[0], t[2] - t[1], t[0] - t[2]];
        let mut sat = [SatAxis::default(); 10];
        sat[0] = axis(e[0].cross(e[1]));
        for (k, e) in e.iter().enumerate() {
            // e × x, e × y, e × z.
            sat[1 + 3 * k] = axis(DVec3::new(0.0, e.z, -e.y));
            sat[2 + 3 * k] = axis(DVec3::new(-e.z, 0.0, e.x));
            sat[3 + 3 * k] = axis(DVec3::new(e.y, -e.x, 0.0));
        }
        Screen {
            tb: *tb,
            mag_t: t[0].abs().max(t[1].abs()).max(t[2].abs()).max_element(),
            dir_lo,
            dir_hi,
            axes: sat,
        }
    }

    /// Whether the triangle may meet the k-DOP `d`, or come within `eps` of it. See the
    /// module's contract.
    #[inline]
    pub(crate) fn meets(&self, d: &Dop<K>, eps: f64) -> bool {
        let grow = eps * (1.0 + 4.0 * EPS);
        // The coordinate axes: exact comparisons of exact values when eps is 0.
        for i in 0..3 {
            let (lo, hi) = (f64::from(d.lo(i)), f64::from(d.hi(i)));
            if self.tb.lo[i] - hi > grow || lo - self.tb.hi[i] > grow {
                return false;
            }
        }
        // The other k-DOP directions (coefficients in {-1, 0, 1}).
        for (i, a) in axes(K).iter().enumerate().skip(3) {
            let norm1 = f64::from(a[0].abs() + a[1].abs() + a[2].abs());
            let (lo, hi) = (f64::from(d.lo(i)), f64::from(d.hi(i)));
            let j = i - 3;
            let mag = self.mag_t.max(lo.abs()).max(hi.abs());
            let margin = norm1 * (SLACK * mag + grow);
            if self.dir_lo[j] - hi > margin || lo - self.dir_hi[j] > margin {
                return false;
            }
        }
        // The bounding box of `d` as centre and half extents: exact (f32 bounds in f64).
        let lo = DVec3::new(f64::from(d.lo(0)), f64::from(d.lo(1)), f64::from(d.lo(2)));
        let hi = DVec3::new(f64::from(d.hi(0)), f64::from(d.hi(1)), f64::from(d.hi(2)));
        let c = (lo + hi) * 0.5;
        let h = (hi - lo) * 0.5;
        let mag = self.mag_t.max(c.abs().max_element() + h.max_element());
        let slack = SLACK * mag + grow;
        for ax in &self.axes {
            let centre = ax.a.dot(c);
            let radius = h.dot(ax.abs);
            let margin = ax.norm1 * slack;
            if ax.lo - (centre + radius) > margin || (centre - radius) - ax.hi > margin {
                return false;
            }
        }
        true
    }
}

#[inline(always)]
fn min3(p: [f64; 3]) -> f64 {
    p[0].min(p[1]).min(p[2])
}

#[inline(always)]
fn max3(p: [f64; 3]) -> f64 {
    p[0].max(p[1]).max(p[2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;

    fn point(s: &mut u64, scale: f64) -> DVec3 {
        DVec3::new(lcg(s) - 0.5, lcg(s) - 0.5, lcg(s) - 0.5) * scale
    }

    /// Triangles built through a point of the k-DOP meet it, however large, thin or
    /// tilted they are: the test never cuts a contact. The point is a corner of a small
    /// box inside `d` (so exactly on its boundary when grazing) or a point inside it.
    fn never_cuts<const K: usize>() {
        let mut s = 11u64 ^ K as u64;
        let mut cut = 0;
        for i in 0..20_000 {
            let pts: Vec<DVec3> = (0..4).map(|_| point(&mut s, 2.0)).collect();
            let d = Dop::<K>::from_points(&pts);
            // A point in `d`: a convex combination of its generating points, or one of
            // them (on the boundary).
            let w = [lcg(&mut s), lcg(&mut s), lcg(&mut s), lcg(&mut s)];
            let sum: f64 = w.iter().sum();
            let inside = if i % 3 == 0 {
                pts[i % 4]
            } else {
                pts.iter()
                    .zip(w)
                    .map(|(p, w)| *p * (w / sum))
                    .sum::<DVec3>()
            };
            // A triangle with `inside` on it: on a corner, an edge, or the face; long and
            // thin at times.
            let scale = [0.01, 1.0, 100.0][i % 3];
            let a = inside + point(&mut s, scale);
            let b = inside + point(&mut s, scale) * [1.0, 1e-6][i / 3 % 2];
            let c = match i % 4 {
                0 => inside,
                1 => inside * 2.0 - a, // `inside` is the midpoint of edge a-c
                _ => inside * 3.0 - a - b,
            };
            let t = [a, b, c];
            if !triangle_meets_dop(&t, &TriBox::new(&t), &d, 0.0) {
                cut += 1;
            }
        }
        assert_eq!(cut, 0, "contacts cut at k = {K}");
    }

    #[test]
    fn never_cuts_a_contact() {
        never_cuts::<6>();
        never_cuts::<14>();
        never_cuts::<18>();
        never_cuts::<26>();
    }

    /// Within `eps` counts: a triangle moved `0.99 eps` away from the k-DOP along any of
    /// the separating directions still meets it.
    #[test]
    fn eps_keeps_near_triangles() {
        let d = Dop::<18>::from_points(&[DVec3::ZERO, DVec3::ONE]);
        let eps = 0.25;
        // Above the top face, tilted, at 0.99 eps.
        let z = 1.0 + 0.99 * eps;
        let t = [
            DVec3::new(0.5, 0.5, z),
            DVec3::new(5.0, 0.5, z + 3.0),
            DVec3::new(0.5, 5.0, z + 3.0),
        ];
        assert!(triangle_meets_dop(&t, &TriBox::new(&t), &d, eps));
        // Past the (1, 1, 1) corner along the diagonal: distance 0.99 eps.
        let p = DVec3::ONE + DVec3::ONE.normalize() * 0.99 * eps;
        let n = DVec3::ONE.normalize();
        let u = n.cross(DVec3::X).normalize();
        let v = n.cross(u);
        let t = [p + u * 3.0, p - u * 3.0 + v * 3.0, p - v * 3.0];
        assert!(triangle_meets_dop(&t, &TriBox::new(&t), &d, eps));
    }

    /// The test does cut what it is for: a large triangle tilted past a small box, whose
    /// own k-DOP contains the box, and a long sliver passing beside it.
    #[test]
    fn separates_by_plane_and_edges() {
        let d = Dop::<18>::from_points(&[DVec3::splat(-0.1), DVec3::splat(0.1)]);
        // The plane x + y + z = 1 misses the box (its corner is at 0.3).
        let t = [
            DVec3::new(10.0, -4.5, -4.5),
            DVec3::new(-4.5, 10.0, -4.5),
            DVec3::new(-4.5, -4.5, 10.0),
        ];
        assert!(Dop::<18>::from_triangle(&t).overlaps(&d));
        assert!(!triangle_meets_dop(&t, &TriBox::new(&t), &d, 0.0));
        // A sliver in the plane z = 0, which cuts the box, along (1, 1, 0) and 0.7 beside
        // the box: its box contains the box, an edge direction separates them.
        let d = Dop::<6>::from_points(&[DVec3::splat(-0.1), DVec3::splat(0.1)]);
        let off = DVec3::new(0.5, -0.5, 0.0);
        let t = [
            off - DVec3::new(10.0, 10.0, 0.0),
            off + DVec3::new(10.0, 10.0, 0.0),
            off + DVec3::new(10.001, 10.0, 0.0),
        ];
        assert!(Dop::<6>::from_triangle(&t).overlaps(&d));
        assert!(!triangle_meets_dop(&t, &TriBox::new(&t), &d, 0.0));
    }
}
