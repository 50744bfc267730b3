//! Refitting one leaf of a deformed object in one pass (Klosowski et al. 1998, §6.1,
//! "Deformable objects"; the 18-DOP's directions as sums and differences of coordinates,
//! §3.3.3). A leaf whose vertices moved is bounded from its distinct corners, its stored
//! bound is re-made (padded by the margin of its own size) when it no longer fits, and its
//! corners are rounded to `f32` for queries that re-bound it. The portable form composes
//! [`Dop::from_points_quick`], [`stale`], [`Dop::padded`] and [`write_points_at`]; for
//! k = 18 an AVX2 kernel does all of it in one loop over the corners and keeps the bound
//! in registers from the projections to the store (through memory, the bound's halves
//! were read back across the stores that wrote them, and the CPU stalled on each). Its
//! bounds, flags and corners are the portable form's bit for bit; other CPUs and k run
//! that form.

use super::deform::stale;
use super::write_points_at;
use crate::dop::Dop;
use glam::DVec3;

/// Refits a leaf whose corners are the vertices `ids` names, its stored bound `dop` and
/// its corners' room `room` (at least `ids.len()` slots; any more get copies of the
/// first): `dop` is re-made as the corners' bound padded by `margin` times its largest box
/// extent when [`stale`] says so. Returns whether it was re-made; the corners' slack
/// `(s, m)` ([`write_points_at`]) goes to `slack`.
#[inline]
pub(super) fn refit_leaf<const K: usize>(
    dop: &mut Dop<K>,
    ids: &[u32],
    vertices: &[DVec3],
    margin: f64,
    room: &mut [[f32; 3]],
    slack: &mut (f64, f64),
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if K == 18 && !ids.is_empty() && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above; k is 18 and `ids` is not empty.
        if let Some(refit) = unsafe { refit_leaf_avx2(dop, ids, vertices, margin, room, slack) } {
            return refit;
        }
    }
    refit_leaf_portable(dop, ids, vertices, margin, room, slack)
}

/// [`refit_leaf`] from the portable pieces.
pub(super) fn refit_leaf_portable<const K: usize>(
    dop: &mut Dop<K>,
    ids: &[u32],
    vertices: &[DVec3],
    margin: f64,
    room: &mut [[f32; 3]],
    slack: &mut (f64, f64),
) -> bool {
    let exact = Dop::<K>::from_points_quick(ids.iter().map(|&v| vertices[v as usize]));
    // `Dop::padded_by_extent`, with the room kept for the look at staleness.
    let pad = (margin * exact.box_extent().max_element()) as f32;
    let refit = stale(dop, &exact, pad);
    if refit {
        *dop = exact.padded(pad);
    }
    *slack = write_points_at(room, ids, vertices);
    refit
}

/// [`refit_leaf`] for k = 18 in AVX2: the same operations as the portable form in the same
/// order, lane by lane, so the same bits. The result comes back in a register and the
/// slack is written where it is kept: a result read back from memory across the stores
/// that wrote it stalls the CPU. `None`, with the bound and the slack untouched (the corners
/// are written), where the corners' bound would be empty (a NaN coordinate): the portable
/// form then does it all.
///
/// # Safety
/// The CPU must support AVX2, `K` must be 18 and `ids` must not be empty.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn refit_leaf_avx2<const K: usize>(
    dop: &mut Dop<K>,
    ids: &[u32],
    vertices: &[DVec3],
    margin: f64,
    room: &mut [[f32; 3]],
    slack: &mut (f64, f64),
) -> Option<bool> {
    use crate::dop::{Extremes8, lengths_f32, widen_down, widen_up, xyz0};
    use crate::exact::EPS;
    use std::arch::x86_64::*;
    assert!(K == 18 && !ids.is_empty() && ids.len() <= room.len());
    // The first eight of the 18-DOP's nine directions in two vectors (`Extremes8`); the
    // ninth, y - z, in a scalar.
    let mut e = Extremes8::new();
    let (mut lo_d, mut hi_d, mut l1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    let abs = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
    let (mut s, mut m) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for (slot, &v) in room.iter_mut().zip(ids) {
        let p = &vertices[v as usize];
        // SAFETY: this kernel runs with AVX2.
        let v = unsafe { xyz0(p) };
        e.take(v);
        let d = p.y - p.z;
        lo_d = if d < lo_d { d } else { lo_d };
        hi_d = if d > hi_d { d } else { hi_d };
        let sum = p.x.abs() + p.y.abs() + p.z.abs();
        l1 = if sum > l1 { sum } else { l1 };
        super::round_point_avx(v, slot, &mut s, &mut m, abs);
    }
    let (count, first) = (ids.len(), room[0]);
    room[count..].fill(first);
    let sm = super::slack_done(super::fold_slack_avx(s, m));
    let Extremes8 {
        lo_a,
        hi_a,
        lo_c,
        hi_c,
    } = e;
    let lo0 = _mm256_cvtsd_f64(lo_a);
    let hi0 = _mm256_cvtsd_f64(hi_a);
    if lo0 > hi0 || lo0.is_nan() || hi0.is_nan() {
        return None;
    }
    // `Dop::from_extremes`: the extremes less (more) the error bound of the largest point,
    // none on x, y and z, rounded to `f32` and widened out.
    let err = 4.0 * EPS * l1;
    let e_a = _mm256_set_pd(err, 0.0, 0.0, 0.0);
    let e_c = _mm256_set1_pd(err);
    let absf = _mm_castsi128_ps(_mm_set1_epi32(i32::MAX));
    let ulp = _mm_set1_ps(1.0 / 8_388_608.0);
    let tiny = _mm_set1_ps(f32::MIN_POSITIVE);
    let widen = |r: __m128| _mm_add_ps(_mm_mul_ps(_mm_and_ps(r, absf), ulp), tiny);
    let down = |r: __m128| _mm_sub_ps(r, widen(r));
    let up = |r: __m128| _mm_add_ps(r, widen(r));
    let la = down(_mm256_cvtpd_ps(_mm256_sub_pd(lo_a, e_a)));
    let lc = down(_mm256_cvtpd_ps(_mm256_sub_pd(lo_c, e_c)));
    let ld = widen_down((lo_d - err) as f32);
    let ha = up(_mm256_cvtpd_ps(_mm256_add_pd(hi_a, e_a)));
    let hc = up(_mm256_cvtpd_ps(_mm256_add_pd(hi_c, e_c)));
    let hd = widen_up((hi_d + err) as f32);
    // The exact bound is never empty here (finite extremes, lo ≤ hi after widening out).
    let mut ext = [0.0f64; 4];
    // SAFETY: four `f64` into an array of four.
    unsafe {
        _mm256_storeu_pd(
            ext.as_mut_ptr(),
            _mm256_sub_pd(_mm256_cvtps_pd(ha), _mm256_cvtps_pd(la)),
        );
    }
    let pad = (margin * DVec3::new(ext[0], ext[1], ext[2]).max_element()) as f32;
    let b = dop.b.as_mut_ptr();
    // SAFETY: `b` holds 18 `f32`: lanes 0..4, 4..8, 9..13 and 13..17 and slots 8 and 17.
    let (sla, slc, sld, sha, shc, shd) = unsafe {
        (
            _mm_loadu_ps(b),
            _mm_loadu_ps(b.add(4)),
            *b.add(8),
            _mm_loadu_ps(b.add(9)),
            _mm_loadu_ps(b.add(13)),
            *b.add(17),
        )
    };
    // `stale`: the box more than LOOSE times the room off, or the bound not containing
    // the exact one.
    let loose = _mm_set1_ps(super::deform::LOOSE * pad);
    let off = _mm_or_ps(
        _mm_cmplt_ps(sla, _mm_sub_ps(la, loose)),
        _mm_cmpgt_ps(sha, _mm_add_ps(ha, loose)),
    );
    let inside = _mm_and_ps(
        _mm_and_ps(_mm_cmple_ps(sla, la), _mm_cmple_ps(ha, sha)),
        _mm_and_ps(_mm_cmple_ps(slc, lc), _mm_cmple_ps(hc, shc)),
    );
    let contains = _mm_movemask_ps(inside) == 0b1111 && sld <= ld && hd <= shd;
    let refit = _mm_movemask_ps(off) & 0b111 != 0 || !contains;
    if refit {
        // `Dop::padded`: by the room times each direction's length.
        let (mut la, mut lc, mut ld, mut ha, mut hc, mut hd) = (la, lc, ld, ha, hc, hd);
        if pad > 0.0 {
            let len = const { lengths_f32(18) };
            let room = _mm_set1_ps(pad);
            let ma = _mm_mul_ps(room, _mm_setr_ps(len[0], len[1], len[2], len[3]));
            let mc = _mm_mul_ps(room, _mm_setr_ps(len[4], len[5], len[6], len[7]));
            let md = pad * len[8];
            (la, lc, ld) = (_mm_sub_ps(la, ma), _mm_sub_ps(lc, mc), ld - md);
            (ha, hc, hd) = (_mm_add_ps(ha, ma), _mm_add_ps(hc, mc), hd + md);
        }
        // SAFETY: as for the loads.
        unsafe {
            _mm_storeu_ps(b, la);
            _mm_storeu_ps(b.add(4), lc);
            *b.add(8) = ld;
            _mm_storeu_ps(b.add(9), ha);
            _mm_storeu_ps(b.add(13), hc);
            *b.add(17) = hd;
        }
    }
    *slack = sm;
    Some(refit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;

    /// The kernel's bounds, flags, corners and slack are the portable form's bit for bit:
    /// random leaves of 1 to 12 corners at every scale, stored bounds that fit, fit
    /// loosely, miss, or are empty, margins of 0 and more, rooms with spare slots.
    #[test]
    fn the_kernel_refits_a_leaf_as_the_portable_form_bit_for_bit() {
        let mut seed = 5u64;
        let mut r = move || lcg(&mut seed);
        let mut compared = 0;
        for case in 0..20_000 {
            let scale = [1e-3, 1.0, 1e3, 1e7][case % 4];
            let vertices: Vec<DVec3> = (0..16)
                .map(|_| DVec3::new(r() - 0.5, r() - 0.5, r() - 0.5) * scale)
                .collect();
            let n = 1 + case % 12;
            let ids: Vec<u32> = (0..n).map(|_| (r() * 16.0) as u32 % 16).collect();
            let margin = [0.0, 0.05, 0.5][case % 3];
            let pts: Vec<DVec3> = ids.iter().map(|&v| vertices[v as usize]).collect();
            let fresh = Dop::<18>::from_points_quick(pts.iter().copied());
            let stored = match case % 5 {
                0 => Dop::EMPTY,
                1 => fresh,
                2 => fresh.padded(scale as f32 * 0.01),
                3 => fresh.padded(scale as f32),
                _ => Dop::from_points_quick([vertices[0] * 2.0, vertices[1]]),
            };
            let spare = case % 3;
            let (mut a, mut b) = (stored, stored);
            let (mut room_a, mut room_b) =
                (vec![[9.0f32; 3]; n + spare], vec![[7.0f32; 3]; n + spare]);
            let (mut slack_a, mut slack_b) = ((1.0, 2.0), (3.0, 4.0));
            let got = refit_leaf(&mut a, &ids, &vertices, margin, &mut room_a, &mut slack_a);
            let want =
                refit_leaf_portable(&mut b, &ids, &vertices, margin, &mut room_b, &mut slack_b);
            assert_eq!(got, want, "case {case}: whether re-made");
            assert_eq!(
                slack_a.0.to_bits(),
                slack_b.0.to_bits(),
                "case {case}: slack"
            );
            assert_eq!(
                slack_a.1.to_bits(),
                slack_b.1.to_bits(),
                "case {case}: magnitude"
            );
            assert_eq!(
                a.b.map(f32::to_bits),
                b.b.map(f32::to_bits),
                "case {case}: bound"
            );
            assert_eq!(
                room_a
                    .as_flattened()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                room_b
                    .as_flattened()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                "case {case}: corners"
            );
            // And the re-made bound holds every corner.
            if got {
                assert!(pts.iter().all(|&p| a.contains_point(p)), "case {case}");
            }
            compared += usize::from(got);
        }
        assert!(compared > 5_000, "most cases re-make the bound: {compared}");
    }
}
