//! Static boxes that changed since their rows were last sorted (Klosowski et al. 1998, §6.1,
//! "Dynamic environments": a static scene that takes edits). Re-sorting a level's static
//! rows is a pass over all of them, so a level where few static boxes changed is not
//! re-sorted: each changed box's old entries in the sorted rows become *tombstones* (NaN
//! bounds, which no comparison meets; their place in the order and the row's lower x
//! bounds stay as they were), and its new entries go to the level's *recent* rows, small
//! rows of the same cells that every lookup reads beside the sorted ones. Once a level's
//! recent entries pass a share of its sorted ones, the two are merged (the tombstones
//! dropped; in a large level a slice per update, `merge.rs`) and the recent rows start
//! empty again. So a changed static box costs its own entries and its share of a merge,
//! not the level.
//!
//! A proxy is *recent* when its entries are in the recent rows of its level; the sorted
//! rows then hold none of its live entries. No flag says so: a changed proxy's old entries
//! are looked for in both, and are where they are found.

use super::merge;
use super::place::{COARSE_LEVELS, KEY, directory, rows_of};
use super::{BroadPhase, Entry, Place, StaticRows};

/// A level's recent rows are merged into its sorted ones when the recent entries pass a
/// limit L. Each update re-sorts the recent rows (about L/2 entries on average), and a
/// merge copies all S sorted entries once per L arriving: with `a` entries arriving per
/// update, the two cost L/2 + S·a/L, least at L = √(2·S·a), which the limit follows
/// (with `a` a running mean), within [`RECENT_FLOOR`] and an eighth of the sorted ones.
const RATE_WEIGHT: f64 = 0.125;
/// The least limit (small levels are merged at once: a pass costs little there; the fuzz
/// target's few boxes merge too).
#[cfg(not(fuzzing))]
const RECENT_FLOOR: usize = 256;
#[cfg(fuzzing)]
const RECENT_FLOOR: usize = 4;

/// The recent-entry limit of a level of `sorted` entries where `rate` entries arrive per
/// update (see [`RATE_WEIGHT`]).
fn recent_limit(sorted: usize, rate: f64) -> usize {
    let best = (2.0 * sorted as f64 * rate).sqrt() as usize;
    best.clamp(RECENT_FLOOR, (sorted / 8).max(RECENT_FLOOR))
}

/// A job under way (`merge.rs`) ends at once when the recent entries pass this many times
/// their limit.
const JOB_BEHIND: usize = 4;

/// The bit of level `level` in [`Place::rows_bit`]'s numbering (the rows, then each coarse
/// level).
fn level_bit(level: usize) -> u32 {
    if level == 0 { 1 } else { 2 << (level - 1) }
}

impl BroadPhase {
    /// The static rows of level `level` (the rows, then each coarse level), taken out.
    fn take_level(&mut self, level: usize) -> StaticRows {
        std::mem::take(self.level_mut(level))
    }

    /// The sorted static rows of level `level`.
    pub(super) fn level(&self, level: usize) -> &StaticRows {
        match level {
            0 => &self.statics,
            l => &self.coarse[l - 1],
        }
    }

    /// [`BroadPhase::level`], to change.
    pub(super) fn level_mut(&mut self, level: usize) -> &mut StaticRows {
        match level {
            0 => &mut self.statics,
            l => &mut self.coarse[l - 1],
        }
    }

    /// Puts back the static rows of level `level`.
    fn put_level(&mut self, level: usize, rows: StaticRows) {
        *self.level_mut(level) = rows;
    }

    /// Brings the static rows of every level this update changed up to date (after the
    /// placing, with the changed proxies' bits set): the changed boxes' new entries go
    /// to the level's recent rows and their old sorted entries become tombstones; where
    /// the recent entries grew past their limit ([`recent_limit`]), the two are merged: at
    /// once in a small level, by a job a slice per update in a large one (`merge.rs`).
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
                .arrived
                .iter()
                .map(|&id| &self.proxies[id as usize])
                .filter(|p| p.placed.rows_bit() == which)
                .map(|p| entry_count(p.placed))
                .sum();
            let after = recent.count() + arriving;
            let rate = self.merging[level].note_arrivals(arriving, RATE_WEIGHT);
            let limit = recent_limit(sorted.count(), rate);
            let job = self.merging[level].active();
            if job {
                self.bury_in_job(level, which);
            }
            if after > limit && !job && !merge::by_job(sorted.count()) {
                self.merge_recent(&mut sorted, &mut recent, which);
                #[cfg(test)]
                tests::MERGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            } else {
                self.bury(&mut sorted, which);
                self.resort_statics(&mut recent, which, &[]);
                #[cfg(test)]
                tests::KEPT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if after > limit && !job {
                    self.start_merge(level, &sorted, &recent, limit);
                }
            }
            self.put_level(level, sorted);
            self.recent[level] = recent;
            if job && after > JOB_BEHIND * limit {
                // Changes come faster than the job copies: it ends in this update.
                #[cfg(test)]
                merge::tests::CAUGHT_UP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.advance_merge(level, usize::MAX);
            }
        }
        self.buried.clear();
        self.arrived.clear();
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
        recent.entries.clear();
        directory(recent);
    }

    /// Turns the entries that the changed proxies left in rows `sorted` of level `which`
    /// (its sorted rows, or a merge job's) into tombstones: each one found in its row by its
    /// old lower x bound and id (none, for a proxy whose entries are elsewhere).
    pub(super) fn bury(&self, sorted: &mut StaticRows, which: u32) {
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
        /// Every live static box in rows has its entries, one per row it spans, with its
        /// box, all in the sorted rows of its level (live there, not tombstones) or all in
        /// its recent rows, and no other live static entry is left anywhere.
        fn check_statics(&self) {
            let mut seen = std::collections::HashMap::<(u32, bool), Vec<u32>>::new();
            let sorted = std::iter::once(&self.statics).chain(&self.coarse);
            for (recent, rows) in sorted
                .map(|r| (false, r))
                .chain(self.recent.iter().map(|r| (true, r)))
            {
                for e in rows.entries.iter().filter(|e| !e.lo[0].is_nan()) {
                    let p = &self.proxies[e.proxy as usize];
                    assert!(p.live, "proxy {}: removed, yet in static rows", e.proxy);
                    assert_eq!((e.lo, e.hi), (p.aabb.lo, p.aabb.hi), "proxy {}", e.proxy);
                    seen.entry((e.proxy, recent)).or_default().push(e.row & KEY);
                }
            }
            for (id, p) in self.proxies.iter().enumerate() {
                let id = id as u32;
                let mut want: Vec<u32> = match p.placed {
                    Place::Static(lo, hi) | Place::Coarse(lo, hi, _) if p.live => {
                        rows_of(lo, hi).map(|r| r & KEY).collect()
                    }
                    _ => Vec::new(),
                };
                want.sort_unstable();
                let mut got: Vec<Vec<u32>> = [false, true]
                    .map(|recent| seen.get(&(id, recent)).cloned().unwrap_or_default())
                    .into();
                got.iter_mut().for_each(|rows| rows.sort_unstable());
                assert!(
                    (got[0] == want && got[1].is_empty()) || (got[1] == want && got[0].is_empty()),
                    "proxy {id}: rows {want:?}, sorted and recent entries in {got:?}"
                );
            }
        }
    }

    /// Levels whose changed statics went to the recent rows, and levels merged whole.
    pub(in crate::broad) static KEPT: AtomicUsize = AtomicUsize::new(0);
    pub(in crate::broad) static MERGED: AtomicUsize = AtomicUsize::new(0);

    /// Static boxes moved a few at a time (and removed, set again, made dynamic and
    /// static again) among many: every update's pairs equal brute force's, on one thread
    /// and three in the same order, and every box query reports exactly the boxes it
    /// meets, while the changes pile up in the recent rows and are merged now and then:
    /// at once in a small scene, by jobs a slice per update in a larger one (`merge.rs`),
    /// and with changes faster than a job copies.
    #[test]
    fn statics_changed_a_few_at_a_time_pair_as_brute_force_finds() {
        use crate::broad::merge::tests::{CAUGHT_UP, ENDED};
        let count = |c: &AtomicUsize| c.load(Ordering::Relaxed);
        let (kept, merged) = (count(&KEPT), count(&MERGED));
        let (ended, caught_up) = (count(&ENDED), count(&CAUGHT_UP));
        // Levels under 1,000 entries (in tests) are merged at once.
        changes_pair_as_brute_force_finds(300, 700, 15, 100, 73);
        assert!(count(&KEPT) - kept >= 20, "too few kept in recent rows");
        assert!(count(&MERGED) - merged >= 2, "too few merges at once");
        changes_pair_as_brute_force_finds(2500, 2800, 6, 80, 71);
        assert!(count(&ENDED) - ended >= 2, "too few jobs ended");
        changes_pair_as_brute_force_finds(2500, 2800, 400, 20, 79);
        assert!(
            count(&CAUGHT_UP) - caught_up >= 1,
            "no job caught up at once"
        );
    }

    /// One scene of [`statics_changed_a_few_at_a_time_pair_as_brute_force_finds`]: `n`
    /// boxes of which the first `statics` static, `edits` of them changed in each of
    /// `frames` frames, from seed `seed`.
    fn changes_pair_as_brute_force_finds(
        statics: u32,
        n: u32,
        edits: usize,
        frames: usize,
        seed: u64,
    ) {
        let serial = crate::testing::pool(1);
        let pool = crate::testing::pool(3);
        let mut s = seed;
        let side = f64::from(n).cbrt() * 1.6;
        let mut boxes: Vec<Option<(Aabb, bool)>> = Vec::new();
        let (mut bp, mut twin) = (BroadPhase::new(), BroadPhase::new());
        for i in 0..n {
            let b = random_box(&mut s, side);
            bp.set(i, b, i >= statics).unwrap();
            twin.set(i, b, i >= statics).unwrap();
            boxes.push(Some((b, i >= statics)));
        }
        for frame in 0..frames {
            for _ in 0..edits {
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
            bp.check_merging();
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
        assert!(bp.recent.iter().map(StaticRows::count).sum::<usize>() > 0);
    }
}
