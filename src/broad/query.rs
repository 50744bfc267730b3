//! Which boxes overlap a given box, as of the last update: the rows the box touches are
//! found in the row directory (a binary search per z-slab it covers), in each row the
//! entries that may reach it by a binary search on their lower x bound (a row knows its
//! widest entry), and each overlapping entry is reported by its home row with the box
//! only, so once; the large dynamic boxes are looked up alike in the coarse rows their
//! pairs are found through (`large.rs`), and only those too large for every level, and
//! the statics too large for every level, are compared one by one. Static pairs, large
//! boxes and the world (objects near a part that was inserted or moved, objects whose fat
//! bound changed when few did) all look boxes up this way.

use super::place::{coord, key, split};
use super::sweep::Kernel;
use super::{Aabb, BroadPhase, Cols, Entry, NONE, Row, Rows, SKIP, StaticRows, reach};
use crate::hint::prefetch;

/// What a query reads of sorted rows: the dynamic chunks' columns or the static records.
pub(super) trait Sorted {
    /// The row directory, with its closing row.
    fn dir(&self) -> &[Row];
    /// The entries' lower x bounds, in order.
    fn xs(&self) -> &[f32];
    /// Every [`SKIP`]th of [`Sorted::xs`], or nothing (then rows are searched whole).
    fn skip(&self) -> &[f32];
    /// Calls `found` with each entry of the scan that meets its box and whose home bits
    /// make the row their pair's home, in order: one at a time, or eight (dynamic columns)
    /// or one record (static) per AVX2 compare.
    fn scan(&self, kernel: Kernel, scan: Scan<'_>, found: &mut impl FnMut(u32));
}

/// What one row's scan reads: entries `from..to` (all starting before `q` ends along x),
/// and the row's `home` bits for `q` (the row is `q`'s lower corner's in z, bit 1, and in
/// y, bit 0).
#[derive(Clone, Copy, Debug)]
pub(super) struct Scan<'q> {
    pub(super) from: usize,
    pub(super) to: usize,
    pub(super) home: u32,
    pub(super) q: &'q Aabb,
}

impl Sorted for Rows {
    fn dir(&self) -> &[Row] {
        &self.rows
    }
    fn xs(&self) -> &[f32] {
        &self.lo[0][..self.n]
    }
    fn skip(&self) -> &[f32] {
        &[]
    }
    #[inline(always)]
    fn scan(&self, kernel: Kernel, scan: Scan<'_>, found: &mut impl FnMut(u32)) {
        scan_columns(kernel, self.view(), scan, found);
    }
}

impl Sorted for StaticRows {
    fn dir(&self) -> &[Row] {
        &self.rows
    }
    fn xs(&self) -> &[f32] {
        &self.xs
    }
    fn skip(&self) -> &[f32] {
        &self.skip
    }
    #[inline(always)]
    fn scan(&self, kernel: Kernel, scan: Scan<'_>, found: &mut impl FnMut(u32)) {
        let Scan { from, to, home, q } = scan;
        let entries = &self.entries[from..to];
        match kernel {
            Kernel::Scalar => entries
                .iter()
                .filter(|e| meets_at_home(e, home, q))
                .for_each(|e| found(e.proxy)),
            // SAFETY: `Kernel::Avx2` is only made after the CPU was found to run AVX2.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { scan_static_avx2(entries, home, q, found) },
        }
    }
}

/// Whether entry `e` meets `q` and its pair with `q` has its home in the entry's row, whose
/// `home` bits for `q` say whether it is `q`'s lower corner's row in z (bit 1) and in y
/// (bit 0): the pair's home is the row of the lower corner of the two boxes' intersection.
#[inline(always)]
fn meets_at_home(e: &Entry, home: u32, q: &Aabb) -> bool {
    (0..3).all(|k| e.lo[k] <= q.hi[k] && q.lo[k] <= e.hi[k]) && (e.row >> 30 | home) == 3
}

/// Row `key`'s home bits for `q` (see [`meets_at_home`]).
#[inline(always)]
fn home_bits(key: u32, q: &Aabb, inv: f32) -> u32 {
    let (z, y) = split(key);
    u32::from(z == coord(q.lo[2], inv)) << 1 | u32::from(y == coord(q.lo[1], inv))
}

/// Calls `found` with the id of every entry of `rows` whose box meets `q`; returns the
/// entries compared. Each box once, in the same order with either `kernel`.
pub(super) fn query_rows(
    kernel: Kernel,
    rows: &impl Sorted,
    q: &Aabb,
    inv: f32,
    mut found: impl FnMut(u32),
) -> u64 {
    let mut compared = 0;
    let dir = rows.dir();
    for_each_row(dir, q, inv, |r| {
        let span = dir[r].start as usize..dir[r + 1].start as usize;
        let t = reach(q.lo[0], dir[r].width);
        let start = if t.is_nan() {
            span.start
        } else if rows.skip().is_empty() {
            span.start + rows.xs()[span.clone()].partition_point(|&x| x < t)
        } else {
            first_at_least(rows.xs(), rows.skip(), span.start, span.end, t)
        };
        // The entries that start before `q` ends along x.
        let end = count_while::<false>(kernel, rows.xs(), start, span.end, q.hi[0]);
        let scan = Scan {
            from: start,
            to: end,
            home: home_bits(dir[r].key, q, inv),
            q,
        };
        rows.scan(kernel, scan, &mut found);
        compared += (end - start) as u64;
    });
    compared
}

/// Calls `each` with every row of `dir` (with its closing row) that `q`'s box may meet, in
/// key order: a box meeting `q` was entered in every row it touches, among them the row of
/// their intersection's lower corner, which is one of `q`'s rows.
#[inline(always)]
fn for_each_row(dir: &[Row], q: &Aabb, inv: f32, mut each: impl FnMut(usize)) {
    let n = dir.len().saturating_sub(1);
    if n == 0 {
        return;
    }
    let (y0, y1) = (coord(q.lo[1], inv), coord(q.hi[1], inv));
    let (z0, z1) = (coord(q.lo[2], inv), coord(q.hi[2], inv));
    let dir = &dir[..n];
    let mut r = dir.partition_point(|w| w.key < key(z0, y0));
    while r < n {
        let (z, y) = split(dir[r].key);
        if z > z1 {
            break;
        }
        if y < y0 || y > y1 {
            // Out of q's y-range: on to the next slab's first row in range.
            let next = if y < y0 {
                key(z, y0)
            } else if z < z1 {
                key(z + 1, y0)
            } else {
                break;
            };
            r += dir[r..].partition_point(|w| w.key < next);
            continue;
        }
        each(r);
        r += 1;
    }
}

/// The first position from `from` on, below `to`, whose value is not below `t` (`STRICT`)
/// or is above it (not `STRICT`), `to` if none, where `xs[from..to]` ascends (NaN-free):
/// eight values at a time with AVX2 (`kernel`), else one at a time.
#[inline(always)]
fn count_while<const STRICT: bool>(
    kernel: Kernel,
    xs: &[f32],
    from: usize,
    to: usize,
    t: f32,
) -> usize {
    let _ = kernel;
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Avx2 {
        // SAFETY: `Kernel::Avx2` is only made after the CPU was found to run AVX2.
        return unsafe { count_while_avx2::<STRICT>(xs, from, to, t) };
    }
    let keep = |x: f32| if STRICT { x < t } else { x <= t };
    from + xs[from..to].iter().take_while(|&&x| keep(x)).count()
}

/// [`count_while`] by eight values at a time: one compare and one mask for eight.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn count_while_avx2<const STRICT: bool>(xs: &[f32], from: usize, to: usize, t: f32) -> usize {
    use std::arch::x86_64::{
        _CMP_LE_OQ, _CMP_LT_OQ, _mm256_cmp_ps, _mm256_loadu_ps, _mm256_movemask_ps, _mm256_set1_ps,
    };
    let xs = &xs[..to];
    let bound = _mm256_set1_ps(t);
    let mut i = from;
    while i + 8 <= to {
        // SAFETY: i + 8 ≤ to ≤ xs.len().
        let v = unsafe { _mm256_loadu_ps(xs.as_ptr().add(i)) };
        let m = if STRICT {
            _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(v, bound))
        } else {
            _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(v, bound))
        } as u32;
        if m != 0xff {
            return i + m.trailing_ones() as usize;
        }
        i += 8;
    }
    let keep = |x: f32| if STRICT { x < t } else { x <= t };
    i + xs[i..].iter().take_while(|&&x| keep(x)).count()
}

/// [`meets_at_home`] over static records with AVX2, given the records the scan reads (all
/// starting before `q` ends along x) and the row's `home` bits for `q`: a record loaded as
/// eight lanes is compared with `q` in one instruction (its lower bounds with q's upper
/// ones, and its upper bounds, negated, with q's lower ones, negated: the same
/// comparisons, exactly).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_static_avx2(entries: &[Entry], home: u32, q: &Aabb, found: &mut impl FnMut(u32)) {
    use std::arch::x86_64::{
        _CMP_LE_OQ, _mm256_cmp_ps, _mm256_loadu_ps, _mm256_movemask_ps, _mm256_setr_ps,
        _mm256_xor_ps,
    };
    // Lanes 3 to 5 negated; lanes 6 and 7 (the id and row) are not looked at.
    let flip = _mm256_setr_ps(0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 0.0, 0.0);
    let bound = _mm256_setr_ps(
        q.hi[0], q.hi[1], q.hi[2], -q.lo[0], -q.lo[1], -q.lo[2], 0.0, 0.0,
    );
    for e in entries {
        // SAFETY: `Entry` is eight 4-byte fields in C order.
        let v = unsafe { _mm256_loadu_ps(std::ptr::from_ref(e).cast()) };
        let m = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_xor_ps(v, flip), bound));
        if m & 0x3f == 0x3f && (e.row >> 30 | home) == 3 {
            found(e.proxy);
        }
    }
}

/// [`meets_at_home`] over dynamic columns with AVX2, for the entries and home bits of `scan`:
/// eight entries' bounds compared with `q` by six instructions (the same comparisons,
/// exactly), their home bits by one.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_columns_avx2(c: Cols<'_>, scan: Scan<'_>, found: &mut impl FnMut(u32)) {
    use std::arch::x86_64::{
        _CMP_LE_OQ, _mm256_and_ps, _mm256_castsi256_ps, _mm256_cmp_ps, _mm256_cmpeq_epi32,
        _mm256_loadu_ps, _mm256_loadu_si256, _mm256_movemask_ps, _mm256_or_si256,
        _mm256_set1_epi32, _mm256_set1_ps, _mm256_srli_epi32,
    };
    let Scan { from, to, home, q } = scan;
    assert!(from <= to && to <= c.len(), "a scan outside its columns");
    let (qlo, qhi) = (
        q.lo.map(|v| _mm256_set1_ps(v)),
        q.hi.map(|v| _mm256_set1_ps(v)),
    );
    let (homes, three) = (_mm256_set1_epi32(home as i32), _mm256_set1_epi32(3));
    let mut i = from;
    while i + 8 <= to {
        // SAFETY: i + 8 <= to <= every column's length (asserted above).
        let mut m = unsafe {
            let rows = _mm256_loadu_si256(c.row.as_ptr().add(i).cast());
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(
                _mm256_or_si256(_mm256_srli_epi32::<30>(rows), homes),
                three,
            ))
        };
        for k in 0..3 {
            // SAFETY: as above.
            let (lo, hi) = unsafe {
                (
                    _mm256_loadu_ps(c.lo[k].as_ptr().add(i)),
                    _mm256_loadu_ps(c.hi[k].as_ptr().add(i)),
                )
            };
            m = _mm256_and_ps(m, _mm256_cmp_ps::<_CMP_LE_OQ>(lo, qhi[k]));
            m = _mm256_and_ps(m, _mm256_cmp_ps::<_CMP_LE_OQ>(qlo[k], hi));
        }
        let mut bits = _mm256_movemask_ps(m) as u32;
        while bits != 0 {
            found(c.proxy[i + bits.trailing_zeros() as usize]);
            bits &= bits - 1;
        }
        i += 8;
    }
    scan_columns_scalar(c, Scan { from: i, ..scan }, found);
}

/// [`scan_columns_avx2`] one entry at a time: any machine, and the AVX2 scan's last few.
fn scan_columns_scalar(c: Cols<'_>, scan: Scan<'_>, found: &mut impl FnMut(u32)) {
    let Scan { from, to, home, q } = scan;
    for j in from..to {
        let e = c.get(j);
        if meets_at_home(&e, home, q) {
            found(e.proxy);
        }
    }
}

/// Calls `found` with each entry of columns `c` in the scan's range that meets its box and
/// has its home in the row (entries not sorted along x are all read).
pub(super) fn scan_columns(
    kernel: Kernel,
    c: Cols<'_>,
    scan: Scan<'_>,
    found: &mut impl FnMut(u32),
) {
    match kernel {
        Kernel::Scalar => scan_columns_scalar(c, scan, found),
        // SAFETY: `Kernel::Avx2` is only made after the CPU was found to run AVX2.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { scan_columns_avx2(c, scan, found) },
    }
}

/// One row of one box of a batch looked up in the static rows ([`query_statics`]): the
/// box's place in the batch, the row, and the range of `xs` its search narrows to (then
/// the entries its scan reads).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Lookup {
    query: u32,
    row: u32,
    /// Whether the row is the box's lower corner's in z (bit 1) and in y (bit 0).
    home: u32,
    /// The lower x bound below which no entry of the row can meet the box ([`reach`]).
    reach: f32,
    from: u32,
    to: u32,
}

/// Boxes looked up together: each stage's reads are independent of one another, so the
/// lines the next stage needs are asked for ahead, and a batch's lines stay cached
/// between stages.
const BATCH: usize = 256;

/// How many scans ahead of the one at hand its entries' lines are asked for.
const AHEAD: usize = 16;

/// [`query_rows`] over the static rows for many `boxes` (each with its id), calling
/// `found(id, static)` box after box: in batches, each looked up in stages (rows and
/// their samples, the search in `xs`, the scan of the entries) so that the cache misses
/// of different boxes overlap instead of following one another. `lookups` is scratch.
/// Returns the entries compared.
pub(super) fn query_statics(
    kernel: Kernel,
    rows: &StaticRows,
    boxes: &[(u32, Aabb)],
    inv: f32,
    lookups: &mut Vec<Lookup>,
    mut found: impl FnMut(u32, u32),
) -> u64 {
    let (dir, xs, skip) = (&rows.rows, &rows.xs, &rows.skip);
    let mut compared = 0;
    for batch in boxes.chunks(BATCH) {
        lookups.clear();
        for (k, &(_, q)) in batch.iter().enumerate() {
            for_each_row(dir, &q, inv, |r| {
                lookups.push(Lookup {
                    query: k as u32,
                    row: r as u32,
                    home: home_bits(dir[r].key, &q, inv),
                    ..Lookup::default()
                });
                let j = (dir[r].start as usize).div_ceil(SKIP);
                if let Some(x) = skip.get(j) {
                    prefetch(x);
                }
            });
        }
        // The samples' search: a range of at most one stride of `xs`.
        for p in lookups.iter_mut() {
            let r = p.row as usize;
            let (a, b) = (dir[r].start as usize, dir[r + 1].start as usize);
            let t = reach(batch[p.query as usize].1.lo[0], dir[r].width);
            let (from, to) = if t.is_nan() {
                (a, a)
            } else {
                bracket(skip, a, b, t)
            };
            (p.from, p.to, p.reach) = (from as u32, to as u32, t);
            if let Some(x) = xs.get(from) {
                prefetch(x);
            }
        }
        // The search's end: the entry the scan starts at.
        for p in lookups.iter_mut() {
            let r = p.row as usize;
            let q = batch[p.query as usize].1;
            let b = dir[r + 1].start as usize;
            let at = count_while::<true>(kernel, xs, p.from as usize, p.to as usize, p.reach);
            p.from = at as u32;
            // The entries the scan will read: those up to q's upper x bound.
            p.to = count_while::<false>(kernel, xs, at, b, q.hi[0]) as u32;
        }
        // Every line of the entries a scan will read is asked for a few scans ahead:
        // asked for all at once, they overflow what the core tracks in flight.
        let ask = |p: &Lookup| {
            let scan = &rows.entries[p.from as usize..p.to as usize];
            // Two entries to a line: every other one, and the last.
            scan.iter().step_by(2).chain(scan.last()).for_each(prefetch);
        };
        lookups.iter().take(AHEAD).for_each(ask);
        for (i, p) in lookups.iter().enumerate() {
            if let Some(next) = lookups.get(i + AHEAD) {
                ask(next);
            }
            let (id, q) = batch[p.query as usize];
            let mut hit = |s| found(id, s);
            let (from, to) = (p.from as usize, p.to as usize);
            let scan = Scan {
                from,
                to,
                home: p.home,
                q: &q,
            };
            rows.scan(kernel, scan, &mut hit);
            compared += (to - from) as u64;
        }
    }
    compared
}

impl BroadPhase {
    /// [`query_rows`] over the dynamic chunks whose keys `q`'s rows may fall in.
    pub(super) fn query_dynamic(
        &self,
        kernel: Kernel,
        q: &Aabb,
        inv: f32,
        mut found: impl FnMut(u32),
    ) -> u64 {
        let (y0, y1) = (coord(q.lo[1], inv), coord(q.hi[1], inv));
        let (z0, z1) = (coord(q.lo[2], inv), coord(q.hi[2], inv));
        let (a, b) = (self.chunk_of(key(z0, y0)), self.chunk_of(key(z1, y1)));
        self.dynamic
            .get(a..=b)
            .unwrap_or_default()
            .iter()
            .map(|c| query_rows(kernel, &c.rows, q, inv, &mut found))
            .sum()
    }
}

/// The first position in `a..b` whose `xs` is not below `t` (`b` if none), where
/// `xs[a..b]` ascends (NaN-free) and `skip` samples `xs` at every [`SKIP`]th position:
/// `xs[a..b].partition_point(|&x| x < t) + a`, found by a binary search of the samples
/// inside `a..b` and a scan of at most one stride of `xs`.
#[inline]
pub(super) fn first_at_least(xs: &[f32], skip: &[f32], a: usize, b: usize, t: f32) -> usize {
    let (from, to) = bracket(skip, a, b, t);
    from + xs[from..to].iter().take_while(|&&x| x < t).count()
}

/// The range of at most one stride of `a..b` in which [`first_at_least`]'s answer lies
/// (its end included), by a binary search of the samples inside `a..b`.
#[inline]
fn bracket(skip: &[f32], a: usize, b: usize, t: f32) -> (usize, usize) {
    // The samples at SKIP * j inside a..b.
    let (ja, jb) = (a.div_ceil(SKIP), b.div_ceil(SKIP));
    let (mut from, mut to) = (a, b);
    if ja < jb {
        let k = skip[ja..jb].partition_point(|&x| x < t);
        // Samples before k are below t, those from k on are not.
        if k > 0 {
            from = SKIP * (ja + k - 1) + 1;
        }
        if ja + k < jb {
            to = SKIP * (ja + k);
        }
    }
    (from, to)
}

impl BroadPhase {
    /// Calls `found` with every proxy whose box overlaps `aabb` (closed boxes), dynamic and
    /// static, as placed by the last [`BroadPhase::update`] (call it after one: a box set or
    /// removed since may be seen at either place). Each proxy once, in an order fixed by the
    /// boxes and the sequence of calls. Allocates nothing.
    pub fn query(&self, aabb: &Aabb, mut found: impl FnMut(u32)) {
        if aabb.check(NONE).is_err() {
            return;
        }
        let kernel = Kernel::best();
        self.query_large(kernel, aabb, &mut found);
        if self.cell <= 0.0 {
            return;
        }
        let inv = 1.0 / self.cell;
        self.query_dynamic(kernel, aabb, inv, &mut found);
        for (rows, inv) in self.static_levels() {
            query_rows(kernel, rows, aabb, inv, &mut found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;

    /// `n` random boxes (ids `0..n`, `dynamic` choosing which move) in a cube sized for a
    /// few overlaps each, not yet updated; and the cube's side.
    fn random_phase(s: &mut u64, n: usize, dynamic: impl Fn(u32) -> bool) -> (BroadPhase, f64) {
        let side = (n as f64 * 2.0).cbrt();
        let mut bp = BroadPhase::new();
        for i in 0..n as u32 {
            let b = crate::broad::place::tests::random_box(s, side);
            bp.set(i, b, dynamic(i)).unwrap();
        }
        (bp, side)
    }

    /// Looking many boxes up in the static rows together gives, box after box, what
    /// looking each up alone gives (one at a time, by the scalar scan): over batches of
    /// every size, with either kernel, with boxes of no extent, long thin ones, and
    /// unbounded ones (scanned from their rows' starts).
    #[test]
    fn batched_static_lookups_equal_single_ones() {
        let mut s = 17u64;
        for round in 0..4 {
            let n = 2000 + 600 * round;
            let (mut bp, _) = random_phase(&mut s, n, |i| i % 5 == 0);
            let far = n as u32;
            bp.set(
                far,
                Aabb::new([f32::NEG_INFINITY, 0.0, 0.0], [f32::INFINITY, 1.0, 1.0]),
                true,
            )
            .unwrap();
            bp.update();
            assert!(bp.statics.count() > n / 2);
            let ids: Vec<u32> = (0..=far).filter(|i| i % 5 == 0 || *i == far).collect();
            let inv = 1.0 / bp.cell;
            let aabb = |id: u32| bp.proxies[id as usize].aabb;
            let mut want = Vec::new();
            let mut compared = 0;
            for &id in &ids {
                compared += query_rows(Kernel::Scalar, &bp.statics, &aabb(id), inv, |st| {
                    want.push((id, st));
                });
            }
            let boxes: Vec<(u32, Aabb)> = ids.iter().map(|&id| (id, aabb(id))).collect();
            let (mut got, mut lookups) = (Vec::new(), Vec::new());
            for kernel in Kernel::all() {
                for len in [1, 7, BATCH, ids.len()] {
                    got.clear();
                    let mut c = 0;
                    for part in boxes.chunks(len) {
                        c += query_statics(kernel, &bp.statics, part, inv, &mut lookups, |a, b| {
                            got.push((a, b));
                        });
                    }
                    assert_eq!(got, want, "round {round}, {kernel:?}, batches of {len}");
                    assert_eq!(c, compared);
                }
            }
            assert!(
                want.len() > n / 10,
                "{} pairs: too few to compare",
                want.len()
            );
        }
    }

    /// Both kernels of a single lookup find, in the dynamic chunks and in the static rows,
    /// each box that meets the query exactly once (all boxes compared one by one), in the
    /// same order and with the same count of entries compared: queries small and large
    /// (up to a tenth of the scene), of no extent, and reaching past the scene.
    #[test]
    fn both_kernels_look_up_what_brute_force_finds() {
        let mut s = 29u64;
        for round in 0..3 {
            let n = 3000 + 1000 * round;
            let (mut bp, side) = random_phase(&mut s, n, |i| i % 3 != 0);
            bp.update();
            let inv = 1.0 / bp.cell;
            let placed_in_rows = |id: u32| {
                matches!(
                    bp.proxies[id as usize].placed,
                    crate::broad::Place::Dynamic(..) | crate::broad::Place::Static(..)
                )
            };
            let mut checked = 0;
            for k in 0..200 {
                let mut q = crate::broad::place::tests::random_box(&mut s, side);
                let grow = match k % 4 {
                    0 => 0.0,
                    1 => 1.0,
                    2 => (side * 0.1) as f32,
                    _ => (side * 0.6) as f32,
                };
                q = Aabb::new(q.lo.map(|v| v - grow), q.hi.map(|v| v + grow));
                let mut want: Vec<u32> = (0..n as u32)
                    .filter(|&id| placed_in_rows(id) && bp.proxies[id as usize].aabb.overlaps(&q))
                    .collect();
                want.sort_unstable();
                let mut runs = Vec::new();
                for kernel in Kernel::all() {
                    let mut got = Vec::new();
                    let mut compared = bp.query_dynamic(kernel, &q, inv, |id| got.push(id));
                    compared += query_rows(kernel, &bp.statics, &q, inv, |id| got.push(id));
                    runs.push((got, compared));
                }
                for (got, compared) in &runs {
                    assert_eq!(got, &runs[0].0, "round {round}, query {k}: kernels differ");
                    assert_eq!(*compared, runs[0].1, "round {round}, query {k}");
                    let mut sorted = got.clone();
                    sorted.sort_unstable();
                    assert_eq!(sorted, want, "round {round}, query {k}");
                }
                checked += want.len();
            }
            assert!(
                checked > 20 * n,
                "{checked} boxes found: too few to compare"
            );
        }
    }

    /// The sampled search finds what a binary search of the row finds: rows of any length
    /// and alignment against the stride, with repeated values, thresholds below, inside
    /// and above them.
    #[test]
    fn sampled_search_equals_partition_point() {
        let mut s = 5u64;
        for round in 0..300 {
            // Ascending runs (rows) one after another, as in the static array.
            let mut xs = Vec::new();
            let mut rows = vec![0];
            for _ in 0..1 + round % 7 {
                let len = (lcg(&mut s) * 70.0) as usize;
                let mut x = (lcg(&mut s) * 10.0) as f32;
                for _ in 0..len {
                    // Steps of zero now and then: equal bounds.
                    x += if lcg(&mut s) < 0.2 {
                        0.0
                    } else {
                        lcg(&mut s) as f32
                    };
                    xs.push(x);
                }
                rows.push(xs.len());
            }
            let skip: Vec<f32> = xs.iter().copied().step_by(SKIP).collect();
            for w in rows.windows(2) {
                let (a, b) = (w[0], w[1]);
                for _ in 0..20 {
                    let t = if a < b && lcg(&mut s) < 0.5 {
                        xs[a + (lcg(&mut s) * (b - a) as f64) as usize]
                    } else {
                        (lcg(&mut s) * 80.0 - 5.0) as f32
                    };
                    let want = a + xs[a..b].partition_point(|&x| x < t);
                    assert_eq!(first_at_least(&xs, &skip, a, b, t), want, "{a}..{b} t {t}");
                }
            }
        }
    }
}
