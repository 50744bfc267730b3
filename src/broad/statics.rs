//! Pairs of a dynamic box with a static one, kept from update to update: only boxes placed
//! since the last update look for new ones, so static boxes cost nothing where nothing
//! moves (Jolt's and PhysX's split of the static tree, done here within the grid's cells).

use super::sweep::home;
use super::update::{bucket, buckets_of};
use super::{BroadPhase, Entry};

impl BroadPhase {
    /// Brings the kept dynamic–static pairs up to date with the boxes placed this update
    /// (`self.touched`), or finds them all again after a regrid; returns the boxes compared.
    pub(super) fn update_static_pairs(&mut self, regridded: bool) -> u64 {
        let mut fresh = std::mem::take(&mut self.fresh);
        let mut scratch = std::mem::take(&mut self.old_buckets);
        fresh.clear();
        let mut compared = 0;
        if self.static_entries == 0 {
            // No static box in the cells: nothing to look for (and no cell to visit).
            self.static_pairs.clear();
        } else if regridded {
            self.static_pairs.clear();
            for d in 0..self.proxies.len() as u32 {
                compared += self.statics_met_by(d, &mut fresh, &mut scratch);
            }
        } else {
            let proxies = &self.proxies;
            self.static_pairs
                .retain(|&(d, s)| !proxies[d as usize].touched && !proxies[s as usize].touched);
            let touched = std::mem::take(&mut self.touched);
            for &p in &touched {
                compared += self.statics_met_by(p, &mut fresh, &mut scratch);
                compared += self.dynamics_met_by(p, &mut fresh, &mut scratch);
            }
            self.touched = touched;
        }
        for &p in &self.touched {
            self.proxies[p as usize].touched = false;
        }
        self.touched.clear();
        fresh.sort_unstable();
        super::merge_sorted(&mut self.static_pairs, &fresh);
        self.fresh = fresh;
        self.old_buckets = scratch;
        compared
    }

    /// The entry of proxy `id` and the buckets of its cells, if it is a live box in cells.
    fn in_cells(&self, id: u32, dynamic: bool, buckets: &mut Vec<u32>) -> Option<Entry> {
        let p = &self.proxies[id as usize];
        let (lo, hi) = p.cells.filter(|_| p.live && p.dynamic == dynamic)?;
        buckets_of(lo, hi, self.cells.len() - 1, buckets);
        Some(Entry::of(id, p))
    }

    /// Appends `(d, s)` for every static box `s` that dynamic box `d` overlaps, each pair
    /// in the bucket of its home cell only; finds them by binary searches of each bucket's
    /// lower-x keys (statics sorted by lower x, no wider than `static_width`), then reads
    /// the entries between in order.
    fn statics_met_by(&self, d: u32, out: &mut Vec<(u32, u32)>, buckets: &mut Vec<u32>) -> u64 {
        let Some(a) = self.in_cells(d, true, buckets) else {
            return 0;
        };
        let (inv, mask) = (1.0 / self.cell, self.cells.len() - 1);
        let mut compared = 0;
        for &c in buckets.iter() {
            let Some(statics) = &self.cells[c as usize].statics else {
                continue;
            };
            let (s, keys) = (&statics.list, &statics.lo);
            let from = a.lo[0] - statics.width;
            // Every change to the statics re-makes the keys at the sort before this; were
            // one missed, the entries themselves are searched rather than stale keys.
            debug_assert_eq!(s.len(), keys.len(), "keys follow the statics");
            let (first, end) = if keys.len() == s.len() {
                let first = keys.partition_point(|&lo| lo < from);
                (
                    first,
                    first + keys[first..].partition_point(|&lo| lo <= a.hi[0]),
                )
            } else {
                let first = s.partition_point(|b| b.lo[0] < from);
                (
                    first,
                    first + s[first..].partition_point(|b| b.lo[0] <= a.hi[0]),
                )
            };
            for b in &s[first..end] {
                compared += 1;
                if a.aabb().overlaps(&b.aabb()) && bucket(home(&a, b, inv), mask) == c as usize {
                    out.push((d, b.proxy));
                }
            }
        }
        compared
    }

    /// Appends `(d, s)` for every dynamic box `d` not itself placed this update (those find
    /// their statics themselves) that static box `s` overlaps.
    fn dynamics_met_by(&self, s: u32, out: &mut Vec<(u32, u32)>, buckets: &mut Vec<u32>) -> u64 {
        let Some(b) = self.in_cells(s, false, buckets) else {
            return 0;
        };
        let (inv, mask) = (1.0 / self.cell, self.cells.len() - 1);
        let mut compared = 0;
        for &c in buckets.iter() {
            for a in &self.cells[c as usize].entries {
                compared += 1;
                if !self.proxies[a.proxy as usize].touched
                    && a.aabb().overlaps(&b.aabb())
                    && bucket(home(a, &b, inv), mask) == c as usize
                {
                    out.push((a.proxy, s));
                }
            }
        }
        compared
    }
}
