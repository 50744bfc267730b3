//! Pairs of large dynamic boxes, those spanning more than two cells in y or z or longer
//! than two along x (the rows' neighbourhood cannot hold them): each is compared anew every
//! update with the rows it covers, dynamic, static and coarse static (`query_rows`), with
//! the statics too large for every level, and with the other large dynamic boxes. For
//! those, the large dynamic boxes are entered in rows of the coarse levels (as the coarse
//! statics are, `place.rs`; anew when one of them changed) and each looks up its own level
//! and the coarser ones, so that their pairs cost what their neighbours do, not the square of their
//! number. A scene's few large boxes cost their own pairs' worth; many of them are looked
//! up in slices on rayon's pool, the slices' pairs joined in slice order (the same pairs in
//! the same order for any number of threads).
//!
//! When few boxes changed since the last update, the pairs of two unchanged boxes are
//! kept: only the changed large boxes are looked up, and every other changed box looks for
//! the unchanged large dynamic boxes near it in their coarse rows. Sleeping large boxes
//! so cost nothing until they or a neighbour move.

use super::place::{COARSE_LEVELS, directory, entries, rank};
use super::query::query_rows;
use super::sweep::Kernel;
use super::{BroadPhase, Place, StaticRows, bit};
use rayon::prelude::*;

/// Large boxes per task on rayon's pool: a large box's lookup reads tens of rows, far more
/// than a task costs to hand over.
const PER_TASK: usize = 8;

/// The level of a large dynamic box too large for every coarse level.
const HUGE: u8 = u8::MAX;

/// The pairs of unchanged boxes are kept when at most this many boxes changed per large
/// dynamic box: each changed box then costs a lookup in the large boxes' coarse rows, a
/// small share of what a large box's own lookup costs.
const KEEP_UP_TO: usize = 8;

/// The large dynamic boxes as rows of the coarse levels, remade at an update where one of
/// them changed.
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
    /// Finds every pair of a large dynamic box, into `large_pairs`: all anew after a
    /// rebuild of the grid or when many boxes changed, else from the pairs of the last
    /// update and the changed boxes (whose bits must still be set).
    pub(super) fn large_pairs(&mut self, regridded: bool) {
        let n = self.large_dynamic.len();
        if !regridded && n > 0 && self.moved.len() <= KEEP_UP_TO * n {
            if self.large_moved {
                self.index_large();
            }
            if !self.moved.is_empty() {
                self.update_large_pairs();
            }
            self.stats.pairs += self.large_pairs.len() as u64;
            return;
        }
        let mut out = std::mem::take(&mut self.large_pairs);
        out.clear();
        self.index_large();
        let compared = if n <= PER_TASK || rayon::current_num_threads() == 1 {
            self.large_slice_pairs(0..n, None, &mut out)
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
                    let range = t * PER_TASK..n.min((t + 1) * PER_TASK);
                    this.large_slice_pairs(range, None, found)
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

    /// [`BroadPhase::large_pairs`] from the last update's pairs: those of two unchanged
    /// boxes kept, then the changed large boxes' pairs (looked up in full), then those of
    /// every other changed box with the unchanged large boxes.
    fn update_large_pairs(&mut self) {
        let mut out = std::mem::take(&mut self.large_pairs);
        let bits = &self.moved_bits;
        out.retain(|&(a, b)| !bit(bits, a) && !bit(bits, b));
        let mut compared = 0;
        for (i, &l) in self.large_dynamic.iter().enumerate() {
            if bit(bits, l) {
                compared += self.large_slice_pairs(i..i + 1, Some(bits), &mut out);
            }
        }
        let (kernel, large) = (Kernel::best(), &self.large_rows);
        for &o in &self.moved {
            let p = &self.proxies[o as usize];
            if matches!(p.placed, Place::LargeDynamic | Place::None) {
                continue;
            }
            let mut pair = |l: u32| {
                if !bit(bits, l) {
                    out.push((l.min(o), l.max(o)));
                }
            };
            for (level, rows) in large.levels.iter().enumerate() {
                if rows.count() > 0 {
                    compared +=
                        query_rows(kernel, rows, &p.aabb, self.coarse_inv(level), &mut pair);
                }
            }
            for &l in &large.huge {
                compared += 1;
                if self.proxies[l as usize].aabb.overlaps(&p.aabb) {
                    pair(l);
                }
            }
        }
        self.stats.compared += compared;
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
        self.large_moved = false;
    }

    /// Pushes the pairs of the large dynamic boxes `range` (positions in `large_dynamic`)
    /// onto `out`; returns the boxes compared. A pair of two large dynamic boxes is found
    /// by the one of the lower level, or of the lower id on one level; one of a box of no
    /// level, by that box (the lower id if both are). With `changed` (one bit per changed
    /// proxy, when only the changed boxes are looked up), a pair with an unchanged large
    /// box is found by the changed one, whatever their levels.
    fn large_slice_pairs(
        &self,
        range: std::ops::Range<usize>,
        changed: Option<&[u64]>,
        out: &mut Vec<(u32, u32)>,
    ) -> u64 {
        let kept = |o: u32| changed.is_some_and(|bits| !bit(bits, o));
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
                let others = others.filter(|&(&o, &lv)| lv != HUGE || o > l || kept(o));
                for (&o, _) in others.chain(self.large_static.iter().map(|o| (o, &0))) {
                    compared += 1;
                    if self.proxies[o as usize].aabb.overlaps(&b) {
                        pair(o);
                    }
                }
                continue;
            }
            // Unchanged large boxes below its level are its to find too.
            let from = if changed.is_some() { 0 } else { own as usize };
            let levels = large.levels.iter().enumerate().skip(from);
            for (level, rows) in levels.filter(|(_, rows)| rows.count() > 0) {
                compared += query_rows(kernel, rows, &b, self.coarse_inv(level), |o| {
                    if (level > own as usize || (level == own as usize && o > l)) || kept(o) {
                        pair(o);
                    }
                });
            }
            // A changed box of a level also finds the unchanged huge ones.
            if changed.is_some() {
                for &o in &large.huge {
                    compared += 1;
                    if kept(o) && self.proxies[o as usize].aabb.overlaps(&b) {
                        pair(o);
                    }
                }
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
