//! k-DOP overlap: `K / 2` interval tests (Klosowski et al. 1998, §4.4).
//!
//! The paper tests the intervals one by one and asks in which order to test them so that a
//! separating direction is found early. Today a branchless test of all intervals at once is
//! cheaper than any early exit for k ≥ 14 (`docs/benchmarks.md`, "Overlap order"), so
//! [`Dop::overlaps`] compares four intervals per SSE instruction; [`Dop::overlaps_ordered`]
//! keeps the paper's early-exit form for the measurement.

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
    /// Branchless; on x86_64 four intervals per SSE comparison (about 1–2 ns for K = 18,
    /// see `docs/benchmarks.md`).
    #[inline]
    #[must_use]
    pub fn overlaps(&self, other: &Self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            if K >= 8 {
                return overlaps_sse(&self.b, &other.b);
            }
        }
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

/// Four intervals per comparison; the last group of four overlaps the previous one when
/// `K / 2` is not a multiple of four (testing an interval twice changes nothing).
#[cfg(target_arch = "x86_64")]
#[inline]
fn overlaps_sse<const K: usize>(a: &[f32; K], b: &[f32; K]) -> bool {
    use std::arch::x86_64::{
        _mm_and_ps, _mm_castsi128_ps, _mm_cmple_ps, _mm_loadu_ps, _mm_movemask_ps, _mm_set1_epi32,
    };
    let n = K / 2;
    debug_assert!(n >= 4);
    // SAFETY: SSE/SSE2 are part of the x86_64 baseline, so the intrinsics are available on
    // every x86_64 CPU. Each loop step has s + 4 <= n and n + s + 4 <= 2n = K, so all four
    // unaligned loads (_mm_loadu_ps needs no alignment) read inside the K-element arrays.
    unsafe {
        let mut acc = _mm_castsi128_ps(_mm_set1_epi32(-1));
        let mut c = 0;
        while c < n {
            let s = if c + 4 > n { n - 4 } else { c };
            let alo = _mm_loadu_ps(a.as_ptr().add(s));
            let ahi = _mm_loadu_ps(a.as_ptr().add(n + s));
            let blo = _mm_loadu_ps(b.as_ptr().add(s));
            let bhi = _mm_loadu_ps(b.as_ptr().add(n + s));
            acc = _mm_and_ps(
                acc,
                _mm_and_ps(_mm_cmple_ps(alo, bhi), _mm_cmple_ps(blo, ahi)),
            );
            c += 4;
        }
        _mm_movemask_ps(acc) == 0xF
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
            for o in &orders {
                assert_eq!(a.overlaps_ordered(&b, o), expect);
            }
            hits += expect as u32;
        }
        assert!(hits > 0, "no overlapping pairs generated for k = {K}");
        // Touching intervals overlap (closed).
        let mut t = random_dop::<K>(&mut s);
        let u = t;
        for i in 0..K / 2 {
            t.b[K / 2 + i] = u.b[i];
        }
        assert!(t.overlaps(&u) && u.overlaps(&t));
    }

    #[test]
    fn simd_scalar_and_ordered_agree() {
        agree::<6>();
        agree::<14>();
        agree::<18>();
        agree::<26>();
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
