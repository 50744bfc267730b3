//! Vertices and volume of a k-DOP: the intersection of its K halfspaces (§3.3.4 footnote 4
//! and §4.1).
//!
//! Vertices: every vertex of the polytope is the meeting point of three bounding planes with
//! independent normals. With the paper's integer directions the 3×3 systems have small
//! integer inverses, so each candidate vertex is `adj(M) b / det(M)` computed in `f64`
//! (error a few ulps); a candidate is kept if it satisfies every halfspace up to a tolerance
//! far above that error. Wrongly kept candidates lie within the tolerance of the polytope,
//! so the vertex set may only err outward — what tumbling (§4.1) needs. The eight
//! candidates of a triple (each plane at its lower or upper bound) are tested together, a
//! candidate's projection on each direction taken as a fixed combination of the three
//! bounds, in AVX where the CPU has it: no branch per candidate, and only kept ones made.
//!
//! Volume: the bounding box is clipped by each diagonal halfspace in turn, keeping the face
//! polygons; the volume sums area times height over the faces. The two constructions check
//! each other in the tests.

use super::{Dop, axes};
use crate::exact::EPS;
use glam::DVec3;
use smallvec::SmallVec;
use std::sync::OnceLock;

/// Three independent directions and the inverse of the matrix whose rows they are
/// (`adj(M) / det(M)`: small rationals).
#[derive(Clone, Copy, Debug)]
struct Triple {
    axes: [usize; 3],
    inv: [[f64; 3]; 3],
    /// Row `i`: the projection onto direction `i` of the point where the three planes meet,
    /// as a combination of their three bounds (`d_i . inv`), so that a candidate is tested
    /// without being made.
    proj: [[f64; 3]; 13],
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
                        let (r0, r1) = ((r + 1) % 3, (r + 2) % 3);
                        let (c0, c1) = ((c + 1) % 3, (c + 2) % 3);
                        // Cyclic minors already carry the cofactor sign.
                        m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]
                    };
                    let det = (0..3).map(|c| m[0][c] * cof(0, c)).sum::<i32>();
                    if det == 0 {
                        continue;
                    }
                    let mut inv = [[0.0; 3]; 3];
                    for (r, row) in inv.iter_mut().enumerate() {
                        for (c, v) in row.iter_mut().enumerate() {
                            *v = f64::from(cof(c, r)) / f64::from(det);
                        }
                    }
                    let proj = std::array::from_fn(|d| {
                        std::array::from_fn(|q| {
                            a.get(d).map_or(0.0, |row| {
                                (0..3).map(|c| f64::from(row[c]) * inv[c][q]).sum()
                            })
                        })
                    });
                    out.push(Triple {
                        axes: [i, j, l],
                        inv,
                        proj,
                    });
                }
            }
        }
        out
    })
}

/// Which of the eight candidates of triple `t` lie within every slab `lo..hi` (the first
/// `n`): bit `c` for the planes at the bounds `r[q][c >> q & 1]`. A candidate's projection
/// onto direction `i` is `(a + b) + c`, the three planes' terms `t.proj[i][q] r_q` summed
/// in that order, as [`inside_avx`] sums them, so the two agree bit for bit.
#[inline(always)]
fn inside_portable(t: &Triple, r: &[[f64; 2]; 3], lo: &[f64; 13], hi: &[f64; 13], n: usize) -> u8 {
    let mut inside = 0xffu8;
    for i in 0..n {
        let p = &t.proj[i];
        let term = |q: usize, s: usize| p[q] * r[q][s];
        for c in 0..8 {
            let v = (term(0, c & 1) + term(1, c >> 1 & 1)) + term(2, c >> 2);
            if v < lo[i] || v > hi[i] {
                inside &= !(1 << c);
            }
        }
    }
    inside
}

/// [`inside_portable`] with the eight candidates in two AVX vectors (the third plane at
/// its lower bound in the first, at its upper in the second): no branch per candidate.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn inside_avx(
    t: &Triple,
    r: &[[f64; 2]; 3],
    lo: &[f64; 13],
    hi: &[f64; 13],
    n: usize,
) -> u8 {
    use std::arch::x86_64::*;
    let all = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    let (mut in0, mut in1) = (all, all);
    for i in 0..n {
        let p = &t.proj[i];
        let (a0, a1) = (p[0] * r[0][0], p[0] * r[0][1]);
        let (b0, b1) = (p[1] * r[1][0], p[1] * r[1][1]);
        let (c0, c1) = (p[2] * r[2][0], p[2] * r[2][1]);
        // Lanes 0..4: choices c with bit 0 from `a`, bit 1 from `b`.
        let ab = _mm256_add_pd(_mm256_set_pd(a1, a0, a1, a0), _mm256_set_pd(b1, b1, b0, b0));
        let (v0, v1) = (
            _mm256_add_pd(ab, _mm256_set1_pd(c0)),
            _mm256_add_pd(ab, _mm256_set1_pd(c1)),
        );
        let (l, h) = (_mm256_set1_pd(lo[i]), _mm256_set1_pd(hi[i]));
        let out0 = _mm256_or_pd(
            _mm256_cmp_pd::<_CMP_LT_OQ>(v0, l),
            _mm256_cmp_pd::<_CMP_GT_OQ>(v0, h),
        );
        let out1 = _mm256_or_pd(
            _mm256_cmp_pd::<_CMP_LT_OQ>(v1, l),
            _mm256_cmp_pd::<_CMP_GT_OQ>(v1, h),
        );
        in0 = _mm256_andnot_pd(out0, in0);
        in1 = _mm256_andnot_pd(out1, in1);
    }
    (_mm256_movemask_pd(in0) | _mm256_movemask_pd(in1) << 4) as u8
}

/// [`inside_avx`] where the CPU has AVX, else [`inside_portable`].
#[inline(always)]
fn inside(t: &Triple, r: &[[f64; 2]; 3], lo: &[f64; 13], hi: &[f64; 13], n: usize) -> u8 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, checked just above.
        return unsafe { inside_avx(t, r, lo, hi, n) };
    }
    inside_portable(t, r, lo, hi, n)
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

    /// Tolerance for feasibility and merging: far above the few-ulp error of a candidate.
    fn tolerance(&self) -> f64 {
        1024.0 * EPS * self.magnitude().max(f64::MIN_POSITIVE)
    }

    /// The slabs' lower and upper bounds widened by three tolerances `tol` (zeros past
    /// `K / 2`): what a candidate corner must lie within.
    fn widened_slabs(&self, tol: f64) -> ([f64; 13], [f64; 13]) {
        let n = K / 2;
        let bound = |i: usize, by: f64| f64::from(self.b[i]) + by;
        (
            std::array::from_fn(|i| if i < n { bound(i, -3.0 * tol) } else { 0.0 }),
            std::array::from_fn(|i| if i < n { bound(n + i, 3.0 * tol) } else { 0.0 }),
        )
    }

    /// Each plane of triple `t` at its lower and its upper bound: its eight candidates.
    fn triple_bounds(&self, t: &Triple) -> [[f64; 2]; 3] {
        let n = K / 2;
        t.axes
            .map(|ax| [f64::from(self.b[ax]), f64::from(self.b[n + ax])])
    }

    /// Every triple of planes with independent normals meets in a candidate vertex; those
    /// satisfying all halfspaces (up to the tolerance) are the vertices.
    pub(crate) fn vertices_small(&self) -> SmallVec<[DVec3; 64]> {
        self.vertices_until(usize::MAX)
    }

    /// [`Dop::vertices_small`], stopped once `enough` vertices are found: all of them if
    /// there are fewer, else the first `enough` in the same order. For a choice that only
    /// asks whether the k-DOP has at least so many corners.
    pub(crate) fn vertices_until(&self, enough: usize) -> SmallVec<[DVec3; 64]> {
        let mut out: SmallVec<[DVec3; 64]> = SmallVec::new();
        if enough == 0 || self.is_empty() || self.b.iter().any(|v| !v.is_finite()) {
            return out;
        }
        let tol = self.tolerance();
        let (lo, hi) = self.widened_slabs(tol);
        for t in triples(K) {
            let r = self.triple_bounds(t);
            let mut inside = inside(t, &r, &lo, &hi, K / 2);
            while inside != 0 {
                let choice = inside.trailing_zeros() as usize;
                inside &= inside - 1;
                let r = [0, 1, 2].map(|q| r[q][choice >> q & 1]);
                let v = DVec3::new(
                    t.inv[0][0] * r[0] + t.inv[0][1] * r[1] + t.inv[0][2] * r[2],
                    t.inv[1][0] * r[0] + t.inv[1][1] * r[1] + t.inv[1][2] * r[2],
                    t.inv[2][0] * r[0] + t.inv[2][1] * r[1] + t.inv[2][2] * r[2],
                );
                if !out.iter().any(|w| (*w - v).abs().max_element() <= tol) {
                    out.push(v);
                    if out.len() >= enough {
                        return out;
                    }
                }
            }
        }
        out
    }

    /// The faces of the polytope: the bounding box clipped by each diagonal halfspace in
    /// turn (Sutherland–Hodgman on every face polygon, the cut points forming the new
    /// face). A point within the tolerance of a plane counts as inside, so errors are
    /// outward only.
    fn faces(&self) -> Faces {
        let mut f = Faces::default();
        if self.is_empty() || self.b.iter().any(|v| !v.is_finite()) {
            return f;
        }
        let n = K / 2;
        let tol = self.tolerance();
        let (lo, hi) = (
            DVec3::new(self.b[0].into(), self.b[1].into(), self.b[2].into()),
            DVec3::new(self.b[n].into(), self.b[n + 1].into(), self.b[n + 2].into()),
        );
        let c = |x: bool, y: bool, z: bool| {
            DVec3::new(
                if x { hi.x } else { lo.x },
                if y { hi.y } else { lo.y },
                if z { hi.z } else { lo.z },
            )
        };
        // Box faces, counterclockwise seen from outside; plane ids as in `b`.
        let quads: [(usize, [DVec3; 4]); 6] = [
            (
                0,
                [
                    c(false, false, false),
                    c(false, false, true),
                    c(false, true, true),
                    c(false, true, false),
                ],
            ),
            (
                n,
                [
                    c(true, false, false),
                    c(true, true, false),
                    c(true, true, true),
                    c(true, false, true),
                ],
            ),
            (
                1,
                [
                    c(false, false, false),
                    c(true, false, false),
                    c(true, false, true),
                    c(false, false, true),
                ],
            ),
            (
                n + 1,
                [
                    c(false, true, false),
                    c(false, true, true),
                    c(true, true, true),
                    c(true, true, false),
                ],
            ),
            (
                2,
                [
                    c(false, false, false),
                    c(false, true, false),
                    c(true, true, false),
                    c(true, false, false),
                ],
            ),
            (
                n + 2,
                [
                    c(false, false, true),
                    c(true, false, true),
                    c(true, true, true),
                    c(false, true, true),
                ],
            ),
        ];
        for (plane, q) in quads {
            f.push_face(plane, &q);
        }
        let mut next = Faces::default();
        for (i, a) in axes(K).iter().enumerate().skip(3) {
            let d = DVec3::new(a[0].into(), a[1].into(), a[2].into());
            for (nrm, b, plane) in [
                (d, f64::from(self.b[n + i]), n + i),
                (-d, -f64::from(self.b[i]), i),
            ] {
                if f.clip_into(nrm, b, plane, tol, &mut next) {
                    std::mem::swap(&mut f, &mut next);
                }
            }
        }
        f
    }

    /// The vertices found by clipping: an independent reference for the triple enumeration.
    #[cfg(test)]
    pub(crate) fn vertices_by_clipping(&self) -> SmallVec<[DVec3; 64]> {
        let tol = self.tolerance();
        let mut out: SmallVec<[DVec3; 64]> = SmallVec::new();
        for &p in &self.faces().pts {
            if !out.iter().any(|w| (*w - p).abs().max_element() <= tol) {
                out.push(p);
            }
        }
        out
    }

    /// The volume of the polytope (zero if it is flat or empty): over its faces, area
    /// times distance to an interior point, over three.
    #[must_use]
    pub fn volume(&self) -> f64 {
        let f = self.faces();
        if f.pts.is_empty() {
            return 0.0;
        }
        let a = axes(K);
        let n = K / 2;
        let center = f.pts.iter().fold(DVec3::ZERO, |s, p| s + *p) / f.pts.len() as f64;
        let mut total = 0.0;
        for &(plane, start, len) in &f.faces {
            let (plane, start, len) = (plane as usize, start as usize, len as usize);
            let (i, sign) = if plane < n {
                (plane, -1.0)
            } else {
                (plane - n, 1.0)
            };
            let d = DVec3::new(a[i][0].into(), a[i][1].into(), a[i][2].into());
            let l = d.length();
            let normal = d * sign / l;
            let h = f64::from(self.b[plane]) * sign / l - normal.dot(center);
            let pts = &f.pts[start..start + len];
            let o = pts[0];
            let mut area = 0.0;
            for k in 1..len.saturating_sub(1) {
                area += (pts[k] - o).cross(pts[k + 1] - o).dot(normal);
            }
            total += 0.5 * area.abs() * h.max(0.0) / 3.0;
        }
        total
    }
}

/// Face polygons of a convex polytope in one flat buffer: `(bound index in Dop::b, start,
/// length)` per face, vertices in order.
#[derive(Default)]
struct Faces {
    faces: SmallVec<[(u16, u16, u16); 32]>,
    pts: SmallVec<[DVec3; 160]>,
}

impl Faces {
    fn push_face(&mut self, plane: usize, pts: &[DVec3]) {
        self.faces
            .push((plane as u16, self.pts.len() as u16, pts.len() as u16));
        self.pts.extend_from_slice(pts);
    }

    /// Clips to `nrm . x <= b` into `out`; returns false (and leaves `out` alone) if no
    /// point is outside.
    fn clip_into(&self, nrm: DVec3, b: f64, plane: usize, tol: f64, out: &mut Faces) -> bool {
        let t = tol * nrm.length();
        let mut dist: SmallVec<[f64; 160]> = SmallVec::with_capacity(self.pts.len());
        let mut any_out = false;
        for p in &self.pts {
            let d = nrm.dot(*p) - b;
            any_out |= d > t;
            dist.push(d);
        }
        if !any_out {
            return false;
        }
        out.faces.clear();
        out.pts.clear();
        let mut cap: SmallVec<[DVec3; 24]> = SmallVec::new();
        for &(fp, start, len) in &self.faces {
            let (start, len) = (start as usize, len as usize);
            let first = out.pts.len();
            for k in 0..len {
                let kn = if k + 1 == len { 0 } else { k + 1 };
                let (p, q) = (self.pts[start + k], self.pts[start + kn]);
                let (dp, dq) = (dist[start + k], dist[start + kn]);
                if dp <= t {
                    out.pts.push(p);
                    if dp >= -t {
                        cap.push(p);
                    }
                }
                if (dp < -t && dq > t) || (dp > t && dq < -t) {
                    let x = p + (q - p) * (dp / (dp - dq));
                    out.pts.push(x);
                    cap.push(x);
                }
            }
            let m = out.pts.len() - first;
            if m >= 3 {
                out.faces.push((fp, first as u16, m as u16));
            } else {
                out.pts.truncate(first);
            }
        }
        // The cut points, deduplicated and ordered by angle around their centre, form the
        // new face.
        let mut uniq: SmallVec<[(f64, DVec3); 24]> = SmallVec::new();
        for p in cap {
            if !uniq
                .iter()
                .any(|(_, w)| (*w - p).abs().max_element() <= tol)
            {
                uniq.push((0.0, p));
            }
        }
        if uniq.len() >= 3 {
            let c = uniq.iter().fold(DVec3::ZERO, |s, (_, p)| s + *p) / uniq.len() as f64;
            let u = nrm.any_orthonormal_vector();
            let w = nrm.normalize().cross(u);
            for e in uniq.iter_mut() {
                let r = e.1 - c;
                e.0 = pseudo_angle(r.dot(u), r.dot(w));
            }
            uniq.sort_by(|x, y| x.0.total_cmp(&y.0));
            out.faces
                .push((plane as u16, out.pts.len() as u16, uniq.len() as u16));
            out.pts.extend(uniq.into_iter().map(|(_, p)| p));
        }
        true
    }
}

/// A monotone stand-in for the angle of `(x, y)`, in `[0, 4)`, without trigonometry.
#[inline]
fn pseudo_angle(x: f64, y: f64) -> f64 {
    let s = x.abs() + y.abs();
    if s == 0.0 {
        return 0.0;
    }
    let p = y / s;
    if x < 0.0 {
        2.0 - p
    } else if y < 0.0 {
        4.0 + p
    } else {
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::lcg;

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
        let cut = [
            (3, 0.5, 2.5),
            (4, -0.5, 1.5),
            (5, -0.5, 1.5),
            (6, -1.5, 0.5),
        ];
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
            assert!(
                (v - est).abs() < 5.0 * sigma,
                "k={K}: {v} vs sampled {est} ± {sigma}"
            );
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

    /// The k-DOP of one to nine random points in a cube of side 10, flat (all at z = 2)
    /// when `flat`.
    fn random_dop<const K: usize>(s: &mut u64, flat: bool) -> Dop<K> {
        let count = 1 + (lcg(s) * 9.0) as usize;
        let pts: Vec<DVec3> = (0..count)
            .map(|_| {
                let p = DVec3::new(lcg(s), lcg(s), lcg(s)) * 10.0;
                if flat { DVec3::new(p.x, p.y, 2.0) } else { p }
            })
            .collect();
        Dop::<K>::from_points(&pts)
    }

    /// The candidates kept by the projections through `proj` are those whose meeting point,
    /// made and projected direction by direction, lies within every slab (but where it lies
    /// within rounding of a bound), and the AVX form keeps the same ones bit for bit.
    #[test]
    fn candidates_kept_are_those_within_every_slab() {
        fn one<const K: usize>(seed: u64) {
            let mut s = seed;
            let n = K / 2;
            for round in 0..100 {
                let d = random_dop::<K>(&mut s, round % 4 == 0);
                let (lo, hi) = d.widened_slabs(d.tolerance());
                for t in triples(K) {
                    let r = d.triple_bounds(t);
                    let kept = inside_portable(t, &r, &lo, &hi, n);
                    #[cfg(target_arch = "x86_64")]
                    if std::arch::is_x86_feature_detected!("avx") {
                        // SAFETY: the CPU has AVX, checked just above.
                        let wide = unsafe { inside_avx(t, &r, &lo, &hi, n) };
                        assert_eq!(kept, wide, "k={K} triple {:?}", t.axes);
                    }
                    for c in 0..8 {
                        let r = [0, 1, 2].map(|q| r[q][c >> q & 1]);
                        let v = DVec3::from_array(std::array::from_fn(|row| {
                            (0..3).map(|q| t.inv[row][q] * r[q]).sum::<f64>()
                        }));
                        let p: Vec<f64> = axes(K)
                            .iter()
                            .map(|a| DVec3::from_array(a.map(f64::from)).dot(v))
                            .collect();
                        let within = (0..n).all(|i| p[i] >= lo[i] && p[i] <= hi[i]);
                        let near = (0..n).any(|i| {
                            (p[i] - lo[i]).abs() <= 1e-12 * (1.0 + p[i].abs())
                                || (p[i] - hi[i]).abs() <= 1e-12 * (1.0 + p[i].abs())
                        });
                        assert!(
                            within == (kept >> c & 1 == 1) || near,
                            "k={K} triple {:?} choice {c}: kept {} within {within}",
                            t.axes,
                            kept >> c & 1
                        );
                    }
                }
            }
        }
        one::<6>(21);
        one::<14>(22);
        one::<18>(23);
        one::<26>(24);
    }

    /// A count stopped at `enough` gives the first `enough` vertices of the full list in
    /// its order, or the whole list when it is shorter (the build's choice between a
    /// node's own corners and its k-DOP's rests on it).
    #[test]
    fn vertices_until_is_a_prefix_of_the_full_list() {
        fn one<const K: usize>(seed: u64) {
            let mut s = seed;
            for round in 0..200 {
                let d = random_dop::<K>(&mut s, round % 4 == 0);
                let all = d.vertices_small();
                for enough in [0, 1, 3, 6, all.len(), all.len() + 1, usize::MAX] {
                    let some = d.vertices_until(enough);
                    let want = &all[..all.len().min(enough)];
                    assert_eq!(&some[..], want, "k={K} enough={enough}");
                }
            }
        }
        one::<6>(15);
        one::<14>(16);
        one::<18>(17);
        one::<26>(18);
    }

    /// Clipping against the enumeration of plane triples: the same vertex sets.
    #[test]
    fn clipping_matches_triple_enumeration() {
        fn one<const K: usize>(seed: u64) {
            let mut s = seed;
            for round in 0..300 {
                let d = random_dop::<K>(&mut s, round % 5 == 0);
                let fast = d.vertices_by_clipping();
                let slow = d.vertices_small();
                let tol = 1e-9 * 10.0;
                for v in &slow {
                    assert!(
                        fast.iter().any(|w| (*w - *v).length() < tol),
                        "k={K}: clipping lost {v}"
                    );
                }
                for v in &fast {
                    assert!(
                        slow.iter().any(|w| (*w - *v).length() < tol),
                        "k={K}: clipping invented {v}"
                    );
                }
            }
        }
        one::<6>(5);
        one::<14>(6);
        one::<18>(7);
        one::<26>(8);
    }

    /// The face-based volume against the convex-hull volume of the same vertices.
    #[test]
    fn face_volume_matches_hull_volume() {
        fn one<const K: usize>(seed: u64) {
            let mut s = seed;
            for _ in 0..200 {
                let pts: Vec<DVec3> = (0..(3 + (lcg(&mut s) * 8.0) as usize))
                    .map(|_| DVec3::new(lcg(&mut s), lcg(&mut s) * 3.0, lcg(&mut s)) * 100.0)
                    .collect();
                let d = Dop::<K>::from_points(&pts);
                let v = d.vertices();
                let hull = crate::hull::convex_hull(&v).volume(&v);
                let faces = d.volume();
                assert!(
                    (hull - faces).abs() <= 1e-9 * hull.max(1.0),
                    "k={K}: {faces} vs hull {hull}"
                );
            }
        }
        one::<6>(1);
        one::<14>(2);
        one::<18>(3);
        one::<26>(4);
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
