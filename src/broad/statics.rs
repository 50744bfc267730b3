//! Pairs of a dynamic box with a static one, kept from update to update: a dynamic box of
//! the rows that was set since looks for the statics near it (the static rows it may meet,
//! by a binary search each, and the large statics), and a static box that was set looks
//! for the dynamic boxes of the rows; every other kept pair stands (neither box changed).
//! Sleeping and static boxes so cost nothing while nothing near them moves. Pairs of large
//! dynamic boxes are found anew each update (`large.rs`).

use super::query::query_rows;
use super::{BroadPhase, Place, bit, merge_sorted};

impl BroadPhase {
    /// Brings the kept dynamic–static pairs up to date with the changes of this update
    /// (all of them anew after a regrid). Returns the box pairs compared.
    pub(super) fn update_static_pairs(&mut self, regridded: bool) -> u64 {
        if self.statics.count() == 0 && self.large_static.is_empty() {
            self.static_pairs.clear();
            return 0;
        }
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        let mut compared = 0;
        let inv = 1.0 / self.cell;
        if regridded {
            // Every pair anew, from the smaller side.
            self.static_pairs.clear();
            let statics = self.statics.count() + self.large_static.len();
            if self.dynamic_counts().1 <= statics {
                for id in 0..self.proxies.len() as u32 {
                    if matches!(self.proxies[id as usize].placed, Place::Dynamic(..)) {
                        compared += self.statics_near(id, &mut fresh);
                    }
                }
            } else {
                let ids = (0..self.proxies.len() as u32)
                    .filter(|&id| self.proxies[id as usize].placed.is_static());
                for s in ids {
                    let b = self.proxies[s as usize].aabb;
                    compared += self.query_dynamic(&b, inv, |d| fresh.push((d, s)));
                }
            }
        } else {
            if self.moved.is_empty() {
                self.fresh = fresh;
                return 0;
            }
            let bits = &self.moved_bits;
            self.static_pairs
                .retain(|&(d, s)| !bit(bits, d) && !bit(bits, s));
            for &id in &self.moved {
                match self.proxies[id as usize].placed {
                    Place::Dynamic(..) => compared += self.statics_near(id, &mut fresh),
                    Place::Static(..) | Place::LargeStatic => {
                        let b = self.proxies[id as usize].aabb;
                        compared += self.query_dynamic(&b, inv, |d| fresh.push((d, id)));
                    }
                    Place::LargeDynamic | Place::None => {}
                }
            }
        }
        // A pair of two changed boxes is found from both sides.
        fresh.sort_unstable();
        fresh.dedup();
        merge_sorted(&mut self.static_pairs, &fresh);
        self.fresh = fresh;
        compared
    }

    /// Pushes `(id, s)` for every static `s` whose box meets dynamic proxy `id`'s; returns
    /// the boxes compared.
    fn statics_near(&self, id: u32, out: &mut Vec<(u32, u32)>) -> u64 {
        let b = self.proxies[id as usize].aabb;
        let mut compared = query_rows(&self.statics, &b, 1.0 / self.cell, |s| {
            out.push((id, s));
        });
        for &s in &self.large_static {
            compared += 1;
            if self.proxies[s as usize].aabb.overlaps(&b) {
                out.push((id, s));
            }
        }
        compared
    }
}
