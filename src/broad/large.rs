//! Pairs of the boxes too large for the cells: each is compared with the other large boxes
//! and with the entries of the buckets of the cells it covers, a pair reported in the
//! bucket of its home cell as in the sweep, so each pair once.

use super::sweep::home;
use super::update::{bucket, coord};
use super::{BroadPhase, Entry};

impl BroadPhase {
    /// Appends the pairs with a large box to `out`; returns the boxes compared. `buckets`
    /// is scratch.
    pub(super) fn large_pairs(&self, out: &mut Vec<(u32, u32)>, buckets: &mut Vec<u32>) -> u64 {
        let inv = 1.0 / self.cell;
        let mask = self.cells.len().wrapping_sub(1);
        let mut compared = 0;
        for (n, &l) in self.large.iter().enumerate() {
            let p = &self.proxies[l as usize];
            let me = Entry::of(l, p);
            for &m in &self.large[n + 1..] {
                let q = &self.proxies[m as usize];
                compared += 1;
                if (p.dynamic || q.dynamic) && p.aabb.overlaps(&q.aabb) {
                    out.push((l.min(m), l.max(m)));
                }
            }
            let lo = p.aabb.lo.map(|v| coord(v, inv));
            let hi = p.aabb.hi.map(|v| coord(v, inv));
            covered_buckets(lo, hi, self.cells.len(), buckets);
            for &c in buckets.iter() {
                let cell = &self.cells[c as usize];
                // A static large box meets only dynamic entries.
                let statics: &[Entry] = if p.dynamic { cell.static_list() } else { &[] };
                for e in cell.entries.iter().chain(statics) {
                    compared += 1;
                    if p.aabb.overlaps(&e.aabb()) && bucket(home(&me, e, inv), mask) == c as usize {
                        out.push((l.min(e.proxy), l.max(e.proxy)));
                    }
                }
            }
        }
        compared
    }
}

/// The distinct buckets of a range's cells, sorted; every bucket when the range has more
/// cells than there are buckets.
pub(super) fn covered_buckets(lo: [i32; 3], hi: [i32; 3], buckets: usize, out: &mut Vec<u32>) {
    out.clear();
    let cells: u64 = (0..3)
        .map(|i| (i64::from(hi[i]) - i64::from(lo[i]) + 1) as u64)
        .fold(1, u64::saturating_mul);
    if cells >= buckets as u64 {
        out.extend(0..buckets as u32);
        return;
    }
    for z in lo[2]..=hi[2] {
        for y in lo[1]..=hi[1] {
            for x in lo[0]..=hi[0] {
                out.push(bucket([x, y, z], buckets - 1) as u32);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
}
