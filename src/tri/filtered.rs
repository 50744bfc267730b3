//! The common case of the exact triangle–triangle test, two planes at a time.
//!
//! Guigue and Devillers (J. Graphics Tools 8(1), 2003, section 3) decide a pair of
//! non-coplanar triangles with the signs of each triangle's corners against the other's
//! plane, then two orientations of permuted corners. The scalar form
//! ([`super::intersect_boxed`]) branches on every sign; on pairs whose outcomes the branch
//! predictor cannot learn, those branches cost more than the arithmetic
//! (`docs/benchmarks.md`). Here:
//!
//! 1. the plane of T2 against T1's corners and the plane of T1 against T2's corners are
//!    one computation in two `f64` lanes ([`Lanes`]), with Shewchuk's certified error bound
//!    for `orient3d` (semi-static: one bound per plane from the corners' largest offsets,
//!    as [`crate::exact::Plane::sides3`]);
//! 2. the Guigue–Devillers permutations are a table lookup on the six sign bits instead of
//!    nested branches;
//! 3. the two final orientations are again one computation in two lanes;
//! 4. a single pair's one unpredictable branch (rejected by a plane?) is taken on the
//!    determinants' sign bits, which are ready before their error bound, and the
//!    certified signs are checked behind it: a mispredicted branch resolves sooner.
//!
//! Whenever a sign is not certified non-zero (touching, coplanar or degenerate triangles,
//! NaN), it answers `None` and the caller runs the full scalar test with its exact
//! fallbacks, so the answer is always the exact one.

use super::Triangle;
use super::lanes::Lanes;
use crate::exact::{FLOOR, O3_ERR_A};
use glam::DVec3;

/// For a 3-bit mask of the corners certified positive (the others certified negative,
/// not all alike): the corner alone on its side, and whether that side is negative.
const fn alone(mask: usize) -> (usize, bool) {
    match mask {
        0b001 => (0, false),
        0b110 => (0, true),
        0b010 => (1, false),
        0b101 => (1, true),
        0b100 => (2, false),
        0b011 => (2, true),
        _ => (0, false), // not a straddling mask; never looked up
    }
}

/// The corner orders `[p1, q1, r1, p2, q2, r2]` (indices into T1 and T2) at which
/// Guigue–Devillers' `check_min_max` runs, for T1's positive-sign mask `m1` (against T2's
/// plane) and T2's `m2` (against T1's plane), both straddling.
const fn order(m1: usize, m2: usize) -> [u8; 6] {
    // T1 rotated so that its lone corner comes first; if that corner is on the negative
    // side, T2's last two corners swap (which flips its orientation).
    let (a1, n1) = alone(m1);
    let mut i1 = [a1, (a1 + 1) % 3, (a1 + 2) % 3];
    let j = if n1 { [0, 2, 1] } else { [0, 1, 2] };
    // T2's mask in that order, then the same rule with the roles exchanged.
    let m2j = ((m2 >> j[0]) & 1) | (((m2 >> j[1]) & 1) << 1) | (((m2 >> j[2]) & 1) << 2);
    let (a2, n2) = alone(m2j);
    let i2 = [j[a2], j[(a2 + 1) % 3], j[(a2 + 2) % 3]];
    if n2 {
        let t = i1[1];
        i1[1] = i1[2];
        i1[2] = t;
    }
    [
        i1[0] as u8,
        i1[1] as u8,
        i1[2] as u8,
        i2[0] as u8,
        i2[1] as u8,
        i2[2] as u8,
    ]
}

/// [`order`] indexed by the six sign bits as the filter produces them: bit `2i` is T1's
/// corner `i` certified positive against T2's plane, bit `2i + 1` is T2's corner `i`
/// certified positive against T1's plane. Only straddling masks are looked up.
static ORDERS: [[u8; 6]; 64] = {
    let mut t = [[0u8; 6]; 64];
    let mut i = 0;
    while i < 64 {
        let m1 = (i & 1) | ((i >> 1) & 2) | ((i >> 2) & 4);
        let m2 = ((i >> 1) & 1) | ((i >> 2) & 2) | ((i >> 3) & 4);
        t[i] = order(m1, m2);
        i += 1;
    }
    t
};

/// Bits `0, 2, 4` of an interleaved sign mask: T1's corners; bits `1, 3, 5`: T2's.
const LANE0: u32 = 0b01_0101;
const LANE1: u32 = 0b10_1010;

/// Bit `m` set iff the interleaved mask `m` holds all three corners of a lane.
const FULL_LANE: u64 = {
    let mut bits = 0u64;
    let mut m = 0;
    while m < 64 {
        if m & LANE0 == LANE0 || m & LANE1 == LANE1 {
            bits |= 1 << m;
        }
        m += 1;
    }
    bits
};

/// Three coordinates, each `L::N` lanes.
#[derive(Clone, Copy)]
struct V<L>([L; 3]);

impl<L: Lanes> V<L> {
    /// Lane `l` holds the point `p(l)`.
    #[inline(always)]
    fn gather(p: impl Fn(usize) -> DVec3) -> Self {
        V([
            L::from_fn(|l| p(l).x),
            L::from_fn(|l| p(l).y),
            L::from_fn(|l| p(l).z),
        ])
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        V([self.0[0] - o.0[0], self.0[1] - o.0[1], self.0[2] - o.0[2]])
    }
}

/// The normal `u x v` of two lane vectors, with the absolute values of the two products in
/// each component (Shewchuk's "permanent" terms).
#[inline(always)]
fn cross<L: Lanes>(u: V<L>, v: V<L>) -> (V<L>, V<L>) {
    let [ux, uy, uz] = u.0;
    let [vx, vy, vz] = v.0;
    let (m1, m2, m3, m4, m5, m6) = (uy * vz, uz * vy, uz * vx, ux * vz, ux * vy, uy * vx);
    (
        V([m1 - m2, m3 - m4, m5 - m6]),
        V([
            m1.abs() + m2.abs(),
            m3.abs() + m4.abs(),
            m5.abs() + m6.abs(),
        ]),
    )
}

/// Bits (lane `i` at bit `i`) of the lanes where `det` is certified positive, and certified
/// negative, given `perm`, the permanent of the determinant (Shewchuk's `errboundA`).
#[inline(always)]
fn signs<L: Lanes>(det: L, perm: L) -> (u32, u32) {
    let bound = L::splat(O3_ERR_A) * perm + L::splat(FLOOR);
    (det.gt(bound), det.neg().gt(bound))
}

/// The most pairs one lane group holds (`L::N / 2`: one for SSE2, two for AVX).
const MAX_GROUP: usize = 2;

/// Stage 1 for a group of `L::N / 2` pairs, `pair(j)` for `j < L::N / 2`: each triangle's
/// corners against the other's plane. Lane `2j` is pair `j`'s T2 plane against T1's
/// corners, lane `2j + 1` the other way. Returns the masks of signs certified positive and
/// certified negative, corner `i` of lane `l` at bit `i * L::N + l`: for two lanes, bit
/// `2i` is T1's corner `i` and bit `2i + 1` T2's, the layout [`ORDERS`] is indexed by
/// ([`interleaved`] gives it for any pair of a group).
#[inline(always)]
fn plane_signs<'t, L: Lanes>(
    pair: impl Fn(usize) -> (&'t Triangle, &'t Triangle),
) -> (Signs, Signs) {
    // Per lane: the triangle whose plane is tested, and the one whose corners are.
    let (t1a, t2a) = pair(0);
    let (t1b, t2b) = pair((L::N / 2).min(MAX_GROUP) - 1);
    let sides = [(t2a, t1a), (t1a, t2a), (t2b, t1b), (t1b, t2b)];
    // The corners a lane tests are its plane's corners in the neighbouring lane.
    // (`map` and `std::array::from_fn` are not inlined here: explicit arrays.)
    let plane = [
        V::<L>::gather(|l| sides[l].0[0]),
        V::<L>::gather(|l| sides[l].0[1]),
        V::<L>::gather(|l| sides[l].0[2]),
    ];
    let a0 = plane[0];
    let (n, perm) = cross(plane[1].sub(a0), plane[2].sub(a0));
    // One bound per lane from the largest offset along each axis (valid for all three
    // corners: the bound grows with |d|). Corner by corner, to keep few values live.
    let mut m = [L::splat(0.0); 3];
    let mut det = [L::splat(0.0); 3];
    for (i, det) in det.iter_mut().enumerate() {
        let d = if L::N == 2 {
            V::gather(|l| sides[l].1[i])
        } else {
            let [x, y, z] = plane[i].0;
            V([x.swap_pairs(), y.swap_pairs(), z.swap_pairs()])
        }
        .sub(a0);
        for (m, d) in m.iter_mut().zip(d.0) {
            *m = m.max(d.abs());
        }
        *det = d.0[0] * n.0[0] + d.0[1] * n.0[1] + d.0[2] * n.0[2];
    }
    let p = m[0] * perm.0[0] + m[1] * perm.0[1] + m[2] * perm.0[2];
    let (mut certified, mut raw) = (Signs::default(), Signs::default());
    for (i, det) in det.into_iter().enumerate() {
        let (sp, sn) = signs(det, p);
        certified.pos |= sp << (i * L::N);
        certified.neg |= sn << (i * L::N);
        raw.neg |= det.sign_bits() << (i * L::N);
    }
    raw.pos = !raw.neg & ((1 << (3 * L::N)) - 1);
    (certified, raw)
}

/// Sign masks of stage 1 (layout as [`plane_signs`] gives them): the lanes positive and
/// negative; certified by the error bound, or raw (the sign bit alone: `+0.0` counts as
/// positive, `-0.0` as negative, and a NaN either way).
#[derive(Clone, Copy, Default)]
struct Signs {
    pos: u32,
    neg: u32,
}

/// Pair `j`'s six bits of a stage-1 mask of `n`-lane groups, in [`ORDERS`]' layout.
#[inline(always)]
fn interleaved(raw: u32, j: usize, n: usize) -> u32 {
    let s = raw >> (2 * j);
    (s & 0b11) | ((s >> (n - 2)) & 0b1100) | ((s >> (2 * n - 4)) & 0b11_0000)
}

/// For a group's stage-1 masks (`n` lanes): per lane `l`, bit `l` of the first result is
/// set when all three corners a lane tests are certified on one side (that pair is
/// rejected), and of the second when all three signs are certified.
#[inline(always)]
fn group_verdict(pos: u32, neg: u32, n: usize) -> (u32, u32) {
    let full = |m: u32| m & (m >> n) & (m >> (2 * n));
    let lanes = (1 << n) - 1;
    ((full(pos) | full(neg)) & lanes, full(pos | neg) & lanes)
}

/// How stage 1 left a pair.
#[inline(always)]
fn verdict(pos: u32, neg: u32) -> (bool, bool) {
    // All three corners of one triangle strictly on one side of the other's plane; else,
    // whether every sign was certified (both triangles then straddle the other's plane).
    let rejected = ((FULL_LANE >> pos) | (FULL_LANE >> neg)) & 1 != 0;
    (rejected, (pos | neg) == 0b11_1111)
}

/// The corners `[p1, q1, r1, p2, q2, r2]` of a straddling pair in Guigue–Devillers' order
/// for its stage-1 positive mask `pos`.
#[inline(always)]
fn ordered(t1: &Triangle, t2: &Triangle, pos: u32) -> [DVec3; 6] {
    let o = &ORDERS[pos as usize & 63];
    [
        t1[o[0] as usize],
        t1[o[1] as usize],
        t1[o[2] as usize],
        t2[o[3] as usize],
        t2[o[4] as usize],
        t2[o[5] as usize],
    ]
}

/// Stage 2 for a group of `L::N / 2` straddling pairs, `c(j)` giving pair `j`'s triangles
/// and stage-1 positive mask: the segments they cut on the planes' common line overlap iff
/// both orientations are `<= 0`. With the corners in Guigue–Devillers' order
/// ([`ordered`]), lane `2j` is pair `j`'s `orient3d(q1, p2, p1, q2)`, lane `2j + 1` its
/// `orient3d(p1, p2, r1, r2)`. Per pair, the two-bit masks of lanes certified positive and
/// certified negative.
#[inline(always)]
fn final_signs<'t, L: Lanes>(
    c: impl Fn(usize) -> (&'t Triangle, &'t Triangle, u32),
) -> [(u32, u32); MAX_GROUP] {
    let (t1a, t2a, ma) = c(0);
    let (t1b, t2b, mb) = c((L::N / 2).min(MAX_GROUP) - 1);
    let pairs = [
        (t1a, t2a, &ORDERS[ma as usize & 63]),
        (t1b, t2b, &ORDERS[mb as usize & 63]),
    ];
    // Corner `k` of the ordered six (`k < 3`: T1's) for lane `l`; the corners are read
    // through the order table, not copied into order.
    let at = |l: usize, k: usize| {
        let (t1, t2, o) = pairs[l / 2];
        if k < 3 {
            t1[o[k] as usize]
        } else {
            t2[o[k] as usize]
        }
    };
    let pick = |l: usize, even: usize, odd: usize| at(l, if l % 2 == 0 { even } else { odd });
    let oa = V::<L>::gather(|l| pick(l, 1, 0));
    let ba = V::gather(|l| at(l, 3)).sub(oa);
    let ca = V::gather(|l| pick(l, 0, 2)).sub(oa);
    let da = V::gather(|l| pick(l, 4, 5)).sub(oa);
    let (n, perm) = cross(ba, ca);
    let det = da.0[0] * n.0[0] + da.0[1] * n.0[1] + da.0[2] * n.0[2];
    let p = da.0[0].abs() * perm.0[0] + da.0[1].abs() * perm.0[1] + da.0[2].abs() * perm.0[2];
    let (pos, neg) = signs(det, p);
    [
        (pos & 0b11, neg & 0b11),
        ((pos >> 2) & 0b11, (neg >> 2) & 0b11),
    ]
}

/// The exact answer for two triangles whose boxes overlap, or `None` when a sign it needs
/// is not certified (then the caller decides by the full test with exact fallbacks).
/// `L` has two lanes.
#[inline(always)]
pub(crate) fn intersect<L: Lanes>(t1: &Triangle, t2: &Triangle) -> Option<bool> {
    let (Signs { pos, neg }, raw) = plane_signs::<L>(|_| (t1, t2));
    // One branch (a bit table), not one per condition; this outcome is as unpredictable as
    // a coin on pairs whose boxes overlap. It is taken on the raw signs, which are known
    // before the error bound is: a mispredicted branch costs less the earlier it resolves.
    // A pair rejected by its raw signs but not by the certified ones (a sign within the
    // bound) is deferred; one rejected by the certified signs is rejected by the raw ones.
    if verdict(raw.pos, raw.neg).0 {
        return verdict(pos, neg).0.then_some(false);
    }
    if (pos | neg) != 0b11_1111 {
        return None; // a zero or uncertain sign: touching, coplanar, degenerate, NaN
    }
    let [(p2, n2), _] = final_signs::<L>(|_| (t1, t2, pos));
    // Decided unless neither lane is certified positive and not both certified negative:
    // rare, so this branch is predictable, and the answer itself is not a branch.
    if (p2 != 0) | (n2 == 0b11) {
        return Some(n2 == 0b11);
    }
    Some(final_exact(&ordered(t1, t2, pos)))
}

/// The most pairs [`batch`] takes at once.
pub(crate) const BATCH: usize = 64;

/// Exact answers for `n <= BATCH` pairs whose boxes overlap, `pair(i)` for `i < n`: bit
/// `i` of the result is set iff pair `i` intersects.
///
/// The same answers as [`intersect`] pair by pair, without its unpredictable branch: stage
/// 1 runs for every pair and writes the straddling ones into a list (a store and an add,
/// whatever the outcome), stage 2 runs on that list, `L::N / 2` pairs at a time. Pairs
/// with an uncertain sign go to the full test with exact fallbacks.
#[inline(always)]
pub(crate) fn batch<'t, L: Lanes>(
    n: usize,
    pair: impl Fn(usize) -> (&'t Triangle, &'t Triangle),
) -> u64 {
    let n = n.min(BATCH);
    let group = L::N / 2;
    let mut straddling = [0u8; BATCH];
    let mut masks = [0u8; BATCH];
    let mut count = 0;
    let mut unsure = 0u64;
    let mut i = 0;
    while i < n {
        let (Signs { pos, neg }, _) = plane_signs::<L>(|j| pair((i + j).min(n - 1)));
        let (rejected, certain) = group_verdict(pos, neg, L::N);
        for j in 0..group {
            let k = i + j;
            if k < n {
                let rejected = (rejected >> (2 * j)) & 0b11 != 0;
                let certain = (certain >> (2 * j)) & 0b11 == 0b11;
                // count <= k < BATCH
                straddling[count % BATCH] = k as u8;
                masks[count % BATCH] = interleaved(pos, j, L::N) as u8;
                count += usize::from(!rejected & certain);
                unsure |= u64::from(!rejected & !certain) << k;
            }
        }
        i += group;
    }
    let mut hits = 0u64;
    let mut s = 0;
    while s < count {
        let at = |j: usize| (s + j).min(count - 1);
        let fin = final_signs::<L>(|j| {
            let (t1, t2) = pair(usize::from(straddling[at(j)]));
            (t1, t2, u32::from(masks[at(j)]))
        });
        for (j, &(pos, neg)) in fin.iter().enumerate().take(group) {
            if s + j < count {
                let k = usize::from(straddling[s + j]);
                let hit = if (pos != 0) | (neg == 0b11) {
                    neg == 0b11
                } else {
                    let (t1, t2) = pair(k);
                    final_exact(&ordered(t1, t2, u32::from(masks[s + j])))
                };
                hits |= u64::from(hit) << k;
            }
        }
        s += group;
    }
    // Touching, coplanar, degenerate or NaN pairs: rare.
    for k in super::set_bits(unsure) {
        let (t1, t2) = pair(k);
        hits |= u64::from(super::intersect_deferred(t1, t2)) << k;
    }
    hits
}

/// The final orientations when the filter could not certify them (an exact touch along the
/// planes' common line, or very close to one).
#[cold]
#[inline(never)]
fn final_exact(&[p1, q1, r1, p2, q2, r2]: &[DVec3; 6]) -> bool {
    use crate::exact::orient3d;
    orient3d(q1, p2, p1, q2) <= 0 && orient3d(p1, p2, r1, r2) <= 0
}

#[cfg(test)]
mod tests {
    use super::super::lanes::Scalar;
    type Scalar2 = Scalar<2>;
    use super::*;
    use crate::oracle::reference_triangles_intersect;
    use crate::testing::lcg;

    /// Structural facts of every straddling entry of the table: each triangle's corners
    /// are a permutation, and each starts with its lone corner. That every entry picks the
    /// right check is tested against the exact reference below, which exercises all 36.
    #[test]
    fn orders_follow_the_case_analysis() {
        for m1 in 1..7 {
            for m2 in 1..7 {
                let o = order(m1, m2);
                let mut a = [o[0], o[1], o[2]];
                let mut b = [o[3], o[4], o[5]];
                let lone1 = alone(m1).0 as u8;
                assert_eq!(a[0], lone1, "T1's lone corner first for {m1:03b}");
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, [0, 1, 2]);
                assert_eq!(b, [0, 1, 2]);
                // T2's first corner is its lone corner against T1's plane.
                let bit = |k: u8| (m2 >> k) & 1;
                let first = bit(o[3]);
                assert!(
                    bit(o[4]) != first && bit(o[5]) != first,
                    "{m1:03b} {m2:03b}"
                );
            }
        }
    }

    fn random_pair(s: &mut u64, scale: f64) -> (Triangle, Triangle) {
        let mut p = || DVec3::new(lcg(s), lcg(s), lcg(s));
        let c = p();
        // Near T1, so that both answers are common.
        let d = c + (p() - 0.5) * (0.5 * scale);
        let t1 = [c, c + (p() - 0.5) * scale, c + (p() - 0.5) * scale];
        let t2 = [d, d + (p() - 0.5) * scale, d + (p() - 0.5) * scale];
        (t1, t2)
    }

    /// The two lane forms agree bit for bit, and whenever they decide, they decide as the
    /// exact big-integer reference does; every one of the 36 straddling sign patterns
    /// (each a different entry of the permutation table) is exercised.
    #[test]
    fn both_lane_forms_agree_with_the_exact_reference() {
        use crate::exact::orient3d;
        let mut s = 5;
        let (mut decided, mut hits) = (0, 0);
        let mut seen = [[false; 8]; 8];
        for i in 0..4_000 {
            let (t1, t2) = random_pair(&mut s, if i % 2 == 0 { 1.0 } else { 0.3 });
            let scalar = intersect::<Scalar2>(&t1, &t2);
            #[cfg(target_arch = "x86_64")]
            assert_eq!(scalar, intersect::<super::super::lanes::Sse2>(&t1, &t2));
            if let Some(hit) = scalar {
                assert_eq!(
                    hit,
                    reference_triangles_intersect(&t1, &t2),
                    "{t1:?} {t2:?}"
                );
                // The full case analysis, which now runs only for special positions, is
                // kept honest on general ones too.
                assert_eq!(
                    hit,
                    super::super::intersect_boxed(&t1, &t2),
                    "{t1:?} {t2:?}"
                );
                decided += 1;
                hits += usize::from(hit);
                // The sign pattern, from the exact predicate.
                let mask = |t: &Triangle, u: &Triangle| {
                    (0..3).fold(0, |m, k| {
                        m | (usize::from(orient3d(u[0], u[1], u[2], t[k]) > 0) << k)
                    })
                };
                seen[mask(&t1, &t2)][mask(&t2, &t1)] = true;
            }
        }
        // Random pairs are almost never in a special position: nearly all are decided here,
        // and both answers occur.
        assert!(decided > 3_900, "{decided}");
        assert!(hits > 100 && hits < decided - 100, "{hits} of {decided}");
        let missing: Vec<(usize, usize)> = (1..7)
            .flat_map(|a| (1..7).map(move |b| (a, b)))
            .filter(|&(a, b)| !seen[a][b])
            .collect();
        assert!(
            missing.is_empty(),
            "sign patterns never exercised: {missing:?}"
        );
    }

    /// The batch forms (two and four lanes, scalar, SSE2 and AVX) agree with each other
    /// bit for bit and with the exact reference pair by pair, on batches of every length
    /// up to 64 mixing general, touching, coplanar and degenerate pairs (so that all three
    /// routes of a batch, rejected, straddling and deferred, meet in one call).
    #[test]
    fn batches_agree_with_the_pairwise_test_and_the_reference() {
        let mut s = 21;
        let mut special = 0;
        for len in 0..=BATCH {
            let pairs: Vec<(Triangle, Triangle)> = (0..len)
                .map(|i| {
                    let (t1, mut t2) = random_pair(&mut s, if i % 3 == 0 { 0.3 } else { 1.0 });
                    match i % 7 {
                        // Share a corner, or lie in T1's plane.
                        5 => t2[0] = t1[1],
                        6 => {
                            let n = (t1[1] - t1[0]).cross(t1[2] - t1[0]);
                            t2 = t2.map(|p| p - n * ((p - t1[0]).dot(n) / n.length_squared()));
                        }
                        _ => {}
                    }
                    (t1, t2)
                })
                .collect();
            let get = |j: usize| (&pairs[j].0, &pairs[j].1);
            let want = (0..len).fold(0u64, |m, j| {
                m | (u64::from(reference_triangles_intersect(&pairs[j].0, &pairs[j].1)) << j)
            });
            special += (0..len)
                .filter(|&j| intersect::<Scalar2>(&pairs[j].0, &pairs[j].1).is_none())
                .count();
            assert_eq!(batch::<Scalar2>(len, get), want, "length {len}");
            assert_eq!(batch::<Scalar<4>>(len, get), want, "length {len}");
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(batch::<super::super::lanes::Sse2>(len, get), want);
                if std::arch::is_x86_feature_detected!("avx") {
                    // SAFETY: the CPU has AVX.
                    let avx = unsafe { super::super::batch_avx(len, get) };
                    assert_eq!(avx, want, "length {len}");
                }
            }
        }
        assert!(special > 100, "deferred pairs exercised: {special}");
    }

    /// `intersecting_pairs` over more than one chunk, with pairs whose boxes miss: the
    /// indices of exactly the reference's intersecting pairs, in order.
    #[test]
    fn intersecting_pairs_lists_the_reference_hits_in_order() {
        let mut s = 33;
        let pairs: Vec<(Triangle, Triangle)> = (0..300)
            .map(|i| {
                let (t1, t2) = random_pair(&mut s, 1.0);
                // Every fifth pair moved apart: boxes disjoint.
                let t2 = if i % 5 == 0 {
                    t2.map(|p| p + DVec3::splat(9.0))
                } else {
                    t2
                };
                (t1, t2)
            })
            .collect();
        let want: Vec<usize> = (0..pairs.len())
            .filter(|&i| reference_triangles_intersect(&pairs[i].0, &pairs[i].1))
            .collect();
        assert!(want.len() > 20 && want.len() < 200, "{}", want.len());
        let mut got = vec![usize::MAX]; // appended to, not cleared
        crate::intersecting_pairs(&pairs, &mut got);
        assert_eq!(got[0], usize::MAX);
        assert_eq!(got[1..], want[..]);
    }

    /// Pairs that cross only barely, so that the final orientations are near zero and the
    /// plane signs near their bounds: every decided answer must still be exact.
    #[test]
    fn near_touching_pairs_are_exact_or_deferred() {
        let mut s = 9;
        for _ in 0..3_000 {
            let (t1, mut t2) = random_pair(&mut s, 1.0);
            // Slide T2 so that one of its corners lands within a few ulps of T1's plane.
            let n = (t1[1] - t1[0]).cross(t1[2] - t1[0]);
            let k = (lcg(&mut s) * 3.0) as usize;
            let off = (t2[k] - t1[0]).dot(n) / n.length_squared();
            let jitter = (lcg(&mut s) - 0.5) * 1e-15;
            t2 = t2.map(|p| p - n * (off + jitter));
            let got = intersect::<Scalar2>(&t1, &t2);
            #[cfg(target_arch = "x86_64")]
            assert_eq!(got, intersect::<super::super::lanes::Sse2>(&t1, &t2));
            if let Some(hit) = got {
                assert_eq!(
                    hit,
                    reference_triangles_intersect(&t1, &t2),
                    "{t1:?} {t2:?}"
                );
            }
        }
    }

    #[test]
    fn special_positions_are_deferred_not_guessed() {
        let a = [DVec3::ZERO, DVec3::X, DVec3::Y];
        // Coplanar overlap, a shared corner, a NaN corner.
        let coplanar = [
            DVec3::new(0.2, 0.2, 0.0),
            DVec3::new(2.0, 0.2, 0.0),
            DVec3::Y,
        ];
        let corner = [
            DVec3::X,
            DVec3::new(2.0, 0.0, 1.0),
            DVec3::new(2.0, 1.0, -1.0),
        ];
        let nan = [DVec3::new(f64::NAN, 0.0, 0.0), DVec3::X, DVec3::Z];
        // A corner on a's face and the other two above it: every raw sign of b against
        // a's plane is "positive" (the zero, +0.0, has a clear sign bit), so the raw-sign
        // branch rejects, and the certified signs must send the touching pair on to the
        // exact test. Mirrored below a, the zero is "positive" beside two negatives: not
        // rejected, and deferred as uncertain.
        let above = [
            DVec3::new(0.2, 0.2, 0.0),
            DVec3::new(0.2, 0.2, 1.0),
            DVec3::new(0.3, 0.3, 1.0),
        ];
        let below = above.map(|p| DVec3::new(p.x, p.y, -p.z));
        for b in [above, below] {
            assert_eq!(intersect::<Scalar2>(&a, &b), None, "{b:?}");
            #[cfg(target_arch = "x86_64")]
            assert_eq!(
                intersect::<super::super::lanes::Sse2>(&a, &b),
                None,
                "{b:?}"
            );
            assert!(crate::triangles_intersect(&a, &b), "{b:?}");
        }
        for b in [coplanar, corner, nan] {
            assert_eq!(intersect::<Scalar2>(&a, &b), None, "{b:?}");
        }
    }
}
