//! Pairs of a dynamic box with a static one, kept from update to update: a dynamic box of
//! the rows that was set since looks for the statics near it (the static rows it may meet,
//! by a binary search each, and the large statics), and a static box that was set looks
//! for the dynamic boxes of the rows; every other kept pair stands (neither box changed).
//! Sleeping and static boxes so cost nothing while nothing near them moves. Pairs of large
//! dynamic boxes are found anew each update (`large.rs`).

use super::query::query_statics;
use super::sweep::Kernel;
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
        let mut near = std::mem::take(&mut self.near);
        near.clear();
        let mut compared = 0;
        let inv = 1.0 / self.cell;
        if regridded {
            // Every pair anew, from the smaller side.
            self.static_pairs.clear();
            let statics = self.statics.count() + self.large_static.len();
            if self.dynamic_counts().1 <= statics {
                near.extend(
                    (0..self.proxies.len() as u32).filter(|&id| {
                        matches!(self.proxies[id as usize].placed, Place::Dynamic(..))
                    }),
                );
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
                self.near = near;
                return 0;
            }
            let bits = &self.moved_bits;
            self.static_pairs
                .retain(|&(d, s)| !bit(bits, d) && !bit(bits, s));
            for &id in &self.moved {
                match self.proxies[id as usize].placed {
                    Place::Dynamic(..) => near.push(id),
                    Place::Static(..) | Place::LargeStatic => {
                        let b = self.proxies[id as usize].aabb;
                        compared += self.query_dynamic(&b, inv, |d| fresh.push((d, id)));
                    }
                    Place::LargeDynamic | Place::None => {}
                }
            }
        }
        compared += self.statics_near(&near, &mut fresh);
        self.near = near;
        // A pair of two changed boxes is found from both sides.
        fresh.sort_unstable();
        fresh.dedup();
        merge_sorted(&mut self.static_pairs, &fresh);
        self.fresh = fresh;
        compared
    }

    /// Pushes `(id, s)` for every static `s` whose box meets the box of a dynamic proxy
    /// `id` of `ids`, all looked up together; returns the boxes compared.
    fn statics_near(&mut self, ids: &[u32], out: &mut Vec<(u32, u32)>) -> u64 {
        let proxies = &self.proxies;
        let aabb = |id: u32| proxies[id as usize].aabb;
        let inv = 1.0 / self.cell;
        let mut compared = query_statics(
            Kernel::best(),
            &self.statics,
            ids,
            aabb,
            inv,
            &mut self.lookups,
            |id, s| {
                out.push((id, s));
            },
        );
        for &id in ids {
            let b = aabb(id);
            for &s in &self.large_static {
                compared += 1;
                if proxies[s as usize].aabb.overlaps(&b) {
                    out.push((id, s));
                }
            }
        }
        compared
    }
}
