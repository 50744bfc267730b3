//! Two `f64` lanes, so that the filtered triangle test ([`super::filtered`]) is written
//! once and runs either as SSE2 (`__m128d`, the x86_64 baseline) or as plain scalars.
//!
//! The two forms give bit-identical results: every operation is a single IEEE-754
//! operation per lane (no fused multiply-add), and `max` is defined by a comparison in both
//! (`maxpd` returns its second operand when the first is not greater, NaN included).

use std::ops::{Add, Mul, Sub};

/// Two `f64` values computed on side by side.
pub(crate) trait Lanes:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    /// `[lane0, lane1]`.
    fn new(lane0: f64, lane1: f64) -> Self;
    /// Both lanes `v`.
    fn splat(v: f64) -> Self;
    /// `|x|` per lane (clears the sign bit).
    fn abs(self) -> Self;
    /// `if self > o { self } else { o }` per lane.
    fn max(self, o: Self) -> Self;
    /// Bit `i` set iff `self > o` in lane `i` (false when either is NaN).
    fn gt(self, o: Self) -> u32;
    /// `-self` per lane (flips the sign bit).
    fn neg(self) -> Self;
}

/// The portable form: two scalars. Tests run the filtered test through it beside SSE2.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))] // x86_64: tests only
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scalar2([f64; 2]);

impl Add for Scalar2 {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Scalar2([self.0[0] + o.0[0], self.0[1] + o.0[1]])
    }
}

impl Sub for Scalar2 {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Scalar2([self.0[0] - o.0[0], self.0[1] - o.0[1]])
    }
}

impl Mul for Scalar2 {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Scalar2([self.0[0] * o.0[0], self.0[1] * o.0[1]])
    }
}

impl Lanes for Scalar2 {
    #[inline(always)]
    fn new(lane0: f64, lane1: f64) -> Self {
        Scalar2([lane0, lane1])
    }
    #[inline(always)]
    fn splat(v: f64) -> Self {
        Scalar2([v, v])
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Scalar2([self.0[0].abs(), self.0[1].abs()])
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        let m = |a: f64, b: f64| if a > b { a } else { b };
        Scalar2([m(self.0[0], o.0[0]), m(self.0[1], o.0[1])])
    }
    #[inline(always)]
    fn gt(self, o: Self) -> u32 {
        u32::from(self.0[0] > o.0[0]) | (u32::from(self.0[1] > o.0[1]) << 1)
    }
    #[inline(always)]
    fn neg(self) -> Self {
        Scalar2([-self.0[0], -self.0[1]])
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use sse2::Sse2;

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::Lanes;
    use std::arch::x86_64::{
        __m128d, _mm_add_pd, _mm_andnot_pd, _mm_cmpgt_pd, _mm_max_pd, _mm_movemask_pd, _mm_mul_pd,
        _mm_set_pd, _mm_set1_pd, _mm_sub_pd, _mm_xor_pd,
    };
    use std::ops::{Add, Mul, Sub};

    /// One SSE2 register of two `f64`.
    ///
    /// SAFETY (every block below): SSE2 is part of the x86_64 baseline, so the intrinsics
    /// are always available; they compute on registers only and touch no memory.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Sse2(__m128d);

    impl Add for Sse2 {
        type Output = Self;
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_add_pd(self.0, o.0) })
        }
    }

    impl Sub for Sse2 {
        type Output = Self;
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_sub_pd(self.0, o.0) })
        }
    }

    impl Mul for Sse2 {
        type Output = Self;
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_mul_pd(self.0, o.0) })
        }
    }

    impl Lanes for Sse2 {
        #[inline(always)]
        fn new(lane0: f64, lane1: f64) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_set_pd(lane1, lane0) })
        }
        #[inline(always)]
        fn splat(v: f64) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_set1_pd(v) })
        }
        #[inline(always)]
        fn abs(self) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_andnot_pd(_mm_set1_pd(-0.0), self.0) })
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            // maxpd(a, b) is `a > b ? a : b` per lane, as Scalar2::max.
            // SAFETY: see the type.
            Sse2(unsafe { _mm_max_pd(self.0, o.0) })
        }
        #[inline(always)]
        fn gt(self, o: Self) -> u32 {
            // SAFETY: see the type.
            unsafe { _mm_movemask_pd(_mm_cmpgt_pd(self.0, o.0)) as u32 }
        }
        #[inline(always)]
        fn neg(self) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_xor_pd(_mm_set1_pd(-0.0), self.0) })
        }
    }
}
