//! Which boxes overlap a given box, as of the last update: the cells the box covers are
//! visited and each entry reported in the bucket of the home cell it shares with the box
//! (as the sweep reports pairs), so once; the large boxes are compared one by one. The
//! world finds the objects near a part that was inserted or moved this way.

use super::large::covered_buckets;
use super::sweep::home;
use super::update::{bucket, coord};
use super::{Aabb, BroadPhase, Entry, NONE};

impl BroadPhase {
    /// Calls `found` with every proxy whose box overlaps `aabb` (closed boxes), dynamic and
    /// static, as placed by the last [`BroadPhase::update`] (call it after one: a box set or
    /// removed since may be seen at either place). Each proxy once, in an order fixed by the
    /// sequence of calls.
    /// `buckets` is scratch, kept by the caller so that queries do not allocate.
    pub fn query(&self, aabb: &Aabb, buckets: &mut Vec<u32>, mut found: impl FnMut(u32)) {
        if aabb.check(NONE).is_err() {
            return;
        }
        for &l in &self.large {
            let p = &self.proxies[l as usize];
            if p.live && p.aabb.overlaps(aabb) {
                found(l);
            }
        }
        if self.cells.is_empty() || self.cell <= 0.0 {
            return;
        }
        let inv = 1.0 / self.cell;
        let mask = self.cells.len() - 1;
        let me = Entry {
            lo: aabb.lo,
            hi: aabb.hi,
            proxy: NONE,
        };
        let lo = aabb.lo.map(|v| coord(v, inv));
        let hi = aabb.hi.map(|v| coord(v, inv));
        covered_buckets(lo, hi, self.cells.len(), buckets);
        for &c in buckets.iter() {
            let cell = &self.cells[c as usize];
            for e in cell.entries.iter().chain(cell.static_list()) {
                if e.aabb().overlaps(aabb) && bucket(home(&me, e, inv), mask) == c as usize {
                    found(e.proxy);
                }
            }
        }
    }
}
