//! Static boxes that changed since their rows were last sorted (Klosowski et al. 1998, §6.1,
//! "Dynamic environments": a static scene that takes edits). Re-sorting a level's static
//! rows is a pass over all of them, so a level where few static boxes changed is not
//! re-sorted: each changed box's old entries in the sorted rows become *tombstones* (NaN
//! bounds, which no comparison meets; their place in the order and the row's lower x
//! bounds stay as they were), and its new entries go to the level's *recent* rows, small
//! rows of the same cells that every lookup reads beside the sorted ones. Once a level's
//! recent entries pass a share of its sorted ones, the two are merged in one pass (the
//! tombstones dropped) and the recent rows start empty again. So a changed static box costs
//! its own entries and a merge of the recent rows, not the level.
//!
//! A proxy is *recent* when its entries are in the recent rows of its level; the sorted
//! rows then hold none of its live entries.

use super::place::{COARSE_LEVELS, KEY, directory, rows_of};
use super::{BroadPhase, Entry, Place, StaticRows};

/// A level's static rows are merged with its recent rows when the recent entries pass one in
/// this many of the sorted ones...
const RECENT_SHARE: usize = 32;
/// ... or this many, whichever is more (small levels are merged at once: a pass costs
/// little there).
const RECENT_FLOOR: usize = 256;

/// The bit of level `level` in [`Place::rows_bit`]'s numbering (the rows, then each coarse
/// level).
fn level_bit(level: usize) -> u32 {
    if level == 0 { 1 } else { 2 << (level - 1) }
}

impl BroadPhase {
    /// The static rows of level `level` (the rows, then each coarse level), taken out.
    fn take_level(&mut self, level: usize) -> StaticRows {
        match level {
            0 => std::mem::take(&mut self.statics),
            l => std::mem::take(&mut self.coarse[l - 1]),
        }
    }

    /// Puts back the static rows of level `level`.
    fn put_level(&mut self, level: usize, rows: StaticRows) {
        match level {
            0 => self.statics = rows,
            l => self.coarse[l - 1] = rows,
        }
    }

    /// Brings the static rows of every level this update changed up to date (after the
    /// placing, with the changed proxies' bits set): the changed boxes' new entries go
    /// to the level's recent rows and their old sorted entries become tombstones, or,
    /// where the recent entries grew past [`RECENT_SHARE`], everything is merged anew.
    pub(super) fn update_statics(&mut self) {
        let changed = std::mem::take(&mut self.statics_changed);
        for level in 0..1 + COARSE_LEVELS {
            let which = level_bit(level);
            if changed & which == 0 {
                continue;
            }
            let mut sorted = self.take_level(level);
            let mut recent = std::mem::take(&mut self.recent[level]);
            // The recent entries once this update is in: those kept, and the changed ones'.
            let arriving: usize = self
                .moved
                .iter()
                .map(|&id| &self.proxies[id as usize])
                .filter(|p| p.placed.rows_bit() == which)
                .map(|p| entry_count(p.placed))
                .sum();
            let after = recent.count() + arriving;
            if after > (sorted.count() / RECENT_SHARE).max(RECENT_FLOOR) {
                self.merge_recent(&mut sorted, &mut recent, which);
                #[cfg(test)]
                tests::MERGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            } else {
                self.bury(&mut sorted, which);
                self.resort_statics(&mut recent, which, &[]);
                #[cfg(test)]
                tests::KEPT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            self.put_level(level, sorted);
            self.recent[level] = recent;
        }
        self.buried.clear();
        let proxies = &self.proxies;
        self.recent_ids
            .retain(|&id| proxies.get(id as usize).is_some_and(|p| p.recent));
    }

    /// Merges level `which`'s recent rows into its sorted rows in one pass (the changed
    /// proxies' entries anew, the tombstones dropped), and empties the recent rows.
    fn merge_recent(&mut self, sorted: &mut StaticRows, recent: &mut StaticRows, which: u32) {
        // The recent rows' entries of unchanged proxies, sorted as the rows are.
        let moved = &self.moved_bits;
        recent.entries.retain(|e| !super::bit(moved, e.proxy));
        self.resort_statics(sorted, which, &recent.entries);
        debug_assert!(
            sorted.entries.iter().all(|e| !e.lo[0].is_nan()),
            "a tombstone outlived a merge"
        );
        let ids = recent.entries.iter().map(|e| e.proxy);
        for id in ids.chain(self.moved.iter().copied()) {
            let p = &mut self.proxies[id as usize];
            if p.placed.rows_bit() == which {
                p.recent = false;
            }
        }
        recent.entries.clear();
        directory(recent);
    }

    /// Turns the sorted entries that the changed proxies left in level `which` into
    /// tombstones: each one found in its row by its old lower x bound and id.
    fn bury(&self, sorted: &mut StaticRows, which: u32) {
        for &(at, old) in &self.buried {
            if old.rows_bit() != which {
                continue;
            }
            let before = self.moved_old[at as usize];
            let (Place::Static(lo, hi) | Place::Coarse(lo, hi, _)) = old else {
                continue;
            };
            for row in rows_of(lo, hi) {
                if let Some(i) = find(sorted, row & KEY, before.aabb.lo[0], before.id) {
                    let e: &mut Entry = &mut sorted.entries[i];
                    e.lo = [f32::NAN; 3];
                    e.hi = [f32::NAN; 3];
                }
            }
        }
    }
}

/// How many entries a placement in static rows has: one per row it spans.
fn entry_count(p: Place) -> usize {
    match p {
        Place::Static(lo, hi) | Place::Coarse(lo, hi, _) => rows_of(lo, hi).count(),
        _ => 0,
    }
}

/// The place in `rows` of the entry of proxy `id` in row `key` whose lower x bound is `x`
/// (entries are sorted by row, lower x bound and id).
fn find(rows: &StaticRows, key: u32, x: f32, id: u32) -> Option<usize> {
    let dir = &rows.rows[..rows.len()];
    let r = dir.binary_search_by_key(&key, |row| row.key).ok()?;
    let (a, b) = (rows.rows[r].start as usize, rows.rows[r + 1].start as usize);
    let xs = &rows.xs[a..b];
    let from = a + xs.partition_point(|&v| v < x);
    (from..b)
        .take_while(|&i| rows.xs[i] == x)
        .find(|&i| rows.entries[i].proxy == id)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::place::tests::{random_box, set_twins, update_twins};
    use super::*;
    use crate::broad::Aabb;
    use crate::testing::lcg;
    use std::sync::atomic::{AtomicUsize, Ordering};

    impl BroadPhase {
        /// Every live static box in rows has its entries, one per row it spans, in the
        /// recent rows of its level if it is recent, else in the sorted ones (live there,
        /// not tombstones), and nowhere else.
        fn check_statics(&self) {
            let mut seen = std::collections::HashMap::<(u32, bool), usize>::new();
            let sorted = std::iter::once(&self.statics).chain(&self.coarse);
            for (recent, rows) in sorted
                .map(|r| (false, r))
                .chain(self.recent.iter().map(|r| (true, r)))
            {
                for e in rows.entries.iter().filter(|e| !e.lo[0].is_nan()) {
                    *seen.entry((e.proxy, recent)).or_default() += 1;
                }
            }
            for (id, p) in self.proxies.iter().enumerate() {
                let id = id as u32;
                let n = if p.live { entry_count(p.placed) } else { 0 };
                let want = |recent: bool| if p.recent == recent { n } else { 0 };
                for recent in [false, true] {
                    let got = seen.get(&(id, recent)).copied().unwrap_or(0);
                    assert_eq!(got, want(recent), "proxy {id}, recent rows {recent}");
                }
            }
        }
    }

    /// Levels whose changed statics went to the recent rows, and levels merged whole.
    pub(in crate::broad) static KEPT: AtomicUsize = AtomicUsize::new(0);
    pub(in crate::broad) static MERGED: AtomicUsize = AtomicUsize::new(0);

    /// Static boxes moved a few at a time (and removed, set again, made dynamic and
    /// static again) among many: every update's pairs equal brute force's, on one thread
    /// and three in the same order, and every box query reports exactly the boxes it
    /// meets, while the changes pile up in the recent rows and are merged now and then.
    #[test]
    fn statics_changed_a_few_at_a_time_pair_as_brute_force_finds() {
        let serial = crate::testing::pool(1);
        let pool = crate::testing::pool(3);
        let (kept, merged) = (KEPT.load(Ordering::Relaxed), MERGED.load(Ordering::Relaxed));
        let mut s = 71u64;
        let (statics, n) = (2500u32, 2800u32);
        let side = f64::from(n).cbrt() * 1.6;
        let mut boxes: Vec<Option<(Aabb, bool)>> = Vec::new();
        let (mut bp, mut twin) = (BroadPhase::new(), BroadPhase::new());
        for i in 0..n {
            let b = random_box(&mut s, side);
            bp.set(i, b, i >= statics).unwrap();
            twin.set(i, b, i >= statics).unwrap();
            boxes.push(Some((b, i >= statics)));
        }
        for frame in 0..60 {
            for _ in 0..6 {
                let i = (lcg(&mut s) * f64::from(n)) as u32;
                let r = lcg(&mut s);
                let new = match boxes[i as usize] {
                    None => Some((random_box(&mut s, side), i < statics)),
                    Some(_) if r < 0.08 => None,
                    // A static box made dynamic, or back.
                    Some((b, d)) if r < 0.16 => Some((b, !d)),
                    Some((b, d)) => {
                        let m = [0, 1, 2].map(|_| (lcg(&mut s) as f32 - 0.5) * 0.7);
                        let b = Aabb::new(
                            [0, 1, 2].map(|k| b.lo[k] + m[k]),
                            [0, 1, 2].map(|k| b.hi[k] + m[k]),
                        );
                        Some((b, d))
                    }
                };
                set_twins(&mut bp, &mut twin, i, new);
                boxes[i as usize] = new;
            }
            let live: Vec<_> = (0..n)
                .filter_map(|i| boxes[i as usize].map(|(b, d)| (i, b, d)))
                .collect();
            let at = format!("frame {frame}");
            update_twins((&serial, &pool), &mut bp, &mut twin, &live, &at);
            bp.check_statics();
            for _ in 0..10 {
                let q = random_box(&mut s, side);
                let mut got = Vec::new();
                bp.query(&q, |p| got.push(p));
                got.sort_unstable();
                let want: Vec<u32> = live
                    .iter()
                    .filter(|(_, b, _)| b.overlaps(&q))
                    .map(|&(i, _, _)| i)
                    .collect();
                assert_eq!(got, want, "{at}, query {q:?}");
            }
        }
        // Both ways ran (the counters are shared with other tests, so only growth counts).
        assert!(
            KEPT.load(Ordering::Relaxed) - kept >= 20,
            "too few kept in recent rows"
        );
        assert!(
            MERGED.load(Ordering::Relaxed) - merged >= 2,
            "too few merges"
        );
        assert!(bp.recent.iter().map(StaticRows::count).sum::<usize>() > 0);
    }
}
