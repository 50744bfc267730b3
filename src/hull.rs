//! Exact 3D convex hull (quickhull) and its vertex graph, for exact k-DOP volumes and for
//! hill-climbing the root k-DOP of a tumbling object (Klosowski et al. 1998, §4.1, method 1).
//!
//! C. B. Barber, D. P. Dobkin, H. Huhdanpaa, "The Quickhull Algorithm for Convex Hulls",
//! ACM TOMS 22(4), 1996. Every visibility decision is an exact orientation sign
//! ([`crate::exact`]); a point joins the hull only if it is *strictly* outside some face.
//! With exact signs the faces strictly visible from an outside point form a disk, so the
//! horizon is one cycle and the result is a correctly triangulated convex polytope (adjacent
//! coplanar triangles allowed). Flat and linear inputs get a polygon or a segment instead.

use crate::exact::{Plane, orient2d, orient3d, project};
use glam::{DVec2, DVec3};
use std::collections::HashMap;

/// The convex hull of a point set as a vertex graph.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hull {
    /// Indices (into the input points) of the hull's vertices.
    pub vertices: Vec<u32>,
    /// CSR adjacency over positions in `vertices`: neighbours of vertex `i` are
    /// `adjacency[adj_start[i]..adj_start[i + 1]]`, also positions in `vertices`.
    pub adj_start: Vec<u32>,
    /// See `adj_start`.
    pub adjacency: Vec<u32>,
    /// Outward-oriented triangles (input indices); empty unless the hull is 3-dimensional.
    /// Only read by the tests (and `Hull::volume`, which is test-only).
    #[cfg_attr(not(test), allow(dead_code))]
    pub faces: Vec<[u32; 3]>,
    /// Dimension of the hull: 0 (a point), 1, 2 or 3; `None` for no points.
    pub dim: Option<u8>,
    /// Per position in `vertices`: the polytope's tangent cone at this vertex is spanned by
    /// the edges to its neighbours, so a vertex with no neighbour higher along a direction
    /// is a global maximum along it (see [`Hull::mark_corners`]). `false` where that is not
    /// known: a vertex inside a flat region of the surface, and every vertex of a flat or
    /// linear hull.
    pub corner: Vec<bool>,
}

impl Hull {
    /// Neighbours of the vertex at position `i` in `vertices`.
    #[inline]
    pub fn neighbours(&self, i: u32) -> &[u32] {
        let s = self.adj_start[i as usize] as usize;
        let e = self.adj_start[i as usize + 1] as usize;
        &self.adjacency[s..e]
    }

    /// Volume enclosed by the faces (zero for flat hulls); tests compare k-DOP volumes with it.
    #[cfg(test)]
    pub fn volume(&self, points: &[DVec3]) -> f64 {
        let Some(&o) = self.faces.first().map(|f| &f[0]) else {
            return 0.0;
        };
        let o = points[o as usize];
        let mut v = 0.0;
        for f in &self.faces {
            let a = points[f[0] as usize] - o;
            let b = points[f[1] as usize] - o;
            let c = points[f[2] as usize] - o;
            v += a.dot(b.cross(c));
        }
        (v / 6.0).abs()
    }

    fn from_edges(
        vertices: Vec<u32>,
        mut edges: Vec<(u32, u32)>,
        faces: Vec<[u32; 3]>,
        dim: u8,
    ) -> Hull {
        let slot: HashMap<u32, u32> = vertices
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as u32))
            .collect();
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(edges.len() * 2);
        for (a, b) in edges.drain(..) {
            let (a, b) = (slot[&a], slot[&b]);
            pairs.push((a, b));
            pairs.push((b, a));
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut adj_start = vec![0u32; vertices.len() + 1];
        for &(a, _) in &pairs {
            adj_start[a as usize + 1] += 1;
        }
        for i in 0..vertices.len() {
            adj_start[i + 1] += adj_start[i];
        }
        let adjacency = pairs.into_iter().map(|(_, b)| b).collect();
        let corner = vec![false; vertices.len()];
        Hull {
            vertices,
            adj_start,
            adjacency,
            faces,
            dim: Some(dim),
            corner,
        }
    }

    /// Fills [`Hull::corner`]. On a triangulated convex polytope the neighbours of a vertex
    /// span its tangent cone unless all of them lie in one plane with it (a vertex left
    /// inside a flat face, which quickhull keeps when a later point makes its triangles
    /// coplanar); there the cone is a half-space that the neighbours do not span. Decided by
    /// exact orientations: the vertex, its first neighbour and any two others.
    fn mark_corners(&mut self, points: &[DVec3]) {
        for i in 0..self.vertices.len() {
            let at = |slot: u32| points[self.vertices[slot as usize] as usize];
            let nbs = self.neighbours(i as u32);
            let v = points[self.vertices[i] as usize];
            let spans = nbs.split_first().is_some_and(|(&a, rest)| {
                rest.iter().enumerate().any(|(j, &b)| {
                    rest[j + 1..]
                        .iter()
                        .any(|&c| orient3d(v, at(a), at(b), at(c)) != 0)
                })
            });
            self.corner[i] = spans;
        }
    }
}

struct Face {
    v: [u32; 3],
    /// Neighbour across edge `(v[i], v[(i + 1) % 3])`.
    nb: [u32; 3],
    alive: bool,
    plane: Plane,
    outside: Vec<u32>,
    far: Option<(u32, f64)>,
}

/// Convex hull of `points` (finite coordinates). Duplicate and coplanar points are fine.
pub(crate) fn convex_hull(points: &[DVec3]) -> Hull {
    if points.is_empty() {
        return Hull::default();
    }
    let n = points.len() as u32;
    // First corner: lexicographically smallest; second: farthest from it.
    let i0 = (0..n)
        .min_by(|&a, &b| {
            let (p, q) = (points[a as usize], points[b as usize]);
            p.x.total_cmp(&q.x)
                .then(p.y.total_cmp(&q.y))
                .then(p.z.total_cmp(&q.z))
        })
        .unwrap_or(0);
    let p0 = points[i0 as usize];
    let i1 = (0..n)
        .max_by(|&a, &b| {
            p0.distance_squared(points[a as usize])
                .total_cmp(&p0.distance_squared(points[b as usize]))
        })
        .unwrap_or(0);
    let p1 = points[i1 as usize];
    if p1 == p0 {
        return Hull::from_edges(vec![i0], vec![], vec![], 0);
    }
    // Third: farthest from the line, confirmed non-collinear exactly.
    let dir = p1 - p0;
    let line_dist = |i: u32| dir.cross(points[i as usize] - p0).length_squared();
    let best = (0..n)
        .max_by(|&a, &b| line_dist(a).total_cmp(&line_dist(b)))
        .unwrap_or(0);
    let non_collinear = |i: u32| !Plane::new(p0, p1, points[i as usize]).is_degenerate();
    let i2 = if non_collinear(best) {
        Some(best)
    } else {
        (0..n).find(|&i| non_collinear(i))
    };
    let Some(i2) = i2 else {
        return collinear_hull(points, i0, i1);
    };
    let p2 = points[i2 as usize];
    let base = Plane::new(p0, p1, p2);
    let nrm = (p1 - p0).cross(p2 - p0);
    let plane_dist = |i: u32| nrm.dot(points[i as usize] - p0).abs();
    let best = (0..n)
        .max_by(|&a, &b| plane_dist(a).total_cmp(&plane_dist(b)))
        .unwrap_or(0);
    let i3 = if base.side(points[best as usize]) != 0 {
        Some(best)
    } else {
        (0..n).find(|&i| base.side(points[i as usize]) != 0)
    };
    let Some(i3) = i3 else {
        return coplanar_hull(points, &base);
    };

    let mut faces: Vec<Face> = Vec::new();
    let tet = [i0, i1, i2, i3];
    for (skip, _) in tet.iter().enumerate() {
        let mut f: Vec<u32> = tet
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != skip)
            .map(|(_, &v)| v)
            .collect();
        let opp = points[tet[skip] as usize];
        if orient3d(
            points[f[0] as usize],
            points[f[1] as usize],
            points[f[2] as usize],
            opp,
        ) > 0
        {
            f.swap(1, 2);
        }
        faces.push(new_face(points, [f[0], f[1], f[2]]));
    }
    link_all(&mut faces);

    // Conflict lists.
    let mut pending: Vec<u32> = Vec::new();
    for i in 0..n {
        if tet.contains(&i) {
            continue;
        }
        assign(points, &mut faces, &[0, 1, 2, 3], i);
    }
    for (fi, f) in faces.iter().enumerate() {
        if !f.outside.is_empty() {
            pending.push(fi as u32);
        }
    }

    let mut visible: Vec<u32> = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
    let mut mark: Vec<u32> = vec![0; faces.len()];
    let mut round = 0u32;
    while let Some(fi) = pending.pop() {
        let f = &faces[fi as usize];
        if !f.alive {
            continue;
        }
        let Some((eye, _)) = f.far else {
            continue;
        };
        let pe = points[eye as usize];
        // Faces strictly visible from the eye, by search from this one.
        round += 1;
        mark.resize(faces.len(), 0);
        visible.clear();
        stack.clear();
        stack.push(fi);
        mark[fi as usize] = round;
        while let Some(g) = stack.pop() {
            visible.push(g);
            for &h in &faces[g as usize].nb {
                if mark[h as usize] != round && faces[h as usize].plane.side(pe) > 0 {
                    mark[h as usize] = round;
                    stack.push(h);
                }
            }
        }
        // Horizon: edges of visible faces whose neighbour is not visible.
        let mut horizon: Vec<(u32, u32, u32)> = Vec::new(); // (a, b, outside neighbour)
        for &g in &visible {
            let fg = &faces[g as usize];
            for e in 0..3 {
                let h = fg.nb[e];
                if mark[h as usize] != round {
                    horizon.push((fg.v[e], fg.v[(e + 1) % 3], h));
                }
            }
        }
        let mut orphans: Vec<u32> = Vec::new();
        for &g in &visible {
            let fg = &mut faces[g as usize];
            fg.alive = false;
            orphans.append(&mut fg.outside);
        }
        let first_new = faces.len() as u32;
        let mut by_start: HashMap<u32, u32> = HashMap::with_capacity(horizon.len());
        for (k, &(a, b, h)) in horizon.iter().enumerate() {
            let id = first_new + k as u32;
            let mut f = new_face(points, [a, b, eye]);
            f.nb[0] = h;
            // Point the outside neighbour's matching edge back at the new face.
            let hf = &mut faces[h as usize];
            for e in 0..3 {
                if hf.v[e] == b && hf.v[(e + 1) % 3] == a {
                    hf.nb[e] = id;
                }
            }
            by_start.insert(a, id);
            faces.push(f);
        }
        for (k, &(_, b, _)) in horizon.iter().enumerate() {
            let id = first_new + k as u32;
            // Across (b, eye): the new face starting at b, whose edge (eye, b) leads back.
            let next = by_start[&b];
            faces[id as usize].nb[1] = next;
            faces[next as usize].nb[2] = id;
        }
        let new_ids: Vec<u32> = (first_new..faces.len() as u32).collect();
        for p in orphans {
            if p != eye {
                assign(points, &mut faces, &new_ids, p);
            }
        }
        for &id in &new_ids {
            if !faces[id as usize].outside.is_empty() {
                pending.push(id);
            }
        }
    }

    let alive: Vec<[u32; 3]> = faces.iter().filter(|f| f.alive).map(|f| f.v).collect();
    let mut verts: Vec<u32> = alive.iter().flatten().copied().collect();
    verts.sort_unstable();
    verts.dedup();
    let edges: Vec<(u32, u32)> = alive
        .iter()
        .flat_map(|f| [(f[0], f[1]), (f[1], f[2]), (f[2], f[0])])
        .collect();
    let mut hull = Hull::from_edges(verts, edges, alive, 3);
    hull.mark_corners(points);
    hull
}

fn new_face(points: &[DVec3], v: [u32; 3]) -> Face {
    Face {
        v,
        nb: [u32::MAX; 3],
        alive: true,
        plane: Plane::new(
            points[v[0] as usize],
            points[v[1] as usize],
            points[v[2] as usize],
        ),
        outside: Vec::new(),
        far: None,
    }
}

fn link_all(faces: &mut [Face]) {
    let mut by_edge: HashMap<(u32, u32), u32> = HashMap::new();
    for (i, f) in faces.iter().enumerate() {
        for e in 0..3 {
            by_edge.insert((f.v[e], f.v[(e + 1) % 3]), i as u32);
        }
    }
    for f in faces.iter_mut() {
        for e in 0..3 {
            f.nb[e] = by_edge[&(f.v[(e + 1) % 3], f.v[e])];
        }
    }
}

/// Puts point `p` on the conflict list of the first candidate face it is strictly outside.
fn assign(points: &[DVec3], faces: &mut [Face], candidates: &[u32], p: u32) {
    let pp = points[p as usize];
    for &fi in candidates {
        let f = &mut faces[fi as usize];
        if f.plane.side(pp) > 0 {
            let a = points[f.v[0] as usize];
            let n = (points[f.v[1] as usize] - a).cross(points[f.v[2] as usize] - a);
            let d = n.dot(pp - a) / n.length().max(f64::MIN_POSITIVE);
            if f.far.is_none_or(|(_, best)| d > best) {
                f.far = Some((p, d));
            }
            f.outside.push(p);
            return;
        }
    }
}

fn collinear_hull(points: &[DVec3], i0: u32, i1: u32) -> Hull {
    // All points on the line through p0 and p1; the extremes along a coordinate that varies.
    let (p0, p1) = (points[i0 as usize], points[i1 as usize]);
    let axis = (0..3)
        .max_by(|&a, &b| (p1[a] - p0[a]).abs().total_cmp(&(p1[b] - p0[b]).abs()))
        .unwrap_or(0);
    let n = points.len() as u32;
    let lo = (0..n)
        .min_by(|&a, &b| points[a as usize][axis].total_cmp(&points[b as usize][axis]))
        .unwrap_or(i0);
    let hi = (0..n)
        .max_by(|&a, &b| points[a as usize][axis].total_cmp(&points[b as usize][axis]))
        .unwrap_or(i1);
    Hull::from_edges(vec![lo.min(hi), lo.max(hi)], vec![(lo, hi)], vec![], 1)
}

fn coplanar_hull(points: &[DVec3], plane: &Plane) -> Hull {
    let Some(axis) = plane.dominant_axis() else {
        return Hull::default();
    };
    // Andrew's monotone chain in the projection, keeping only strict turns (extreme points).
    let mut idx: Vec<u32> = (0..points.len() as u32).collect();
    let pr = |i: u32| project(points[i as usize], axis);
    // Order by value: `total_cmp` alone puts -0.0 before 0.0, which separates equal points
    // so that `dedup_by` misses them and the chain, seeing a zero-length edge, drops a
    // true corner. Adding 0.0 turns -0.0 into 0.0 and changes nothing else.
    idx.sort_by(|&a, &b| {
        let (p, q) = (pr(a) + DVec2::ZERO, pr(b) + DVec2::ZERO);
        p.x.total_cmp(&q.x).then(p.y.total_cmp(&q.y))
    });
    idx.dedup_by(|a, b| pr(*a) == pr(*b));
    let mut chain: Vec<u32> = Vec::new();
    for pass in 0..2 {
        let start = chain.len();
        let seq: Box<dyn Iterator<Item = &u32>> = if pass == 0 {
            Box::new(idx.iter())
        } else {
            Box::new(idx.iter().rev())
        };
        for &i in seq {
            while chain.len() >= start + 2
                && orient2d(
                    pr(chain[chain.len() - 2]),
                    pr(chain[chain.len() - 1]),
                    pr(i),
                ) <= 0
            {
                chain.pop();
            }
            chain.push(i);
        }
        chain.pop();
    }
    let m = chain.len();
    let edges: Vec<(u32, u32)> = (0..m).map(|k| (chain[k], chain[(k + 1) % m])).collect();
    let mut verts = chain.clone();
    verts.sort_unstable();
    Hull::from_edges(verts, edges, vec![], 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::lcg;

    /// Every input point lies inside or on every face's plane, and the faces close up.
    fn assert_valid(points: &[DVec3], h: &Hull) {
        for f in &h.faces {
            let pl = Plane::new(
                points[f[0] as usize],
                points[f[1] as usize],
                points[f[2] as usize],
            );
            assert!(!pl.is_degenerate(), "degenerate hull face");
            for p in points {
                assert!(pl.side(*p) <= 0, "point outside a hull face");
            }
        }
        // Closed 2-manifold: every directed edge appears once, with its reverse.
        let mut edges = std::collections::HashSet::new();
        for f in &h.faces {
            for e in 0..3 {
                assert!(edges.insert((f[e], f[(e + 1) % 3])), "edge used twice");
            }
        }
        for &(a, b) in &edges {
            assert!(edges.contains(&(b, a)), "open edge");
        }
        // Euler: V - E + F = 2.
        let v = h.vertices.len() as i64;
        let e = edges.len() as i64 / 2;
        let f = h.faces.len() as i64;
        assert_eq!(v - e + f, 2);
    }

    #[test]
    fn cube_with_interior_and_face_points() {
        let mut pts = Vec::new();
        for x in 0..=4 {
            for y in 0..=4 {
                for z in 0..=4 {
                    pts.push(DVec3::new(x as f64, y as f64, z as f64));
                }
            }
        }
        let h = convex_hull(&pts);
        assert_eq!(h.dim, Some(3));
        assert_valid(&pts, &h);
        assert!((h.volume(&pts) - 64.0).abs() < 1e-9);
        // Corners are hull vertices.
        for &c in &[0u32, 4, 20, 24, 100, 104, 120, 124] {
            assert!(h.vertices.contains(&c));
        }
    }

    #[test]
    fn random_clouds_and_sphere() {
        let mut s = 11u64;
        for round in 0..30 {
            let n = 10 + round * 37;
            let pts: Vec<DVec3> = (0..n)
                .map(|_| {
                    let v = DVec3::new(lcg(&mut s) - 0.5, lcg(&mut s) - 0.5, lcg(&mut s) - 0.5);
                    if round % 2 == 0 { v } else { v.normalize() }
                })
                .collect();
            let h = convex_hull(&pts);
            assert_valid(&pts, &h);
            if round % 2 == 1 {
                // All points on a sphere are extreme.
                assert_eq!(h.vertices.len(), n);
            }
        }
    }

    #[test]
    fn signed_zeros_do_not_lose_a_flat_corner() {
        // Found by fuzzing (mesh_query): (-0, -0, 0) and (0, 0, 0) are one point; sorted
        // apart by `total_cmp`, they made the chain drop the corner (-1, 0, -2).
        let pts = [
            DVec3::new(0.0, 0.0625, 0.0),
            DVec3::new(-0.0, -0.0, 0.0),
            DVec3::new(-1.0, 0.0, -2.0),
            DVec3::new(0.0, 0.0, 0.0),
        ];
        let h = convex_hull(&pts);
        assert_eq!(h.dim, Some(2));
        let corners: Vec<DVec3> = h.vertices.iter().map(|&i| pts[i as usize]).collect();
        assert_eq!(corners.len(), 3, "{corners:?}");
        for p in [pts[0], pts[1], pts[2]] {
            assert!(corners.contains(&p), "{p} missing from {corners:?}");
        }
    }

    #[test]
    fn flat_linear_and_single() {
        let flat: Vec<DVec3> = (0..50)
            .map(|i| DVec3::new((i % 7) as f64, (i / 7) as f64, 3.0))
            .collect();
        let h = convex_hull(&flat);
        assert_eq!(h.dim, Some(2));
        assert_eq!(h.vertices.len(), 4); // (0,0), (6,0), (6,6), (0,7)
        let line: Vec<DVec3> = (0..9).map(|i| DVec3::splat(i as f64)).collect();
        let h = convex_hull(&line);
        assert_eq!(h.dim, Some(1));
        assert_eq!(h.vertices, vec![0, 8]);
        let one = vec![DVec3::ONE; 5];
        assert_eq!(convex_hull(&one).dim, Some(0));
        assert_eq!(convex_hull(&[]).dim, None);
    }
}
