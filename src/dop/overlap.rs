//! k-DOP overlap: `K / 2` interval tests (Klosowski et al. 1998, §4.4).
//!
//! The paper tests the intervals one by one and asks in which order to test them so that a
//! separating direction is found early. Today a branchless test of all intervals at once is
//! cheaper than any early exit for k ≥ 14 (`docs/benchmarks.md`, "Cv"), so
//! [`Dop::overlaps`] compares four intervals per SSE instruction; [`Dop::overlaps_ordered`]
//! keeps the paper's early-exit form for the measurement. The traversal, compiled a second
//! time with AVX, tests k = 18 and 26 eight intervals per instruction ([`Dop::overlaps_avx`]
//! through the [`Wide`] form of [`OverlapForm`]).

use super::{Dop, axes};

/// An order in which to test the intervals of a k-DOP, for [`Dop::overlaps_ordered`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlapOrder {
    idx: Vec<usize>,
}

impl OverlapOrder {
    /// Axes in their stored order: x, y, z, then the diagonals.
    #[must_use]
    pub fn natural(k: usize) -> Self {
        OverlapOrder {
            idx: (0..axes(k).len()).collect(),
        }
    }

    /// The diagonal directions first, then x, y, z: pairs whose boxes overlap (the parents
    /// of every tested pair overlapped) are separated, if at all, by a diagonal — the
    /// paper's suggestion to test "largely different directions" first, made concrete.
    #[must_use]
    pub fn diagonals_first(k: usize) -> Self {
        let n = axes(k).len();
        OverlapOrder {
            idx: (3..n).chain(0..3).collect(),
        }
    }

    /// A custom order; `None` unless it is a permutation of `0..k/2`.
    #[must_use]
    pub fn from_indices(k: usize, idx: &[usize]) -> Option<Self> {
        let n = axes(k).len();
        let mut seen = vec![false; n];
        for &i in idx {
            if i >= n || std::mem::replace(&mut seen[i], true) {
                return None;
            }
        }
        (idx.len() == n).then(|| OverlapOrder { idx: idx.to_vec() })
    }

    /// The axis indices in test order.
    #[must_use]
    pub fn indices(&self) -> &[usize] {
        &self.idx
    }
}

impl<const K: usize> Dop<K> {
    /// Whether the two k-DOPs overlap: all `K / 2` intervals intersect (closed intervals,
    /// so touching counts). This is the paper's conservative test: overlapping intervals
    /// do not prove that the polytopes meet.
    ///
    /// # Performance
    /// Branchless; on x86_64 four intervals per SSE comparison (about 3 ns for K = 18,
    /// see `docs/benchmarks.md`).
    #[inline]
    #[must_use]
    pub fn overlaps(&self, other: &Self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let n = K / 2;
            all_le_sse(&self.b, 0, &other.b, n, &other.b, 0, &self.b, n)
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.overlaps_scalar(other)
    }

    /// Portable branchless form of [`Dop::overlaps`]; tests check both agree.
    #[inline]
    #[must_use]
    pub fn overlaps_scalar(&self, other: &Self) -> bool {
        let n = K / 2;
        let mut ok = true;
        for i in 0..n {
            ok &= (self.b[i] <= other.b[n + i]) & (other.b[i] <= self.b[n + i]);
        }
        ok
    }

    /// How deeply the two overlap: the least, over the `K / 2` directions, of how far
    /// their intervals overlap (negative where they are disjoint). A heuristic for the
    /// order of a detect query's descent, not a distance (diagonal directions are not of
    /// unit length).
    #[inline]
    #[must_use]
    pub(crate) fn depth(&self, other: &Self) -> f32 {
        #[cfg(target_arch = "x86_64")]
        {
            if K >= 8 {
                return depth_sse(&self.b, &other.b);
            }
        }
        self.depth_scalar(other)
    }

    /// Portable form of [`Dop::depth`]; tests check both agree.
    #[inline]
    #[must_use]
    pub(crate) fn depth_scalar(&self, other: &Self) -> f32 {
        let n = K / 2;
        let mut d = f32::INFINITY;
        for i in 0..n {
            d = d.min((other.b[n + i] - self.b[i]).min(self.b[n + i] - other.b[i]));
        }
        d
    }

    /// The paper's early-exit form: test intervals in `order`, stop at the first disjoint one.
    #[inline]
    #[must_use]
    pub fn overlaps_ordered(&self, other: &Self, order: &OverlapOrder) -> bool {
        let n = K / 2;
        for &i in order.indices() {
            if self.b[i] > other.b[n + i] || other.b[i] > self.b[n + i] {
                return false;
            }
        }
        true
    }
}

/// Whether `p[po + i] <= q[qo + i]` and `r[ro + i] <= s[so + i]` for every `i < K / 2`,
/// four `i` per SSE comparison; the last group of four overlaps the previous one when
/// `K / 2` is not a multiple of four (testing an index twice changes nothing). Three
/// intervals (k = 6), where a group of four would read past the array, are brought to
/// lanes 1 to 3 and lane 0 is left out of the answer.
/// [`Dop::overlaps`] is `(a.lo <= b.hi, b.lo <= a.hi)`, [`Dop::contains`] is
/// `(a.lo <= b.lo, b.hi <= a.hi)`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn all_le_sse<const K: usize>(
    p: &[f32; K],
    po: usize,
    q: &[f32; K],
    qo: usize,
    r: &[f32; K],
    ro: usize,
    s: &[f32; K],
    so: usize,
) -> bool {
    use std::arch::x86_64::{
        __m128, _mm_and_ps, _mm_castsi128_ps, _mm_cmple_ps, _mm_loadu_ps, _mm_movemask_ps,
        _mm_set1_epi32, _mm_shuffle_ps,
    };
    let n = K / 2;
    assert!(n >= 3 && po.max(qo).max(ro).max(so) <= n);
    if n == 3 {
        /// Values `o..o + 3` of `v` in lanes 1 to 3.
        #[inline(always)]
        fn upper3<const K: usize>(v: &[f32; K], o: usize) -> __m128 {
            // SAFETY: SSE is part of the x86_64 baseline. With K = 6 and o <= 3, both
            // loads read four values within the array: o..o + 4 when o + 4 <= 6, else
            // o - 1..o + 3 (o >= 3 there).
            unsafe {
                if o + 4 <= K {
                    let x = _mm_loadu_ps(v.as_ptr().add(o));
                    _mm_shuffle_ps::<0b10_01_00_00>(x, x)
                } else {
                    _mm_loadu_ps(v.as_ptr().add(o - 1))
                }
            }
        }
        let (pv, qv, rv, sv) = (upper3(p, po), upper3(q, qo), upper3(r, ro), upper3(s, so));
        // SAFETY: SSE is part of the x86_64 baseline.
        let m = unsafe { _mm_movemask_ps(_mm_and_ps(_mm_cmple_ps(pv, qv), _mm_cmple_ps(rv, sv))) };
        return m & 0b1110 == 0b1110;
    }
    // SAFETY: SSE/SSE2 are part of the x86_64 baseline, so the intrinsics are available on
    // every x86_64 CPU. Here n >= 4: each loop step has c4 + 4 <= n and every offset is at
    // most n (checked above; constants after inlining), so every unaligned load
    // (_mm_loadu_ps needs no alignment) reads within the K = 2n elements.
    unsafe {
        let mut acc = _mm_castsi128_ps(_mm_set1_epi32(-1));
        let mut c = 0;
        while c < n {
            let c4 = if c + 4 > n { n - 4 } else { c };
            let pv = _mm_loadu_ps(p.as_ptr().add(po + c4));
            let qv = _mm_loadu_ps(q.as_ptr().add(qo + c4));
            let rv = _mm_loadu_ps(r.as_ptr().add(ro + c4));
            let sv = _mm_loadu_ps(s.as_ptr().add(so + c4));
            acc = _mm_and_ps(acc, _mm_and_ps(_mm_cmple_ps(pv, qv), _mm_cmple_ps(rv, sv)));
            c += 4;
        }
        _mm_movemask_ps(acc) == 0xF
    }
}

/// [`Dop::depth`] four directions per SSE operation, with [`all_le_sse`]'s overlapping last
/// group (a minimum taken twice is the same minimum).
#[cfg(target_arch = "x86_64")]
#[inline]
fn depth_sse<const K: usize>(a: &[f32; K], b: &[f32; K]) -> f32 {
    use std::arch::x86_64::{
        _mm_cvtss_f32, _mm_loadu_ps, _mm_min_ps, _mm_movehl_ps, _mm_set1_ps, _mm_shuffle_ps,
        _mm_sub_ps,
    };
    let n = K / 2;
    assert!(n >= 4);
    // SAFETY: SSE is part of the x86_64 baseline. Each step has c4 + 4 <= n, so every
    // unaligned load reads within the K = 2n elements.
    unsafe {
        let mut acc = _mm_set1_ps(f32::INFINITY);
        let mut c = 0;
        while c < n {
            let c4 = if c + 4 > n { n - 4 } else { c };
            let a_lo = _mm_loadu_ps(a.as_ptr().add(c4));
            let a_hi = _mm_loadu_ps(a.as_ptr().add(n + c4));
            let b_lo = _mm_loadu_ps(b.as_ptr().add(c4));
            let b_hi = _mm_loadu_ps(b.as_ptr().add(n + c4));
            acc = _mm_min_ps(
                acc,
                _mm_min_ps(_mm_sub_ps(b_hi, a_lo), _mm_sub_ps(a_hi, b_lo)),
            );
            c += 4;
        }
        let m = _mm_min_ps(acc, _mm_movehl_ps(acc, acc));
        let m = _mm_min_ps(m, _mm_shuffle_ps::<0b01>(m, m));
        _mm_cvtss_f32(m)
    }
}

/// [`all_le_sse`] eight `i` per AVX comparison, for `K / 2 >= 8` (k = 18 and 26: two
/// comparisons where SSE needs three and four). The same overlapping last group.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn all_le_avx<const K: usize>(
    p: &[f32; K],
    po: usize,
    q: &[f32; K],
    qo: usize,
    r: &[f32; K],
    ro: usize,
    s: &[f32; K],
    so: usize,
) -> bool {
    use std::arch::x86_64::{
        _CMP_LE_OQ, _mm256_and_ps, _mm256_castsi256_ps, _mm256_cmp_ps, _mm256_loadu_ps,
        _mm256_movemask_ps, _mm256_set1_epi32,
    };
    let n = K / 2;
    assert!(n >= 8 && po.max(qo).max(ro).max(so) <= n);
    // SAFETY: the caller guarantees AVX. Each loop step has c8 + 8 <= n and every offset is
    // at most n (checked above; constants after inlining), so every unaligned load reads
    // within the K = 2n elements.
    unsafe {
        let mut acc = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        let mut c = 0;
        while c < n {
            let c8 = if c + 8 > n { n - 8 } else { c };
            let pv = _mm256_loadu_ps(p.as_ptr().add(po + c8));
            let qv = _mm256_loadu_ps(q.as_ptr().add(qo + c8));
            let rv = _mm256_loadu_ps(r.as_ptr().add(ro + c8));
            let sv = _mm256_loadu_ps(s.as_ptr().add(so + c8));
            acc = _mm256_and_ps(
                acc,
                _mm256_and_ps(
                    _mm256_cmp_ps::<_CMP_LE_OQ>(pv, qv),
                    _mm256_cmp_ps::<_CMP_LE_OQ>(rv, sv),
                ),
            );
            c += 8;
        }
        _mm256_movemask_ps(acc) == 0xFF
    }
}

impl<const K: usize> Dop<K> {
    /// [`Dop::overlaps`] with eight intervals per AVX comparison for k = 18 and 26 (the
    /// SSE form for smaller k), for code compiled with AVX: inlined there, it costs two
    /// comparisons at k = 18 and 26 instead of three and four.
    ///
    /// # Safety
    /// The CPU must support AVX.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    #[inline]
    #[must_use]
    pub(crate) unsafe fn overlaps_avx(&self, other: &Self) -> bool {
        if K >= 16 {
            let n = K / 2;
            // SAFETY: the caller guarantees AVX.
            return unsafe { all_le_avx(&self.b, 0, &other.b, n, &other.b, 0, &self.b, n) };
        }
        self.overlaps(other)
    }
}

/// The form of the k-DOP test a loop is compiled with: [`Narrow`] anywhere, [`Wide`] in
/// code compiled with AVX (the traversal is compiled once per form and picks one per
/// query).
pub(crate) trait OverlapForm: Copy {
    /// Whether `a` and `b` overlap; the same answer as [`Dop::overlaps`].
    fn overlaps<const K: usize>(self, a: &Dop<K>, b: &Dop<K>) -> bool;
}

/// [`Dop::overlaps`] (SSE, the x86_64 baseline, or portable).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Narrow;

impl OverlapForm for Narrow {
    #[inline(always)]
    fn overlaps<const K: usize>(self, a: &Dop<K>, b: &Dop<K>) -> bool {
        a.overlaps(b)
    }
}

/// [`Dop::overlaps_avx`]. A value exists only where the CPU supports AVX ([`Wide::detect`]),
/// so holding one is the proof that the AVX form may run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wide(());

impl Wide {
    /// `Some` if and only if the CPU supports AVX.
    #[inline]
    pub(crate) fn detect() -> Option<Wide> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            return Some(Wide(()));
        }
        None
    }
}

impl OverlapForm for Wide {
    #[inline(always)]
    fn overlaps<const K: usize>(self, a: &Dop<K>, b: &Dop<K>) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: a `Wide` is made only by `Wide::detect`, which checked AVX.
            unsafe { a.overlaps_avx(b) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        a.overlaps(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(s: &mut u64) -> f32 {
        crate::testing::lcg(s) as f32
    }

    fn random_dop<const K: usize>(s: &mut u64) -> Dop<K> {
        let mut b = [0.0f32; K];
        for i in 0..K / 2 {
            let c = lcg(s) * 2.0;
            let w = lcg(s);
            b[i] = c - w;
            b[K / 2 + i] = c + w;
        }
        Dop { b }
    }

    fn agree<const K: usize>() {
        let mut s = 5u64;
        let orders = [OverlapOrder::natural(K), OverlapOrder::diagonals_first(K)];
        let mut hits = 0;
        for _ in 0..20000 {
            let a = random_dop::<K>(&mut s);
            let b = random_dop::<K>(&mut s);
            let expect = (0..K / 2).all(|i| a.lo(i) <= b.hi(i) && b.lo(i) <= a.hi(i));
            assert_eq!(a.overlaps(&b), expect);
            assert_eq!(a.overlaps_scalar(&b), expect);
            // The depth: the least overlap over the directions, computed here from the
            // definition; its sign says whether the intervals all meet.
            let depth = (0..K / 2)
                .map(|i| (b.hi(i) - a.lo(i)).min(a.hi(i) - b.lo(i)))
                .fold(f32::INFINITY, f32::min);
            assert_eq!(a.depth(&b), depth);
            assert_eq!(a.depth_scalar(&b), depth);
            assert_eq!(depth >= 0.0, expect);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx") {
                // SAFETY: AVX is present.
                assert_eq!(unsafe { a.overlaps_avx(&b) }, expect);
            }
            for o in &orders {
                assert_eq!(a.overlaps_ordered(&b, o), expect);
            }
            hits += expect as u32;
        }
        assert!(hits > 0, "no overlapping pairs generated for k = {K}");
        // Containment: b is a copy of a with each bound nudged in, out or left alone, so
        // that every outcome (and exact equality of bounds) occurs.
        let mut inside = 0;
        for _ in 0..20000 {
            let a = random_dop::<K>(&mut s);
            let mut b = a;
            for (i, v) in b.b.iter_mut().enumerate() {
                let out = if i < K / 2 { -0.01 } else { 0.01 };
                match (lcg(&mut s) * 40.0) as u32 {
                    0 => *v += out,
                    1 => *v -= out,
                    _ => {}
                }
            }
            // A nudge can empty a thin b, and everything contains the empty set.
            let empty = (0..K / 2).any(|i| b.lo(i) > b.hi(i));
            let expect = empty || (0..K / 2).all(|i| a.lo(i) <= b.lo(i) && b.hi(i) <= a.hi(i));
            assert_eq!(b.is_empty(), empty);
            assert_eq!(a.contains(&b), expect);
            if !empty {
                assert_eq!(a.contains_scalar(&b), expect);
            }
            inside += expect as u32;
        }
        assert!((1000..19000).contains(&inside), "{inside}");
        assert!(random_dop::<K>(&mut s).contains(&Dop::EMPTY));
        // Touching intervals overlap (closed).
        let mut t = random_dop::<K>(&mut s);
        let u = t;
        for i in 0..K / 2 {
            t.b[K / 2 + i] = u.b[i];
        }
        assert!(t.overlaps(&u) && u.overlaps(&t));
        separated_on_one_axis::<K>(&mut s);
    }

    /// Every form of the test against pairs that overlap on all axes but one (each axis in
    /// turn, from either side), touch on that axis, or carry a NaN there: a form that skips
    /// an axis (a lane group it never loads) answers wrongly for that axis.
    fn separated_on_one_axis<const K: usize>(s: &mut u64) {
        let n = K / 2;
        let forms = |a: &Dop<K>, b: &Dop<K>| {
            let mut v = vec![a.overlaps(b), a.overlaps_scalar(b), b.overlaps(a)];
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx") {
                // SAFETY: AVX is present.
                v.extend(unsafe { [a.overlaps_avx(b), b.overlaps_avx(a)] });
            }
            v
        };
        for i in 0..n {
            let a = random_dop::<K>(s);
            for side in [false, true] {
                let mut b = a;
                let w = a.hi(i) - a.lo(i) + 1.0;
                if side {
                    b.b[i] += w;
                    b.b[n + i] += w;
                } else {
                    b.b[i] -= w;
                    b.b[n + i] -= w;
                }
                assert!(forms(&a, &b).iter().all(|&o| !o), "axis {i} of k = {K}");
                // Touching on axis i: closed intervals meet.
                let mut t = a;
                if side {
                    t.b[i] = a.hi(i);
                    t.b[n + i] = a.hi(i) + 1.0;
                } else {
                    t.b[n + i] = a.lo(i);
                    t.b[i] = a.lo(i) - 1.0;
                }
                assert!(forms(&a, &t).iter().all(|&o| o), "axis {i} of k = {K}");
            }
            let mut z = a;
            z.b[i] = f32::NAN;
            assert!(
                forms(&a, &z).iter().all(|&o| !o),
                "NaN on axis {i} of k = {K}"
            );
        }
    }

    #[test]
    fn simd_scalar_and_ordered_agree() {
        crate::testing::for_each_k!(agree);
    }

    #[test]
    fn orders_are_permutations() {
        for k in [6, 14, 18, 26] {
            let s = OverlapOrder::diagonals_first(k);
            assert!(OverlapOrder::from_indices(k, s.indices()).is_some());
        }
        assert!(OverlapOrder::from_indices(6, &[0, 0, 1]).is_none());
    }
}
