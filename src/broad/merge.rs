//! A level's recent static rows merged into its sorted ones a slice per update
//! (Klosowski et al. 1998, §6.1, "Dynamic environments": edits cost their own area, and no
//! frame pays for the whole environment). Merged in one update, a large level costs one
//! frame many times the others: a spike a game sees.
//!
//! So a large level's merge is a *job*: when it starts, the recent entries are copied
//! aside (the *snapshot*), and each update copies the next slice of the sorted entries and
//! the snapshot's, in order, into new rows built beside them, with their directory. Lookups
//! read the sorted and recent rows as before, untouched until the job ends. A box that
//! changes meanwhile has its old entries made tombstones wherever they are — the sorted
//! rows (`recent.rs`), the snapshot, or the rows already written — so nothing stale is
//! copied or kept. When everything is copied, the new rows replace the sorted ones, and
//! the recent entries that went into them (those of the snapshot still live) leave the
//! recent rows: the same live entries, in sorted rows, as a merge in one update makes.

use super::place::{directory, emptied_with_room, end, note, rank};
use super::{BroadPhase, Entry, SKIP, StaticRows};

/// Levels smaller than this many entries are merged in one update: it costs less than a
/// slice of a large one.
#[cfg(not(any(test, fuzzing)))]
const JOB_MIN: usize = 65_536;
#[cfg(all(test, not(fuzzing)))]
const JOB_MIN: usize = 1_000;
#[cfg(fuzzing)]
const JOB_MIN: usize = 24;
/// A job copies at least this share of its entries per update (so ends within as many
/// updates) ...
#[cfg(not(any(test, fuzzing)))]
const JOB_UPDATES: usize = 64;
#[cfg(any(test, fuzzing))]
const JOB_UPDATES: usize = 6;
/// ... and at least this many.
#[cfg(not(any(test, fuzzing)))]
const SLICE_MIN: usize = 16_384;
#[cfg(any(test, fuzzing))]
const SLICE_MIN: usize = 1;

/// A merge of one level's recent rows into its sorted rows under way.
#[derive(Clone, Debug, Default)]
pub(super) struct Merging {
    /// Whether a job is under way (the buffers are kept between jobs).
    active: bool,
    /// The rows being written, their directory closed after each slice.
    out: StaticRows,
    /// The recent entries when the job began, sorted, with their directory.
    from: StaticRows,
    /// The next sorted entry to copy, and the next of `from`.
    at: usize,
    from_at: usize,
    /// Entries copied per update.
    slice: usize,
    /// The running mean of the entries arriving in the level's recent rows per update
    /// that changed it (`recent.rs`).
    rate: f64,
}

impl Merging {
    /// Bytes held (capacities).
    pub(super) fn bytes(&self) -> usize {
        self.out.bytes() + self.from.bytes()
    }

    /// Takes in the `arriving` entries of an update that changed the level into the running
    /// mean (weight `weight`), and returns it.
    pub(super) fn note_arrivals(&mut self, arriving: usize, weight: f64) -> f64 {
        self.rate += weight * (arriving as f64 - self.rate);
        self.rate
    }

    /// Whether a job is under way.
    pub(super) fn active(&self) -> bool {
        self.active
    }

    /// Copies up to `budget` entries, in order, of the sorted entries `s` (its level's) and
    /// the snapshot into the rows written; returns whether all are copied.
    fn copy(&mut self, s: &[Entry], budget: usize) -> bool {
        let (f, out) = (&self.from.entries, &mut self.out);
        // The directory is reopened to write, and closed again after.
        out.rows.pop();
        let live = |v: &[Entry], mut k: usize| {
            while k < v.len() && v[k].lo[0].is_nan() {
                k += 1;
            }
            k
        };
        let (mut i, mut j) = (self.at, live(f, self.from_at));
        // The next live snapshot entry's rank, reckoned once.
        let mut next = f.get(j).map_or(u128::MAX, rank);
        for _ in 0..budget {
            i = live(s, i);
            let e = match s.get(i) {
                Some(a) if rank(a) <= next => {
                    i += 1;
                    *a
                }
                _ if j < f.len() => {
                    let b = f[j];
                    j = live(f, j + 1);
                    next = f.get(j).map_or(u128::MAX, rank);
                    b
                }
                _ => break,
            };
            let n = out.entries.len();
            note(&mut out.rows, &mut out.xs, &mut out.skip, n, &e);
            out.entries.push(e);
        }
        end(&mut out.rows, out.entries.len());
        (self.at, self.from_at) = (live(s, i), j);
        self.at == s.len() && self.from_at == f.len()
    }

    /// Ends any job and forgets its entries (the levels are rebuilt whole).
    pub(super) fn cancel(&mut self) {
        self.active = false;
        self.out.entries.clear();
        self.from.entries.clear();
    }
}

/// Whether a level of `entries` sorted entries is merged by a job rather than at once.
pub(super) fn by_job(entries: usize) -> bool {
    entries >= JOB_MIN
}

impl BroadPhase {
    /// Starts the merge of level `level`'s recent rows (`recent`, this update's changes in)
    /// into its sorted rows `sorted`: the recent entries copied aside, the new rows empty.
    /// It is paced to end before as many entries as `limit` arrive anew.
    pub(super) fn start_merge(
        &mut self,
        level: usize,
        sorted: &StaticRows,
        recent: &StaticRows,
        limit: usize,
    ) {
        let spare = if level == 0 {
            &mut self.static_spare
        } else {
            &mut self.coarse_spare
        };
        let job = &mut self.merging[level];
        debug_assert!(!job.active, "a level merged twice at once");
        // The rows a job wrote last are kept for the next (freeing a large buffer and
        // faulting in a new one costs about a slice); the merges' spare may do too.
        let need = sorted.count() + recent.count();
        if job.out.entries.capacity() < need {
            std::mem::swap(&mut job.out.entries, spare);
        }
        emptied_with_room(&mut job.out.entries, need);
        // Room for all of it now: grown by doubling, one slice would copy megabytes.
        job.out.rows.clear();
        job.out.rows.reserve(sorted.rows.len() + recent.rows.len());
        job.out.xs.clear();
        job.out.xs.reserve(need);
        job.out.skip.clear();
        job.out.skip.reserve(need / SKIP + 1);
        end(&mut job.out.rows, 0);
        job.from.entries.clear();
        job.from.entries.extend_from_slice(&recent.entries);
        directory(&mut job.from);
        job.at = 0;
        job.from_at = 0;
        let pace = (job.rate * need as f64 / limit.max(1) as f64).ceil() as usize;
        job.slice = (need / JOB_UPDATES).max(pace).max(SLICE_MIN);
        job.active = true;
    }

    /// Makes tombstones of the entries that this update's changed proxies had in level
    /// `which`'s job: in its snapshot, or in the rows written (where they were copied).
    pub(super) fn bury_in_job(&mut self, level: usize, which: u32) {
        let mut job = std::mem::take(&mut self.merging[level]);
        self.bury(&mut job.out, which);
        self.bury(&mut job.from, which);
        self.merging[level] = job;
    }

    /// Moves every job under way a slice on, and ends those with nothing left to copy.
    pub(super) fn advance_merges(&mut self) {
        for level in 0..self.merging.len() {
            if self.merging[level].active {
                let slice = self.merging[level].slice;
                self.advance_merge(level, slice);
            }
        }
    }

    /// Copies up to `budget` entries of level `level`'s job, and ends the job if that was
    /// the last of them.
    pub(super) fn advance_merge(&mut self, level: usize, budget: usize) {
        let mut job = std::mem::take(&mut self.merging[level]);
        if job.copy(&self.level(level).entries, budget) {
            self.end_merge(level, &mut job);
        }
        self.merging[level] = job;
    }

    /// Ends level `level`'s job `job` (taken out), all copied: its rows become the sorted
    /// ones, and the entries of the snapshot still live leave the recent rows.
    fn end_merge(&mut self, level: usize, job: &mut Merging) {
        #[cfg(test)]
        tests::ENDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        job.active = false;
        std::mem::swap(self.level_mut(level), &mut job.out);
        job.out.entries.clear();
        // Both sorted by rank, so one walk finds the snapshot's live entries in the recent
        // rows: a changed proxy's snapshot entries are tombstones, never met.
        let recent = &mut self.recent[level];
        let from = &job.from.entries;
        let (mut k, mut kept) = (0, 0);
        for i in 0..recent.entries.len() {
            let e = recent.entries[i];
            let r = rank(&e);
            while k < from.len() && (from[k].lo[0].is_nan() || rank(&from[k]) < r) {
                k += 1;
            }
            if from.get(k).is_none_or(|g| rank(g) != r) {
                recent.entries[kept] = e;
                kept += 1;
            }
        }
        recent.entries.truncate(kept);
        directory(recent);
        job.from.entries.clear();
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Jobs ended (shared by the tests that run at once: only growth counts).
    pub(in crate::broad) static ENDED: AtomicUsize = AtomicUsize::new(0);
    /// Jobs ended at once, changes having come faster than they copied.
    pub(in crate::broad) static CAUGHT_UP: AtomicUsize = AtomicUsize::new(0);

    /// Live entries as comparable keys: the proxy, the row and the bounds' bits.
    fn live(v: &[Entry]) -> impl Iterator<Item = (u32, u32, [u32; 6])> + '_ {
        v.iter().filter(|e| !e.lo[0].is_nan()).map(|e| {
            let b = [e.lo[0], e.lo[1], e.lo[2], e.hi[0], e.hi[1], e.hi[2]];
            (e.proxy, e.row, b.map(f32::to_bits))
        })
    }

    impl BroadPhase {
        /// Every job under way holds, in the rows it wrote and what it has yet to copy,
        /// exactly the live entries of its level's sorted rows and its snapshot; the rows
        /// written are in order, and their directory is the one a fresh pass makes.
        pub(in crate::broad) fn check_merging(&self) {
            for (level, job) in self.merging.iter().enumerate() {
                if !job.active {
                    continue;
                }
                let sorted = self.level(level);
                let mut want: Vec<_> = live(&sorted.entries)
                    .chain(live(&job.from.entries))
                    .collect();
                let mut got: Vec<_> = live(&job.out.entries)
                    .chain(live(&sorted.entries[job.at..]))
                    .chain(live(&job.from.entries[job.from_at..]))
                    .collect();
                want.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, want, "level {level}: the job lost or doubled an entry");
                let ranks: Vec<u128> = job
                    .out
                    .entries
                    .iter()
                    .filter(|e| !e.lo[0].is_nan())
                    .map(rank)
                    .collect();
                assert!(
                    ranks.is_sorted(),
                    "level {level}: rows written out of order"
                );
                let mut fresh = job.out.clone();
                directory(&mut fresh);
                // Tombstones made after a copy keep their place in the order and their x.
                assert_eq!(
                    fresh.rows.len(),
                    job.out.rows.len(),
                    "level {level}: directory"
                );
                for (a, b) in fresh.rows.iter().zip(&job.out.rows) {
                    assert_eq!(
                        (a.key, a.start),
                        (b.key, b.start),
                        "level {level}: directory"
                    );
                }
                assert_eq!(
                    fresh.skip.len(),
                    job.out.skip.len(),
                    "level {level}: samples"
                );
            }
        }
    }
}
