//! Exact triangle–triangle intersection (Klosowski et al. 1998, §4.4; the paper used Held's
//! routines, we use orientation predicates).
//!
//! P. Guigue and O. Devillers, "Fast and Robust Triangle-Triangle Overlap Test Using
//! Orientation Predicates", Journal of Graphics Tools 8(1), 2003: every decision of the
//! general-position algorithm is the sign of a 3×3 determinant of input coordinates, so with
//! exact predicates ([`crate::exact`]) the answer is exact. Coplanar pairs are decided in a
//! coordinate plane onto which the common plane projects one-to-one, and degenerate
//! triangles (collinear corners: segments and points) by their own exact cases.
//!
//! # Contract
//! Triangles are *closed* point sets: triangles that touch (a shared vertex or edge, a vertex
//! on the other's face, coplanar overlap) intersect. The answer equals what exact arithmetic
//! gives for the `f64` coordinates passed in. These are surfaces, not volumes: a triangle
//! strictly inside a closed mesh touches nothing (the paper's footnote 1).

mod filtered;
mod geometry;
mod lanes;
mod node;

pub use geometry::{ContactShape, contact_shape};

pub(crate) use filtered::BATCH;
pub(crate) use node::{Screen, triangle_meets_dop};

use crate::exact::{Plane, max3, min3, orient2d, orient3d, project};
use glam::{DVec2, DVec3};

/// A triangle as its three corners.
pub type Triangle = [DVec3; 3];

/// Whether two closed triangles intersect, exactly.
///
/// Degenerate triangles (zero area: repeated or collinear corners) are treated as the
/// segment or point they are.
///
/// # Example
/// ```
/// use glam::DVec3;
/// let a = [DVec3::ZERO, DVec3::X, DVec3::Y];
/// // Touching a's corner (1, 0, 0) exactly counts as intersecting.
/// let b = [DVec3::new(1.0, 0.0, 0.0), DVec3::new(2.0, 0.0, 1.0), DVec3::new(2.0, 1.0, -1.0)];
/// assert!(kdop::triangles_intersect(&a, &b));
/// let c = [DVec3::new(1.0, 0.0, 1e-12), DVec3::new(2.0, 0.0, 1.0), DVec3::new(2.0, 1.0, 1.0)];
/// assert!(!kdop::triangles_intersect(&a, &c));
/// ```
///
/// # Performance
/// On pairs whose bounding boxes overlap, one unpredictable branch per test, so the time
/// depends on how much of the working set the branch predictor can learn (figures:
/// `docs/benchmarks.md`, "Cp"). The box test is a small share of it; pairs already
/// screened by their boxes can skip it ([`triangles_intersect_screened`]), and many pairs are faster as a batch
/// ([`intersecting_pairs`]). Exact fallbacks run only when the floating-point filter
/// cannot certify a sign.
#[must_use]
pub fn triangles_intersect(t1: &Triangle, t2: &Triangle) -> bool {
    boxes_overlap(t1, t2) && intersect_filtered(t1, t2)
}

/// [`triangles_intersect`] without its bounding-box rejection, for pairs a caller has
/// already screened (their boxes or k-DOPs overlap, as in a broad phase of its own): the
/// same exact answer on every pair, screened or not.
///
/// On pairs whose boxes overlap the box test never rejects, and computing both boxes costs
/// about an eighth of the test (37 of 310 instructions, 9–18 % of the time measured in
/// `docs/benchmarks.md`); kdop's own queries test cached boxes and then call this form.
/// On pairs whose boxes mostly miss, [`triangles_intersect`] is faster.
///
/// # Example
/// ```
/// use glam::DVec3;
/// let a = [DVec3::ZERO, DVec3::X, DVec3::Y];
/// let across = [DVec3::new(0.2, 0.2, -1.0), DVec3::new(0.2, 0.2, 1.0), DVec3::new(0.3, 0.3, 1.0)];
/// let far = across.map(|p| p + DVec3::splat(5.0));
/// assert!(kdop::triangles_intersect_screened(&a, &across));
/// assert!(!kdop::triangles_intersect_screened(&a, &far)); // unscreened pairs answer too
/// ```
#[must_use]
pub fn triangles_intersect_screened(t1: &Triangle, t2: &Triangle) -> bool {
    intersect_filtered(t1, t2)
}

/// The exact test, for any pair (queries call it on pairs whose cached boxes overlap):
/// the two-lane filtered common case
/// ([`filtered`]: AVX's encoding or SSE2 on x86_64, scalar elsewhere), and the full case
/// analysis with exact fallbacks when a sign it needs is not certified.
///
/// Inlined where it is called, this is the CPU check and a jump: each form is one
/// function with the fallback inside, so a call sets up one stack frame, not two.
#[inline]
pub(crate) fn intersect_filtered(t1: &Triangle, t2: &Triangle) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX, checked just above.
            unsafe { filtered_avx(t1, t2) }
        } else {
            filtered_sse2(t1, t2)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    decided(filtered::intersect::<lanes::Scalar<2>>(t1, t2), t1, t2)
}

/// The filter's answer, or the full test's when it deferred.
#[inline(always)]
fn decided(fast: Option<bool>, t1: &Triangle, t2: &Triangle) -> bool {
    match fast {
        Some(hit) => hit,
        None => intersect_deferred(t1, t2),
    }
}

/// The full test for a pair the filter deferred (touching, coplanar, degenerate or
/// non-finite), behind the box test so that pairs with a NaN or infinite corner answer as
/// [`triangles_intersect`] does whether or not the caller screened them. Rare: the box
/// test costs nothing on the common path.
#[cold]
#[inline(never)]
pub(crate) fn intersect_deferred(t1: &Triangle, t2: &Triangle) -> bool {
    boxes_overlap(t1, t2) && intersect_boxed(t1, t2)
}

/// The SSE2 kernel compiled with AVX's three-operand encoding: the same operations and
/// results, without the register copies that two-operand SSE2 needs.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn filtered_avx(t1: &Triangle, t2: &Triangle) -> bool {
    decided(filtered::intersect::<lanes::Sse2>(t1, t2), t1, t2)
}

/// The SSE2 kernel with SSE2's encoding, for CPUs without AVX.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn filtered_sse2(t1: &Triangle, t2: &Triangle) -> bool {
    decided(filtered::intersect::<lanes::Sse2>(t1, t2), t1, t2)
}

/// Which of many triangle pairs intersect, exactly: appends to `hits` the index of every
/// pair whose closed triangles intersect, in increasing order.
///
/// The answers are those of [`triangles_intersect`] pair by pair, at a lower cost per pair
/// on large sets: the pairs are decided 64 at a time, without a branch on each pair's
/// outcome, and with AVX two pairs per instruction where the CPU has it (SSE2 or scalars
/// otherwise, with the same results bit for bit). Queries decide a flying leaf's triangles
/// against an environment triangle this way.
///
/// # Example
/// ```
/// use glam::DVec3;
/// let a = [DVec3::ZERO, DVec3::X, DVec3::Y];
/// let across = [DVec3::new(0.2, 0.2, -1.0), DVec3::new(0.2, 0.2, 1.0), DVec3::new(0.3, 0.3, 1.0)];
/// let above = [DVec3::new(0.2, 0.2, 1.0), DVec3::new(0.2, 0.3, 1.0), DVec3::new(0.3, 0.2, 1.0)];
/// let mut hits = Vec::new();
/// kdop::intersecting_pairs(&[(a, above), (a, across), (across, a)], &mut hits);
/// assert_eq!(hits, [1, 2]);
/// ```
///
/// # Performance
/// No branch on any pair's outcome, so on pairs whose bounding boxes overlap it beats
/// [`triangles_intersect`] one at a time where that call's branch is unpredictable (FCL's
/// and random pairs), and gains little where a plane rejects nearly every pair
/// (near-parallel ones); without the box test ([`intersecting_pairs_screened`]) it is
/// faster still. Figures: `docs/benchmarks.md`, "Cp".
pub fn intersecting_pairs(pairs: &[(Triangle, Triangle)], hits: &mut Vec<usize>) {
    for (c, chunk) in pairs.chunks(filtered::BATCH).enumerate() {
        // The pairs whose boxes meet, listed without a branch per pair.
        let mut listed = [0u8; filtered::BATCH];
        let mut n = 0;
        for (i, (t1, t2)) in chunk.iter().enumerate() {
            listed[n % filtered::BATCH] = i as u8;
            n += usize::from(boxes_overlap(t1, t2));
        }
        let found = intersect_batch(n, |j| {
            let (t1, t2) = &chunk[usize::from(listed[j])];
            (t1, t2)
        });
        for j in set_bits(found) {
            hits.push(c * filtered::BATCH + usize::from(listed[j]));
        }
    }
}

/// [`intersecting_pairs`] without its bounding-box rejection, for pairs a caller has
/// already screened: appends to `hits` the index of every pair whose closed triangles
/// intersect, in increasing order, the same indices as [`intersecting_pairs`] on any
/// pairs (unscreened ones just cost more).
///
/// # Example
/// ```
/// use glam::DVec3;
/// let a = [DVec3::ZERO, DVec3::X, DVec3::Y];
/// let across = [DVec3::new(0.2, 0.2, -1.0), DVec3::new(0.2, 0.2, 1.0), DVec3::new(0.3, 0.3, 1.0)];
/// let above = [DVec3::new(0.2, 0.2, 1.0), DVec3::new(0.2, 0.3, 1.0), DVec3::new(0.3, 0.2, 1.0)];
/// let mut hits = Vec::new();
/// kdop::intersecting_pairs_screened(&[(a, above), (a, across), (across, a)], &mut hits);
/// assert_eq!(hits, [1, 2]);
/// ```
pub fn intersecting_pairs_screened(pairs: &[(Triangle, Triangle)], hits: &mut Vec<usize>) {
    for (c, chunk) in pairs.chunks(filtered::BATCH).enumerate() {
        let found = intersect_batch(chunk.len(), |j| (&chunk[j].0, &chunk[j].1));
        for j in set_bits(found) {
            hits.push(c * filtered::BATCH + j);
        }
    }
}

/// The positions of the set bits of a batch's answer mask, lowest first.
#[inline]
pub(crate) fn set_bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let bit = (mask != 0).then(|| mask.trailing_zeros() as usize)?;
        mask &= mask - 1;
        Some(bit)
    })
}

/// Exact answers for `n <= 64` pairs (screened by their boxes, or not: the answers are
/// exact either way), `pair(i)` for `i < n`: bit `i` of the result is set iff pair `i`
/// intersects ([`filtered::batch`]: AVX where the CPU has
/// it, else SSE2 on x86_64, scalar elsewhere).
#[inline]
pub(crate) fn intersect_batch<'t>(
    n: usize,
    pair: impl Fn(usize) -> (&'t Triangle, &'t Triangle),
) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX, checked just above.
            unsafe { batch_avx(n, pair) }
        } else {
            filtered::batch::<lanes::Sse2>(n, pair)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    filtered::batch::<lanes::Scalar<2>>(n, pair)
}

/// [`filtered::batch`] in four AVX lanes: two pairs per instruction.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn batch_avx<'t>(n: usize, pair: impl Fn(usize) -> (&'t Triangle, &'t Triangle)) -> u64 {
    filtered::batch::<lanes::Avx4>(n, pair)
}

/// Closed axis-aligned boxes of the two triangles overlap (exact comparisons).
///
/// On x86_64 the x and y intervals go through one SSE2 register and the two z intervals
/// through another (`minpd`/`maxpd`); elsewhere [`boxes_overlap_scalar`]. Tests check both
/// agree.
#[inline]
pub(crate) fn boxes_overlap(t1: &Triangle, t2: &Triangle) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        boxes_overlap_sse2(t1, t2)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        boxes_overlap_scalar(t1, t2)
    }
}

/// Portable form of [`boxes_overlap`].
///
/// Per coordinate, the intervals `[min, max]` of the corners overlap iff no corner of
/// either lies beyond every corner of the other ([`min3`]/[`max3`]: plain comparisons,
/// the inputs are NaN-free).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))] // x86_64: tests only
#[inline]
pub(crate) fn boxes_overlap_scalar(t1: &Triangle, t2: &Triangle) -> bool {
    TriBox::new(t1).overlaps_scalar(t2)
}

/// The x and y intervals of a triangle's box as two SSE2 registers, `[min x, min y]` and
/// `[max x, max y]` (`minpd`/`maxpd`: exact on NaN-free input).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn xy_bounds_sse2(t: &Triangle) -> (std::arch::x86_64::__m128d, std::arch::x86_64::__m128d) {
    use std::arch::x86_64::{_mm_max_pd, _mm_min_pd, _mm_set_pd};
    // SAFETY: SSE2 is part of the x86_64 baseline; these intrinsics only compute on
    // registers (no memory access).
    unsafe {
        let xy = |p: DVec3| _mm_set_pd(p.y, p.x);
        let lo = _mm_min_pd(_mm_min_pd(xy(t[0]), xy(t[1])), xy(t[2]));
        let hi = _mm_max_pd(_mm_max_pd(xy(t[0]), xy(t[1])), xy(t[2]));
        (lo, hi)
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn boxes_overlap_sse2(t1: &Triangle, t2: &Triangle) -> bool {
    use std::arch::x86_64::{
        _mm_and_pd, _mm_cmple_pd, _mm_max_pd, _mm_min_pd, _mm_movemask_pd, _mm_set_pd,
        _mm_shuffle_pd,
    };
    let (lo1, hi1) = xy_bounds_sse2(t1);
    let (lo2, hi2) = xy_bounds_sse2(t2);
    // SAFETY: SSE2 is part of the x86_64 baseline; these intrinsics only compute on
    // registers (no memory access).
    unsafe {
        // Lane 0: triangle 1's z; lane 1: triangle 2's z.
        let zz = |i: usize| _mm_set_pd(t2[i].z, t1[i].z);
        let xy_ok = _mm_and_pd(_mm_cmple_pd(lo1, hi2), _mm_cmple_pd(lo2, hi1));
        let zlo = _mm_min_pd(_mm_min_pd(zz(0), zz(1)), zz(2));
        let zhi = _mm_max_pd(_mm_max_pd(zz(0), zz(1)), zz(2));
        // [lo1.z, lo2.z] <= [hi2.z, hi1.z]
        let z_ok = _mm_cmple_pd(zlo, _mm_shuffle_pd::<0b01>(zhi, zhi));
        _mm_movemask_pd(_mm_and_pd(xy_ok, z_ok)) == 0b11
    }
}

/// A triangle's closed axis-aligned box, computed once to be tested against many
/// triangles (an environment triangle against the triangles of a flying leaf).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TriBox {
    pub(crate) lo: [f64; 3],
    pub(crate) hi: [f64; 3],
}

impl TriBox {
    /// The box of `t` ([`min3`]/[`max3`]: plain comparisons, the inputs are NaN-free).
    #[inline(always)]
    pub(crate) fn new(t: &Triangle) -> TriBox {
        let c = |k: usize| {
            (
                min3(t[0][k], t[1][k], t[2][k]),
                max3(t[0][k], t[1][k], t[2][k]),
            )
        };
        let ((x0, x1), (y0, y1), (z0, z1)) = (c(0), c(1), c(2));
        TriBox {
            lo: [x0, y0, z0],
            hi: [x1, y1, z1],
        }
    }

    /// Whether two boxes meet (closed intervals on every axis). Queries keep each placed
    /// flying triangle's box, so a pair costs six comparisons here.
    #[inline(always)]
    pub(crate) fn overlaps_box(&self, o: &TriBox) -> bool {
        (self.lo[0] <= o.hi[0])
            & (o.lo[0] <= self.hi[0])
            & (self.lo[1] <= o.hi[1])
            & (o.lo[1] <= self.hi[1])
            & (self.lo[2] <= o.hi[2])
            & (o.lo[2] <= self.hi[2])
    }

    /// Whether the box of `t` meets this one: per coordinate, the intervals overlap iff
    /// neither lies wholly beyond the other (the portable [`boxes_overlap`]).
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))] // x86_64: tests only
    #[inline]
    pub(crate) fn overlaps_scalar(&self, t: &Triangle) -> bool {
        (0..3).fold(true, |ok, k| {
            let (a0, a1, a2) = (t[0][k], t[1][k], t[2][k]);
            ok & (min3(a0, a1, a2) <= self.hi[k]) & (self.lo[k] <= max3(a0, a1, a2))
        })
    }
}

/// The full Guigue–Devillers case analysis without the bounding-box rejection: every
/// sign branched on, exact fallbacks, coplanar and degenerate pairs. [`filtered`] decides
/// the common cases faster and defers the rest here.
///
/// Corners are read through the references, never copied to locals first: a copy of a
/// triangle is stored 16 + 8 bytes per point and reloaded as misaligned pairs, a
/// store-forwarding stall that cost more than the arithmetic. Rare cases are outlined.
/// Outlined itself: it runs for touching, coplanar and degenerate pairs, and for signs the
/// filter could not certify.
#[cold]
#[inline(never)]
pub(crate) fn intersect_boxed(t1: &Triangle, t2: &Triangle) -> bool {
    let (p1, q1, r1) = (t1[0], t1[1], t1[2]);
    let (p2, q2, r2) = (t2[0], t2[1], t2[2]);
    let pl2 = Plane::new(p2, q2, r2);
    if pl2.is_degenerate() {
        return degenerate_pair(t1, t2);
    }
    // Signs of T1's corners with respect to T2's plane; all on one side is the common
    // rejection, decided before T1's own plane is even built.
    let [dp1, dq1, dr1] = pl2.sides3(p1, q1, r1);
    if dp1 * dq1 > 0 && dp1 * dr1 > 0 {
        return false;
    }
    let pl1 = Plane::new(p1, q1, r1);
    if pl1.is_degenerate() {
        return degenerate_pair(t1, t2);
    }
    let [dp2, dq2, dr2] = pl1.sides3(p2, q2, r2);
    if dp2 * dq2 > 0 && dp2 * dr2 > 0 {
        return false;
    }

    let s = [dp2, dq2, dr2];
    // Permute T1 so that its first corner is alone on its side of T2's plane, swapping T2's
    // last two corners where that flips the orientation (Guigue–Devillers, section 3).
    if dp1 > 0 {
        if dq1 > 0 {
            tri_tri_3d(r1, p1, q1, p2, r2, q2, swap(s), t1, t2)
        } else if dr1 > 0 {
            tri_tri_3d(q1, r1, p1, p2, r2, q2, swap(s), t1, t2)
        } else {
            tri_tri_3d(p1, q1, r1, p2, q2, r2, s, t1, t2)
        }
    } else if dp1 < 0 {
        if dq1 < 0 {
            tri_tri_3d(r1, p1, q1, p2, q2, r2, s, t1, t2)
        } else if dr1 < 0 {
            tri_tri_3d(q1, r1, p1, p2, q2, r2, s, t1, t2)
        } else {
            tri_tri_3d(p1, q1, r1, p2, r2, q2, swap(s), t1, t2)
        }
    } else if dq1 < 0 {
        if dr1 >= 0 {
            tri_tri_3d(q1, r1, p1, p2, r2, q2, swap(s), t1, t2)
        } else {
            tri_tri_3d(p1, q1, r1, p2, q2, r2, s, t1, t2)
        }
    } else if dq1 > 0 {
        if dr1 > 0 {
            tri_tri_3d(p1, q1, r1, p2, r2, q2, swap(s), t1, t2)
        } else {
            tri_tri_3d(q1, r1, p1, p2, q2, r2, s, t1, t2)
        }
    } else if dr1 > 0 {
        tri_tri_3d(r1, p1, q1, p2, q2, r2, s, t1, t2)
    } else if dr1 < 0 {
        tri_tri_3d(r1, p1, q1, p2, r2, q2, swap(s), t1, t2)
    } else {
        coplanar(t1, t2)
    }
}

/// Reorders the signs `(dp2, dq2, dr2)` to match T2 passed as `(p2, r2, q2)`.
#[inline]
fn swap(s: [i32; 3]) -> [i32; 3] {
    [s[0], s[2], s[1]]
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn tri_tri_3d(
    p1: DVec3,
    q1: DVec3,
    r1: DVec3,
    p2: DVec3,
    q2: DVec3,
    r2: DVec3,
    [dp2, dq2, dr2]: [i32; 3],
    t1: &Triangle,
    t2: &Triangle,
) -> bool {
    // Permute T2 so that its first corner is alone on its side of T1's plane.
    if dp2 > 0 {
        if dq2 > 0 {
            check_min_max(p1, r1, q1, r2, p2, q2)
        } else if dr2 > 0 {
            check_min_max(p1, r1, q1, q2, r2, p2)
        } else {
            check_min_max(p1, q1, r1, p2, q2, r2)
        }
    } else if dp2 < 0 {
        if dq2 < 0 {
            check_min_max(p1, q1, r1, r2, p2, q2)
        } else if dr2 < 0 {
            check_min_max(p1, q1, r1, q2, r2, p2)
        } else {
            check_min_max(p1, r1, q1, p2, q2, r2)
        }
    } else if dq2 < 0 {
        if dr2 >= 0 {
            check_min_max(p1, r1, q1, q2, r2, p2)
        } else {
            check_min_max(p1, q1, r1, p2, q2, r2)
        }
    } else if dq2 > 0 {
        if dr2 > 0 {
            check_min_max(p1, r1, q1, p2, q2, r2)
        } else {
            check_min_max(p1, q1, r1, q2, r2, p2)
        }
    } else if dr2 > 0 {
        check_min_max(p1, q1, r1, r2, p2, q2)
    } else if dr2 < 0 {
        check_min_max(p1, r1, q1, r2, p2, q2)
    } else {
        // All of T2 on T1's plane: cannot happen for two non-degenerate triangles unless T1
        // is on T2's plane too, but answer correctly regardless.
        coplanar(t1, t2)
    }
}

/// Both triangles now straddle the line where the planes meet with `p1` and `p2` alone on
/// their sides; the segments they cut on that line overlap iff these two orientations hold.
#[inline]
fn check_min_max(p1: DVec3, q1: DVec3, r1: DVec3, p2: DVec3, q2: DVec3, r2: DVec3) -> bool {
    if orient3d(q1, p2, p1, q2) > 0 {
        return false;
    }
    orient3d(p1, p2, r1, r2) <= 0
}

/// Two non-degenerate triangles on one plane.
#[cold]
#[inline(never)]
fn coplanar(t1: &Triangle, t2: &Triangle) -> bool {
    let Some(axis) = Plane::new(t1[0], t1[1], t1[2]).dominant_axis() else {
        return false; // unreachable: t1 is not degenerate
    };
    let a = t1.map(|p| project(p, axis));
    let b = t2.map(|p| project(p, axis));
    tri_tri_2d(&a, &b)
}

fn tri_tri_2d(a: &[DVec2; 3], b: &[DVec2; 3]) -> bool {
    for i in 0..3 {
        for j in 0..3 {
            if seg_seg_2d(a[i], a[(i + 1) % 3], b[j], b[(j + 1) % 3]) {
                return true;
            }
        }
    }
    // No edges cross: either one contains the other or they are apart.
    point_in_tri_2d(a[0], b) || point_in_tri_2d(b[0], a)
}

/// Closed point-in-triangle for a non-degenerate triangle.
fn point_in_tri_2d(p: DVec2, t: &[DVec2; 3]) -> bool {
    let o1 = orient2d(t[0], t[1], p);
    let o2 = orient2d(t[1], t[2], p);
    let o3 = orient2d(t[2], t[0], p);
    let neg = o1 < 0 || o2 < 0 || o3 < 0;
    let pos = o1 > 0 || o2 > 0 || o3 > 0;
    !(neg && pos)
}

/// `p` lies in the closed axis-aligned box of `a` and `b`.
#[inline]
fn in_box_2d(p: DVec2, a: DVec2, b: DVec2) -> bool {
    p.cmpge(a.min(b)).all() && p.cmple(a.max(b)).all()
}

/// Closed segments in the plane (either may be a single point).
fn seg_seg_2d(a: DVec2, b: DVec2, c: DVec2, d: DVec2) -> bool {
    let o1 = orient2d(a, b, c);
    let o2 = orient2d(a, b, d);
    let o3 = orient2d(c, d, a);
    let o4 = orient2d(c, d, b);
    if o1 * o2 < 0 && o3 * o4 < 0 {
        return true;
    }
    (o1 == 0 && in_box_2d(c, a, b))
        || (o2 == 0 && in_box_2d(d, a, b))
        || (o3 == 0 && in_box_2d(a, c, d))
        || (o4 == 0 && in_box_2d(b, c, d))
}

/// What a triangle with exactly collinear corners reduces to.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Segment(DVec3, DVec3),
    Point(DVec3),
}

fn reduce(t: &Triangle) -> Shape {
    let lo = t[0].min(t[1]).min(t[2]);
    let hi = t[0].max(t[1]).max(t[2]);
    let spread = hi - lo;
    // Along a line every non-constant coordinate orders the points as the line does.
    let axis = if spread.x >= spread.y && spread.x >= spread.z {
        0
    } else if spread.y >= spread.z {
        1
    } else {
        2
    };
    if spread[axis] == 0.0 {
        return Shape::Point(t[0]);
    }
    let mut s = *t;
    s.sort_by(|p, q| p[axis].total_cmp(&q[axis]));
    Shape::Segment(s[0], s[2])
}

#[cold]
#[inline(never)]
fn degenerate_pair(t1: &Triangle, t2: &Triangle) -> bool {
    let pl1 = Plane::new(t1[0], t1[1], t1[2]);
    let pl2 = Plane::new(t2[0], t2[1], t2[2]);
    match (pl1.is_degenerate(), pl2.is_degenerate()) {
        (true, false) => shape_tri(reduce(t1), t2, &pl2),
        (false, true) => shape_tri(reduce(t2), t1, &pl1),
        _ => match (reduce(t1), reduce(t2)) {
            (Shape::Point(a), Shape::Point(b)) => a == b,
            (Shape::Point(p), Shape::Segment(a, b)) | (Shape::Segment(a, b), Shape::Point(p)) => {
                point_on_segment(p, a, b)
            }
            (Shape::Segment(a, b), Shape::Segment(c, d)) => seg_seg_3d(a, b, c, d),
        },
    }
}

fn shape_tri(s: Shape, t: &Triangle, pl: &Plane) -> bool {
    match s {
        Shape::Point(p) => point_in_tri_3d(p, t, pl),
        Shape::Segment(a, b) => seg_tri(a, b, t, pl),
    }
}

fn point_in_tri_3d(p: DVec3, t: &Triangle, pl: &Plane) -> bool {
    if pl.side(p) != 0 {
        return false;
    }
    let Some(axis) = pl.dominant_axis() else {
        return false;
    };
    point_in_tri_2d(project(p, axis), &t.map(|q| project(q, axis)))
}

/// Closed segment `ab` against a non-degenerate closed triangle.
fn seg_tri(a: DVec3, b: DVec3, t: &Triangle, pl: &Plane) -> bool {
    let sa = pl.side(a);
    let sb = pl.side(b);
    if sa * sb > 0 {
        return false;
    }
    if sa == 0 && sb == 0 {
        let Some(axis) = pl.dominant_axis() else {
            return false;
        };
        let (a2, b2) = (project(a, axis), project(b, axis));
        let t2 = t.map(|q| project(q, axis));
        return point_in_tri_2d(a2, &t2)
            || point_in_tri_2d(b2, &t2)
            || (0..3).any(|i| seg_seg_2d(a2, b2, t2[i], t2[(i + 1) % 3]));
    }
    // The line through a and b meets the plane in one point of the segment; it lies in the
    // closed triangle iff the line passes on the same side of all three directed edges.
    let o1 = orient3d(a, b, t[0], t[1]);
    let o2 = orient3d(a, b, t[1], t[2]);
    let o3 = orient3d(a, b, t[2], t[0]);
    let neg = o1 < 0 || o2 < 0 || o3 < 0;
    let pos = o1 > 0 || o2 > 0 || o3 > 0;
    !(neg && pos)
}

fn point_on_segment(p: DVec3, a: DVec3, b: DVec3) -> bool {
    p.cmpge(a.min(b)).all() && p.cmple(a.max(b)).all() && Plane::new(a, b, p).is_degenerate()
}

/// Closed segments in space (non-degenerate: `a != b`, `c != d`).
fn seg_seg_3d(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> bool {
    if orient3d(a, b, c, d) != 0 {
        return false;
    }
    // Coplanar: find a coordinate plane onto which their common plane projects one-to-one.
    for (x, y, z) in [(a, b, c), (a, b, d)] {
        let pl = Plane::new(x, y, z);
        if let Some(axis) = pl.dominant_axis() {
            return seg_seg_2d(
                project(a, axis),
                project(b, axis),
                project(c, axis),
                project(d, axis),
            );
        }
    }
    // All four on one line: compare intervals along a coordinate that varies on it.
    let axis = (0..3).find(|&k| a[k] != b[k]).unwrap_or(0);
    let (l1, h1) = (a[axis].min(b[axis]), a[axis].max(b[axis]));
    let (l2, h2) = (c[axis].min(d[axis]), c[axis].max(d[axis]));
    l1 <= h2 && l2 <= h1
}

/// Euclidean distance between two closed triangles, in `f64` arithmetic.
///
/// Zero when [`triangles_intersect`] says they intersect; otherwise the smallest of the
/// corner-to-triangle and edge-to-edge distances, which is where the minimum of two
/// disjoint triangles is always attained. The result carries floating-point rounding
/// (relative error around 1e-12 for well-shaped triangles), unlike the exact intersection
/// test.
#[must_use]
pub fn triangle_distance(t1: &Triangle, t2: &Triangle) -> f64 {
    if triangles_intersect(t1, t2) {
        return 0.0;
    }
    let mut best = f64::INFINITY;
    for i in 0..3 {
        for j in 0..3 {
            let d = segment_segment_distance_sq(t1[i], t1[(i + 1) % 3], t2[j], t2[(j + 1) % 3]);
            best = best.min(d);
        }
    }
    for p in t1 {
        best = best.min(point_triangle_distance_sq(*p, t2));
    }
    for p in t2 {
        best = best.min(point_triangle_distance_sq(*p, t1));
    }
    best.sqrt()
}

/// Squared distance from a point to a triangle whose interior is reached only through its
/// plane; edges are handled by the edge-to-edge terms of [`triangle_distance`].
fn point_triangle_distance_sq(p: DVec3, t: &Triangle) -> f64 {
    let n = (t[1] - t[0]).cross(t[2] - t[0]);
    let nn = n.length_squared();
    if nn == 0.0 || !nn.is_finite() {
        return f64::INFINITY;
    }
    let d = (p - t[0]).dot(n);
    let foot = p - n * (d / nn);
    // Inside test of the foot point by edge normals (approximate; near the boundary the
    // edge terms give the same distance).
    for i in 0..3 {
        let e = t[(i + 1) % 3] - t[i];
        if e.cross(foot - t[i]).dot(n) < 0.0 {
            return f64::INFINITY;
        }
    }
    d * d / nn
}

/// Squared distance between segments `pq` and `rs` (Ericson, "Real-Time Collision
/// Detection", 5.1.9), robust to zero-length segments.
fn segment_segment_distance_sq(p: DVec3, q: DVec3, r: DVec3, s: DVec3) -> f64 {
    let d1 = q - p;
    let d2 = s - r;
    let w = p - r;
    let a = d1.length_squared();
    let e = d2.length_squared();
    let f = d2.dot(w);
    let (sc, tc);
    if a == 0.0 && e == 0.0 {
        return w.length_squared();
    }
    if a == 0.0 {
        sc = 0.0;
        tc = (f / e).clamp(0.0, 1.0);
    } else {
        let c = d1.dot(w);
        if e == 0.0 {
            tc = 0.0;
            sc = (-c / a).clamp(0.0, 1.0);
        } else {
            let b = d1.dot(d2);
            let denom = a * e - b * b;
            let mut s0 = if denom > 0.0 {
                ((b * f - c * e) / denom).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let mut t0 = (b * s0 + f) / e;
            if t0 < 0.0 {
                t0 = 0.0;
                s0 = (-c / a).clamp(0.0, 1.0);
            } else if t0 > 1.0 {
                t0 = 1.0;
                s0 = ((b - c) / a).clamp(0.0, 1.0);
            }
            sc = s0;
            tc = t0;
        }
    }
    let c1 = p + d1 * sc;
    let c2 = r + d2 * tc;
    (c1 - c2).length_squared()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Corners on a small integer grid, so that boxes often touch exactly.
    fn grid_triangle(s: &mut u64) -> Triangle {
        std::array::from_fn(|_| {
            let mut c = || (crate::testing::lcg(s) * 5.0).floor() - 2.0;
            DVec3::new(c(), c(), c())
        })
    }

    #[test]
    fn box_test_forms_agree_with_a_plain_min_max() {
        let mut s = 11;
        let mut overlapping = 0;
        for _ in 0..20_000 {
            let (a, b) = (grid_triangle(&mut s), grid_triangle(&mut s));
            let lo = |t: &Triangle| t[0].min(t[1]).min(t[2]);
            let hi = |t: &Triangle| t[0].max(t[1]).max(t[2]);
            let expected = lo(&a).cmple(hi(&b)).all() && lo(&b).cmple(hi(&a)).all();
            assert_eq!(boxes_overlap_scalar(&a, &b), expected, "{a:?} {b:?}");
            assert_eq!(boxes_overlap(&a, &b), expected, "{a:?} {b:?}");
            let boxed = TriBox::new(&a).overlaps_box(&TriBox::new(&b));
            assert_eq!(boxed, expected, "{a:?} {b:?}");
            assert_eq!(TriBox::new(&a).overlaps_scalar(&b), expected, "{a:?} {b:?}");
            overlapping += usize::from(expected);
        }
        // Both outcomes must be well represented for the comparison to mean anything.
        assert!((2_000..18_000).contains(&overlapping), "{overlapping}");
    }
}
