//! Pairs of large dynamic boxes, those spanning more than two cells in y or z or longer
//! than two along x (the rows' neighbourhood cannot hold them): each is compared anew every
//! update with the rows it covers, dynamic, static and coarse static (`query_rows`), with
//! the statics too large for every level, and with the other large dynamic boxes. For
//! those, the large dynamic boxes are entered each update in rows of the coarse levels (as
//! the coarse statics are, `place.rs`) and each looks up its own level and the coarser
//! ones, so that their pairs cost what their neighbours do, not the square of their
//! number. A scene's few large boxes cost their own pairs' worth; many of them are looked
//! up in slices on rayon's pool, the slices' pairs joined in slice order (the same pairs in
//! the same order for any number of threads).

use super::place::{COARSE_LEVELS, directory, entries, rank};
use super::query::query_rows;
use super::sweep::Kernel;
use super::{BroadPhase, StaticRows};
use rayon::prelude::*;

/// Large boxes per task on rayon's pool: a large box's lookup reads tens of rows, far more
/// than a task costs to hand over.
const PER_TASK: usize = 8;

/// The level of a large dynamic box too large for every coarse level.
const HUGE: u8 = u8::MAX;

/// The large dynamic boxes as rows of the coarse levels, remade each update (scratch of
/// this file).
#[derive(Clone, Debug, Default)]
pub(super) struct LargeRows {
    levels: [StaticRows; COARSE_LEVELS],
    /// The level of each box of `large_dynamic`, in its order ([`HUGE`] for none).
    level: Vec<u8>,
    /// The boxes of no level, in the order of `large_dynamic`.
    huge: Vec<u32>,
}

impl LargeRows {
    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.levels.iter().map(StaticRows::bytes).sum::<usize>()
            + self.level.capacity()
            + self.huge.capacity() * 4
    }
}

impl BroadPhase {
    /// Finds every pair of a large dynamic box, into `large_pairs`.
    pub(super) fn large_pairs(&mut self) {
        let mut out = std::mem::take(&mut self.large_pairs);
        out.clear();
        self.index_large();
        let n = self.large_dynamic.len();
        let compared = if n <= PER_TASK || rayon::current_num_threads() == 1 {
            self.large_slice_pairs(0..n, &mut out)
        } else {
            let mut slices = std::mem::take(&mut self.large_slices);
            let tasks = n.div_ceil(PER_TASK);
            if slices.len() < tasks {
                slices.resize_with(tasks, Vec::new);
            }
            let this = &*self;
            let compared = slices[..tasks]
                .par_iter_mut()
                .enumerate()
                .with_max_len(1)
                .map(|(t, found)| {
                    found.clear();
                    this.large_slice_pairs(t * PER_TASK..n.min((t + 1) * PER_TASK), found)
                })
                .sum();
            for found in &slices[..tasks] {
                out.extend_from_slice(found);
            }
            self.large_slices = slices;
            compared
        };
        self.stats.compared += compared;
        self.stats.pairs += out.len() as u64;
        self.large_pairs = out;
    }

    /// Enters the large dynamic boxes in the rows of their coarse levels.
    fn index_large(&mut self) {
        let mut rows = std::mem::take(&mut self.large_rows);
        for level in &mut rows.levels {
            level.entries.clear();
        }
        rows.level.clear();
        rows.huge.clear();
        for &id in &self.large_dynamic {
            let b = self.proxies[id as usize].aabb;
            match self.coarse_level(&b) {
                Some((level, lo, hi)) => {
                    entries(id, &b, lo, hi, &mut rows.levels[level as usize].entries);
                    rows.level.push(level);
                }
                None => {
                    rows.huge.push(id);
                    rows.level.push(HUGE);
                }
            }
        }
        for level in rows
            .levels
            .iter_mut()
            .filter(|l| !l.entries.is_empty() || l.len() > 0)
        {
            level.entries.sort_unstable_by_key(rank);
            directory(level);
        }
        self.large_rows = rows;
    }

    /// Pushes the pairs of the large dynamic boxes `range` (positions in `large_dynamic`)
    /// onto `out`; returns the boxes compared. A pair of two large dynamic boxes is found
    /// by the one of the lower level, or of the lower id on one level; one of a box of no
    /// level, by that box (the lower id if both are).
    fn large_slice_pairs(&self, range: std::ops::Range<usize>, out: &mut Vec<(u32, u32)>) -> u64 {
        let (kernel, inv) = (Kernel::best(), 1.0 / self.cell);
        let large = &self.large_rows;
        let mut compared = 0;
        for i in range {
            let l = self.large_dynamic[i];
            let b = self.proxies[l as usize].aabb;
            let mut pair = |o: u32| out.push((l.min(o), l.max(o)));
            compared += self.query_dynamic(kernel, &b, inv, &mut pair);
            for (rows, inv) in self.static_levels() {
                if rows.count() > 0 {
                    compared += query_rows(kernel, rows, &b, inv, &mut pair);
                }
            }
            let own = large.level[i];
            if own == HUGE {
                // Every other large dynamic box but the huge ones before it.
                let others = self.large_dynamic.iter().zip(&large.level);
                let others = others.filter(|&(&o, &lv)| lv != HUGE || o > l);
                for (&o, _) in others.chain(self.large_static.iter().map(|o| (o, &0))) {
                    compared += 1;
                    if self.proxies[o as usize].aabb.overlaps(&b) {
                        pair(o);
                    }
                }
                continue;
            }
            let levels = large.levels.iter().enumerate().skip(own as usize);
            for (level, rows) in levels.filter(|(_, rows)| rows.count() > 0) {
                let above = level > own as usize;
                compared += query_rows(kernel, rows, &b, self.coarse_inv(level), |o| {
                    if above || o > l {
                        pair(o);
                    }
                });
            }
            for &o in &self.large_static {
                compared += 1;
                if self.proxies[o as usize].aabb.overlaps(&b) {
                    pair(o);
                }
            }
        }
        compared
    }
}
