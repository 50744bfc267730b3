//! Vertices and volume of a k-DOP: the intersection of its K halfspaces (§3.3.4 footnote 4
//! and §4.1).
//!
//! Every vertex of the polytope is the meeting point of three bounding planes with
//! independent normals. With the paper's integer directions the 3×3 systems have small
//! integer inverses, so each candidate vertex is `adj(M) b / det(M)` computed in `f64`
//! (error a few ulps); a candidate is kept if it satisfies every halfspace up to a tolerance
//! far above that error. Wrongly kept candidates lie within the tolerance of the polytope,
//! so the vertex set may only err outward — what tumbling (§4.1) needs. The volume is that
//! of the vertices' exact convex hull.

use super::{Dop, axes};
use crate::exact::EPS;
use crate::hull::convex_hull;
use glam::DVec3;
use smallvec::SmallVec;
use std::sync::OnceLock;

/// Three independent directions and the integer adjugate of the matrix whose rows they are.
#[derive(Clone, Copy, Debug)]
struct Triple {
    axes: [usize; 3],
    adj: [[i32; 3]; 3],
    det: i32,
}

fn triples(k: usize) -> &'static [Triple] {
    static T: [OnceLock<Vec<Triple>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let slot = match k {
        6 => 0,
        14 => 1,
        18 => 2,
        _ => 3,
    };
    T[slot].get_or_init(|| {
        let a = axes(k);
        let n = a.len();
        let mut out = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                for l in j + 1..n {
                    let m = [a[i], a[j], a[l]].map(|r| r.map(i32::from));
                    let cof = |r: usize, c: usize| {
                        let rs: Vec<usize> = (0..3).filter(|&x| x != r).collect();
                        let cs: Vec<usize> = (0..3).filter(|&x| x != c).collect();
                        let d = m[rs[0]][cs[0]] * m[rs[1]][cs[1]] - m[rs[0]][cs[1]] * m[rs[1]][cs[0]];
                        if (r + c) % 2 == 0 { d } else { -d }
                    };
                    let det = (0..3).map(|c| m[0][c] * cof(0, c)).sum::<i32>();
                    if det == 0 {
                        continue;
                    }
                    // adj[r][c] = cofactor(c, r)
                    let mut adj = [[0; 3]; 3];
                    for (r, row) in adj.iter_mut().enumerate() {
                        for (c, v) in row.iter_mut().enumerate() {
                            *v = cof(c, r);
                        }
                    }
                    out.push(Triple {
                        axes: [i, j, l],
                        adj,
                        det,
                    });
                }
            }
        }
        out
    })
}

impl<const K: usize> Dop<K> {
    /// The vertices of the polytope (its boundary representation's corner points), each
    /// appearing once. Empty for an empty k-DOP. For a flat or degenerate k-DOP these are
    /// the corners of the polygon, segment or point it is.
    ///
    /// Coordinates carry `f64` rounding of a few ulps; the set errs outward only.
    #[must_use]
    pub fn vertices(&self) -> Vec<DVec3> {
        self.vertices_small().into_vec()
    }

    pub(crate) fn vertices_small(&self) -> SmallVec<[DVec3; 64]> {
        let mut out: SmallVec<[DVec3; 64]> = SmallVec::new();
        if self.is_empty() || self.b.iter().any(|v| !v.is_finite()) {
            return out;
        }
        let a = axes(K);
        let n = K / 2;
        let scale = self.magnitude().max(f64::MIN_POSITIVE);
        // Candidate error: adj entries <= 2 in magnitude, three terms, one division; far
        // below this tolerance. Feasibility is checked with it, duplicates merged within it.
        let tol = 1024.0 * EPS * scale;
        for t in triples(K) {
            for choice in 0..8u32 {
                let bsel = |q: usize| {
                    let ax = t.axes[q];
                    let hi = choice & (1 << q) != 0;
                    f64::from(if hi { self.b[n + ax] } else { self.b[ax] })
                };
                let rhs = [bsel(0), bsel(1), bsel(2)];
                let det = f64::from(t.det);
                let v = DVec3::new(
                    (f64::from(t.adj[0][0]) * rhs[0] + f64::from(t.adj[0][1]) * rhs[1] + f64::from(t.adj[0][2]) * rhs[2]) / det,
                    (f64::from(t.adj[1][0]) * rhs[0] + f64::from(t.adj[1][1]) * rhs[1] + f64::from(t.adj[1][2]) * rhs[2]) / det,
                    (f64::from(t.adj[2][0]) * rhs[0] + f64::from(t.adj[2][1]) * rhs[1] + f64::from(t.adj[2][2]) * rhs[2]) / det,
                );
                let feasible = a.iter().enumerate().all(|(i, d)| {
                    let p = f64::from(d[0]) * v.x + f64::from(d[1]) * v.y + f64::from(d[2]) * v.z;
                    p >= f64::from(self.b[i]) - 3.0 * tol && p <= f64::from(self.b[n + i]) + 3.0 * tol
                });
                if feasible && !out.iter().any(|w| (*w - v).abs().max_element() <= tol) {
                    out.push(v);
                }
            }
        }
        out
    }

    /// The volume of the polytope (zero if it is flat or empty).
    #[must_use]
    pub fn volume(&self) -> f64 {
        let v = self.vertices_small();
        if v.len() < 4 {
            return 0.0;
        }
        convex_hull(&v).volume(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(s: &mut u64) -> f64 {
        *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*s >> 11) as f64) / ((1u64 << 53) as f64)
    }

    #[test]
    fn maximal_vertex_counts() {
        // The paper (§5): at most 8, 24, 32 and 48 vertices for k = 6, 14, 18, 26. A
        // sphere's k-DOP reaches them.
        fn count<const K: usize>() -> usize {
            let pts: Vec<DVec3> = (0..2000)
                .map(|i| {
                    let t = i as f64 * 2.399963;
                    let z = 1.0 - 2.0 * (i as f64 + 0.5) / 2000.0;
                    let r = (1.0 - z * z).sqrt();
                    DVec3::new(r * t.cos(), r * t.sin(), z)
                })
                .collect();
            Dop::<K>::from_points(&pts).vertices().len()
        }
        assert_eq!(count::<6>(), 8);
        assert_eq!(count::<14>(), 24);
        assert_eq!(count::<18>(), 32);
        assert_eq!(count::<26>(), 48);
    }

    #[test]
    fn closed_form_volumes() {
        // A box: every k gives the box (diagonal planes only touch corners/edges).
        let b = [DVec3::new(-1.0, -2.0, -3.0), DVec3::new(2.0, 2.0, 1.0)];
        let expect = 3.0 * 4.0 * 4.0;
        for v in [
            Dop::<6>::from_points(&b).volume(),
            Dop::<6>::from_points(&[b[0], b[1], DVec3::new(-1.0, 2.0, 1.0)]).volume(),
        ] {
            assert!((v - expect).abs() < 1e-9 * expect, "{v}");
        }
        // The unit cube's 14-DOP with each corner cut by the plane through the three
        // neighbouring edge midpoints loses 8 tetrahedra of volume (1/2)^3 / 6.
        let mut d = Dop::<14>::from_points(&[DVec3::ZERO, DVec3::ONE]);
        // x+y+z in [0.5, 2.5]; x-y+z in [-0.5, 1.5]; x+y-z in [-0.5, 1.5]; x-y-z in [-1.5, 0.5].
        let cut = [(3, 0.5, 2.5), (4, -0.5, 1.5), (5, -0.5, 1.5), (6, -1.5, 0.5)];
        for (i, lo, hi) in cut {
            d.b[i] = lo;
            d.b[7 + i] = hi;
        }
        let v = d.volume();
        let expect = 1.0 - 8.0 * (0.125 / 6.0);
        assert!((v - expect).abs() < 1e-9, "{v} vs {expect}");
        // Cutting at the edge midpoints leaves the cuboctahedron: 12 vertices.
        assert_eq!(d.vertices().len(), 12);
        // A regular tetrahedron's 14-DOP is the tetrahedron: corners of the cube whose
        // coordinates sum to an even number.
        let tet = [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 1.0, 0.0),
            DVec3::new(1.0, 0.0, 1.0),
            DVec3::new(0.0, 1.0, 1.0),
        ];
        let v = Dop::<14>::from_points(&tet).volume();
        assert!((v - 1.0 / 3.0).abs() < 1e-6, "{v}");
    }

    /// Monte Carlo: the fraction of random points of the bounding box that satisfy every
    /// halfspace estimates the volume independently of the vertex enumeration.
    #[test]
    fn volume_matches_sampling() {
        fn one<const K: usize>(seed: u64) {
            let mut s = seed;
            let pts: Vec<DVec3> = (0..6)
                .map(|_| DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)))
                .collect();
            let d = Dop::<K>::from_points(&pts);
            let lo = DVec3::new(d.lo(0).into(), d.lo(1).into(), d.lo(2).into());
            let ext = d.box_extent();
            let n = 200_000;
            let mut inside = 0;
            for _ in 0..n {
                let p = lo + ext * DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s));
                inside += d.contains_point(p) as u32;
            }
            let box_v = ext.x * ext.y * ext.z;
            let est = box_v * f64::from(inside) / f64::from(n);
            let sigma = box_v * (0.25 / f64::from(n)).sqrt();
            let v = d.volume();
            assert!((v - est).abs() < 5.0 * sigma, "k={K}: {v} vs sampled {est} ± {sigma}");
            // Every vertex is on the polytope: inside up to rounding.
            for w in d.vertices() {
                assert!(d.enlarged(1e-9).contains_point(w));
            }
        }
        for seed in 1..6 {
            one::<6>(seed);
            one::<14>(seed);
            one::<18>(seed);
            one::<26>(seed);
        }
    }

    #[test]
    fn flat_and_empty() {
        let tri = [DVec3::ZERO, DVec3::X, DVec3::Y];
        let d = Dop::<18>::from_triangle(&tri);
        assert!(d.volume() < 1e-12);
        assert!(d.vertices().len() >= 3);
        assert!(Dop::<18>::EMPTY.vertices().is_empty());
        assert_eq!(Dop::<18>::EMPTY.volume(), 0.0);
    }
}
