//! A chunk where few boxes changed, edited in place (I-COLLIDE's temporal coherence, Cohen
//! et al. 1995, §4.2: a sorted list where few boxes moved is repaired where they moved,
//! not re-sorted): the changed boxes' old entries are found in their rows, the runs of
//! entries between the places where one leaves or arrives are shifted by what left and
//! arrived before them, the new entries are written into the gaps, and only the rows they
//! arrived in are swept for their pairs. A chunk streamed whole ([`super::place`]) costs
//! its entries; patched, it costs the changed boxes' rows and the runs that shift, so a
//! scene of resting boxes pays for the few that move, as a tree broad phase does.
//!
//! A chunk's pairs are kept row by row (`Rows::pair_at`), so that the pairs of a changed
//! box are looked for only in the rows it leaves (a pair's home row holds both boxes), and
//! those rows' pairs that stay, like the entries, shift as one run per stretch of rows.
//!
//! The result is the stream's: the same entries in the same order, the same pairs in the
//! same order (in each row, its kept pairs, then its changed boxes' new ones). Only a
//! row's width (its widest entry's x-extent, an upper bound that searches stop at) is kept
//! when entries leave it, so it may stay larger than the stream would make it.

use super::place::{KEY, POSITION, Swept, rank_of};
use super::sweep::{Found, Kernel, Pairs, drop_pairs_of, find, sweep_fresh};
use super::{Chunk, NONE, Row, Rows, set_bit};

/// A chunk is patched when fewer than one in this many of its entries leave it and fewer
/// arrive; otherwise it is streamed. Tests' chunks are small: a larger share there, so
/// that patches with several entries leaving and arriving happen.
#[cfg(not(any(test, fuzzing)))]
const PATCH_SHARE: usize = 32;
#[cfg(any(test, fuzzing))]
const PATCH_SHARE: usize = 6;

/// How many entries may leave and how many arrive in a chunk of `count` entries for it to
/// be patched (the lists of leaving entries stop growing one past it).
#[inline(always)]
pub(super) fn limit(count: usize) -> usize {
    count / PATCH_SHARE + 1
}

/// Whether patches are worth trying when `changed` boxes were set among `entries`
/// dynamic entries: a box has about two entries, and a chunk is patched when under one
/// in [`PATCH_SHARE`] of its entries changed, so with more changed boxes than that share of
/// all entries few chunks could be (they would have to be spread very unevenly).
pub(super) fn worth_trying(changed: usize, entries: usize) -> bool {
    changed * PATCH_SHARE <= entries
}

/// One thread's scratch for patching chunks, kept between updates.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Places of the leaving entries in the chunk, ascending.
    gone: Vec<u32>,
    /// The rows they leave (indices into the chunk's directory) with the proxy that
    /// leaves and its place, in row and proxy order: where the same box's arriving entry
    /// in that row is looked for first.
    left: Vec<(u32, u32, u32)>,
    /// For each arriving entry (in order): the place in the chunk before which it goes.
    at: Vec<u32>,
    /// The runs of staying entries: first, end, and how far each shifts.
    runs: Vec<(u32, u32, i32)>,
    /// The new row directory (the old one once exchanged), for each of its rows the old
    /// row it continues ([`NONE`] for a new one), and which of its rows entries arrive in.
    dir: Vec<Row>,
    old_row: Vec<u32>,
    touched: Vec<u32>,
    /// Per old row, its pairs that stay; the proxies leaving one row.
    kept: Vec<u32>,
    ids: Vec<u32>,
    /// The pairs the touched rows' sweeps found, and where each row's start.
    found: Pairs,
    found_at: Vec<u32>,
    /// Where each new row's pairs start.
    pair_at: Vec<u32>,
}

impl Scratch {
    /// Bytes held (capacities).
    pub(super) fn bytes(&self) -> usize {
        (self.gone.capacity()
            + 3 * self.left.capacity()
            + self.at.capacity()
            + self.old_row.capacity()
            + self.touched.capacity()
            + self.kept.capacity()
            + self.ids.capacity()
            + self.found_at.capacity()
            + self.pair_at.capacity())
            * 4
            + self.runs.capacity() * 12
            + self.dir.capacity() * size_of::<Row>()
            + self.found.bytes()
    }
}

/// Patches chunk `c` when few of its entries changed: its leaving entries (`c.outgoing`,
/// row key and proxy, of the boxes set since the last update) taken out, its arriving ones (`c.incoming`,
/// in the order of `keys`: their ranks with their places in `c.incoming`, sorted) put in,
/// the pairs of changed boxes dropped from the rows they leave and found anew in the rows
/// they arrive in. `None`, with `c` untouched, when too many changed for a patch to pay or
/// a leaving entry is not where its row says (then the chunk is streamed).
pub(super) fn patch(
    c: &mut Chunk,
    kernel: Kernel,
    keys: &[u128],
    fresh: &mut Vec<u64>,
    s: &mut Scratch,
) -> Option<Swept> {
    let n = c.rows.count();
    let most = limit(n);
    if c.rows.rows.is_empty() || c.outgoing.len() >= most || keys.len() >= most {
        return None;
    }
    if !find_leaving(c, kernel, s) {
        return None;
    }
    find_arriving(c, keys, &s.left, &mut s.at);
    let m = n + keys.len() - s.gone.len();
    runs(n, &s.gone, &s.at, &mut s.runs);
    make_directory(c, keys, s);
    c.rows.set_count(m);
    shift(&mut c.rows, &s.runs);
    std::mem::swap(&mut c.rows.rows, &mut s.dir);
    // Each arriving entry is written where it goes: its place among the old entries, less
    // those leaving before it, plus those arriving before it.
    if fresh.len() < m / 64 + 2 {
        fresh.resize(m / 64 + 2, 0);
    }
    let mut gone = 0;
    for (j, (&k, &at)) in keys.iter().zip(&s.at).enumerate() {
        while gone < s.gone.len() && s.gone[gone] < at {
            gone += 1;
        }
        let to = at as usize - gone + j;
        let e = &c.incoming[(k & POSITION) as usize];
        let r = &mut c.rows;
        for a in 0..3 {
            r.lo[a][to] = e.lo[a];
            r.hi[a][to] = e.hi[a];
        }
        r.proxy[to] = e.proxy;
        r.row[to] = e.row;
        set_bit(fresh, to as u32);
    }
    let mut found = Found::new(&mut s.found);
    let cols = c.rows.view();
    let mut compared = 0;
    s.found_at.clear();
    for &t in &s.touched {
        s.found_at.push(found.len() as u32);
        let (row, next) = (c.rows.rows[t as usize], c.rows.rows[t as usize + 1]);
        let (from, to) = (row.start as usize, next.start as usize);
        compared += sweep_fresh(kernel, cols, from, to, fresh, row.width, &mut found);
    }
    s.found_at.push(found.len() as u32);
    found.finish();
    for w in &mut fresh[..m.div_ceil(64)] {
        *w = 0;
    }
    place_pairs(c, kernel, s);
    c.incoming.clear();
    let rows = s.touched.len() as u64;
    Some(Swept {
        compared,
        rows,
        refreshed: rows,
        patched: 1,
    })
}

/// Finds the places of the chunk's leaving entries (`s.gone`, ascending) and their rows
/// (`s.left`); `false` if one is not in the row its key names.
fn find_leaving(c: &Chunk, kernel: Kernel, s: &mut Scratch) -> bool {
    s.gone.clear();
    s.left.clear();
    let r = &c.rows;
    let dir = &r.rows[..r.len()];
    for &(key, id) in &c.outgoing {
        let Ok(i) = dir.binary_search_by_key(&key, |row| row.key) else {
            return false;
        };
        let (from, to) = (r.rows[i].start as usize, r.rows[i + 1].start as usize);
        let Some(at) = find(kernel, &r.proxy[from..to], id) else {
            return false;
        };
        s.gone.push((from + at) as u32);
        s.left.push((i as u32, id, (from + at) as u32));
    }
    s.gone.sort_unstable();
    s.left.sort_unstable();
    true
}

/// Lays out the chunk's pairs row by row after the patch, in place: in each row an entry
/// left, the pairs of changed boxes dropped (every pair of a changed box here is in such a
/// row: its home holds both boxes); each row's pairs that stay shifted to the row's new
/// start, as the entries were; then the touched rows' new pairs (`s.found`) after them.
/// `s.dir` holds the old directory, `c.rows` the new one with the old pair starts.
fn place_pairs(c: &mut Chunk, kernel: Kernel, s: &mut Scratch) {
    let old_at = &c.rows.pair_at;
    let buf = &mut c.found.buf;
    s.kept.clear();
    s.kept.extend(old_at.windows(2).map(|w| w[1] - w[0]));
    // A pair here of a changed box has its home in a row that box leaves: compared with
    // the proxies leaving its row, a few, not looked up among all changed ones.
    for group in s.left.chunk_by(|x, y| x.0 == y.0) {
        let i = group[0].0 as usize;
        s.ids.clear();
        s.ids.extend(group.iter().map(|&(_, id, _)| id));
        let (from, to) = (old_at[i] as usize, old_at[i + 1] as usize);
        s.kept[i] = drop_pairs_of(kernel, &mut buf[from..to], &s.ids) as u32;
    }
    s.pair_at.clear();
    let (mut total, mut t) = (0u32, 0);
    for (j, &old) in s.old_row.iter().enumerate() {
        s.pair_at.push(total);
        if old != NONE {
            total += s.kept[old as usize];
        }
        if s.touched.get(t) == Some(&(j as u32)) {
            total += s.found_at[t + 1] - s.found_at[t];
            t += 1;
        }
    }
    s.pair_at.push(total);
    c.found.lengthen(total as usize);
    let buf = &mut c.found.buf;
    // Each row's staying pairs as a run; runs keep their order, so leftward ones move
    // first from the left, then rightward ones from the right, as `shift` does.
    let run = |j: usize| {
        let old = s.old_row[j];
        (old != NONE).then(|| {
            let from = old_at[old as usize] as usize;
            (
                from,
                from + s.kept[old as usize] as usize,
                s.pair_at[j] as usize,
            )
        })
    };
    // Rows whose runs follow each other and shift alike move as one.
    s.runs.clear();
    for (from, end, to) in (0..s.old_row.len()).filter_map(run) {
        let by = to as i32 - from as i32;
        match s.runs.last_mut() {
            Some(last) if last.1 as usize == from && last.2 == by => last.1 = end as u32,
            _ => s.runs.push((from as u32, end as u32, by)),
        }
    }
    for &(from, end, by) in s.runs.iter().filter(|r| r.2 < 0) {
        buf.copy_within(from as usize..end as usize, (from as i32 + by) as usize);
    }
    for &(from, end, by) in s.runs.iter().rev().filter(|r| r.2 > 0) {
        buf.copy_within(from as usize..end as usize, (from as i32 + by) as usize);
    }
    for (t, &j) in s.touched.iter().enumerate() {
        let new = &s.found.as_slice()[s.found_at[t] as usize..s.found_at[t + 1] as usize];
        let to = s.pair_at[j as usize] as usize + run(j as usize).map_or(0, |r| r.1 - r.0);
        buf[to..to + new.len()].copy_from_slice(new);
    }
    c.found.n = total as usize;
    std::mem::swap(&mut c.rows.pair_at, &mut s.pair_at);
}

/// For each arriving entry (ranks in `keys`, ascending), the place of the first old entry
/// of `c.rows` that sorts after it: in its row by a search, or where its row would start if
/// the chunk has none of that key. A box set again near where it was (the common case: a
/// fat box re-made around its moving box) arrives in a row it leaves, a few places from its
/// old entry (in `left`, the leaving entries with their places), so the search gallops out
/// from there and touches the lines already read rather than a binary search's far places.
fn find_arriving(c: &Chunk, keys: &[u128], left: &[(u32, u32, u32)], at: &mut Vec<u32>) {
    at.clear();
    let rows = &c.rows;
    let dir = &rows.rows[..rows.len()];
    let cols = rows.view();
    for &k in keys {
        let (rank, key) = (k & !POSITION, key_of(k));
        let i = dir.partition_point(|row| row.key < key);
        let place = match dir.get(i) {
            Some(row) if row.key == key => {
                let (from, to) = (row.start as usize, rows.rows[i + 1].start as usize);
                let before = |j: usize| rank_of(cols.row[j], cols.lo[0][j], cols.proxy[j]) < rank;
                let proxy = c.incoming[(k & POSITION) as usize].proxy;
                match left.binary_search_by_key(&(i as u32, proxy), |&(r, id, _)| (r, id)) {
                    Ok(h) => gallop(from, to, left[h].2 as usize, before),
                    Err(_) => from + partition(from, to, before),
                }
            }
            _ => rows.rows[i].start as usize,
        };
        at.push(place as u32);
    }
}

/// The first place from `from` to `to` for which `before` fails (it holds for a first part
/// of them and no other; `to` if it holds for all), searched outward from `near` (in
/// `from..to`) by doubling steps, then by halving them.
fn gallop(from: usize, to: usize, near: usize, before: impl Fn(usize) -> bool) -> usize {
    let (lo, hi) = if before(near) {
        // The place is after `near`: `lo` is known to hold, `lo + step` is tried.
        let (mut lo, mut step) = (near, 1);
        while lo + step < to && before(lo + step) {
            lo += step;
            step *= 2;
        }
        (lo + 1, (lo + step).min(to))
    } else {
        // The place is at or before `near`: `hi` is known to fail.
        let (mut hi, mut step) = (near, 1);
        while hi >= from + step && !before(hi - step) {
            hi -= step;
            step *= 2;
        }
        (hi.saturating_sub(step).max(from), hi)
    };
    lo + partition(lo, hi, before)
}

/// The row key of an arriving entry's sort key (`place::sort_incoming`).
#[inline(always)]
fn key_of(k: u128) -> u32 {
    ((k & !POSITION) >> 96) as u32 & KEY
}

/// The number of places from `from` to `to` for which `before` holds (it holds for a
/// first part of them and no other).
fn partition(from: usize, to: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (from, to);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo - from
}

/// The runs of staying entries among `n` (those between leaving places `gone` and arrival
/// places `at`, both ascending), each with how far it shifts: the entries arriving at or
/// before its first, less those leaving before it.
fn runs(n: usize, gone: &[u32], at: &[u32], out: &mut Vec<(u32, u32, i32)>) {
    out.clear();
    let (mut g, mut a, mut from) = (0, 0, 0u32);
    loop {
        while a < at.len() && at[a] <= from {
            a += 1;
        }
        let shift = a as i32 - g as i32;
        let next_gone = gone.get(g).copied().unwrap_or(n as u32);
        let next_at = at.get(a).copied().unwrap_or(u32::MAX);
        let end = next_gone.min(next_at).min(n as u32);
        if end > from && shift != 0 {
            out.push((from, end, shift));
        }
        if end == n as u32 {
            break;
        }
        if end == next_gone {
            g += 1;
            from = end + 1;
        } else {
            from = end;
        }
    }
}

/// Shifts the runs of `rows`' columns (each long enough for where they go): leftward ones
/// first, from the left, then rightward ones from the right, so that none is written over
/// before it has moved (a run's target never covers a run on its other side that has not).
fn shift(rows: &mut Rows, runs: &[(u32, u32, i32)]) {
    let mut one = |&(from, end, by): &(u32, u32, i32)| {
        let (from, end) = (from as usize, end as usize);
        let to = (from as isize + by as isize) as usize;
        for k in 0..3 {
            rows.lo[k].copy_within(from..end, to);
            rows.hi[k].copy_within(from..end, to);
        }
        rows.proxy.copy_within(from..end, to);
        rows.row.copy_within(from..end, to);
    };
    runs.iter().filter(|r| r.2 < 0).for_each(&mut one);
    runs.iter().rev().filter(|r| r.2 > 0).for_each(&mut one);
}

/// The chunk's row directory after the patch, in `s.dir` (and in `s.touched`, the rows an
/// entry arrives in): its rows and the arriving entries' rows merged by key, each counted
/// as its staying entries plus its arriving ones, rows left empty dropped. A row's width
/// grows with what arrives and is kept when entries leave.
fn make_directory(c: &Chunk, keys: &[u128], s: &mut Scratch) {
    let (dir, old) = (&mut s.dir, &c.rows.rows);
    dir.clear();
    s.touched.clear();
    s.old_row.clear();
    let (mut i, mut j, mut g, mut start) = (0, 0, 0, 0u32);
    let rows = old.len() - 1;
    while i < rows || j < keys.len() {
        let key = match (old.get(i).filter(|_| i < rows), keys.get(j)) {
            (Some(row), Some(&k)) => row.key.min(key_of(k)),
            (Some(row), None) => row.key,
            (None, Some(&k)) => key_of(k),
            (None, None) => unreachable!(),
        };
        let (mut count, mut width, mut from) = (0u32, 0.0f32, NONE);
        if i < rows && old[i].key == key {
            from = i as u32;
            let end = old[i + 1].start;
            let mut left = 0;
            while g < s.gone.len() && s.gone[g] < end {
                g += 1;
                left += 1;
            }
            count += end - old[i].start - left;
            width = old[i].width;
            i += 1;
        }
        let arriving = j;
        while j < keys.len() && key_of(keys[j]) == key {
            let e = &c.incoming[(keys[j] & POSITION) as usize];
            width = width.max(e.hi[0] - e.lo[0]);
            j += 1;
        }
        count += (j - arriving) as u32;
        if count > 0 {
            if j > arriving {
                s.touched.push(dir.len() as u32);
            }
            dir.push(Row { key, start, width });
            s.old_row.push(from);
            start += count;
        }
    }
    dir.push(Row {
        key: u32::MAX,
        start,
        width: 0.0,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broad::place::tests::random_box;
    use crate::broad::{Aabb, BroadPhase, brute_force_pairs};
    use crate::testing::lcg;

    /// Both phases' chunks hold the same entries in the same rows with the same pairs; a
    /// patched row's width is at least the streamed one's (it is kept when entries leave).
    fn assert_same_chunks(patched: &BroadPhase, streamed: &BroadPhase, at: &str) {
        assert_eq!(patched.dynamic.len(), streamed.dynamic.len(), "{at}");
        for (k, (p, s)) in patched.dynamic.iter().zip(&streamed.dynamic).enumerate() {
            let (a, b) = (p.rows.view(), s.rows.view());
            let at = format!("{at}, chunk {k}");
            assert_eq!(a.proxy, b.proxy, "{at}");
            assert_eq!(a.row, b.row, "{at}");
            assert_eq!((a.lo, a.hi), (b.lo, b.hi), "{at}");
            let keys = |r: &Rows| r.rows.iter().map(|r| (r.key, r.start)).collect::<Vec<_>>();
            assert_eq!(keys(&p.rows), keys(&s.rows), "{at}");
            for (x, y) in p.rows.rows.iter().zip(&s.rows.rows) {
                assert!(x.width >= y.width || y.width.is_nan(), "{at}: {x:?} {y:?}");
            }
            assert_eq!(p.rows.pair_at, s.rows.pair_at, "{at}");
            assert_eq!(p.found.as_slice(), s.found.as_slice(), "{at}");
        }
    }

    #[test]
    fn galloping_finds_what_a_binary_search_finds() {
        for from in 0..6 {
            for len in 0..40 {
                let to = from + len;
                for near in from..to {
                    for first in from..=to {
                        let before = |j: usize| {
                            assert!((from..to).contains(&j), "{j} outside {from}..{to}");
                            j < first
                        };
                        assert_eq!(
                            gallop(from, to, near, before),
                            first,
                            "{from}..{to} from {near}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn patched_chunks_equal_streamed_ones() {
        let (mut patched, mut grew, mut shrank, mut new_rows) = (0, 0, 0, 0);
        for seed in 0..8u64 {
            let mut s = seed * 104_729 + 7;
            let n = 400 + seed as usize * 100;
            let side = (n as f64 * 3.0).cbrt();
            let mut boxes: Vec<Option<(Aabb, bool)>> = Vec::new();
            let mut bp = BroadPhase::new();
            for i in 0..n as u32 {
                let b = random_box(&mut s, side);
                let d = lcg(&mut s) < 0.9;
                bp.set(i, b, d).unwrap();
                boxes.push(Some((b, d)));
            }
            bp.update();
            let mut oracle = bp.clone();
            oracle.stream_only = true;
            for frame in 0..60 {
                // A few boxes change: nudged within their rows, moved a cell or two (rows
                // left and entered, counts changed), sent anywhere, removed, added.
                for _ in 0..1 + (lcg(&mut s) * 5.0) as usize {
                    let i = (lcg(&mut s) * boxes.len() as f64) as usize;
                    let r = lcg(&mut s);
                    let new = match boxes[i] {
                        Some((b, d)) if r < 0.8 => {
                            let reach = if r < 0.4 { 0.1 } else { 3.0 };
                            let m = [0, 1, 2].map(|_| (lcg(&mut s) as f32 - 0.5) * reach);
                            let b = Aabb::new(
                                [0, 1, 2].map(|k| b.lo[k] + m[k]),
                                [0, 1, 2].map(|k| b.hi[k] + m[k]),
                            );
                            Some((b, d))
                        }
                        _ if r < 0.9 => Some((random_box(&mut s, side), true)),
                        _ => None,
                    };
                    let i = if r > 0.97 { boxes.len() } else { i };
                    if i == boxes.len() {
                        boxes.push(None);
                    }
                    for phase in [&mut bp, &mut oracle] {
                        match new {
                            Some((b, d)) => phase.set(i as u32, b, d).unwrap(),
                            None => _ = phase.remove(i as u32),
                        }
                    }
                    boxes[i] = new;
                }
                let before: Vec<_> = bp
                    .dynamic
                    .iter()
                    .map(|c| (c.rows.count(), c.rows.len()))
                    .collect();
                bp.update();
                oracle.update();
                let at = format!("seed {seed}, frame {frame}");
                assert_same_chunks(&bp, &oracle, &at);
                assert_eq!(
                    bp.pairs().collect::<Vec<_>>(),
                    oracle.pairs().collect::<Vec<_>>(),
                    "{at}"
                );
                let live: Vec<_> = boxes
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| b.map(|(a, d)| (i as u32, a, d)))
                    .collect();
                let mut got: Vec<_> = bp.pairs().collect();
                got.sort_unstable();
                assert_eq!(got, brute_force_pairs(&live), "{at}");
                assert_eq!(oracle.stats().chunks_patched, 0);
                patched += bp.stats().chunks_patched;
                if before.len() == bp.dynamic.len() {
                    for (&(count, rows), c) in before.iter().zip(&bp.dynamic) {
                        grew += u64::from(c.rows.count() > count);
                        shrank += u64::from(c.rows.count() < count);
                        new_rows += u64::from(c.rows.len() > rows);
                    }
                }
            }
        }
        assert!(
            patched > 200 && grew > 20 && shrank > 20 && new_rows > 5,
            "{patched} chunks patched; {grew} grew, {shrank} shrank, {new_rows} gained rows"
        );
    }
}
