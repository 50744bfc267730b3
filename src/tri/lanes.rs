//! `f64` lanes, so that the filtered triangle test ([`super::filtered`]) is written once and
//! runs as SSE2 (`__m128d`, two lanes, the x86_64 baseline), as AVX (`__m256d`, four lanes:
//! two triangle pairs at once, for batches) or as plain scalars.
//!
//! All forms give bit-identical results: every operation is a single IEEE-754 operation per
//! lane (no fused multiply-add), and `max` is defined by a comparison in all of them
//! (`maxpd` returns its second operand when the first is not greater, NaN included).

use std::ops::{Add, Mul, Sub};

/// `N` `f64` values computed on side by side.
pub(crate) trait Lanes:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    /// The number of lanes (2 or 4).
    const N: usize;
    /// Lane `i` is `f(i)`.
    fn from_fn(f: impl FnMut(usize) -> f64) -> Self;
    /// Both lanes `v`.
    fn splat(v: f64) -> Self;
    /// `|x|` per lane (clears the sign bit).
    fn abs(self) -> Self;
    /// `if self > o { self } else { o }` per lane.
    fn max(self, o: Self) -> Self;
    /// Bit `i` set iff `self > o` in lane `i` (false when either is NaN); no other bits.
    fn gt(self, o: Self) -> u32;
    /// Bit `i` set iff lane `i`'s sign bit is set (negative values, `-0.0`, and NaNs
    /// with the bit set); no other bits.
    fn sign_bits(self) -> u32;
    /// `-self` per lane (flips the sign bit).
    fn neg(self) -> Self;
    /// Lanes `2j` and `2j + 1` exchanged, for every `j`.
    fn swap_pairs(self) -> Self;
}

/// The portable form: `N` scalars. Tests run the filtered test through it beside SSE2 and
/// AVX.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))] // x86_64: tests only
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scalar<const N: usize>([f64; N]);

impl<const N: usize> Add for Scalar<N> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Scalar(std::array::from_fn(|i| self.0[i] + o.0[i]))
    }
}

impl<const N: usize> Sub for Scalar<N> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Scalar(std::array::from_fn(|i| self.0[i] - o.0[i]))
    }
}

impl<const N: usize> Mul for Scalar<N> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Scalar(std::array::from_fn(|i| self.0[i] * o.0[i]))
    }
}

impl<const N: usize> Lanes for Scalar<N> {
    const N: usize = N;
    #[inline(always)]
    fn from_fn(f: impl FnMut(usize) -> f64) -> Self {
        Scalar(std::array::from_fn(f))
    }
    #[inline(always)]
    fn splat(v: f64) -> Self {
        Scalar([v; N])
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Scalar(self.0.map(f64::abs))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        Scalar(std::array::from_fn(|i| {
            if self.0[i] > o.0[i] {
                self.0[i]
            } else {
                o.0[i]
            }
        }))
    }
    #[inline(always)]
    fn gt(self, o: Self) -> u32 {
        (0..N).fold(0, |m, i| m | (u32::from(self.0[i] > o.0[i]) << i))
    }
    #[inline(always)]
    fn sign_bits(self) -> u32 {
        (0..N).fold(0, |m, i| m | (u32::from(self.0[i].is_sign_negative()) << i))
    }
    #[inline(always)]
    fn neg(self) -> Self {
        Scalar(self.0.map(|v| -v))
    }
    #[inline(always)]
    fn swap_pairs(self) -> Self {
        Scalar(std::array::from_fn(|i| self.0[i ^ 1]))
    }
}

/// `+`, `-` and `*` for a one-register lane type `$t` from its intrinsics (each one IEEE-754
/// operation per lane). Every use states why the intrinsics are available at its type.
#[cfg(target_arch = "x86_64")]
macro_rules! register_ops {
    ($t:ident, $add:ident, $sub:ident, $mul:ident) => {
        impl std::ops::Add for $t {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                // SAFETY: see the type.
                $t(unsafe { $add(self.0, o.0) })
            }
        }
        impl std::ops::Sub for $t {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                // SAFETY: see the type.
                $t(unsafe { $sub(self.0, o.0) })
            }
        }
        impl std::ops::Mul for $t {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                // SAFETY: see the type.
                $t(unsafe { $mul(self.0, o.0) })
            }
        }
    };
}
#[cfg(target_arch = "x86_64")]
use register_ops;

/// [`Lanes`]' `splat`, `abs`, `max` and `neg` for a one-register lane type `$t` from its
/// intrinsics, inside its `impl Lanes`. `max` is `a > b ? a : b` per lane (`maxpd`
/// returns its second operand when the first is not greater, NaN included), as
/// [`Scalar`]'s.
#[cfg(target_arch = "x86_64")]
macro_rules! register_methods {
    ($t:ident, $set1:ident, $andnot:ident, $max:ident, $xor:ident) => {
        #[inline(always)]
        fn splat(v: f64) -> Self {
            // SAFETY: see the type.
            $t(unsafe { $set1(v) })
        }
        #[inline(always)]
        fn abs(self) -> Self {
            // SAFETY: see the type.
            $t(unsafe { $andnot($set1(-0.0), self.0) })
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            // SAFETY: see the type.
            $t(unsafe { $max(self.0, o.0) })
        }
        #[inline(always)]
        fn neg(self) -> Self {
            // SAFETY: see the type.
            $t(unsafe { $xor($set1(-0.0), self.0) })
        }
    };
}
#[cfg(target_arch = "x86_64")]
use register_methods;

#[cfg(target_arch = "x86_64")]
pub(crate) use avx::Avx4;
#[cfg(target_arch = "x86_64")]
pub(crate) use sse2::Sse2;

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::Lanes;
    use std::arch::x86_64::{
        __m128d, _mm_add_pd, _mm_andnot_pd, _mm_cmpgt_pd, _mm_max_pd, _mm_movemask_pd, _mm_mul_pd,
        _mm_set_pd, _mm_set1_pd, _mm_shuffle_pd, _mm_sub_pd, _mm_xor_pd,
    };

    /// One SSE2 register of two `f64`.
    ///
    /// SAFETY (every block below): SSE2 is part of the x86_64 baseline, so the intrinsics
    /// are always available; they compute on registers only and touch no memory.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Sse2(__m128d);

    super::register_ops!(Sse2, _mm_add_pd, _mm_sub_pd, _mm_mul_pd);

    impl Lanes for Sse2 {
        super::register_methods!(Sse2, _mm_set1_pd, _mm_andnot_pd, _mm_max_pd, _mm_xor_pd);
        const N: usize = 2;
        #[inline(always)]
        fn from_fn(mut f: impl FnMut(usize) -> f64) -> Self {
            let (lane0, lane1) = (f(0), f(1));
            // SAFETY: see the type.
            Sse2(unsafe { _mm_set_pd(lane1, lane0) })
        }
        #[inline(always)]
        fn gt(self, o: Self) -> u32 {
            // SAFETY: see the type.
            unsafe { _mm_movemask_pd(_mm_cmpgt_pd(self.0, o.0)) as u32 }
        }
        #[inline(always)]
        fn sign_bits(self) -> u32 {
            // SAFETY: see the type.
            unsafe { _mm_movemask_pd(self.0) as u32 }
        }
        #[inline(always)]
        fn swap_pairs(self) -> Self {
            // SAFETY: see the type.
            Sse2(unsafe { _mm_shuffle_pd::<0b01>(self.0, self.0) })
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use super::Lanes;
    use std::arch::x86_64::{
        __m256d, _CMP_GT_OQ, _mm256_add_pd, _mm256_andnot_pd, _mm256_cmp_pd, _mm256_max_pd,
        _mm256_movemask_pd, _mm256_mul_pd, _mm256_permute_pd, _mm256_set_pd, _mm256_set1_pd,
        _mm256_sub_pd, _mm256_xor_pd,
    };

    /// One AVX register of four `f64`.
    ///
    /// SAFETY (every block below): values of this type are made and used only inside
    /// functions compiled with `#[target_feature(enable = "avx")]` that are called after
    /// `is_x86_feature_detected!("avx")` (`tri::batch_avx`). The methods
    /// are always inlined into those functions; the intrinsics compute on registers only.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx4(__m256d);

    super::register_ops!(Avx4, _mm256_add_pd, _mm256_sub_pd, _mm256_mul_pd);

    impl Lanes for Avx4 {
        super::register_methods!(
            Avx4,
            _mm256_set1_pd,
            _mm256_andnot_pd,
            _mm256_max_pd,
            _mm256_xor_pd
        );
        const N: usize = 4;
        #[inline(always)]
        fn from_fn(mut f: impl FnMut(usize) -> f64) -> Self {
            let (l0, l1, l2, l3) = (f(0), f(1), f(2), f(3));
            // SAFETY: see the type.
            Avx4(unsafe { _mm256_set_pd(l3, l2, l1, l0) })
        }
        #[inline(always)]
        fn gt(self, o: Self) -> u32 {
            // SAFETY: see the type.
            unsafe { _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(self.0, o.0)) as u32 }
        }
        #[inline(always)]
        fn sign_bits(self) -> u32 {
            // SAFETY: see the type.
            unsafe { _mm256_movemask_pd(self.0) as u32 }
        }
        #[inline(always)]
        fn swap_pairs(self) -> Self {
            // SAFETY: see the type.
            Avx4(unsafe { _mm256_permute_pd::<0b0101>(self.0) })
        }
    }
}
