//! Pairs of a dynamic box with a static one, kept from update to update: a dynamic box of
//! the rows that was set since looks for the statics near it (the static rows it may meet,
//! by a binary search each, and the large statics), and a static box that was set looks
//! for the dynamic boxes of the rows; every other kept pair stands (neither box changed).
//! Sleeping and static boxes so cost nothing while nothing near them moves. Pairs of large
//! dynamic boxes are found anew each update (`large.rs`).
//!
//! The kept pairs are sorted by dynamic id. When only dynamic boxes changed (the common
//! frame), each changed box's pairs are one run, which its new pairs replace: the kept
//! pairs are copied run by run between the changed boxes, found by galloping, and the new
//! pairs come out of the lookups grouped by box in id order, then sorted group by group.

use super::query::query_statics;
use super::sweep::Kernel;
use super::{BroadPhase, Place, bit};

/// A dynamic–static pair as one sortable key: the dynamic id in the high half.
#[inline(always)]
pub(super) fn key(dynamic: u32, fixed: u32) -> u64 {
    u64::from(dynamic) << 32 | u64::from(fixed)
}

/// The `(dynamic, static)` ids of a [`key`].
#[inline(always)]
pub(super) fn unkey(k: u64) -> (u32, u32) {
    ((k >> 32) as u32, k as u32)
}

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
                    compared += self.query_dynamic(&b, inv, |d| fresh.push(key(d, s)));
                }
            }
        } else {
            if self.moved.is_empty() {
                self.fresh = fresh;
                self.near = near;
                return 0;
            }
            if !self.statics_touched && self.large_static.is_empty() {
                compared += self.splice_static_pairs(fresh, near);
                return compared;
            }
            for &id in &self.moved {
                match self.proxies[id as usize].placed {
                    Place::Dynamic(..) => near.push(id),
                    Place::Static(..) | Place::LargeStatic => {
                        let b = self.proxies[id as usize].aabb;
                        compared += self.query_dynamic(&b, inv, |d| fresh.push(key(d, id)));
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
        // The kept pairs of two unchanged boxes and the new ones, merged in one pass.
        let mut out = std::mem::take(&mut self.pairs_spare);
        out.clear();
        out.reserve(self.static_pairs.len() + fresh.len());
        let bits = &self.moved_bits;
        let kept = self.static_pairs.iter().copied().filter(|&k| {
            let (d, s) = unkey(k);
            !bit(bits, d) && !bit(bits, s)
        });
        merge_into(kept, &fresh, &mut out);
        self.pairs_spare = std::mem::replace(&mut self.static_pairs, out);
        self.fresh = fresh;
        compared
    }

    /// [`BroadPhase::update_static_pairs`] when only dynamic boxes changed (no static box
    /// was set or removed, none is large): every kept pair of a changed box is one of the
    /// changed box's run of pairs (pairs are sorted by dynamic id), and its new pairs take
    /// that run's place, so the kept pairs are copied in runs between changed boxes.
    /// `fresh` and `near` are the scratch lists, empty. Returns the box pairs compared.
    fn splice_static_pairs(&mut self, mut fresh: Vec<u64>, mut near: Vec<u32>) -> u64 {
        // Only clearing the moved bits reads the list after this, in any order.
        let mut changed = std::mem::take(&mut self.moved);
        changed.sort_unstable();
        near.extend(
            changed
                .iter()
                .filter(|&&id| matches!(self.proxies[id as usize].placed, Place::Dynamic(..))),
        );
        // Looked up in id order, the pairs come out grouped by dynamic id, and only each
        // group needs sorting.
        let compared = self.statics_near(&near, &mut fresh);
        sort_groups(&mut fresh);
        let mut out = std::mem::take(&mut self.pairs_spare);
        out.clear();
        out.reserve(self.static_pairs.len() + fresh.len());
        let (kept, mut i, mut j) = (&self.static_pairs, 0, 0);
        for &c in &changed {
            let from = gallop(kept, i, |k| k < key(c, 0));
            out.extend_from_slice(&kept[i..from]);
            i = gallop(kept, from, |k| k <= key(c, u32::MAX));
            let to = gallop(&fresh, j, |k| k <= key(c, u32::MAX));
            out.extend_from_slice(&fresh[j..to]);
            j = to;
        }
        out.extend_from_slice(&kept[i..]);
        debug_assert_eq!(j, fresh.len(), "a new pair of an unchanged box");
        self.pairs_spare = std::mem::replace(&mut self.static_pairs, out);
        (self.fresh, self.near, self.moved) = (fresh, near, changed);
        compared
    }

    /// Pushes `(id, s)` for every static `s` whose box meets the box of a dynamic proxy
    /// `id` of `ids`, all looked up together; returns the boxes compared.
    fn statics_near(&mut self, ids: &[u32], out: &mut Vec<u64>) -> u64 {
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
                out.push(key(id, s));
            },
        );
        for &id in ids {
            let b = aabb(id);
            for &s in &self.large_static {
                compared += 1;
                if proxies[s as usize].aabb.overlaps(&b) {
                    out.push(key(id, s));
                }
            }
        }
        compared
    }
}

/// The first position from `at` on where `before` fails, for `before` true on a prefix of
/// `v`: steps of doubling length from `at`, then a binary search in the last step, so
/// that the cost grows with the distance travelled, not with `v`'s length.
fn gallop(v: &[u64], at: usize, before: impl Fn(u64) -> bool) -> usize {
    let (mut lo, mut step) = (at, 1);
    while lo + step <= v.len() && before(v[lo + step - 1]) {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(v.len());
    lo + v[lo..hi].partition_point(|&k| before(k))
}

/// Sorts keys that come grouped by dynamic id, the groups in ascending order: each group
/// on its own (a box near many statics makes one large group, which a sort of the whole
/// would not need to be quadratic in, and neither is this).
fn sort_groups(v: &mut [u64]) {
    let mut rest = v;
    while let Some(&first) = rest.first() {
        let n = rest.partition_point(|&k| k >> 32 == first >> 32);
        let (group, after) = rest.split_at_mut(n);
        group.sort_unstable();
        rest = after;
    }
}

/// Appends to `out` the ascending `kept` and `fresh` merged in order (ascending, each key
/// once if it is in one of them once).
fn merge_into(mut kept: impl Iterator<Item = u64>, fresh: &[u64], out: &mut Vec<u64>) {
    let mut next = kept.next();
    for &f in fresh {
        while let Some(k) = next.filter(|&k| k < f) {
            out.push(k);
            next = kept.next();
        }
        out.push(f);
    }
    out.extend(next);
    out.extend(kept);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;

    /// Galloping finds what a binary search of the rest finds, from any start, over
    /// sorted keys with repeats, for thresholds below, among and above them.
    #[test]
    fn gallop_equals_partition_point() {
        let mut s = 3u64;
        for round in 0..200 {
            let mut v: Vec<u64> = (0..round % 90)
                .map(|_| (lcg(&mut s) * 40.0) as u64)
                .collect();
            v.sort_unstable();
            for _ in 0..20 {
                let at = (lcg(&mut s) * (v.len() + 1) as f64) as usize;
                let t = (lcg(&mut s) * 44.0) as u64;
                let want = at + v[at..].partition_point(|&k| k < t);
                assert_eq!(gallop(&v, at, |k| k < t), want, "{v:?} from {at} below {t}");
            }
        }
    }

    /// Keys grouped by dynamic id in ascending order, unsorted within groups of any size
    /// (one of them large), come out sorted.
    #[test]
    fn grouped_keys_come_out_sorted() {
        let mut s = 8u64;
        for n in 0..60 {
            let mut v = Vec::new();
            for d in 0..n {
                let len = if d == 7 {
                    500
                } else {
                    (lcg(&mut s) * 6.0) as usize
                };
                v.extend((0..len).map(|_| key(d, (lcg(&mut s) * 1e6) as u32)));
            }
            let mut want = v.clone();
            want.sort_unstable();
            sort_groups(&mut v);
            assert_eq!(v, want);
        }
    }
}
