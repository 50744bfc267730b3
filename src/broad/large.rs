//! Pairs of large dynamic boxes, those spanning more than two cells in y or z (the rows'
//! neighbourhood cannot hold them): each is compared anew every update with the rows it
//! covers, dynamic, static and coarse static (`query_rows`), with the large statics and with the large
//! dynamic boxes after it. A scene's few large boxes cost their own pairs' worth; many of
//! them are looked up in slices on rayon's pool, the slices' pairs joined in slice order
//! (the same pairs in the same order for any number of threads).

use super::BroadPhase;
use super::query::query_rows;
use super::sweep::Kernel;
use rayon::prelude::*;

/// Large boxes per task on rayon's pool: a large box's lookup reads tens of rows, far more
/// than a task costs to hand over.
const PER_TASK: usize = 8;

impl BroadPhase {
    /// Finds every pair of a large dynamic box, into `large_pairs`.
    pub(super) fn large_pairs(&mut self) {
        let mut out = std::mem::take(&mut self.large_pairs);
        out.clear();
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

    /// Pushes the pairs of the large dynamic boxes `range` (positions in `large_dynamic`)
    /// onto `out`; returns the boxes compared.
    fn large_slice_pairs(&self, range: std::ops::Range<usize>, out: &mut Vec<(u32, u32)>) -> u64 {
        let (kernel, inv) = (Kernel::best(), 1.0 / self.cell);
        let mut compared = 0;
        for i in range {
            let l = self.large_dynamic[i];
            let b = self.proxies[l as usize].aabb;
            let mut pair = |o: u32| out.push((l.min(o), l.max(o)));
            compared += self.query_dynamic(kernel, &b, inv, &mut pair);
            compared += query_rows(kernel, &self.statics, &b, inv, &mut pair);
            for (rows, inv) in &self.static_levels()[1..] {
                compared += query_rows(kernel, *rows, &b, *inv, &mut pair);
            }
            for &o in self.large_static.iter().chain(&self.large_dynamic[i + 1..]) {
                compared += 1;
                if self.proxies[o as usize].aabb.overlaps(&b) {
                    pair(o);
                }
            }
        }
        compared
    }
}
