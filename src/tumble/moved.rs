//! Which vertices a deformation moved (Klosowski et al. 1998, §6.1, "Deformable objects":
//! only what moved is refit). [`FlyingObject::deform`](super::FlyingObject::deform) reads
//! the given vertices beside the stored ones a word of 64 at a time and learns, per word,
//! which vertices differ in some bit (so that the stored vertices end up the given ones),
//! which are bad (not finite, or beyond [`MAX_COORDINATE`]) and the largest coordinate
//! magnitude. The AVX2 kernel compares four vertices (twelve coordinates, three vector
//! registers) at a time; its moved and bad bits are the portable loop's exactly, and so is
//! its magnitude wherever no vertex is bad. CPUs without AVX2 run that loop.

use crate::MAX_COORDINATE;
use crate::mesh::point_in_range;
use glam::DVec3;

/// What one word of up to 64 vertices holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Word {
    /// Bit `k`: vertex `k` differs from the stored one in some bit.
    pub(super) moved: u64,
    /// Bit `k`: vertex `k` is not finite, or has a coordinate beyond [`MAX_COORDINATE`].
    pub(super) bad: u64,
    /// The largest coordinate magnitude over the word; only meaningful when no vertex is
    /// bad (the two kernels may differ on a vertex with both NaN and infinite coordinates).
    pub(super) magnitude: f64,
}

/// [`Word`] of the given vertices `new` against the stored ones `old` (as many, at most
/// 64), with the AVX2 kernel where the CPU has AVX2.
#[inline]
pub(super) fn scan(new: &[DVec3], old: &[DVec3]) -> Word {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { scan_avx2(new, old) };
    }
    scan_portable(new, old)
}

/// [`scan`] one vertex at a time.
fn scan_portable(new: &[DVec3], old: &[DVec3]) -> Word {
    assert!(new.len() == old.len() && new.len() <= 64);
    let mut word = Word {
        moved: 0,
        bad: 0,
        magnitude: 0.0,
    };
    for (k, (n, o)) in new.iter().zip(old).enumerate() {
        word.bad |= u64::from(!point_in_range(*n)) << k;
        word.magnitude = word.magnitude.max(n.abs().max_element());
        let same = n.to_array().map(f64::to_bits) == o.to_array().map(f64::to_bits);
        word.moved |= u64::from(!same) << k;
    }
    word
}

/// [`scan_portable`] four vertices at a time: their twelve coordinates are three vectors,
/// compared with the stored ones as integers (bit for bit, as `to_bits` does), their
/// magnitudes against the bound (NaN fails `<=`, as in [`point_in_range`]) and into the
/// running maximum (which matters only when no coordinate is bad). The vertices past the
/// last four go through the portable loop.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2(new: &[DVec3], old: &[DVec3]) -> Word {
    use std::arch::x86_64::*;
    assert!(new.len() == old.len() && new.len() <= 64);
    let quads = new.len() / 4;
    // `DVec3` is three `f64` with no padding: a quad's coordinates are 12 in a row.
    let (pn, po) = (new.as_ptr().cast::<f64>(), old.as_ptr().cast::<f64>());
    let sign = _mm256_set1_pd(-0.0);
    let bound = _mm256_set1_pd(MAX_COORDINATE);
    let mut most = _mm256_setzero_pd();
    let (mut moved, mut bad) = (0u64, 0u64);
    for q in 0..quads {
        let (mut differ, mut out) = (0u32, 0u32);
        for r in 0..3 {
            // SAFETY: quad `q` has 12 coordinates from `12 q` on, within both slices.
            let (a, b) = unsafe {
                (
                    _mm256_loadu_pd(pn.add(12 * q + 4 * r)),
                    _mm256_loadu_pd(po.add(12 * q + 4 * r)),
                )
            };
            let same = _mm256_cmpeq_epi64(_mm256_castpd_si256(a), _mm256_castpd_si256(b));
            differ |= (!_mm256_movemask_pd(_mm256_castsi256_pd(same)) as u32 & 0xF) << (4 * r);
            let abs = _mm256_andnot_pd(sign, a);
            let inside = _mm256_cmp_pd::<_CMP_LE_OQ>(abs, bound);
            out |= (!_mm256_movemask_pd(inside) as u32 & 0xF) << (4 * r);
            most = _mm256_max_pd(abs, most);
        }
        moved |= u64::from(per_vertex(differ)) << (4 * q);
        bad |= u64::from(per_vertex(out)) << (4 * q);
    }
    let mut lanes = [0.0f64; 4];
    // SAFETY: four lanes into four `f64`.
    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), most) };
    let mut word = Word {
        moved,
        bad,
        magnitude: lanes[0].max(lanes[1]).max(lanes[2].max(lanes[3])),
    };
    let done = 4 * quads;
    if done < new.len() {
        let tail = scan_portable(&new[done..], &old[done..]);
        word.moved |= tail.moved << done;
        word.bad |= tail.bad << done;
        word.magnitude = word.magnitude.max(tail.magnitude);
    }
    word
}

/// Twelve bits, three per vertex (its coordinates), to four: a vertex's bit is set when
/// one of its coordinates' is.
#[inline(always)]
fn per_vertex(bits: u32) -> u32 {
    let any = bits | (bits >> 1) | (bits >> 2);
    (any & 1) | ((any >> 2) & 2) | ((any >> 4) & 4) | ((any >> 6) & 8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Rng;

    /// A coordinate that is often the stored one, or differs from it only in sign or last
    /// bit, and (`bad`) sometimes not finite or out of range.
    fn coordinate(rng: &mut Rng, stored: f64, bad: bool) -> f64 {
        match (rng.f64() * 12.0) as u32 {
            7 | 8 if !bad => stored * 2.0,
            0..=4 => stored,
            5 => -stored,
            6 => f64::from_bits(stored.to_bits() ^ 1),
            7 => [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][(rng.f64() * 3.0) as usize % 3],
            8 => MAX_COORDINATE * if rng.f64() < 0.5 { 1.0 } else { 1.0 + 1e-15 },
            9 => [0.0, -0.0][(rng.f64() * 2.0) as usize % 2],
            _ => (rng.f64() - 0.5) * 100.0,
        }
    }

    #[test]
    fn per_vertex_sets_a_vertex_for_any_of_its_coordinates() {
        for v in 0..4 {
            for c in 0..3 {
                assert_eq!(
                    per_vertex(1 << (3 * v + c)),
                    1 << v,
                    "vertex {v} coordinate {c}"
                );
            }
        }
        assert_eq!(per_vertex(0), 0);
        assert_eq!(per_vertex(0xFFF), 0xF);
    }

    #[test]
    fn the_portable_scan_reads_each_vertex_as_the_point_check_does() {
        let stored = [DVec3::new(1.0, 2.0, 3.0), DVec3::ZERO, DVec3::splat(-4.0)];
        let given = [
            DVec3::new(1.0, 2.0, 3.0),
            DVec3::new(0.0, -0.0, 0.0),
            DVec3::new(-4.0, f64::NAN, -4.0),
        ];
        let word = scan_portable(&given, &stored);
        // -0.0 is another bit pattern than 0.0: the stored vertex must become the given one.
        assert_eq!(word.moved, 0b110);
        assert_eq!(word.bad, 0b100);
        assert_eq!(scan_portable(&given[..2], &stored[..2]).magnitude, 3.0);
    }

    #[test]
    fn the_avx2_scan_equals_the_portable_one() {
        #[cfg(target_arch = "x86_64")]
        {
            if !std::arch::is_x86_feature_detected!("avx2") {
                eprintln!("SKIPPED: no AVX2 on this CPU");
                return;
            }
            let mut rng = Rng::new(11);
            let mut compared = 0;
            for case in 0..4000 {
                let n = case % 65;
                let old: Vec<DVec3> = (0..n)
                    .map(|_| DVec3::from_array([0; 3].map(|_| (rng.f64() - 0.5) * 1e3)))
                    .collect();
                let new: Vec<DVec3> = old
                    .iter()
                    .map(|o| {
                        DVec3::from_array(
                            o.to_array().map(|c| coordinate(&mut rng, c, case % 2 == 0)),
                        )
                    })
                    .collect();
                let portable = scan_portable(&new, &old);
                // SAFETY: the CPU has AVX2, checked above.
                let wide = unsafe { scan_avx2(&new, &old) };
                assert_eq!(wide.moved, portable.moved, "case {case}");
                assert_eq!(wide.bad, portable.bad, "case {case}");
                if portable.bad != 0 {
                    continue;
                }
                assert_eq!(
                    wide.magnitude.to_bits(),
                    portable.magnitude.to_bits(),
                    "case {case}"
                );
                compared += 1;
            }
            assert!(compared >= 2000, "only {compared} magnitudes compared");
        }
    }
}
