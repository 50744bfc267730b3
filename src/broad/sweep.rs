//! The sweep (I-COLLIDE's sweep-and-prune, Cohen et al. 1995, §4.2, within grid rows):
//! each row's entries in order of lower x bound, each against those after it that start
//! before it ends; a pair that overlaps is reported by its home row only (the row of the
//! lower corner of the two boxes' intersection in y and z, which both boxes were entered
//! in: the row that is, in z and in y, the lower corner's row of one box or the other,
//! which two bits of each entry tell).
//!
//! Candidates are compared eight at a time, every test of a lane without a branch, from
//! the columns of [`Rows`]: with AVX2 one compare instruction per bound, or as eight
//! scalars (the portable form, which the tests compare with the other bit for bit).
//!
//! A row where few boxes changed since its last sweep is not swept whole
//! ([`sweep_fresh`]): its pairs of two unchanged boxes are those of the last sweep, kept
//! by the caller, and only the changed boxes' entries look for their pairs, after them in
//! the row as a probe does and before them as far as the row's widest entry reaches back
//! (temporal coherence, as in I-COLLIDE, applied to the pairs as well as the order).

use super::Cols;
use super::place::HOME;

/// Candidates compared at a time.
pub(super) const LANES: usize = 8;

/// One entry as the sweep compares the entries after it with it.
#[derive(Clone, Copy, Debug)]
struct Probe {
    /// Its lower x bound: candidates before it in the row that end before it are out.
    lx: f32,
    /// Its upper x bound: candidates starting after it are out.
    hx: f32,
    lo_y: f32,
    hi_y: f32,
    lo_z: f32,
    hi_z: f32,
    /// Its home bits (`row & HOME`).
    home: u32,
    proxy: u32,
}

impl Probe {
    #[inline(always)]
    fn of(r: &Cols, i: usize) -> Probe {
        Probe {
            lx: r.lo[0][i],
            hx: r.hi[0][i],
            lo_y: r.lo[1][i],
            hi_y: r.hi[1][i],
            lo_z: r.lo[2][i],
            hi_z: r.hi[2][i],
            home: r.row[i] & HOME,
            proxy: r.proxy[i],
        }
    }
}

/// A chunk's pairs: the first `n` of a buffer written by index. The buffer keeps its
/// length between sweeps, so that making room for the next sweep's pairs does not zero
/// again what the last one wrote.
#[derive(Clone, Debug, Default)]
pub(super) struct Pairs {
    pub(super) buf: Vec<(u32, u32)>,
    pub(super) n: usize,
}

impl Pairs {
    /// The pairs.
    #[inline]
    pub(super) fn as_slice(&self) -> &[(u32, u32)] {
        &self.buf[..self.n]
    }

    /// Number of pairs.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.n
    }

    /// Bytes held (capacity).
    pub(super) fn bytes(&self) -> usize {
        self.buf.capacity() * 8
    }

    /// Makes the buffer at least `len` pairs long and eight lanes more.
    pub(super) fn lengthen(&mut self, len: usize) {
        if self.buf.len() < len + LANES {
            let to = (len + LANES).max(2 * self.buf.len());
            self.buf.resize(to, (0, 0));
        }
    }
}

/// The pairs of a chunk being swept, written by index into a buffer kept at least eight
/// pairs longer than what is written (so that eight lanes are stored without a test).
pub(super) struct Found<'a> {
    pairs: &'a mut Pairs,
    n: usize,
}

impl<'a> Found<'a> {
    /// Pairs written over `pairs`, from its start.
    pub(super) fn new(pairs: &'a mut Pairs) -> Self {
        Found { pairs, n: 0 }
    }

    /// Room for `more` pairs and eight lanes beyond them.
    #[inline(always)]
    fn room(&mut self, more: usize) {
        if self.pairs.buf.len() < self.n + more + LANES {
            self.grow(more);
        }
    }

    /// Number of pairs written.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.n
    }

    /// Writes those of `pairs` that `keep` keeps, in their order.
    #[inline]
    pub(super) fn keep_from(&mut self, pairs: &[(u32, u32)], keep: impl Fn(u32, u32) -> bool) {
        self.room(pairs.len());
        let buf = &mut self.pairs.buf;
        for &(a, b) in pairs {
            buf[self.n] = (a, b);
            self.n += usize::from(keep(a, b));
        }
    }

    /// Writes the pairs of `a` with the candidates `j + l` for the set bits `l` of `m`.
    #[inline(always)]
    fn push_lanes(&mut self, a: u32, ids: &[u32], j: usize, mut m: u32) {
        while m != 0 {
            let b = ids[j + m.trailing_zeros() as usize];
            self.pairs.buf[self.n] = (a.min(b), a.max(b));
            self.n += 1;
            m &= m - 1;
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, more: usize) {
        self.pairs.lengthen(self.n + more);
    }

    /// Ends the pairs at those written.
    pub(super) fn finish(self) {
        self.pairs.n = self.n;
    }
}

/// Where `id` is first in `ids`: eight at a time compared at once, with AVX2 (`kernel`) in
/// one instruction (a row's ids or a large box's list run to hundreds or thousands, and a
/// search one by one does not vectorise).
pub(super) fn find(kernel: Kernel, ids: &[u32], id: u32) -> Option<usize> {
    let _ = kernel;
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Avx2 {
        // SAFETY: `Kernel::Avx2` is only made after the CPU was found to run AVX2.
        return unsafe { find_avx2(ids, id) };
    }
    let mut blocks = ids.chunks_exact(LANES);
    for (k, block) in blocks.by_ref().enumerate() {
        if block.iter().fold(false, |hit, &p| hit | (p == id)) {
            return block.iter().position(|&p| p == id).map(|j| k * LANES + j);
        }
    }
    let tail = blocks.remainder();
    tail.iter()
        .position(|&p| p == id)
        .map(|j| ids.len() - tail.len() + j)
}

/// [`find`] with AVX2: one compare and one mask for eight ids, two blocks a round.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn find_avx2(ids: &[u32], id: u32) -> Option<usize> {
    use std::arch::x86_64::{
        __m256i, _mm256_castsi256_ps, _mm256_cmpeq_epi32, _mm256_loadu_si256, _mm256_movemask_ps,
        _mm256_or_si256, _mm256_set1_epi32,
    };
    let want = _mm256_set1_epi32(id as i32);
    let p = ids.as_ptr();
    let hits = |i: usize| {
        // SAFETY: callers keep i + 8 ≤ ids.len(); the load is unaligned.
        let v = unsafe { _mm256_loadu_si256(p.add(i).cast::<__m256i>()) };
        _mm256_cmpeq_epi32(v, want)
    };
    let mask = |m| _mm256_movemask_ps(_mm256_castsi256_ps(m)) as u32;
    let mut i = 0;
    while i + 2 * LANES <= ids.len() {
        let (a, b) = (hits(i), hits(i + LANES));
        if mask(_mm256_or_si256(a, b)) != 0 {
            let m = mask(a) | mask(b) << LANES;
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 2 * LANES;
    }
    if i + LANES <= ids.len() {
        let m = mask(hits(i));
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += LANES;
    }
    ids[i..].iter().position(|&p| p == id).map(|j| i + j)
}

/// Drops from `pairs` (compacted to the front, in their order) those with a member in
/// `ids`; returns how many stay. Eight pairs at a time are compared with every id at once
/// (with AVX2, two compares per id), and a block where none is met is kept without looking
/// at its pairs one by one.
pub(super) fn drop_pairs_of(kernel: Kernel, pairs: &mut [(u32, u32)], ids: &[u32]) -> usize {
    match kernel {
        Kernel::Scalar => drop_pairs_with(pairs, ids, block_meets_scalar),
        // SAFETY: `Kernel::Avx2` is only made after the CPU was found to run AVX2.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { drop_pairs_of_avx2(pairs, ids) },
    }
}

/// [`drop_pairs_of`] with `block_meets` telling whether a block of eight pairs has a
/// member in `ids`.
#[inline(always)]
fn drop_pairs_with(
    pairs: &mut [(u32, u32)],
    ids: &[u32],
    block_meets: impl Fn(&[(u32, u32); LANES], &[u32]) -> bool,
) -> usize {
    let meets = |&(a, b): &(u32, u32)| ids.iter().any(|&d| a == d || b == d);
    let (len, mut n, mut i) = (pairs.len(), 0, 0);
    while i + LANES <= len {
        let block: &[(u32, u32); LANES] = pairs[i..i + LANES].try_into().expect("eight pairs");
        if block_meets(block, ids) {
            for k in i..i + LANES {
                pairs[n] = pairs[k];
                n += usize::from(!meets(&pairs[k]));
            }
        } else {
            if n != i {
                // Forward: each pair is read before a write reaches its place.
                pairs.copy_within(i..i + LANES, n);
            }
            n += LANES;
        }
        i += LANES;
    }
    for k in i..len {
        pairs[n] = pairs[k];
        n += usize::from(!meets(&pairs[k]));
    }
    n
}

/// Whether a pair of `block` has a member in `ids`, as eight scalar lanes per id.
#[inline(always)]
fn block_meets_scalar(block: &[(u32, u32); LANES], ids: &[u32]) -> bool {
    let mut hit = false;
    for &d in ids {
        for &(a, b) in block {
            hit |= (a == d) | (b == d);
        }
    }
    hit
}

/// [`drop_pairs_with`] with the block test in AVX2: the block's sixteen ids in two
/// vectors, compared with each of `ids` broadcast.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn drop_pairs_of_avx2(pairs: &mut [(u32, u32)], ids: &[u32]) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi32, _mm256_loadu_si256, _mm256_or_si256, _mm256_set1_epi32,
        _mm256_setzero_si256, _mm256_testz_si256,
    };
    drop_pairs_with(pairs, ids, |block, ids| {
        let p = block.as_ptr().cast::<__m256i>();
        // SAFETY: the block is eight pairs of two `u32`, 64 bytes: two unaligned loads.
        let (lo, hi) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
        let mut hit = _mm256_setzero_si256();
        for &d in ids {
            let d = _mm256_set1_epi32(d as i32);
            hit = _mm256_or_si256(
                hit,
                _mm256_or_si256(_mm256_cmpeq_epi32(lo, d), _mm256_cmpeq_epi32(hi, d)),
            );
        }
        _mm256_testz_si256(hit, hit) == 0
    })
}

/// How eight candidates are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// Eight scalar lanes: any machine.
    Scalar,
    /// One AVX2 instruction per bound.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// Every form this CPU runs, the scalar one first (tests compare them).
    #[cfg(test)]
    pub(super) fn all() -> Vec<Kernel> {
        let mut kernels = vec![Kernel::Scalar];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            kernels.push(Kernel::Avx2);
        }
        kernels
    }

    /// The fastest form this CPU runs.
    pub(super) fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Kernel::Avx2;
        }
        Kernel::Scalar
    }
}

/// Writes to `out` every pair whose home is the row of entries `s..e` of `rows`, each as
/// `(smaller id, larger id)`, in the order of the row; returns the candidates compared.
pub(super) fn sweep_row(kernel: Kernel, rows: Cols, s: usize, e: usize, out: &mut Found) -> u64 {
    match kernel {
        Kernel::Scalar => sweep_row_with(rows, s, e, out, lanes_scalar),
        // SAFETY: `Kernel::Avx2` is only made after the CPU was found to run AVX2.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { sweep_row_avx2(rows, s, e, out) },
    }
}

/// The sweep of one row with `lanes` comparing eight candidates (those past the columns'
/// end compared as scalars).
#[inline(always)]
fn sweep_row_with(
    rows: Cols,
    s: usize,
    e: usize,
    out: &mut Found,
    lanes: impl Fn(&Cols, usize, &Probe) -> u32,
) -> u64 {
    let n = rows.len();
    let mut compared = 0;
    for i in s..e {
        let a = Probe::of(&rows, i);
        // Entry i meets at most the rest of the row.
        out.room(e - i);
        let mut j = i + 1;
        while j < e {
            let left = e - j;
            let mut m = if j + LANES <= n {
                lanes(&rows, j, &a)
            } else {
                lanes_scalar(&rows, j, &a)
            };
            if left < LANES {
                m &= (1 << left) - 1;
            }
            compared += left.min(LANES) as u64;
            out.push_lanes(a.proxy, rows.proxy, j, m);
            if row_done(&rows, j, left, a.hx) {
                break;
            }
            j += LANES;
        }
    }
    compared
}

/// Whether no candidate after the eight from `j` (`left` of the row from `j` on) can meet
/// a probe ending at `hx`: the row ascends in lower x, so past a candidate that starts
/// after the probe ends none is left.
#[inline(always)]
fn row_done(rows: &Cols, j: usize, left: usize, hx: f32) -> bool {
    left <= LANES || rows.lo[0][j + LANES - 1] > hx
}

/// Writes to `out` the pairs whose home is the row of entries `s..e` of `rows` and that
/// have a member at one of the positions set in `fresh` (a bit per entry of `rows`): the
/// entries of the boxes changed since the row's last sweep. The row's pairs of two
/// unchanged boxes are not written (they are the last sweep's). `width` is the row's
/// largest x-extent. A fresh entry meets every entry after it, as a probe of
/// [`sweep_row`] does, and the unchanged ones before it, so each pair is written once.
/// Returns the candidates compared.
pub(super) fn sweep_fresh(
    kernel: Kernel,
    rows: Cols,
    s: usize,
    e: usize,
    fresh: &[u64],
    width: f32,
    out: &mut Found,
) -> u64 {
    let row = Fresh {
        s,
        e,
        bits: fresh,
        width,
    };
    match kernel {
        Kernel::Scalar => sweep_fresh_with(rows, &row, out, |&a| {
            let lanes = move |j, left| {
                if left {
                    lanes_left_scalar(&rows, j, &a)
                } else {
                    lanes_scalar(&rows, j, &a)
                }
            };
            let store = move |out: &mut Found, j, m| out.push_lanes(a.proxy, rows.proxy, j, m);
            (lanes, store)
        }),
        // SAFETY: `Kernel::Avx2` is only made after the CPU was found to run AVX2.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { sweep_fresh_avx2(rows, &row, out) },
    }
}

/// A row to sweep for its fresh entries' pairs ([`sweep_fresh`]).
struct Fresh<'a> {
    s: usize,
    e: usize,
    bits: &'a [u64],
    width: f32,
}

impl Fresh<'_> {
    /// Bit `l` set where entry `j + l` is fresh.
    #[inline(always)]
    fn lanes(&self, j: usize) -> u32 {
        let w = j / 64;
        let two =
            u128::from(self.bits[w]) | u128::from(self.bits.get(w + 1).copied().unwrap_or(0)) << 64;
        ((two >> (j % 64)) as u32) & 0xFF
    }

    /// The fresh entries of the row, ascending.
    #[inline(always)]
    fn entries(&self) -> impl Iterator<Item = usize> + '_ {
        let (s, e) = (self.s, self.e);
        (s / 64..e.div_ceil(64)).flat_map(move |w| {
            let (from, to) = (s.max(w * 64) - w * 64, e.min(w * 64 + 64) - w * 64);
            let within = (u64::MAX << from) & (u64::MAX >> (64 - to));
            let mut word = self.bits[w] & within;
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let b = word.trailing_zeros() as usize;
                    word &= word - 1;
                    w * 64 + b
                })
            })
        })
    }
}

/// [`sweep_fresh`] with `probe(a)` giving, for the fresh entry `a`, the kernel's
/// `lanes(j, left)`, comparing eight candidates from `j` with it (those before it when
/// `left`, as [`lanes_left_scalar`]; those after it otherwise, as [`lanes_scalar`]), and
/// `store(out, j, m)`, writing its pairs with the lanes `m` from `j`. Both are called
/// only where eight lanes from `j` are in the columns; past their end the lanes are
/// compared and written as scalars.
#[inline(always)]
fn sweep_fresh_with<L, S>(
    rows: Cols,
    row: &Fresh,
    out: &mut Found,
    probe: impl Fn(&Probe) -> (L, S),
) -> u64
where
    L: Fn(usize, bool) -> u32,
    S: Fn(&mut Found, usize, u32),
{
    let n = rows.len();
    let (s, e) = (row.s, row.e);
    assert!(e <= n);
    let mut compared = 0;
    for p in row.entries() {
        let a = Probe::of(&rows, p);
        let (lanes, store) = probe(&a);
        out.room(e - s);
        let mut j = p + 1;
        while j < e {
            let left = e - j;
            let m = if j + LANES <= n {
                lanes(j, false)
            } else {
                lanes_scalar(&rows, j, &a)
            };
            let m = m & ((1 << left.min(LANES)) - 1);
            compared += left.min(LANES) as u64;
            if j + LANES <= n {
                store(out, j, m);
            } else {
                out.push_lanes(a.proxy, rows.proxy, j, m);
            }
            if row_done(&rows, j, left, a.hx) {
                break;
            }
            j += LANES;
        }
        let stop = super::reach(a.lx, row.width);
        let mut end = p;
        while end > s {
            let w = end.saturating_sub(LANES).max(s);
            let m = if w + LANES <= n {
                lanes(w, true)
            } else {
                lanes_left_scalar(&rows, w, &a)
            };
            // Fresh entries before the probe meet it in their own scan.
            let m = m & !row.lanes(w) & ((1 << (end - w)) - 1);
            compared += (end - w) as u64;
            if w + LANES <= n {
                store(out, w, m);
            } else {
                out.push_lanes(a.proxy, rows.proxy, w, m);
            }
            if rows.lo[0][w] < stop {
                break;
            }
            end = w;
        }
    }
    compared
}

/// Bit `l` set where candidate `j + l`, before the probe `a` in the row, meets it: ends at
/// or after its lower x bound and overlaps it in y and z, and the pair's home is this row;
/// lanes past the columns' end are clear.
#[inline(always)]
fn lanes_left_scalar(r: &Cols, j: usize, a: &Probe) -> u32 {
    let mut m = 0;
    for l in 0..LANES.min(r.len().saturating_sub(j)) {
        let b = j + l;
        let keep = (a.lx <= r.hi[0][b])
            & (a.lo_y <= r.hi[1][b])
            & (r.lo[1][b] <= a.hi_y)
            & (a.lo_z <= r.hi[2][b])
            & (r.lo[2][b] <= a.hi_z)
            & ((r.row[b] | a.home) & HOME == HOME);
        m |= u32::from(keep) << l;
    }
    m
}

/// Bit `l` set where candidate `j + l` meets `a` in x (starting before it ends), y and z,
/// and the pair's home is this row; lanes past the columns' end are clear.
#[inline(always)]
fn lanes_scalar(r: &Cols, j: usize, a: &Probe) -> u32 {
    let mut m = 0;
    for l in 0..LANES.min(r.len().saturating_sub(j)) {
        let b = j + l;
        let keep = (r.lo[0][b] <= a.hx)
            & (a.lo_y <= r.hi[1][b])
            & (r.lo[1][b] <= a.hi_y)
            & (a.lo_z <= r.hi[2][b])
            & (r.lo[2][b] <= a.hi_z)
            & ((r.row[b] | a.home) & HOME == HOME);
        m |= u32::from(keep) << l;
    }
    m
}

/// Writes the pairs of the probe `aid` (its id in every lane) with the candidates
/// `j + l` for the set bits `l` of `m` to `out` (a `Found` with room for eight pairs from
/// `out.n` on), from the ids at `ids` (eight from `j` readable): the kept lanes' pairs
/// packed to the front by a permutation per mask and all eight stored, no branch on which
/// lanes were kept. Unsafe: the caller guarantees the reads and the room, and AVX2.
#[cfg(target_arch = "x86_64")]
macro_rules! store_packed {
    ($out:expr, $ids:expr, $j:expr, $m:expr, $aid:expr) => {{
        use std::arch::x86_64::{
            _mm256_loadu_si256, _mm256_max_epu32, _mm256_min_epu32, _mm256_permute2x128_si256,
            _mm256_permutevar8x32_epi32, _mm256_storeu_si256, _mm256_unpackhi_epi32,
            _mm256_unpacklo_epi32,
        };
        let b = _mm256_loadu_si256($ids.add($j).cast());
        let p = _mm256_loadu_si256(PACK[$m as usize].as_ptr().cast());
        let lo = _mm256_permutevar8x32_epi32(_mm256_min_epu32(b, $aid), p);
        let hi = _mm256_permutevar8x32_epi32(_mm256_max_epu32(b, $aid), p);
        let (l, h) = (_mm256_unpacklo_epi32(lo, hi), _mm256_unpackhi_epi32(lo, hi));
        let dst = $out.pairs.buf.as_mut_ptr().add($out.n).cast::<u32>();
        _mm256_storeu_si256(dst.cast(), _mm256_permute2x128_si256::<0x20>(l, h));
        _mm256_storeu_si256(dst.add(8).cast(), _mm256_permute2x128_si256::<0x31>(l, h));
        $out.n += $m.count_ones() as usize;
    }};
}

/// [`sweep_row_with`] with [`lanes_scalar`] done by AVX2: one load and one compare per
/// bound for eight candidates, the columns' addresses and the probe's broadcasts held in
/// registers across the row.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sweep_row_avx2(rows: Cols, s: usize, e: usize, out: &mut Found) -> u64 {
    use std::arch::x86_64::{
        _CMP_LE_OQ, _mm256_and_ps, _mm256_and_si256, _mm256_castsi256_ps, _mm256_cmp_ps,
        _mm256_cmpeq_epi32, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_movemask_ps,
        _mm256_or_si256, _mm256_set1_epi32, _mm256_set1_ps,
    };
    let n = rows.len();
    assert!(e <= n && rows.lo.iter().chain(&rows.hi).all(|c| c.len() == n) && rows.row.len() == n);
    let (lx, ly, hy) = (
        rows.lo[0].as_ptr(),
        rows.lo[1].as_ptr(),
        rows.hi[1].as_ptr(),
    );
    let (lz, hz, row) = (rows.lo[2].as_ptr(), rows.hi[2].as_ptr(), rows.row.as_ptr());
    let ids = rows.proxy.as_ptr();
    let home = _mm256_set1_epi32(HOME as i32);
    let le = |x, y| _mm256_cmp_ps::<_CMP_LE_OQ>(x, y);
    let mut compared = 0;
    for i in s..e {
        let a = Probe::of(&rows, i);
        out.room(e - i);
        let (ahx, aly, ahy) = (
            _mm256_set1_ps(a.hx),
            _mm256_set1_ps(a.lo_y),
            _mm256_set1_ps(a.hi_y),
        );
        let (alz, ahz) = (_mm256_set1_ps(a.lo_z), _mm256_set1_ps(a.hi_z));
        let ahome = _mm256_set1_epi32(a.home as i32);
        let aid = _mm256_set1_epi32(a.proxy as i32);
        let mut j = i + 1;
        while j < e {
            let left = e - j;
            let mut m = if j + LANES <= n {
                // SAFETY: every column holds `n` values, and lanes j..j + 8 are below `n`.
                let (x, y, z, h) = unsafe {
                    let x = le(_mm256_loadu_ps(lx.add(j)), ahx);
                    let y = _mm256_and_ps(
                        le(aly, _mm256_loadu_ps(hy.add(j))),
                        le(_mm256_loadu_ps(ly.add(j)), ahy),
                    );
                    let z = _mm256_and_ps(
                        le(alz, _mm256_loadu_ps(hz.add(j))),
                        le(_mm256_loadu_ps(lz.add(j)), ahz),
                    );
                    let r = _mm256_loadu_si256(row.add(j).cast());
                    let h =
                        _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_or_si256(r, ahome), home), home);
                    (x, y, z, h)
                };
                let m = _mm256_and_ps(
                    _mm256_and_ps(x, y),
                    _mm256_and_ps(z, _mm256_castsi256_ps(h)),
                );
                _mm256_movemask_ps(m) as u32
            } else {
                lanes_scalar(&rows, j, &a)
            };
            if left < LANES {
                m &= (1 << left) - 1;
            }
            compared += left.min(LANES) as u64;
            if j + LANES <= n {
                // SAFETY: `ids` holds `n` values and j + 8 ≤ n; `out` has room for eight
                // pairs from `out.n` on.
                unsafe { store_packed!(out, ids, j, m, aid) };
            } else {
                out.push_lanes(a.proxy, rows.proxy, j, m);
            }
            if row_done(&rows, j, left, a.hx) {
                break;
            }
            j += LANES;
        }
    }
    compared
}

/// [`sweep_fresh_with`] with the lanes compared by AVX2 as in [`sweep_row_avx2`]: the
/// columns' addresses and each probe's broadcasts held in registers across its scans.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sweep_fresh_avx2(rows: Cols, row: &Fresh, out: &mut Found) -> u64 {
    use std::arch::x86_64::{
        _CMP_LE_OQ, _mm256_and_ps, _mm256_and_si256, _mm256_castsi256_ps, _mm256_cmp_ps,
        _mm256_cmpeq_epi32, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_movemask_ps,
        _mm256_or_si256, _mm256_set1_epi32, _mm256_set1_ps,
    };
    let n = rows.len();
    assert!(rows.lo.iter().chain(&rows.hi).all(|c| c.len() == n) && rows.row.len() == n);
    let ([lx, ly, lz], [hx, hy, hz]) = (rows.lo.map(<[f32]>::as_ptr), rows.hi.map(<[f32]>::as_ptr));
    let (keys, ids) = (rows.row.as_ptr(), rows.proxy.as_ptr());
    let home = _mm256_set1_epi32(HOME as i32);
    let le = |x, y| _mm256_cmp_ps::<_CMP_LE_OQ>(x, y);
    sweep_fresh_with(rows, row, out, |a| {
        let (alx, ahx) = (_mm256_set1_ps(a.lx), _mm256_set1_ps(a.hx));
        let (aly, ahy) = (_mm256_set1_ps(a.lo_y), _mm256_set1_ps(a.hi_y));
        let (alz, ahz) = (_mm256_set1_ps(a.lo_z), _mm256_set1_ps(a.hi_z));
        let ahome = _mm256_set1_epi32(a.home as i32);
        let aid = _mm256_set1_epi32(a.proxy as i32);
        let lanes = move |j: usize, left: bool| {
            assert!(j + LANES <= n);
            // SAFETY: every column holds `n` values, and lanes j..j + 8 are below `n`.
            unsafe {
                let x = if left {
                    le(alx, _mm256_loadu_ps(hx.add(j)))
                } else {
                    le(_mm256_loadu_ps(lx.add(j)), ahx)
                };
                let y = _mm256_and_ps(
                    le(aly, _mm256_loadu_ps(hy.add(j))),
                    le(_mm256_loadu_ps(ly.add(j)), ahy),
                );
                let z = _mm256_and_ps(
                    le(alz, _mm256_loadu_ps(hz.add(j))),
                    le(_mm256_loadu_ps(lz.add(j)), ahz),
                );
                let r = _mm256_loadu_si256(keys.add(j).cast());
                let h = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_or_si256(r, ahome), home), home);
                let m = _mm256_and_ps(
                    _mm256_and_ps(x, y),
                    _mm256_and_ps(z, _mm256_castsi256_ps(h)),
                );
                _mm256_movemask_ps(m) as u32
            }
        };
        let store = move |out: &mut Found, j: usize, m: u32| {
            assert!(j + LANES <= n);
            // SAFETY: eight ids from `j` are read; `sweep_fresh_with` made room in `out`
            // for eight pairs.
            unsafe { store_packed!(out, ids, j, m, aid) };
        };
        (lanes, store)
    })
}

/// For each mask of eight lanes, the kept lanes in order and then the others: the
/// permutation that packs a mask's lanes to the front.
#[cfg(target_arch = "x86_64")]
static PACK: [[u32; LANES]; 256] = {
    let mut t = [[0; LANES]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut k, mut l) = (0, 0);
        while l < LANES {
            if (m >> l) & 1 == 1 {
                t[m][k] = l as u32;
                k += 1;
            }
            l += 1;
        }
        m += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broad::place::KEY;
    use crate::broad::{Entry, Rows};
    use crate::testing::lcg;

    /// Random rows of one key each, sorted as the broad phase keeps them, with equal
    /// bounds, points, infinite bounds and both home bits in every combination.
    fn random_rows(seed: u64) -> Rows {
        let mut s = seed;
        let mut r = Rows::default();
        let mut key = 0;
        for _ in 0..40 {
            key += 1 + (lcg(&mut s) * 3.0) as u32;
            let mut row: Vec<Entry> = (0..(lcg(&mut s) * 60.0) as usize)
                .map(|i| {
                    let c = [0, 1, 2].map(|_| (lcg(&mut s) * 8.0) as f32);
                    let h = [0, 1, 2].map(|_| match (lcg(&mut s) * 12.0) as u32 {
                        0 => 0.0,
                        1 => f32::INFINITY,
                        2 => 0.25,
                        _ => (lcg(&mut s) * 1.5) as f32,
                    });
                    let home = ((lcg(&mut s) * 4.0) as u32) << 30;
                    Entry {
                        lo: [0, 1, 2].map(|k| c[k] - h[k]),
                        hi: [0, 1, 2].map(|k| c[k] + h[k]),
                        proxy: i as u32 * 7 + 3,
                        row: (key & KEY) | home,
                    }
                })
                .collect();
            row.sort_by(|a, b| a.lo[0].total_cmp(&b.lo[0]).then(a.proxy.cmp(&b.proxy)));
            r.rows.push(crate::broad::Row {
                key,
                start: r.count() as u32,
                width: 0.0,
            });
            for e in &row {
                r.push(e);
            }
        }
        r.rows.push(crate::broad::Row {
            key: u32::MAX,
            start: r.count() as u32,
            width: 0.0,
        });
        r
    }

    /// Every pair of one row, by comparing all of them: the sweep's oracle.
    fn all_pairs(r: &Rows, s: usize, e: usize) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for i in s..e {
            for j in i + 1..e {
                let (a, b) = (r.entry(i), r.entry(j));
                let meets = (0..3).all(|k| a.lo[k] <= b.hi[k] && b.lo[k] <= a.hi[k]);
                if meets && (a.row | b.row) & HOME == HOME {
                    out.push((a.proxy.min(b.proxy), a.proxy.max(b.proxy)));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Sweeping a row for its fresh entries alone finds exactly the pairs of comparing all
    /// that have a fresh member, each once, with both kernels in the same order: on rows
    /// of every length with points, infinite bounds and both home bits, and fresh entries
    /// anywhere (none, some, all; first and last).
    #[test]
    fn fresh_sweeps_find_the_pairs_of_fresh_entries() {
        let mut checked = 0;
        for seed in 0..30 {
            let r = random_rows(seed);
            let mut s = seed + 1000;
            // Fresh entries in every row at once, as a stream marks a chunk's: each row
            // reads only its own.
            let mut bits = vec![0u64; r.count() / 64 + 2];
            for row in 0..r.len() {
                let share = [0.0, 0.2, 0.5, 1.0][row % 4];
                for i in r.span(row) {
                    if lcg(&mut s) < share {
                        bits[i / 64] |= 1 << (i % 64);
                    }
                }
            }
            for row in 0..r.len() {
                let span = r.span(row);
                let fresh: Vec<usize> = span
                    .clone()
                    .filter(|&i| bits[i / 64] >> (i % 64) & 1 == 1)
                    .collect();
                // As the builder measures a row: NaN extents (an infinite point) ignored.
                let width = span
                    .clone()
                    .fold(0.0f32, |w, i| w.max(r.entry(i).hi[0] - r.entry(i).lo[0]));
                let mut runs = Vec::new();
                for k in Kernel::all() {
                    let mut out = Pairs::default();
                    let mut found = Found::new(&mut out);
                    sweep_fresh(k, r.view(), span.start, span.end, &bits, width, &mut found);
                    found.finish();
                    runs.push(out.as_slice().to_vec());
                }
                let is_fresh = |p: u32| fresh.iter().any(|&i| r.entry(i).proxy == p);
                let want: Vec<_> = all_pairs(&r, span.start, span.end)
                    .into_iter()
                    .filter(|&(a, b)| is_fresh(a) || is_fresh(b))
                    .collect();
                let mut got = runs[0].clone();
                got.sort_unstable();
                assert_eq!(got, want, "seed {seed}, row {row}");
                assert!(runs.iter().all(|o| *o == runs[0]), "seed {seed}");
                checked += want.len();
            }
        }
        assert!(checked > 100, "only {checked} fresh pairs met");
    }

    /// Both kernels find the first place of an id as `position` does, on lists of every
    /// length below sixty (two-block rounds, one block, tails), and nothing for an absent id.
    #[test]
    fn find_is_the_first_position() {
        let mut s = 5;
        let mut hits = 0;
        for round in 0..600 {
            let len = (lcg(&mut s) * 60.0) as usize;
            // Few distinct ids, so that an id recurs and its first place is what counts.
            let ids: Vec<u32> = (0..len).map(|_| (lcg(&mut s) * 20.0) as u32).collect();
            let id = (lcg(&mut s) * 24.0) as u32;
            let want = ids.iter().position(|&p| p == id);
            hits += usize::from(want.is_some());
            for kernel in Kernel::all() {
                assert_eq!(
                    find(kernel, &ids, id),
                    want,
                    "{kernel:?}, round {round}: {id} in {ids:?}"
                );
            }
        }
        assert!(
            (200..550).contains(&hits),
            "{hits} of 600 searches found their id"
        );
    }

    /// Both kernels drop exactly the pairs `retain` drops and keep the rest in order, on
    /// lists of every length below forty (blocks of eight and tails).
    #[test]
    fn dropping_pairs_keeps_the_others_in_order() {
        let mut s = 11;
        let mut dropped = 0;
        for round in 0..400 {
            // Few distinct ids, so that hits fall in every lane, in runs, and in the tail.
            let len = (lcg(&mut s) * 40.0) as usize;
            let pairs: Vec<(u32, u32)> = (0..len)
                .map(|_| {
                    (
                        (lcg(&mut s) * 12.0) as u32,
                        (lcg(&mut s) * 12.0) as u32 + 12,
                    )
                })
                .collect();
            let ids: Vec<u32> = (0..round % 4)
                .map(|_| (lcg(&mut s) * 26.0) as u32)
                .collect();
            let mut want = pairs.clone();
            want.retain(|&(a, b)| !ids.contains(&a) && !ids.contains(&b));
            dropped += pairs.len() - want.len();
            for kernel in Kernel::all() {
                let mut got = pairs.clone();
                let n = drop_pairs_of(kernel, &mut got, &ids);
                assert_eq!(
                    &got[..n],
                    &want[..],
                    "{kernel:?}, round {round}: {pairs:?} less {ids:?}"
                );
            }
        }
        // About 900 expected (400 lists of 20 pairs on average, 1.5 ids, each meeting a
        // pair with chance 2 in 26): the lists must hit, not only miss.
        assert!(dropped > 500, "{dropped} pairs dropped");
    }

    /// Both kernels find exactly the pairs of comparing all, in the same order, on rows of
    /// every length (the last row's tail shorter than eight lanes included).
    #[test]
    fn kernels_equal_all_pairs() {
        let kernels = Kernel::all();
        for seed in 0..30 {
            let r = random_rows(seed);
            for row in 0..r.len() {
                let span = r.span(row);
                let mut runs = Vec::new();
                for &k in &kernels {
                    let mut out = Pairs::default();
                    let mut found = Found::new(&mut out);
                    sweep_row(k, r.view(), span.start, span.end, &mut found);
                    found.finish();
                    runs.push(out.as_slice().to_vec());
                }
                let mut sorted = runs[0].clone();
                sorted.sort_unstable();
                assert_eq!(sorted, all_pairs(&r, span.start, span.end), "seed {seed}");
                assert!(runs.iter().all(|o| *o == runs[0]), "seed {seed}");
            }
        }
    }
}
