//! Pairs of large dynamic boxes, those spanning more than two cells in y or z (the rows'
//! neighbourhood cannot hold them): each is compared anew every update with the rows it
//! covers, dynamic and static (`query_rows`), with the large statics and with the large
//! dynamic boxes after it. A scene's few large boxes cost their own pairs' worth.

use super::BroadPhase;
use super::query::query_rows;

impl BroadPhase {
    /// Finds every pair of a large dynamic box, into `large_pairs`.
    pub(super) fn large_pairs(&mut self) {
        let mut out = std::mem::take(&mut self.large_pairs);
        out.clear();
        let inv = 1.0 / self.cell;
        let mut compared = 0;
        for (i, &l) in self.large_dynamic.iter().enumerate() {
            let b = self.proxies[l as usize].aabb;
            let mut pair = |o: u32| out.push((l.min(o), l.max(o)));
            compared += self.query_dynamic(&b, inv, &mut pair);
            compared += query_rows(&self.statics, &b, inv, &mut pair);
            for &o in self.large_static.iter().chain(&self.large_dynamic[i + 1..]) {
                compared += 1;
                if self.proxies[o as usize].aabb.overlaps(&b) {
                    pair(o);
                }
            }
        }
        self.stats.compared += compared;
        self.stats.pairs += out.len() as u64;
        self.large_pairs = out;
    }
}
