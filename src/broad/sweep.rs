//! Finding the pairs: one sweep along x per cell that holds a dynamic box (I-COLLIDE's
//! sweep-and-prune, Cohen et al. 1995, §4.2, applied per cell), cells in parallel.

use super::update::{bucket, coord};
use super::{BroadPhase, Cell, Entry};
use rayon::prelude::*;

impl BroadPhase {
    /// Sweeps every active cell into its own slot of `found`, then the large boxes into the
    /// last slot; slots are read in order, so the result does not depend on threads.
    pub(super) fn sweep(&mut self) {
        let slots = self.active.len() + 1;
        if self.found.len() < slots {
            self.found.resize_with(slots, Vec::new);
        }
        let inv = 1.0 / self.cell;
        let mask = self.cells.len().wrapping_sub(1);
        let cells = &self.cells;
        let (per_cell, rest) = self.found.split_at_mut(self.active.len());
        let compared: u64 = self
            .active
            .par_iter()
            .zip(per_cell.par_iter_mut())
            .with_min_len(64)
            .map(|(&c, out)| sweep_cell(&cells[c as usize], c as usize, mask, inv, out))
            .sum();
        rest.iter_mut().for_each(Vec::clear);
        let mut large = std::mem::take(&mut rest[0]);
        let mut scratch = std::mem::take(&mut self.old_buckets);
        let large_compared = self.large_pairs(&mut large, &mut scratch);
        self.old_buckets = scratch;
        self.found[slots - 1] = large;
        self.found.truncate(slots);
        self.stats.cells_swept = self.active.len() as u64;
        self.stats.compared = compared + large_compared;
        self.stats.pairs = self.found.iter().map(|f| f.len() as u64).sum();
    }
}

/// The pairs of bucket `c` whose home (the cell holding the lower corner of the two boxes'
/// intersection) hashes to it, both dynamic (pairs with a static box are kept across
/// updates, see `statics.rs`); returns the pairs compared beyond x.
fn sweep_cell(cell: &Cell, c: usize, mask: usize, inv: f32, out: &mut Vec<(u32, u32)>) -> u64 {
    out.clear();
    let mut compared = 0;
    let e = &cell.entries;
    for (i, a) in e.iter().enumerate() {
        for b in &e[i + 1..] {
            // Sorted by lower x: nothing further overlaps `a` along x.
            if b.lo[0] > a.hi[0] {
                break;
            }
            compared += 1;
            // One unpredictable branch, not four: most pairs met here fail along y or z.
            if overlaps_yz(a, b) && bucket(home(a, b, inv), mask) == c {
                out.push((a.proxy.min(b.proxy), a.proxy.max(b.proxy)));
            }
        }
    }
    compared
}

#[inline]
fn overlaps_yz(a: &Entry, b: &Entry) -> bool {
    (a.lo[1] <= b.hi[1]) & (b.lo[1] <= a.hi[1]) & (a.lo[2] <= b.hi[2]) & (b.lo[2] <= a.hi[2])
}

/// The cell of the lower corner of the intersection of two overlapping boxes.
#[inline]
pub(super) fn home(a: &Entry, b: &Entry, inv: f32) -> [i32; 3] {
    [
        coord(a.lo[0].max(b.lo[0]), inv),
        coord(a.lo[1].max(b.lo[1]), inv),
        coord(a.lo[2].max(b.lo[2]), inv),
    ]
}
