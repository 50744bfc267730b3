//! The sweep (I-COLLIDE's sweep-and-prune, Cohen et al. 1995, §4.2, within grid rows):
//! each row's entries in order of lower x bound, each against those after it that start
//! before it ends; a pair that overlaps is reported by its home row only (the row of the
//! lower corner of the two boxes' intersection in y and z, which both boxes were entered
//! in: the row that is, in z and in y, the lower corner's row of one box or the other,
//! which two bits of each entry tell). Runs of rows go to rayon's threads and their pairs into fixed slots, so the order
//! never depends on the threads.

use super::place::HOME;
use super::{BroadPhase, Rows};
use rayon::prelude::*;

/// Rows per run: the unit of parallel work and of the output's order.
const RUN: usize = 256;
/// Candidates tested at a time along a row.
const GROUP: usize = 4;

impl BroadPhase {
    /// Finds every pair of dynamic boxes of the rows, into `found` run by run.
    pub(super) fn sweep(&mut self) {
        let rows = &self.dynamic;
        let runs = rows.len().div_ceil(RUN);
        if self.found.len() < runs {
            self.found.resize_with(runs, Vec::new);
        }
        for f in &mut self.found[runs..] {
            f.clear();
        }
        let compared: u64 = self.found[..runs]
            .par_iter_mut()
            .enumerate()
            .map(|(i, out)| {
                // `out` stays at its full length (pairs are written before it is known
                // whether they are kept) and is cut to the pairs at the end.
                let mut n = 0;
                let compared = (i * RUN..((i + 1) * RUN).min(rows.len()))
                    .map(|r| sweep_row(rows, r, out, &mut n))
                    .sum::<u64>();
                out.truncate(n);
                compared
            })
            .sum();
        self.stats.rows_swept = rows.len() as u64;
        self.stats.compared += compared;
        self.stats.pairs += self.found[..runs]
            .iter()
            .map(|f| f.len() as u64)
            .sum::<u64>();
    }
}

/// The pairs whose home is row `r`, written to `out` from `*n` on (which it advances);
/// returns the pairs compared in y and z. Each candidate is written and kept or not without
/// a branch: about half of those that overlap in x do in y and z as well, a coin flip for
/// a branch.
#[inline]
fn sweep_row(rows: &Rows, r: usize, out: &mut Vec<(u32, u32)>, n: &mut usize) -> u64 {
    let row = rows.row(r);
    let mut compared = 0;
    let mut k = *n;
    for (i, a) in row.iter().enumerate() {
        // Room for every entry after `a`, so that each candidate is written unconditionally.
        let room = k + (row.len() - i);
        if out.len() < room {
            out.resize(room.max(2 * out.len()), (0, 0));
        }
        // Candidates in groups of four, each tested whether it starts before `a` ends: the
        // loop's end is then a branch taken about once per entry, not a coin flip at a
        // varying count.
        let mut j = i + 1;
        while j < row.len() {
            let end = (j + GROUP).min(row.len());
            for b in &row[j..end] {
                let keep = (b.lo[0] <= a.hi[0]) & a.meets_yz(b) & ((a.row | b.row) & HOME == HOME);
                out[k] = (a.proxy.min(b.proxy), a.proxy.max(b.proxy));
                k += usize::from(keep);
            }
            compared += (end - j) as u64;
            if row[end - 1].lo[0] > a.hi[0] {
                break;
            }
            j = end;
        }
    }
    *n = k;
    compared
}
