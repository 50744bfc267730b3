//! Discrete orientation polytopes (Klosowski et al. 1998, §3.2 and §3.3.3).
//!
//! A k-DOP is the intersection of k/2 slabs `lo_i <= d_i . x <= hi_i` over fixed directions
//! `d_i` with coordinates in {-1, 0, 1}: the paper's 6-, 14-, 18- and 26-DOPs. `K` is a
//! compile-time constant, so every loop over the axes is unrolled and nothing dispatches at
//! run time.
//!
//! Bounds are stored as `f32`, rounded *outward*: a k-DOP built from geometry always
//! contains that geometry exactly (the projections are evaluated with a certified error
//! bound and then rounded down for `lo`, up for `hi`).

mod brep;
mod overlap;
mod quick;

#[cfg(target_arch = "x86_64")]
pub(crate) use quick::{Extremes8, xyz0};

use crate::exact::{EPS, sum_sign};
use glam::DVec3;

pub use overlap::OverlapOrder;
pub(crate) use overlap::{Narrow, OverlapForm, Wide};

/// Directions of the 6-DOP: the coordinate axes.
const AXES_6: [[i8; 3]; 3] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
/// Directions of the 14-DOP: axes plus the four corner diagonals (§3.3.3).
const AXES_14: [[i8; 3]; 7] = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [1, 1, 1],
    [1, -1, 1],
    [1, 1, -1],
    [1, -1, -1],
];
/// Directions of the 18-DOP: axes plus the six edge diagonals (§3.3.3).
const AXES_18: [[i8; 3]; 9] = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [1, 1, 0],
    [1, 0, 1],
    [0, 1, 1],
    [1, -1, 0],
    [1, 0, -1],
    [0, 1, -1],
];
/// Directions of the 26-DOP: the union of the 14- and 18-DOP directions (§3.3.3).
const AXES_26: [[i8; 3]; 13] = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [1, 1, 1],
    [1, -1, 1],
    [1, 1, -1],
    [1, -1, -1],
    [1, 1, 0],
    [1, 0, 1],
    [0, 1, 1],
    [1, -1, 0],
    [1, 0, -1],
    [0, 1, -1],
];

/// `sqrt(n)` for the squared lengths `n` of the directions.
const NORMS: [f64; 4] = [0.0, 1.0, std::f64::consts::SQRT_2, 1.732_050_807_568_877_2];

/// Euclidean length of a direction. Its entries are -1, 0 or 1, so the length is the square
/// root of 1, 2 or 3: read from [`NORMS`] (the same correctly rounded values) rather than
/// computed, since queries with a margin grow every node they re-bound.
#[inline]
const fn axis_norm(d: [i8; 3]) -> f64 {
    NORMS[(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) as usize]
}

/// [`axis_norm`] of each direction of [`axes`]`(k)` rounded to `f32` (0 past `k / 2`):
/// a table per k, so that padding a k-DOP reads one length per bound.
pub(crate) const fn lengths_f32(k: usize) -> [f32; 13] {
    let a = axes(k);
    let mut out = [0.0f32; 13];
    let mut i = 0;
    while i < a.len() {
        out[i] = axis_norm(a[i]) as f32;
        i += 1;
    }
    out
}

/// Per direction, the margin of [`Dop::enlarged`] for one distance, rounded up to `f32`:
/// queries that enlarge every node they re-bound compute it once per pose.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Growth([f32; 13]);

impl Growth {
    /// The margins that grow a k-DOP by Euclidean distance `margin` (none for a margin
    /// that is not positive).
    pub(crate) fn new<const K: usize>(margin: f64) -> Self {
        let mut g = [0.0; 13];
        if margin > 0.0 {
            for (m, d) in g.iter_mut().zip(axes(K)) {
                *m = f32_up(margin * axis_norm(*d) * (1.0 + 4.0 * EPS));
            }
        }
        Growth(g)
    }
}

/// The fixed directions of the k-DOP with `k` faces; `k` must be 6, 14, 18 or 26.
#[must_use]
pub const fn axes(k: usize) -> &'static [[i8; 3]] {
    match k {
        6 => &AXES_6,
        14 => &AXES_14,
        18 => &AXES_18,
        26 => &AXES_26,
        _ => panic!("k must be 6, 14, 18 or 26"),
    }
}

/// A k-DOP: `K / 2` intervals `[lo_i, hi_i]` along the fixed directions [`axes`]`(K)`.
///
/// `K` is one of 6, 14, 18, 26; any other value fails to compile when used.
///
/// The bounds are laid out as `[lo_0, .., lo_{K/2-1}, hi_0, .., hi_{K/2-1}]` so that one
/// vector load compares four intervals.
///
/// # Example
/// ```
/// use glam::DVec3;
/// use kdop::Dop;
/// let a = Dop::<18>::from_points(&[DVec3::ZERO, DVec3::ONE]);
/// let b = Dop::<18>::from_points(&[DVec3::splat(0.9), DVec3::splat(2.0)]);
/// assert!(a.overlaps(&b));
/// // Their boxes touch at the corner (1, 1, 0), but the diagonal x + y separates them.
/// let c = Dop::<18>::from_triangle(&[DVec3::new(1.0, 1.5, 0.0), DVec3::new(1.5, 1.0, 0.0), DVec3::new(1.5, 1.5, 0.0)]);
/// assert!(!a.overlaps(&c));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Dop<const K: usize> {
    pub(crate) b: [f32; K],
}

/// The projections of `p` on the directions of `K` as sums and differences of its
/// coordinates (no multiplications, §3.3.3), in the order of [`axes`]`(K)`.
#[inline(always)]
fn project_sums<const K: usize>(p: DVec3) -> [f64; 13] {
    let mut v = [0.0; 13];
    v[0] = p.x;
    v[1] = p.y;
    v[2] = p.z;
    let mut i = 3;
    if K == 14 || K == 26 {
        let (s, t) = (p.x + p.z, p.x - p.z);
        v[3] = s + p.y;
        v[4] = s - p.y;
        v[5] = t + p.y;
        v[6] = t - p.y;
        i = 7;
    }
    if K == 18 || K == 26 {
        v[i] = p.x + p.y;
        v[i + 1] = p.x + p.z;
        v[i + 2] = p.y + p.z;
        v[i + 3] = p.x - p.y;
        v[i + 4] = p.x - p.z;
        v[i + 5] = p.y - p.z;
    }
    v
}

/// Largest `f32` not above `x`.
#[inline]
pub(crate) fn f32_down(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) > x { r.next_down() } else { r }
}

/// Smallest `f32` not below `x`.
#[inline]
pub(crate) fn f32_up(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) < x { r.next_up() } else { r }
}

/// A value at least one `f32` ulp above `r` (`r` is the nearest `f32` to some `x`, so the
/// result is at least `x`): `|r| 2^-23` is one to two ulps, and a `f32` subnormal step is
/// far below `MIN_POSITIVE`. Branch-free, unlike `f32::next_up`.
#[inline(always)]
pub(crate) fn widen_up(r: f32) -> f32 {
    r + (r.abs() * (1.0 / 8_388_608.0) + f32::MIN_POSITIVE)
}

/// The mirror of [`widen_up`].
#[inline(always)]
pub(crate) fn widen_down(r: f32) -> f32 {
    r - (r.abs() * (1.0 / 8_388_608.0) + f32::MIN_POSITIVE)
}

impl<const K: usize> Dop<K> {
    /// Number of slab directions, `K / 2`.
    pub const AXES: usize = {
        assert!(
            K == 6 || K == 14 || K == 18 || K == 26,
            "k must be 6, 14, 18 or 26"
        );
        K / 2
    };

    /// The empty k-DOP: contains nothing, overlaps nothing; the identity of [`Dop::merge`].
    pub const EMPTY: Self = Dop {
        b: {
            let mut b = [0.0f32; K];
            let mut i = 0;
            while i < K {
                b[i] = if i < K / 2 {
                    f32::INFINITY
                } else {
                    f32::NEG_INFINITY
                };
                i += 1;
            }
            b
        },
    };

    /// The k-DOP with the given bounds along [`axes`]`(K)`.
    ///
    /// `lo[i] > hi[i]` for any `i` makes it empty. Returns `None` if a bound is NaN.
    #[must_use]
    pub fn from_bounds(lo: &[f32], hi: &[f32]) -> Option<Self> {
        let n = Self::AXES;
        if lo.len() != n || hi.len() != n || lo.iter().chain(hi).any(|v| v.is_nan()) {
            return None;
        }
        let mut b = [0.0; K];
        b[..n].copy_from_slice(lo);
        b[n..].copy_from_slice(hi);
        Some(Dop { b })
    }

    /// Lower bound along axis `i`.
    #[inline]
    #[must_use]
    pub fn lo(&self, i: usize) -> f32 {
        self.b[i]
    }

    /// Upper bound along axis `i`.
    #[inline]
    #[must_use]
    pub fn hi(&self, i: usize) -> f32 {
        self.b[K / 2 + i]
    }

    /// Whether this k-DOP contains no point (some `lo > hi`).
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        // NaN bounds count as empty too.
        let n = K / 2;
        let mut nonempty = true;
        for i in 0..n {
            nonempty &= self.b[i] <= self.b[n + i]; // false for NaN
        }
        !nonempty
    }

    /// Outward-rounded projection of a point onto every axis: `(lo, hi)` per axis.
    #[inline]
    fn project_point(p: DVec3, out: &mut Self) {
        let _ = Self::AXES;
        let s = p.x.abs() + p.y.abs() + p.z.abs();
        // A sum of up to three terms is off by at most 2 EPS * s; 4 EPS * s also absorbs
        // the rounding of the subtraction below.
        let err = 4.0 * EPS * s;
        for (i, d) in axes(K).iter().enumerate() {
            let v = f64::from(d[0]) * p.x + f64::from(d[1]) * p.y + f64::from(d[2]) * p.z;
            let single = (d[0] != 0) as u8 + (d[1] != 0) as u8 + (d[2] != 0) as u8 == 1;
            let e = if single { 0.0 } else { err };
            let (l, h) = (f32_down(v - e), f32_up(v + e));
            out.b[i] = if l < out.b[i] { l } else { out.b[i] };
            out.b[K / 2 + i] = if h > out.b[K / 2 + i] {
                h
            } else {
                out.b[K / 2 + i]
            };
        }
    }

    /// The k-DOP of one point rounded out branch-free ([`widen_down`]/[`widen_up`]): at
    /// most two `f32` ulps looser than [`Dop::from_points`], which rounds exactly, and
    /// several times cheaper. For building hierarchies, where every vertex is bounded once.
    #[inline(always)]
    pub(crate) fn from_point_quick(p: DVec3) -> Self {
        let _ = Self::AXES;
        let n = K / 2;
        let v = project_sums::<K>(p);
        // As in `project_point`: the coordinate axes are exact, sums of two or three
        // coordinates are off by at most 2 EPS * s, and 4 EPS * s absorbs the subtraction.
        let err = 4.0 * EPS * (p.x.abs() + p.y.abs() + p.z.abs());
        let mut out = Self::EMPTY;
        for (i, &v) in v.iter().enumerate().take(n) {
            let e = if i < 3 { 0.0 } else { err };
            out.b[i] = widen_down((v - e) as f32);
            out.b[n + i] = widen_up((v + e) as f32);
        }
        out
    }

    /// A k-DOP containing the points, and each one's [`Dop::from_point_quick`]: the
    /// extremes of their projections in `f64`, rounded out once with the error bound of the
    /// point largest in the 1-norm. Cheaper than merging the points' own bounds, which rounds
    /// every point; for bounding a whole leaf or triangle where no per-point bound is kept.
    /// Empty for no points.
    #[inline]
    pub(crate) fn from_points_quick(points: impl IntoIterator<Item = DVec3>) -> Self {
        let _ = Self::AXES;
        let n = K / 2;
        let mut lo = [f64::INFINITY; 13];
        let mut hi = [f64::NEG_INFINITY; 13];
        let mut l1 = 0.0f64;
        for p in points {
            let v = project_sums::<K>(p);
            for i in 0..n {
                lo[i] = if v[i] < lo[i] { v[i] } else { lo[i] };
                hi[i] = if v[i] > hi[i] { v[i] } else { hi[i] };
            }
            let s = p.x.abs() + p.y.abs() + p.z.abs();
            l1 = if s > l1 { s } else { l1 };
        }
        Self::from_extremes(&lo, &hi, l1)
    }

    /// The k-DOP of points whose projections range over `lo[i]..=hi[i]` (in `f64`, as
    /// [`project_sums`] computes them) and whose largest 1-norm is `l1`: the extremes
    /// rounded out once with the error bound of that point. Empty when `lo[0] > hi[0]`.
    #[inline(always)]
    fn from_extremes(lo: &[f64; 13], hi: &[f64; 13], l1: f64) -> Self {
        let n = K / 2;
        if lo[0] > hi[0] {
            return Self::EMPTY;
        }
        // The error bound of `from_point_quick` grows with the 1-norm, so the largest
        // covers every point; rounding and widening are monotone, so the result contains
        // each point's own bound.
        let err = 4.0 * EPS * l1;
        let mut out = Self::EMPTY;
        for i in 0..n {
            let e = if i < 3 { 0.0 } else { err };
            out.b[i] = widen_down((lo[i] - e) as f32);
            out.b[n + i] = widen_up((hi[i] + e) as f32);
        }
        out
    }

    /// The smallest k-DOP (up to outward rounding to `f32`) containing the points.
    #[must_use]
    pub fn from_points(points: &[DVec3]) -> Self {
        let mut d = Self::EMPTY;
        for &p in points {
            Self::project_point(p, &mut d);
        }
        d
    }

    /// The k-DOP of one triangle.
    #[inline]
    #[must_use]
    pub fn from_triangle(t: &[DVec3; 3]) -> Self {
        Self::from_points(t)
    }

    /// Grows this k-DOP to contain the point.
    #[inline]
    pub fn add_point(&mut self, p: DVec3) {
        Self::project_point(p, self);
    }

    /// The smallest k-DOP containing both.
    #[inline]
    #[must_use]
    pub fn merge(&self, other: &Self) -> Self {
        // Comparisons, not f32::min/max (whose NaN rules cost a blend per lane): bounds
        // are never NaN.
        let b = std::array::from_fn(|i| {
            let (x, y) = (self.b[i], other.b[i]);
            if (i < K / 2) == (x < y) { x } else { y }
        });
        Dop { b }
    }

    /// The intersection of both (both contain some set, so does this).
    #[inline]
    #[must_use]
    pub fn intersect(&self, other: &Self) -> Self {
        // Comparisons, not f32::max/min: bounds are never NaN, and this runs once per
        // re-bounded node during queries.
        let b = std::array::from_fn(|i| {
            let (x, y) = (self.b[i], other.b[i]);
            if (i < K / 2) == (x > y) { x } else { y }
        });
        Dop { b }
    }

    /// Whether `other` lies inside this k-DOP (every interval contains the other's).
    /// The empty k-DOP is contained in everything.
    #[must_use]
    pub fn contains(&self, other: &Self) -> bool {
        if other.is_empty() {
            return true;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let n = K / 2;
            overlap::all_le_sse(&self.b, 0, &other.b, 0, &other.b, n, &self.b, n)
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.contains_scalar(other)
    }

    /// Portable branch-free form of [`Dop::contains`] for a non-empty `other`; tests check
    /// both agree.
    #[inline]
    #[cfg_attr(
        all(target_arch = "x86_64", not(test)),
        allow(dead_code, reason = "x86_64 runs the SSE form for every k")
    )]
    pub(crate) fn contains_scalar(&self, other: &Self) -> bool {
        let n = K / 2;
        let mut ok = true;
        for i in 0..n {
            ok &= (self.b[i] <= other.b[i]) & (other.b[n + i] <= self.b[n + i]);
        }
        ok
    }

    /// Whether the point lies in the closed k-DOP, decided exactly.
    #[must_use]
    pub fn contains_point(&self, p: DVec3) -> bool {
        let err = 4.0 * EPS * (p.x.abs() + p.y.abs() + p.z.abs());
        // Fast path, branch-free over all axes: every rounded projection lies inside its
        // interval by more than its error (the common case when validating a loaded file).
        let v = project_sums::<K>(p);
        let n = K / 2;
        let mut surely_inside = true;
        for (i, &v) in v.iter().enumerate().take(n) {
            surely_inside &=
                (v - err >= f64::from(self.b[i])) & (v + err <= f64::from(self.b[n + i]));
        }
        if surely_inside {
            return true;
        }
        axes(K).iter().enumerate().all(|(i, d)| {
            let terms = [
                f64::from(d[0]) * p.x,
                f64::from(d[1]) * p.y,
                f64::from(d[2]) * p.z,
            ];
            let lo = f64::from(self.b[i]);
            let hi = f64::from(self.b[K / 2 + i]);
            // Filter: the rounded projection is within `err` of the exact one.
            let v = terms[0] + terms[1] + terms[2];
            if v - err >= lo && v + err <= hi {
                return true;
            }
            if v + err < lo || v - err > hi {
                return false;
            }
            // d . p - lo >= 0 and hi - d . p >= 0, each an exact sum sign.
            sum_sign(&[terms[0], terms[1], terms[2], -lo]) >= 0
                && sum_sign(&[hi, -terms[0], -terms[1], -terms[2]]) >= 0
        })
    }

    /// This k-DOP grown so that it contains every point within Euclidean distance
    /// `margin` of it. Each interval grows by `margin * |d_i|`, rounded outward.
    /// A negative or NaN margin leaves it unchanged.
    #[must_use]
    pub fn enlarged(&self, margin: f64) -> Self {
        if margin.is_nan() || margin <= 0.0 || self.is_empty() {
            return *self;
        }
        let mut out = *self;
        for (i, d) in axes(K).iter().enumerate() {
            let m = margin * axis_norm(*d) * (1.0 + 4.0 * EPS);
            out.b[i] = f32_down(f64::from(self.b[i]) - m);
            out.b[K / 2 + i] = f32_up(f64::from(self.b[K / 2 + i]) + m);
        }
        out
    }

    /// This k-DOP grown by about `margin` (Euclidean) in `f32`, without rounding control:
    /// every bound moves outward or stays (a rounded `lo - m` with `m ≥ 0` is never above
    /// `lo`), so it contains this k-DOP, but not surely everything within `margin` of it.
    /// For slack that only has to be roughly `margin` (a deformable node's room to move).
    #[must_use]
    #[inline]
    pub(crate) fn padded(&self, margin: f32) -> Self {
        if margin.is_nan() || margin <= 0.0 || self.is_empty() {
            return *self;
        }
        let lengths = const { lengths_f32(K) };
        let mut out = *self;
        for (i, &length) in lengths.iter().enumerate().take(K / 2) {
            let m = margin * length;
            out.b[i] = self.b[i] - m;
            out.b[K / 2 + i] = self.b[K / 2 + i] + m;
        }
        out
    }

    /// [`Dop::padded`] by `share` times its largest box extent: a *fat* bound, which small
    /// motions and deformations of what it holds leave alone (a deformable node's, a
    /// part-tree leaf's).
    #[must_use]
    #[inline]
    pub(crate) fn padded_by_extent(&self, share: f64) -> Self {
        self.padded((share * self.box_extent().max_element()) as f32)
    }

    /// The middle one of its x, y and z extents: how wide a flat shape inside it can be
    /// in its second direction.
    #[must_use]
    #[inline]
    pub(crate) fn middle_extent(&self) -> f32 {
        let e = [
            self.hi(0) - self.lo(0),
            self.hi(1) - self.lo(1),
            self.hi(2) - self.lo(2),
        ];
        let (most, least) = (e[0].max(e[1]).max(e[2]), e[0].min(e[1]).min(e[2]));
        e[0] + e[1] + e[2] - most - least
    }

    /// [`Dop::enlarged`] by margins computed once ([`Growth`]) for many k-DOPs: each bound
    /// moved by its margin in `f32` and then at least one more `f32` step outward, so it
    /// contains what `enlarged` does without a rounding test per bound.
    #[must_use]
    #[inline]
    pub(crate) fn grown(&self, g: &Growth) -> Self {
        if self.is_empty() {
            return *self;
        }
        let mut out = *self;
        for i in 0..K / 2 {
            out.b[i] = widen_down(self.b[i] - g.0[i]);
            out.b[K / 2 + i] = widen_up(self.b[K / 2 + i] + g.0[i]);
        }
        out
    }

    /// Extent along each coordinate axis (x, y, z): the k-DOP's bounding box size.
    #[must_use]
    pub fn box_extent(&self) -> DVec3 {
        DVec3::new(
            f64::from(self.b[K / 2]) - f64::from(self.b[0]),
            f64::from(self.b[K / 2 + 1]) - f64::from(self.b[1]),
            f64::from(self.b[K / 2 + 2]) - f64::from(self.b[2]),
        )
    }

    /// Largest magnitude among the bounds (0 for an empty k-DOP).
    pub(crate) fn magnitude(&self) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        self.b
            .iter()
            .fold(0.0f64, |m, &v| m.max(f64::from(v).abs()))
    }
}

#[cfg(test)]
mod tests {
    /// Padding never moves a bound inward, whatever the rounding: tiny margins on large
    /// bounds (rounded away entirely), margins near a bound's size, and none.
    #[test]
    fn padded_contains_the_original() {
        let mut s = 3u64;
        for _ in 0..2000 {
            let p = |s: &mut u64| {
                (DVec3::new(lcg(s), lcg(s), lcg(s)) - 0.5) * 10f64.powf(lcg(s) * 12.0 - 4.0)
            };
            let d = Dop::<18>::from_points(&[p(&mut s), p(&mut s)]);
            let m = 10f32.powf(lcg(&mut s) as f32 * 14.0 - 10.0);
            for margin in [m, 0.0, -m, f32::NAN] {
                let q = d.padded(margin);
                assert!(q.contains(&d), "margin {margin}");
                if margin > 0.0 {
                    let grew = (0..9).any(|i| q.lo(i) < d.lo(i));
                    assert!(
                        grew || m < 1e-3 * d.magnitude() as f32,
                        "margin {margin} did nothing"
                    );
                }
            }
        }
    }

    /// The middle extent of boxes whose extents are known, in every order of the axes.
    #[test]
    fn middle_extent_is_the_second_largest() {
        for (x, y, z, want) in [
            (4.0, 1.0, 0.25, 1.0),
            (1.0, 0.25, 4.0, 1.0),
            (0.25, 4.0, 1.0, 1.0),
            (2.0, 2.0, 0.0, 2.0),
            (3.0, 0.0, 0.0, 0.0),
        ] {
            let d = Dop::<18>::from_points(&[DVec3::ZERO, DVec3::new(x, y, z)]);
            assert_eq!(d.middle_extent(), want as f32, "{x} {y} {z}");
        }
    }

    #[test]
    fn grown_contains_enlarged() {
        let d = Dop::<18>::from_points(&[DVec3::new(1.0, -2.0, 3.5), DVec3::new(-0.25, 4.0, 1e-3)]);
        for m in [1e-15, 1e-6, 0.5, 3.0] {
            let (e, g) = (d.enlarged(m), d.grown(&Growth::new::<18>(m)));
            for i in 0..9 {
                assert!(
                    g.lo(i) <= e.lo(i) && g.hi(i) >= e.hi(i),
                    "margin {m}, axis {i}"
                );
                // Looser by a few f32 steps at most.
                assert!(
                    f64::from(e.lo(i) - g.lo(i))
                        <= 4.0 * f64::from(f32::EPSILON) * (1.0 + f64::from(e.lo(i).abs()))
                );
            }
        }
    }

    #[test]
    fn direction_norms_are_the_square_roots() {
        for n in 1..4 {
            assert_eq!(super::NORMS[n], (n as f64).sqrt());
        }
    }

    use super::*;

    use crate::testing::lcg;

    fn generic_props<const K: usize>() {
        let mut s = 99u64;
        for _ in 0..300 {
            let scale = [1e-3, 1.0, 1e5, 1e11][(lcg(&mut s) * 4.0) as usize];
            let off = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * scale * 3.0;
            let pts: Vec<DVec3> = (0..7)
                .map(|_| off + DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * scale)
                .collect();
            let a = Dop::<K>::from_points(&pts[..4]);
            let b = Dop::<K>::from_points(&pts[3..]);
            for p in &pts[..4] {
                assert!(a.contains_point(*p), "from_points must contain its points");
            }
            let m = a.merge(&b);
            assert!(m.contains(&a) && m.contains(&b), "merge contains both");
            assert_eq!(a.overlaps(&b), b.overlaps(&a), "overlap is symmetric");
            // They share pts[3], so they overlap.
            assert!(a.overlaps(&b));
            assert!(a.overlaps_scalar(&b));
            let e = a.enlarged(scale * 0.1);
            assert!(e.contains(&a));
            // A point at distance 0.1 * scale outside along any direction is inside e.
            let u = DVec3::new(lcg(&mut s) - 0.5, lcg(&mut s) - 0.5, lcg(&mut s) - 0.5).normalize();
            assert!(e.contains_point(pts[0] + u * scale * 0.0999));
        }
        assert!(Dop::<K>::EMPTY.is_empty());
        assert!(!Dop::<K>::EMPTY.overlaps(&Dop::<K>::EMPTY));
    }

    #[test]
    fn properties_all_k() {
        crate::testing::for_each_k!(generic_props);
    }

    #[test]
    fn quick_point_bounds_contain_the_point() {
        fn one<const K: usize>() {
            let mut s = 31u64;
            for i in 0..20000 {
                // 1e-41 and 1e-310 round to f32 subnormals and zero.
                let scale = [1e-30, 1e-3, 1.0, 1e6, 1e12, 1e-41, 1e-310][i % 7];
                let p = DVec3::new(lcg(&mut s) - 0.5, lcg(&mut s) - 0.5, lcg(&mut s) - 0.5) * scale;
                let q = Dop::<K>::from_point_quick(p);
                assert!(
                    q.contains_point(p),
                    "k={K} scale {scale}: quick point bound"
                );
            }
        }
        crate::testing::for_each_k!(one);
    }

    #[test]
    fn batched_quick_bounds_contain_every_point_and_its_own_bound() {
        fn one<const K: usize>() {
            let mut s = 37u64;
            for i in 0..4000 {
                // Points of mixed magnitudes in one batch: the error bound of the largest
                // must cover the rest.
                let pts: Vec<DVec3> = (0..1 + i % 12)
                    .map(|j| {
                        let scale = [1e-30, 1e-3, 1.0, 1e6, 1e12, 1e-41, 1e-310][(i + j) % 7];
                        DVec3::new(lcg(&mut s) - 0.5, lcg(&mut s) - 0.5, lcg(&mut s) - 0.5) * scale
                    })
                    .collect();
                let q = Dop::<K>::from_points_quick(pts.iter().copied());
                for &p in &pts {
                    assert!(q.contains_point(p), "k={K}: batched bound misses {p}");
                    assert!(q.contains(&Dop::<K>::from_point_quick(p)), "k={K}");
                }
                // Tight: each bound within a few f32 ulps of the exactly rounded one, plus
                // the f64 error bound of the largest point.
                let exact = Dop::<K>::from_points(&pts);
                let l1 = pts
                    .iter()
                    .map(|p| p.abs().element_sum())
                    .fold(0.0, f64::max);
                for i in 0..K {
                    let (got, want) = (f64::from(q.b[i]), f64::from(exact.b[i]));
                    let slack = 4.0 * f64::from(f32::EPSILON) * want.abs()
                        + 8.0 * EPS * l1
                        + 4.0 * f64::from(f32::MIN_POSITIVE);
                    assert!(
                        (got - want).abs() <= slack,
                        "k={K}: bound {i} {got} vs {want}"
                    );
                }
            }
            assert!(Dop::<K>::from_points_quick([]).is_empty());
        }
        crate::testing::for_each_k!(one);
    }

    #[test]
    fn projections_round_outward() {
        // 0.1 + 0.2 has no exact f32 and the diagonal sum rounds in f64; the exact
        // projection must still lie inside.
        let p = DVec3::new(0.1, 0.2, 0.3);
        let d = Dop::<26>::from_points(&[p]);
        assert!(d.contains_point(p));
        for i in 0..13 {
            assert!(d.lo(i) <= d.hi(i));
            assert!(d.lo(i) < d.hi(i) || i < 3 && f64::from(d.lo(i)) == p[i]);
        }
        // Cancellation: x - y is exactly 0 but the terms are large.
        let q = DVec3::new(1e10 + 0.5, 1e10 + 0.5, 0.0);
        let d = Dop::<18>::from_points(&[q]);
        assert!(d.contains_point(q));
    }

    #[test]
    fn contains_point_is_exact_on_the_boundary() {
        let cube: Vec<DVec3> = (0..8)
            .map(|i| DVec3::new((i & 1) as f64, (i >> 1 & 1) as f64, (i >> 2) as f64))
            .collect();
        let d = Dop::<14>::from_points(&cube);
        assert!(d.contains_point(DVec3::ONE));
        assert!(d.contains_point(DVec3::new(1.0, 0.0, 0.0)));
        assert!(!d.contains_point(DVec3::new(1.0 + 1e-15, 0.0, 0.0)));
        assert!(d.contains_point(DVec3::new(0.0, 1.0, 0.0)));
        // The segment's 14-DOP is thin: x - y - z lies in [-1, 0], so (1, 0, 0) is outside.
        let seg = Dop::<14>::from_points(&[DVec3::ZERO, DVec3::ONE]);
        assert!(seg.contains_point(DVec3::splat(0.5)));
        assert!(!seg.contains_point(DVec3::X));
    }
}
