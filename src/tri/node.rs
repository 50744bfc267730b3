//! Whether one triangle can meet a k-DOP: the separating-axis test of a triangle against a
//! box (T. Akenine-Möller, "Fast 3D Triangle-Box Overlap Testing", Journal of Graphics
//! Tools 6(1), 2001), run on the k-DOP's bounding box. The k-DOP's other slab directions
//! are not tested: where one triangle meets a node they separated almost nothing the
//! plane and edges do not, and cost as much as the rest of the test.
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
use crate::dop::Dop;
use crate::exact::{EPS, max3, min3};
use glam::DVec3;

/// Rounding allowance per unit of `|axis|_1 · magnitude`. The triangle's and the box's
/// projections are dot products of three terms of inputs of at most that magnitude, added
/// and compared (about 13 unit roundoffs at most, counted term by term); on an edge axis
/// the edge's end, left out, projects within 2 unit roundoffs of its start (the axis is
/// square to the edge as rounded, not as exact). 32 cover that twice over.
const SLACK: f64 = 32.0 * EPS;

/// Whether triangle `t` (with its box `tb`) may meet the k-DOP `d`, or come within `eps` of
/// it. See the module's contract. The box first, then the triangle's plane and edge axes
/// one by one, each only when the tests before it did not separate; a triangle tested
/// against many k-DOPs is prepared once instead ([`Screen`]), with the plane and edge
/// tests.
#[inline]
pub(crate) fn triangle_meets_dop<const K: usize>(
    t: &Triangle,
    tb: &TriBox,
    d: &Dop<K>,
    eps: f64,
) -> bool {
    let grow = eps * (1.0 + 4.0 * EPS);
    if box_apart(tb, d, grow) {
        return false;
    }
    let mag_t = magnitude(t);
    let node = NodeBox::new(d, mag_t, grow);
    let e = edges(t);
    if node.apart(&SatAxis::new(t, e[0].cross(e[1]))) {
        return false;
    }
    // Each edge crossed with x, y and z: two-term axes, on which the edge's ends project
    // alike, so that its start and the opposite corner give the triangle's extent.
    for (k, e) in e.into_iter().enumerate() {
        let ends = [t[k], t[(k + 2) % 3]];
        if node.apart_on(ends, [1, 2], [e.z, -e.y])
            || node.apart_on(ends, [0, 2], [-e.z, e.x])
            || node.apart_on(ends, [0, 1], [e.y, -e.x])
        {
            return false;
        }
    }
    true
}

/// Lanes of a prepared screen: the plane normal and nine edge axes, and two zero axes
/// that never separate, so that the test runs in whole vectors of two or four.
const SCREEN_LANES: usize = 12;

/// A triangle prepared for [`Screen::meets`]: its plane and edge axes and its projections on
/// them, lane by lane, computed once for the many k-DOPs one large triangle screens.
#[derive(Clone, Debug)]
pub(crate) struct Screen {
    /// The largest coordinate magnitude of the triangle's corners.
    mag_t: f64,
    /// Per coordinate, each axis' component (the plane normal, then each edge crossed
    /// with x, y and z, then the zero pads), and its absolute value.
    a: [[f64; SCREEN_LANES]; 3],
    abs: [[f64; SCREEN_LANES]; 3],
    /// Per axis, its 1-norm and the triangle's extremes on it.
    norm1: [f64; SCREEN_LANES],
    lo: [f64; SCREEN_LANES],
    hi: [f64; SCREEN_LANES],
}

impl Screen {
    /// Prepares triangle `t`.
    #[inline]
    pub(crate) fn new(t: &Triangle) -> Self {
        let e = edges(t);
        let mut screen = Screen {
            mag_t: magnitude(t),
            a: [[0.0; SCREEN_LANES]; 3],
            abs: [[0.0; SCREEN_LANES]; 3],
            norm1: [0.0; SCREEN_LANES],
            lo: [0.0; SCREEN_LANES],
            hi: [0.0; SCREEN_LANES],
        };
        let normal = e[0].cross(e[1]);
        let all = std::iter::once(normal).chain(e.iter().flat_map(|&e| edge_axes(e)));
        for (i, a) in all.enumerate() {
            let ax = SatAxis::new(t, a);
            for c in 0..3 {
                screen.a[c][i] = ax.a[c];
                screen.abs[c][i] = ax.abs[c];
            }
            (screen.norm1[i], screen.lo[i], screen.hi[i]) = (ax.norm1, ax.lo, ax.hi);
        }
        screen
    }

    /// Whether the triangle may meet the k-DOP `d`, or come within `eps` of it, on the
    /// triangle's plane and edge axes: the last tests of [`triangle_meets_dop`]. For a
    /// `d` already known to overlap the triangle's k-DOP, on whose directions the first
    /// tests could separate them only by that k-DOP's rounding.
    #[inline]
    pub(crate) fn meets<const K: usize>(&self, d: &Dop<K>, eps: f64) -> bool {
        let grow = eps * (1.0 + 4.0 * EPS);
        let node = NodeBox::new(d, self.mag_t, grow);
        let (c, h) = (node.c, node.h);
        // Every lane, without an early exit, so that the loop runs in vectors.
        let mut apart = false;
        for i in 0..SCREEN_LANES {
            let centre = self.a[0][i] * c.x + self.a[1][i] * c.y + self.a[2][i] * c.z;
            let radius = h.x * self.abs[0][i] + h.y * self.abs[1][i] + h.z * self.abs[2][i];
            let margin = self.norm1[i] * node.slack;
            apart |= (self.lo[i] - (centre + radius) > margin)
                | ((centre - radius) - self.hi[i] > margin);
        }
        !apart
    }
}

/// A separating axis of the triangle's own (its normal, or an edge crossed with a
/// coordinate axis): the axis, its absolute value (for a box's radius), its 1-norm, and
/// the triangle's extremes on it.
#[derive(Clone, Copy, Debug)]
struct SatAxis {
    a: DVec3,
    abs: DVec3,
    norm1: f64,
    lo: f64,
    hi: f64,
}

impl SatAxis {
    #[inline(always)]
    fn new(t: &Triangle, a: DVec3) -> Self {
        let (lo, hi) = extremes(t, a);
        SatAxis {
            a,
            abs: a.abs(),
            norm1: a.abs().element_sum(),
            lo,
            hi,
        }
    }
}

/// A k-DOP's bounding box as centre and half extents (exact: `f32` bounds in `f64`), with
/// the rounding allowance per unit of an axis' 1-norm.
struct NodeBox {
    c: DVec3,
    h: DVec3,
    slack: f64,
}

impl NodeBox {
    #[inline(always)]
    fn new<const K: usize>(d: &Dop<K>, mag_t: f64, grow: f64) -> Self {
        let lo = DVec3::new(f64::from(d.lo(0)), f64::from(d.lo(1)), f64::from(d.lo(2)));
        let hi = DVec3::new(f64::from(d.hi(0)), f64::from(d.hi(1)), f64::from(d.hi(2)));
        let (c, h) = ((lo + hi) * 0.5, (hi - lo) * 0.5);
        let mag = mag_t.max(c.abs().max_element() + h.max_element());
        NodeBox {
            c,
            h,
            slack: SLACK * mag + grow,
        }
    }

    /// Whether axis `ax` separates the triangle from the box by more than the allowance.
    #[inline(always)]
    fn apart(&self, ax: &SatAxis) -> bool {
        let centre = ax.a.dot(self.c);
        let radius = self.h.dot(ax.abs);
        let margin = ax.norm1 * self.slack;
        ax.lo - (centre + radius) > margin || (centre - radius) - ax.hi > margin
    }

    /// [`NodeBox::apart`] on an edge axis of the triangle: the edge crossed with a
    /// coordinate axis, whose coordinates `c[0]` and `c[1]` are `a[0]` and `a[1]` and
    /// whose third is zero (the zero term is left out: it adds nothing to a product). `ends`
    /// are the edge's start and the opposite corner: the edge's end projects as its start
    /// does but for the rounding of the edge, which [`SLACK`] covers.
    #[inline(always)]
    fn apart_on(&self, ends: [DVec3; 2], c: [usize; 2], a: [f64; 2]) -> bool {
        let dot = |p: DVec3| a[0] * p[c[0]] + a[1] * p[c[1]];
        let (p, q) = (dot(ends[0]), dot(ends[1]));
        let (lo, hi) = if p < q { (p, q) } else { (q, p) };
        let (abs0, abs1) = (a[0].abs(), a[1].abs());
        let centre = dot(self.c);
        let radius = self.h[c[0]] * abs0 + self.h[c[1]] * abs1;
        let margin = (abs0 + abs1) * self.slack;
        lo - (centre + radius) > margin || (centre - radius) - hi > margin
    }
}

/// Whether the coordinate axes separate box `tb` from `d` by more than `grow`: exact
/// comparisons of exact values when `grow` is 0.
#[inline(always)]
fn box_apart<const K: usize>(tb: &TriBox, d: &Dop<K>, grow: f64) -> bool {
    (0..3).any(|i| {
        let (lo, hi) = (f64::from(d.lo(i)), f64::from(d.hi(i)));
        tb.lo[i] - hi > grow || lo - tb.hi[i] > grow
    })
}

/// The triangle's extremes on axis `a`.
#[inline(always)]
fn extremes(t: &Triangle, a: DVec3) -> (f64, f64) {
    let p = [a.dot(t[0]), a.dot(t[1]), a.dot(t[2])];
    (min3(p[0], p[1], p[2]), max3(p[0], p[1], p[2]))
}

#[inline(always)]
fn magnitude(t: &Triangle) -> f64 {
    t[0].abs().max(t[1].abs()).max(t[2].abs()).max_element()
}

#[inline(always)]
fn edges(t: &Triangle) -> [DVec3; 3] {
    [t[1] - t[0], t[2] - t[1], t[0] - t[2]]
}

/// Edge `e` crossed with x, y and z.
#[inline(always)]
fn edge_axes(e: DVec3) -> [DVec3; 3] {
    [
        DVec3::new(0.0, e.z, -e.y),
        DVec3::new(-e.z, 0.0, e.x),
        DVec3::new(e.y, -e.x, 0.0),
    ]
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
            if !triangle_meets_dop(&t, &TriBox::new(&t), &d, 0.0) || !Screen::new(&t).meets(&d, 0.0)
            {
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

    /// The prepared screen cuts only what the full test cuts, and on k-DOPs that overlap
    /// the triangle's own k-DOP (where it is used) it still separates by plane and edges.
    #[test]
    fn screen_separates_as_the_full_test() {
        let mut s = 5u64;
        let (mut overlapping, mut separated) = (0, 0);
        for i in 0..20_000 {
            let d = Dop::<18>::from_points(&[point(&mut s, 1.0), point(&mut s, 1.0)]);
            let scale = [0.5, 4.0, 40.0][i % 3];
            let c = point(&mut s, 1.5);
            let t = [
                c + point(&mut s, scale),
                c + point(&mut s, scale),
                c + point(&mut s, scale),
            ];
            let full = triangle_meets_dop(&t, &TriBox::new(&t), &d, 0.0);
            let screen = Screen::new(&t).meets(&d, 0.0);
            assert!(
                !full || screen,
                "case {i}: the screen cut a pair the full test keeps"
            );
            if Dop::<18>::from_points(&t).overlaps(&d) {
                overlapping += 1;
                separated += usize::from(!screen);
            }
        }
        // The plane and edges of large tilted triangles miss many boxes their k-DOPs meet.
        assert!(
            separated * 2 > overlapping,
            "{separated} of {overlapping} separated"
        );
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
