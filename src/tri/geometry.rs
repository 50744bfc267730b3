//! Where two intersecting triangles meet: a point, a segment, or (coplanar pairs) a convex
//! polygon — what a CAD user highlights and an engine turns into contact points.
//!
//! The set is convex, and each of its corners lies on an edge of one of the triangles, so
//! it is the convex hull of the points where the edges of each triangle meet the other one
//! (clipped segments for an edge in the other's plane). Which edges meet the other triangle
//! is decided by the exact orientation predicates of [`crate::exact`], as in the
//! intersection test; the points themselves are computed in `f64`, so they are within
//! rounding of the exact set.

use super::{Triangle, triangles_intersect};
use crate::exact::{orient2d, orient3d};
use glam::{DVec2, DVec3};
use smallvec::SmallVec;

/// The intersection of two closed triangles.
#[derive(Clone, Debug, PartialEq)]
pub enum ContactShape {
    /// They touch at one point (a corner on a face, two edges crossing).
    Point(DVec3),
    /// They cross along a segment (the general case) or touch along one.
    Segment(DVec3, DVec3),
    /// Coplanar triangles overlap in this convex polygon, corners in order around it.
    Polygon(Vec<DVec3>),
}

/// Where `t1` and `t2` meet, or `None` when they do not intersect (exactly as
/// [`triangles_intersect`] decides).
///
/// Points are computed in floating point: each is within rounding of the exact
/// intersection. Points closer than about 1e-12 of the triangles' size are merged, so a
/// sliver of an overlap can come back as a segment or a point. Degenerate triangles
/// (segments, points) are handled; two degenerate triangles give the point where they meet
/// (or the segment they share).
///
/// ```
/// use glam::DVec3;
/// use kdop::{ContactShape, contact_shape};
///
/// let floor = [DVec3::new(-1.0, -1.0, 0.0), DVec3::new(3.0, -1.0, 0.0), DVec3::new(-1.0, 3.0, 0.0)];
/// let wall = [DVec3::new(0.0, 0.0, -1.0), DVec3::new(0.0, 0.0, 1.0), DVec3::new(0.0, 1.0, 1.0)];
/// match contact_shape(&floor, &wall) {
///     Some(ContactShape::Segment(a, b)) => assert!((a - b).length() > 0.4),
///     other => panic!("{other:?}"),
/// }
/// ```
#[must_use]
pub fn contact_shape(t1: &Triangle, t2: &Triangle) -> Option<ContactShape> {
    if !triangles_intersect(t1, t2) {
        return None;
    }
    let mut pts: SmallVec<[DVec3; 12]> = SmallVec::new();
    edges_against(t1, t2, &mut pts);
    edges_against(t2, t1, &mut pts);
    if pts.is_empty() {
        // Two degenerate triangles: the closest points of their longest edges meet.
        let (a, b) = (longest_edge(t1), longest_edge(t2));
        let (p, q) = closest_points(a, b);
        pts.push((p + q) * 0.5);
        // A shared stretch of one line: the other's ends inside this one count too.
        for (seg, other) in [(a, b), (b, a)] {
            for e in other {
                if on_segment(e, seg) {
                    pts.push(e);
                }
            }
        }
    }
    Some(shape_of(&pts, scale(t1, t2)))
}

/// The size the merging tolerance is relative to.
fn scale(t1: &Triangle, t2: &Triangle) -> f64 {
    t1.iter()
        .chain(t2)
        .map(|p| p.abs().max_element())
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
}

/// The points where the edges of `t` meet the triangle `other` (nothing when `other` is
/// degenerate: its own edges, met against `t`, carry the points then).
fn edges_against(t: &Triangle, other: &Triangle, out: &mut SmallVec<[DVec3; 12]>) {
    let [a, b, c] = *other;
    let n = (b - a).cross(c - a);
    if n == DVec3::ZERO || !degenerate_free(other) {
        return;
    }
    for i in 0..3 {
        let (p, q) = (t[i], t[(i + 1) % 3]);
        let (sp, sq) = (orient3d(a, b, c, p), orient3d(a, b, c, q));
        if sp == 0 && sq == 0 {
            clip_in_plane(p, q, other, n, out);
        } else if sp * sq <= 0 {
            // The edge reaches the plane; it meets the triangle if the line through it
            // passes inside or on the triangle's edges.
            let s = [
                orient3d(p, q, a, b),
                orient3d(p, q, b, c),
                orient3d(p, q, c, a),
            ];
            let inside = s.iter().all(|&v| v >= 0) || s.iter().all(|&v| v <= 0);
            if inside {
                out.push(if sp == 0 {
                    p
                } else if sq == 0 {
                    q
                } else {
                    let (dp, dq) = (n.dot(p - a), n.dot(q - a));
                    p + (q - p) * (dp / (dp - dq))
                });
            }
        }
    }
}

/// Whether the triangle's corners are not collinear, exactly: some coordinate projection
/// keeps it a triangle.
fn degenerate_free(t: &Triangle) -> bool {
    (0..3).any(|axis| {
        let [a, b, c] = t.map(|p| drop_axis(p, axis));
        orient2d(a, b, c) != 0
    })
}

fn drop_axis(p: DVec3, axis: usize) -> DVec2 {
    match axis {
        0 => DVec2::new(p.y, p.z),
        1 => DVec2::new(p.z, p.x),
        _ => DVec2::new(p.x, p.y),
    }
}

/// The part of segment `pq` (in the plane of `t`, normal `n`) inside `t`, clipped edge by
/// edge in the coordinate plane the triangle's plane projects to one-to-one.
fn clip_in_plane(p: DVec3, q: DVec3, t: &Triangle, n: DVec3, out: &mut SmallVec<[DVec3; 12]>) {
    let axis = n.abs().max_position();
    let [a, b, c] = t.map(|v| drop_axis(v, axis));
    let (p2, q2) = (drop_axis(p, axis), drop_axis(q, axis));
    let turn = orient2d(a, b, c);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for (e0, e1) in [(a, b), (b, c), (c, a)] {
        let (sp, sq) = (orient2d(e0, e1, p2) * turn, orient2d(e0, e1, q2) * turn);
        if sp < 0 && sq < 0 {
            return;
        }
        if sp >= 0 && sq >= 0 {
            continue;
        }
        // One end outside: cut where the edge's line crosses the segment.
        let edge = e1 - e0;
        let side = |x: DVec2| edge.perp_dot(x - e0);
        let (fp, fq) = (side(p2), side(q2));
        let cut = (fp / (fp - fq)).clamp(0.0, 1.0);
        if sp < 0 {
            lo = lo.max(cut);
        } else {
            hi = hi.min(cut);
        }
    }
    if lo <= hi {
        out.push(p + (q - p) * lo);
        out.push(p + (q - p) * hi);
    }
}

fn longest_edge(t: &Triangle) -> [DVec3; 2] {
    let e = [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]];
    e.into_iter()
        .max_by(|x, y| {
            (x[1] - x[0])
                .length_squared()
                .total_cmp(&(y[1] - y[0]).length_squared())
        })
        .unwrap_or([t[0], t[0]])
}

/// Whether `x` lies on segment `s` (up to rounding).
fn on_segment(x: DVec3, s: [DVec3; 2]) -> bool {
    (closest_on(s, x) - x).length() <= 1e-12 * x.abs().max_element().max(1.0)
}

fn closest_on(s: [DVec3; 2], x: DVec3) -> DVec3 {
    let d = s[1] - s[0];
    let l = d.length_squared();
    if l == 0.0 {
        return s[0];
    }
    s[0] + d * ((x - s[0]).dot(d) / l).clamp(0.0, 1.0)
}

/// The closest points of two segments (Ericson, "Real-Time Collision Detection", §5.1.9).
fn closest_points(a: [DVec3; 2], b: [DVec3; 2]) -> (DVec3, DVec3) {
    let (d1, d2, r) = (a[1] - a[0], b[1] - b[0], a[0] - b[0]);
    let (aa, ee, f) = (d1.length_squared(), d2.length_squared(), d2.dot(r));
    let (s, t) = if aa == 0.0 && ee == 0.0 {
        (0.0, 0.0)
    } else if aa == 0.0 {
        (0.0, (f / ee).clamp(0.0, 1.0))
    } else {
        let c = d1.dot(r);
        if ee == 0.0 {
            ((-c / aa).clamp(0.0, 1.0), 0.0)
        } else {
            let bb = d1.dot(d2);
            let den = aa * ee - bb * bb;
            let s = if den > 0.0 {
                ((bb * f - c * ee) / den).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let t = (bb * s + f) / ee;
            if t < 0.0 {
                ((-c / aa).clamp(0.0, 1.0), 0.0)
            } else if t > 1.0 {
                (((bb - c) / aa).clamp(0.0, 1.0), 1.0)
            } else {
                (s, t)
            }
        }
    };
    (a[0] + d1 * s, b[0] + d2 * t)
}

/// The convex hull of `pts` as a point, a segment or a polygon, merging points closer than
/// the tolerance.
fn shape_of(pts: &[DVec3], scale: f64) -> ContactShape {
    let tol = 1e-12 * scale;
    let first = pts[0];
    // The farthest point from the first, then the farthest from that: a diameter.
    let far = |from: DVec3| {
        pts.iter()
            .copied()
            .max_by(|x, y| {
                (*x - from)
                    .length_squared()
                    .total_cmp(&(*y - from).length_squared())
            })
            .unwrap_or(from)
    };
    let a = far(first);
    let b = far(a);
    let ab = b - a;
    if ab.length() <= tol {
        return ContactShape::Point((a + b) * 0.5);
    }
    // The point farthest from the line ab: if it is on the line, a segment.
    let off = |x: DVec3| ab.cross(x - a).length() / ab.length();
    let c = pts
        .iter()
        .copied()
        .max_by(|x, y| off(*x).total_cmp(&off(*y)))
        .unwrap_or(a);
    if off(c) <= tol {
        return ContactShape::Segment(a, b);
    }
    // A polygon in the plane of a, b, c: the 2-D hull (Andrew's monotone chain).
    let n = ab.cross(c - a);
    let u = ab.normalize();
    let v = n.cross(ab).normalize();
    // Points within the tolerance of one already taken are the same corner.
    let mut flat: SmallVec<[(DVec2, DVec3); 12]> = SmallVec::new();
    for &x in pts {
        if flat.iter().all(|(_, y)| (x - *y).length() > tol) {
            flat.push((DVec2::new((x - a).dot(u), (x - a).dot(v)), x));
        }
    }
    flat.sort_by(|x, y| x.0.x.total_cmp(&y.0.x).then(x.0.y.total_cmp(&y.0.y)));
    let cross = |o: DVec2, p: DVec2, q: DVec2| (p - o).perp_dot(q - o);
    let keep = |hull: &mut Vec<(DVec2, DVec3)>, p: (DVec2, DVec3), floor: usize| {
        while hull.len() >= floor + 2 {
            let (o, m) = (hull[hull.len() - 2].0, hull[hull.len() - 1].0);
            // Not a left turn by more than the tolerance (times the edge's length): drop.
            if cross(o, m, p.0) <= tol * (m - o).length().max(tol) {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    };
    let mut hull: Vec<(DVec2, DVec3)> = Vec::with_capacity(flat.len() + 1);
    for &p in &flat {
        keep(&mut hull, p, 0);
    }
    let lower = hull.len() - 1;
    for &p in flat.iter().rev().skip(1) {
        keep(&mut hull, p, lower);
    }
    hull.pop();
    ContactShape::Polygon(hull.into_iter().map(|(_, x)| x).collect())
}
