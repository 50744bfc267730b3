//! Oriented bounding boxes: the OBBTree back-end.
//!
//! S. Gottschalk, M. C. Lin, D. Manocha, "OBBTree: A Hierarchical Structure for Rapid
//! Interference Detection", SIGGRAPH 1996 (`shared/seeds/gottschalk1996-obbtree.txt`):
//! - §4: a box's axes are the eigenvectors of the covariance of its triangles' convex hull,
//!   taken over the hull's *surface* (so that interior points and uneven sampling do not
//!   tilt it), and its extents the projections of the geometry on them;
//! - §4: the tree is built top down, splitting along the box's longest axis at the mean;
//! - §5: two boxes are disjoint if one of 15 axes separates them (each box's 3 face
//!   normals and the 9 cross products of their edges), tested with early exit.
//!
//! This is the system Klosowski et al. 1998 measured the k-DOPs against ("RAPID"), and a
//! bounding volume users can pick in its own right ([`ObbTree`]). Its queries report
//! exactly the k-DOP queries' contacts: box tests only prune, and they are sound (never
//! call overlapping boxes disjoint) under rounding and under any linear pose, including
//! shears and flattening maps, by the margins derived in [`sat`]'s notes.

mod tree;

pub use tree::{ObbOutcome, ObbQueryState, ObbTree};

use glam::{DMat3, DVec3};

/// A box in its own frame: the points `p` with `|rows[i] · p - mid[i]| <= half[i]` for each
/// `i`. `rows` are (to rounding) orthonormal; containment is defined through them, so their
/// rounding never breaks it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Obb {
    /// The box's axes as the rows of a matrix.
    pub rows: DMat3,
    /// The box's centre in its own coordinates (`rows · centre`).
    pub mid: DVec3,
    /// Half extents, widened at the fit to cover rounding.
    pub half: DVec3,
}

/// Relative margin for the rounding of box fits, placements and separating-axis sums.
/// Each rounding error bounded here is a few units of 2^-53 times a magnitude; 2^-40 is
/// over a thousand times that, and still far below any geometric size that matters.
pub(crate) const REL: f64 = 1.0 / (1u64 << 40) as f64;

/// Absolute margin for underflow: a product of subnormal or tiny values is off by up to
/// 2^-1074 however small it is, which no relative margin covers. Any sum of such errors
/// here stays far below this, and this stays far below any geometry.
pub(crate) const FLOOR: f64 = 1e-300;

/// Largest absolute coordinate.
#[inline]
pub(crate) fn inf_norm(v: DVec3) -> f64 {
    v.abs().max_element()
}

impl Obb {
    /// The box with axes `rows` around `points` (not empty, finite).
    pub(crate) fn around(rows: DMat3, points: impl Iterator<Item = DVec3> + Clone) -> Obb {
        let r = rows.transpose(); // columns of `r` are the rows of `rows`
        let (mut lo, mut hi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
        let mut mag = 0.0f64;
        for p in points {
            let u = DVec3::new(r.x_axis.dot(p), r.y_axis.dot(p), r.z_axis.dot(p));
            lo = lo.min(u);
            hi = hi.max(u);
            mag = mag.max(inf_norm(p));
        }
        // Each projection is off by at most 3 ulps of |row| |p|_1 <= 3 sqrt(3) mag (rows
        // are unit vectors to rounding); the midpoint and half width add one rounding each.
        let slack = REL * (mag + inf_norm(lo).max(inf_norm(hi))) + FLOOR;
        Obb {
            rows,
            mid: (lo + hi) * 0.5,
            half: (hi - lo) * 0.5 + DVec3::splat(slack),
        }
    }

    /// The box's centre and its three half-edge vectors in the coordinates its `rows` are
    /// expressed in (`rowsᵀ` inverts `rows` to rounding, which [`Placed::margin`] covers).
    pub(crate) fn corners_frame(&self) -> (DVec3, [DVec3; 3]) {
        let t = self.rows.transpose();
        let centre = t * self.mid;
        let edges = [
            t.x_axis * self.half.x,
            t.y_axis * self.half.y,
            t.z_axis * self.half.z,
        ];
        (centre, edges)
    }

    /// Longest axis (0, 1 or 2).
    pub(crate) fn longest(&self) -> usize {
        let h = self.half;
        if h.x >= h.y && h.x >= h.z {
            0
        } else if h.y >= h.z {
            1
        } else {
            2
        }
    }

    /// Size for the larger-first descent: the sum of the half extents.
    pub(crate) fn size(&self) -> f64 {
        self.half.x + self.half.y + self.half.z
    }
}

/// A flying node's box under a pose, in world coordinates: centre, half-edge vectors (any
/// parallelepiped: a pose may shear or flatten), and a margin that covers everything
/// rounding may have moved (the placement of the box and of the triangles inside it).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Placed {
    pub centre: DVec3,
    pub edges: [DVec3; 3],
    pub margin: f64,
}

impl Placed {
    /// Places `b` by the linear map `a` and translation `t`; `a_norm` is `a`'s ∞-norm.
    pub(crate) fn new(b: &Obb, a: &DMat3, t: DVec3, a_norm: f64) -> Placed {
        let (c, e) = b.corners_frame();
        let centre = *a * c + t;
        let edges = e.map(|e| *a * e);
        // The box is placed with rounding (a few ulps of |a| |c| + |t| and |a| |e|), the
        // frame's inverse is a transpose (off by ulps of the extents), and each placed
        // triangle corner is within a few ulps of |a| |v| + |t| of the exact image; |v| is
        // at most |c| + the three half extents.
        let extent = e.iter().map(|e| inf_norm(*e)).sum::<f64>();
        let margin =
            REL * (a_norm * (3.0 * inf_norm(c) + 6.0 * extent) + 3.0 * inf_norm(t)) + FLOOR;
        Placed {
            centre,
            edges,
            margin,
        }
    }
}

/// Whether an environment box `a` (in world coordinates) and a placed flying box `b` may
/// overlap, with `eps` (the query's epsilon) added around `b`: `false` only when one of the
/// 15 axes separates them by more than every rounding error.
///
/// Everything is computed in `a`'s frame: `d` is `b`'s centre and `f` its edges there, `a`
/// is the axis-aligned box `|x_i| <= half_i`. The frame map `x = rows · p - mid` is linear
/// and invertible, so an axis that separates the mapped boxes separates the boxes; any axis
/// at all gives a sound test (the projection of a parallelepiped with centre `d` and
/// half-edges `f_j` on `l` is `l·d ± Σ |l·f_j|`), so the 15 are a choice for pruning, not a
/// condition for correctness. Rounding of `d`, `f` and the sums is at most a few ulps of
/// the magnitudes in `scale`; `REL * scale` is added per unit of `|l|_1`, with `b`'s own
/// margin, `eps` and an absolute floor for underflow ([`FLOOR`]).
pub(crate) fn sat(a: &Obb, b: &Placed, eps: f64) -> bool {
    let r = &a.rows;
    let rt = r.transpose();
    let row = |i: usize| rt.col(i);
    let local = |p: DVec3| DVec3::new(row(0).dot(p), row(1).dot(p), row(2).dot(p));
    let c = local(b.centre);
    let d = c - a.mid;
    let f = b.edges.map(local);
    let h = a.half;
    let scale = inf_norm(c)
        + inf_norm(a.mid)
        + inf_norm(b.centre)
        + h.x
        + h.y
        + h.z
        + b.edges.iter().map(|e| inf_norm(*e)).sum::<f64>();
    let slack = REL * scale + b.margin + eps + FLOOR;
    // Separated along l (|l|_1 scales the slack)? Any positive multiple of an axis is as
    // good an axis, so l is first scaled to a largest component of 1: a cross product of
    // tiny or subnormal edges would otherwise make every projection underflow, where
    // rounding is absolute and the relative slack vanishes. A zero axis separates nothing.
    let apart = |l: DVec3| {
        let top = l.abs().max_element();
        if !(top > 0.0 && top.is_finite()) {
            return false;
        }
        let l = l / top;
        let ra = h.x * l.x.abs() + h.y * l.y.abs() + h.z * l.z.abs();
        let rb = l.dot(f[0]).abs() + l.dot(f[1]).abs() + l.dot(f[2]).abs();
        let s = slack * (l.x.abs() + l.y.abs() + l.z.abs());
        l.dot(d).abs() > ra + rb + s + REL * (ra + rb)
    };
    // a's three face normals: the coordinate axes of its frame.
    if apart(DVec3::X) || apart(DVec3::Y) || apart(DVec3::Z) {
        return false;
    }
    // b's three face normals (cross products of its edges; zero for a flat b, which then
    // separates nothing).
    if apart(f[1].cross(f[2])) || apart(f[2].cross(f[0])) || apart(f[0].cross(f[1])) {
        return false;
    }
    // The nine edge-edge axes.
    for e in [DVec3::X, DVec3::Y, DVec3::Z] {
        for fj in &f {
            if apart(e.cross(*fj)) {
                return false;
            }
        }
    }
    true
}

/// Axes for a set of points: the eigenvectors of the covariance of their convex hull's
/// surface (Gottschalk et al. §4), or of the points themselves when the hull is flat.
/// Falls back to the coordinate axes if the covariance is not usable.
pub(crate) fn fit_axes(points: &[DVec3]) -> DMat3 {
    if points.len() < 3 {
        return DMat3::IDENTITY;
    }
    // Work relative to one point: covariances are translation-invariant and this avoids
    // cancellation far from the origin.
    let o = points[0];
    let hull = crate::hull::convex_hull(points);
    let mut cov = [[0.0f64; 3]; 3];
    let mut area = 0.0;
    let mut mean = DVec3::ZERO;
    if hull.dim == Some(3) {
        // Surface covariance: triangle i (corners p, q, r, area A_i, centroid m_i)
        // contributes A_i / 12 (9 m m^T + p p^T + q q^T + r r^T).
        for f in &hull.faces {
            let [p, q, r] = f.map(|i| points[i as usize] - o);
            let ai = 0.5 * (q - p).cross(r - p).length();
            let m = (p + q + r) / 3.0;
            area += ai;
            mean += m * ai;
            for (j, cj) in cov.iter_mut().enumerate() {
                for (k, c) in cj.iter_mut().enumerate() {
                    *c += ai / 12.0 * (9.0 * m[j] * m[k] + p[j] * p[k] + q[j] * q[k] + r[j] * r[k]);
                }
            }
        }
    }
    if !(area > 0.0 && area.is_finite()) {
        // Flat or degenerate hull: the points' own covariance.
        cov = [[0.0; 3]; 3];
        mean = DVec3::ZERO;
        for p in points {
            let p = *p - o;
            mean += p;
            for (j, cj) in cov.iter_mut().enumerate() {
                for (k, c) in cj.iter_mut().enumerate() {
                    *c += p[j] * p[k];
                }
            }
        }
        area = points.len() as f64;
    }
    let m = mean / area;
    for (j, cj) in cov.iter_mut().enumerate() {
        for (k, c) in cj.iter_mut().enumerate() {
            *c = *c / area - m[j] * m[k];
        }
    }
    eigen_rows(cov).unwrap_or(DMat3::IDENTITY)
}

/// Orthonormal eigenvectors of a symmetric 3×3 matrix as the rows of a matrix (cyclic
/// Jacobi rotations), or `None` if it is not finite.
fn eigen_rows(mut a: [[f64; 3]; 3]) -> Option<DMat3> {
    if a.iter().flatten().any(|v| !v.is_finite()) {
        return None;
    }
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    for _ in 0..50 {
        let off = a[0][1].abs() + a[0][2].abs() + a[1][2].abs();
        let diag = a[0][0].abs() + a[1][1].abs() + a[2][2].abs();
        if off <= f64::EPSILON * diag * 1e-3 || off == 0.0 {
            break;
        }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            if a[p][q] == 0.0 {
                continue;
            }
            let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
            let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
            let c = 1.0 / (t * t + 1.0).sqrt();
            let s = t * c;
            // a <- Jᵀ a J with J the rotation in the (p, q) plane.
            for row in &mut a {
                let (akp, akq) = (row[p], row[q]);
                row[p] = c * akp - s * akq;
                row[q] = s * akp + c * akq;
            }
            let (rp, rq) = (a[p], a[q]);
            a[p] = std::array::from_fn(|k| c * rp[k] - s * rq[k]);
            a[q] = std::array::from_fn(|k| s * rp[k] + c * rq[k]);
            for row in &mut v {
                let (vp, vq) = (row[p], row[q]);
                row[p] = c * vp - s * vq;
                row[q] = s * vp + c * vq;
            }
        }
    }
    // Columns of v are the eigenvectors; re-orthonormalise them (Gram–Schmidt).
    let col = |j: usize| DVec3::new(v[0][j], v[1][j], v[2][j]);
    let e0 = col(0).try_normalize()?;
    let e1 = (col(1) - e0 * e0.dot(col(1))).try_normalize()?;
    let e2 = e0.cross(e1).try_normalize()?;
    Some(DMat3::from_cols(e0, e1, e2).transpose())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;

    #[test]
    fn eigenvectors_of_a_known_covariance() {
        // Points spread along (1, 1, 0) much more than across it.
        let dir = DVec3::new(1.0, 1.0, 0.0).normalize();
        let mut s = 3;
        let pts: Vec<DVec3> = (0..400)
            .map(|_| {
                dir * (lcg(&mut s) * 10.0 - 5.0)
                    + DVec3::new(lcg(&mut s), -lcg(&mut s), lcg(&mut s)) * 0.1
            })
            .collect();
        let rows = fit_axes(&pts);
        // Orthonormal rows, and one of them along the spread.
        let m = rows * rows.transpose();
        assert!(
            (m - DMat3::IDENTITY).abs_diff_eq(DMat3::ZERO, 1e-12),
            "{m:?}"
        );
        let best = (0..3)
            .map(|i| rows.row(i).dot(dir).abs())
            .fold(0.0, f64::max);
        assert!(best > 0.999, "{rows:?}");
    }

    /// Fitted boxes contain their points, and whenever the separating-axis test calls two
    /// boxes apart, no point of the one lies in the other (a necessary condition that a
    /// wrong "apart" would break on these clouds).
    #[test]
    fn fitted_boxes_contain_their_points_and_apart_means_apart() {
        let mut s = 17;
        let cloud = |s: &mut u64| -> Vec<DVec3> {
            let c = DVec3::new(lcg(s), lcg(s), lcg(s)) * 0.8;
            (0..30)
                .map(|_| c + DVec3::new(lcg(s), lcg(s) * 0.3, lcg(s) * 0.1) - 0.5)
                .collect()
        };
        let mut apart = 0;
        for _ in 0..300 {
            let (pa, pb) = (cloud(&mut s), cloud(&mut s));
            let a = Obb::around(fit_axes(&pa), pa.iter().copied());
            let b = Obb::around(fit_axes(&pb), pb.iter().copied());
            let inside = |o: &Obb, p: DVec3| (o.rows * p - o.mid).abs().cmple(o.half).all();
            assert!(pa.iter().all(|&p| inside(&a, p)), "{a:?}");
            assert!(pb.iter().all(|&p| inside(&b, p)), "{b:?}");
            let placed = Placed::new(&b, &DMat3::IDENTITY, DVec3::ZERO, 1.0);
            if !sat(&a, &placed, 0.0) {
                apart += 1;
                assert!(
                    !pb.iter().any(|&p| inside(&a, p)),
                    "apart, yet {b:?} meets {a:?}"
                );
            }
        }
        // Both outcomes occur.
        assert!((30..270).contains(&apart), "{apart}");
    }
}
