//! The k-DOP of a few points in one pass (Klosowski et al. 1998, §3.3.3: projections on
//! the 18-DOP's directions as sums and differences of coordinates), for bounding a leaf
//! again after its vertices moved (§6.1, "Deformable objects"). For k = 18 an AVX2 kernel
//! projects a point on eight of the nine directions with two vector additions, and for
//! k = 26 on twelve of the thirteen with three, where the portable loop spends a scalar
//! addition and two selections per direction; their results are the portable loop's bit
//! for bit, and CPUs without AVX2 run that loop.

use super::Dop;
use glam::DVec3;

impl<const K: usize> Dop<K> {
    /// [`Dop::from_points_quick`] of the points in a slice, bit for bit, with the AVX2
    /// kernel for k = 18 and 26 where the CPU has AVX2.
    #[inline]
    pub(crate) fn from_slice_quick(points: &[DVec3]) -> Self {
        #[cfg(target_arch = "x86_64")]
        if (K == 18 || K == 26) && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            let (lo, hi, l1) = unsafe { extremes_avx2::<K>(points) };
            return Self::from_extremes(&lo, &hi, l1);
        }
        Self::from_points_quick(points.iter().copied())
    }
}

/// The extremes of the points' projections on the directions of the 18- or 26-DOP (in the
/// order of `project_sums`: x, y, z, for k = 26 then `(x + z) ± y` and `(x - z) ± y`, then
/// the six sums and differences of two coordinates) and their largest 1-norm, computed as
/// `from_points_quick`'s loop does: the same sums in the same order (the corner
/// directions reuse `x + z` and `x - z`, as the loop reuses `s` and `t`), and minima and
/// maxima that keep the old value when the new one is NaN (`vminpd`/`vmaxpd` return their
/// second operand then, as the loop's `if v < lo { v } else { lo }` does).
///
/// # Safety
/// The CPU must support AVX2, and `K` must be 18 or 26.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn extremes_avx2<const K: usize>(points: &[DVec3]) -> ([f64; 13], [f64; 13], f64) {
    use std::arch::x86_64::*;
    debug_assert!(K == 18 || K == 26);
    // Where the six two-coordinate sums start: after x, y, z (and the 26-DOP's corners).
    let six = if K == 26 { 7 } else { 3 };
    let mut lo = [f64::INFINITY; 13];
    let mut hi = [f64::NEG_INFINITY; 13];
    let mut l1 = 0.0f64;
    let inf = _mm256_set1_pd(f64::INFINITY);
    let ninf = _mm256_set1_pd(f64::NEG_INFINITY);
    let mut e = Extremes8::new();
    let (mut lo_w, mut hi_w) = (inf, ninf);
    // Negate lanes 1 and 3: x - y is x + (-y) in IEEE arithmetic, signed zeros included.
    let negate_odd = _mm256_set_pd(-0.0, 0.0, -0.0, 0.0);
    for p in points {
        // SAFETY: this kernel runs with AVX2.
        let v = unsafe { xyz0(p) };
        let c = e.take(v);
        if K == 26 {
            // w = [s + y, s - y, t + y, t - y] with s = x + z and t = x - z from c.
            let sstt = _mm256_permute4x64_pd::<0b11_11_00_00>(c);
            let yyyy = _mm256_permute4x64_pd::<0b01_01_01_01>(v);
            let w = _mm256_add_pd(sstt, _mm256_xor_pd(yyyy, negate_odd));
            lo_w = _mm256_min_pd(w, lo_w);
            hi_w = _mm256_max_pd(w, hi_w);
        }
        let d = p.y - p.z;
        lo[six + 5] = if d < lo[six + 5] { d } else { lo[six + 5] };
        hi[six + 5] = if d > hi[six + 5] { d } else { hi[six + 5] };
        let s = p.x.abs() + p.y.abs() + p.z.abs();
        l1 = if s > l1 { s } else { l1 };
    }
    let (mut la, mut ha) = ([0.0f64; 4], [0.0f64; 4]);
    // SAFETY: every store writes four lanes within its array: `la`/`ha` whole, and
    // `lo`/`hi` at six + 1..six + 5 (at most 8..12) and, for k = 26, 3..7, of 13.
    unsafe {
        _mm256_storeu_pd(la.as_mut_ptr(), e.lo_a);
        _mm256_storeu_pd(ha.as_mut_ptr(), e.hi_a);
        _mm256_storeu_pd(lo.as_mut_ptr().add(six + 1), e.lo_c);
        _mm256_storeu_pd(hi.as_mut_ptr().add(six + 1), e.hi_c);
        if K == 26 {
            _mm256_storeu_pd(lo.as_mut_ptr().add(3), lo_w);
            _mm256_storeu_pd(hi.as_mut_ptr().add(3), hi_w);
        }
    }
    // x, y, z first; x + y is the first of the six sums.
    lo[..3].copy_from_slice(&la[..3]);
    hi[..3].copy_from_slice(&ha[..3]);
    (lo[six], hi[six]) = (la[3], ha[3]);
    (lo, hi, l1)
}

/// The running extremes of points' projections on the first eight directions of the
/// 18-DOP, in two vectors each: `a = [x, y, z, x + y]` (the sum in lane 3 only, so the
/// coordinates stay as given) and `c = [x + z, y + z, x - y, x - z]`, each sum as
/// `project_sums` makes it (x - y is x + (-y) in IEEE arithmetic, signed zeros included),
/// each extreme kept over a NaN as `from_points_quick`'s comparisons keep it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Extremes8 {
    pub(crate) lo_a: std::arch::x86_64::__m256d,
    pub(crate) hi_a: std::arch::x86_64::__m256d,
    pub(crate) lo_c: std::arch::x86_64::__m256d,
    pub(crate) hi_c: std::arch::x86_64::__m256d,
}

#[cfg(target_arch = "x86_64")]
impl Extremes8 {
    /// No point yet: every minimum +∞, every maximum −∞.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn new() -> Self {
        use std::arch::x86_64::*;
        let (inf, ninf) = (
            _mm256_set1_pd(f64::INFINITY),
            _mm256_set1_pd(f64::NEG_INFINITY),
        );
        Extremes8 {
            lo_a: inf,
            hi_a: ninf,
            lo_c: inf,
            hi_c: ninf,
        }
    }

    /// Takes in the point `v` (`[x, y, z, 0]`); returns its `c`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn take(&mut self, v: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m256d {
        use std::arch::x86_64::*;
        let xyzx = _mm256_permute4x64_pd::<0b00_10_01_00>(v);
        let zeros_y = _mm256_permute4x64_pd::<0b01_11_11_11>(v);
        let a = _mm256_blend_pd::<0b1000>(xyzx, _mm256_add_pd(xyzx, zeros_y));
        let xyxx = _mm256_permute4x64_pd::<0b00_00_01_00>(v);
        let zzyz = _mm256_permute4x64_pd::<0b10_01_10_10>(v);
        let negate_hi = _mm256_set_pd(-0.0, -0.0, 0.0, 0.0);
        let c = _mm256_add_pd(xyxx, _mm256_xor_pd(zzyz, negate_hi));
        self.lo_a = _mm256_min_pd(a, self.lo_a);
        self.hi_a = _mm256_max_pd(a, self.hi_a);
        self.lo_c = _mm256_min_pd(c, self.lo_c);
        self.hi_c = _mm256_max_pd(c, self.hi_c);
        c
    }
}

/// `p` as the vector `[x, y, z, 0]`, read without touching memory past it; inlined into
/// the AVX kernels that call it.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn xyz0(p: &DVec3) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    // SAFETY: `DVec3` is three `f64` in a row (`repr(C)`): x and y, then z; the caller
    // vouches for AVX.
    unsafe {
        let (xy, z) = (_mm_loadu_pd(&raw const p.x), _mm_load_sd(&raw const p.z));
        _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(xy), z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;

    /// The slice form (the AVX2 kernel on CPUs that have it) equals the portable loop bit
    /// for bit: random points at every scale, signed zeros, NaN, infinities, repeated and
    /// single points, no points; and on finite points it contains their exact bound.
    #[test]
    fn the_slice_form_is_the_portable_loop_bit_for_bit() {
        slice_form_is_the_loop::<18>();
        slice_form_is_the_loop::<26>();
        // No kernel at k = 14: its run checks the loop's containment alone.
        slice_form_is_the_loop::<14>();
    }

    fn slice_form_is_the_loop<const K: usize>() {
        let mut s = 11u64 ^ K as u64;
        let specials = [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            -1e-300,
        ];
        for case in 0..20_000 {
            let n = case % 40;
            let mut plain = true;
            let mut pts: Vec<DVec3> = (0..n)
                .map(|_| {
                    let mut c = [0.0; 3];
                    for x in &mut c {
                        *x = if lcg(&mut s) < 0.05 {
                            plain = false;
                            specials[(lcg(&mut s) * specials.len() as f64) as usize]
                        } else {
                            (lcg(&mut s) - 0.5) * 10f64.powf(lcg(&mut s) * 16.0 - 8.0)
                        };
                    }
                    DVec3::from_array(c)
                })
                .collect();
            if case % 5 == 0
                && let Some(&first) = pts.first()
            {
                pts.push(first);
            }
            let (fast, portable) = (
                Dop::<K>::from_slice_quick(&pts),
                Dop::<K>::from_points_quick(pts.iter().copied()),
            );
            assert_eq!(
                fast.b.map(f32::to_bits),
                portable.b.map(f32::to_bits),
                "k = {K}, case {case}: {pts:?}"
            );
            // Independently of the loop: finite points lie in it, whose exactly rounded
            // bound (`from_points`, another computation) it contains.
            if plain {
                assert!(
                    fast.contains(&Dop::<K>::from_points(&pts)),
                    "k = {K}, case {case}"
                );
            }
        }
    }
}
