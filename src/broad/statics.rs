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
//!
//! The lookups read only the static rows and the changed boxes, so they run in slices on
//! rayon's pool, each slice into its own list and the lists joined in slice order (the
//! same pairs in the same order for any number of threads); in the common frame they start
//! before the changed boxes are placed and run beside the placing.

use super::place::StaticLevels;
use super::query::{Lookup, Scan, query_statics, scan_columns};
use super::sweep::Kernel;
use super::{Aabb, BroadPhase, Cols, Place, bit, slices_of};
use rayon::prelude::*;

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
    /// (all of them anew after a regrid); `looked`, the lookups if they ran beside the
    /// placing ([`BroadPhase::place_and_look_up`]). Returns the box pairs compared.
    pub(super) fn update_static_pairs(&mut self, regridded: bool, looked: Option<Looked>) -> u64 {
        if self
            .static_levels()
            .iter()
            .all(|(rows, _)| rows.count() == 0)
            && self.large_static.is_empty()
        {
            self.static_pairs.clear();
            return 0;
        }
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        let mut near = std::mem::take(&mut self.near_boxes);
        near.clear();
        let mut compared = 0;
        let inv = 1.0 / self.cell;
        if regridded {
            // Every pair anew, from the smaller side.
            self.static_pairs.clear();
            let statics = self
                .static_levels()
                .iter()
                .map(|(rows, _)| rows.count())
                .sum::<usize>()
                + self.large_static.len();
            if self.dynamic_counts().1 <= statics {
                near.extend(self.proxies.iter().zip(0..).filter_map(|(p, id)| {
                    matches!(p.placed, Place::Dynamic(..)).then_some((id, p.aabb))
                }));
            } else {
                let ids = (0..self.proxies.len() as u32)
                    .filter(|&id| self.proxies[id as usize].placed.is_static());
                let kernel = Kernel::best();
                for s in ids {
                    let b = self.proxies[s as usize].aabb;
                    compared += self.query_dynamic(kernel, &b, inv, |d| fresh.push(key(d, s)));
                }
            }
        } else {
            if self.moved.is_empty() {
                self.fresh = fresh;
                self.near_boxes = near;
                return 0;
            }
            if self.splices_static_pairs() {
                self.near_boxes = near;
                compared += self.splice_static_pairs(fresh, looked);
                return compared;
            }
            debug_assert!(
                looked.is_none(),
                "lookups ahead of an update that does not splice"
            );
            let kernel = Kernel::best();
            for &id in &self.moved {
                match self.proxies[id as usize].placed {
                    Place::Dynamic(..) => near.push((id, self.proxies[id as usize].aabb)),
                    Place::Static(..) | Place::Coarse(..) | Place::LargeStatic => {
                        let b = self.proxies[id as usize].aabb;
                        compared += self.query_dynamic(kernel, &b, inv, |d| fresh.push(key(d, id)));
                    }
                    Place::LargeDynamic | Place::None => {}
                }
            }
        }
        compared += self.statics_near(&near, &mut fresh);
        self.near_boxes = near;
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

    /// Whether this update brings the static pairs up to date by splicing: only dynamic
    /// boxes changed, there are statics and none is in the large list
    /// ([`splice_static_pairs`]). The same before the placing and after it (placing
    /// re-sorts the statics only when a static box changed), so it decides both whether
    /// the lookups run beside the placing and whether the pairs are spliced.
    ///
    /// [`splice_static_pairs`]: BroadPhase::splice_static_pairs
    pub(super) fn splices_static_pairs(&self) -> bool {
        self.static_levels()
            .iter()
            .any(|(rows, _)| rows.count() > 0)
            && self.large_static.is_empty()
            && !self.statics_touched
            && self.statics_changed == 0
            && !self.moved.is_empty()
    }

    /// [`BroadPhase::place_moved`] with the changed dynamic boxes' static lookups run
    /// beside it on rayon's pool, for an update that splices the static pairs: the lookups
    /// read only the static rows and the boxes (copied first), so they need not wait for
    /// the placing, whose first part runs on one thread. The splice then takes their pairs
    /// (what this returns).
    pub(super) fn place_and_look_up(&mut self) -> Looked {
        debug_assert!(self.splices_static_pairs());
        let mut boxes = std::mem::take(&mut self.near_boxes);
        self.near_boxes_of(&self.moved, &mut boxes);
        boxes.sort_unstable_by_key(|b| b.0);
        // Placing reads neither the static rows (no static box changed) nor the slices.
        let statics = std::mem::take(&mut self.statics);
        let coarse = std::mem::take(&mut self.coarse);
        let recent = std::mem::take(&mut self.recent);
        let mut slices = std::mem::take(&mut self.near_slices);
        let levels = self.levels_of(&statics, &coarse, &recent);
        let ((), looked) = rayon::join(
            || self.place_moved(),
            || look_up(levels, &boxes, &mut slices),
        );
        (self.statics, self.coarse, self.recent) = (statics, coarse, recent);
        (self.near_slices, self.near_boxes) = (slices, boxes);
        looked
    }

    /// Replaces `out` with `(id, box)` of each of `ids` that goes to the dynamic rows (and
    /// so looks for statics near it), in the order of `ids`. Where it goes is
    /// [`BroadPhase::placement`], which the placing settles, so this is the same list
    /// before the placing and after it.
    fn near_boxes_of(&self, ids: &[u32], out: &mut Vec<(u32, Aabb)>) {
        out.clear();
        out.extend(ids.iter().filter_map(|&id| {
            let p = &self.proxies[id as usize];
            matches!(self.placement(p), Place::Dynamic(..)).then_some((id, p.aabb))
        }));
    }

    /// [`BroadPhase::update_static_pairs`] when only dynamic boxes changed (no static box
    /// was set or removed, none is large): every kept pair of a changed box is one of the
    /// changed box's run of pairs (pairs are sorted by dynamic id), and its new pairs take
    /// that run's place, so the kept pairs are copied in runs between changed boxes.
    /// `fresh` is the scratch list, empty; `looked`, the lookups if they ran ahead
    /// ([`BroadPhase::place_and_look_up`]). Returns the box pairs compared.
    fn splice_static_pairs(&mut self, mut fresh: Vec<u64>, looked: Option<Looked>) -> u64 {
        // Only clearing the moved bits reads the list after this, in any order.
        let mut changed = std::mem::take(&mut self.moved);
        changed.sort_unstable();
        let compared = match looked {
            Some(looked) => gather(&self.near_slices, looked, &mut fresh),
            None => {
                let mut boxes = std::mem::take(&mut self.near_boxes);
                self.near_boxes_of(&changed, &mut boxes);
                // Looked up in id order, the pairs come out sorted.
                let compared = self.statics_near(&boxes, &mut fresh);
                self.near_boxes = boxes;
                compared
            }
        };
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
        (self.fresh, self.moved) = (fresh, changed);
        compared
    }

    /// Pushes `(id, s)` for every static `s` whose box meets one of the dynamic `boxes`
    /// (`(id, box)`): the rows' and the coarse rows' pairs as [`look_up`] orders them
    /// (ascending when `boxes` ascend by id), then those of the large statics. Returns the
    /// boxes compared.
    fn statics_near(&mut self, boxes: &[(u32, Aabb)], out: &mut Vec<u64>) -> u64 {
        let mut slices = std::mem::take(&mut self.near_slices);
        let looked = look_up(self.static_levels(), boxes, &mut slices);
        let mut compared = gather(&slices, looked, out);
        self.near_slices = slices;
        if self.large_static.is_empty() {
            return compared;
        }
        // Every box reads every large static: their boxes as columns, eight compared at a
        // time, in place of a scattered proxy record each.
        let mut large = std::mem::take(&mut self.large_static_columns);
        large.fill(&self.large_static, |s| self.proxies[s as usize].aabb);
        let kernel = Kernel::best();
        for (id, b) in boxes {
            let scan = Scan {
                from: 0,
                to: large.proxy.len(),
                home: 3,
                q: b,
            };
            scan_columns(kernel, large.cols(), scan, &mut |s| out.push(key(*id, s)));
            compared += large.proxy.len() as u64;
        }
        self.large_static_columns = large;
        compared
    }
}

/// Boxes as columns in the layout of the dynamic rows ([`Cols`]), for comparing one box
/// with all of them by [`scan_columns`]: the large statics, whose lookups read them all.
#[derive(Clone, Debug, Default)]
pub(super) struct Columns {
    lo: [Vec<f32>; 3],
    hi: [Vec<f32>; 3],
    proxy: Vec<u32>,
    /// Every entry's home bits set: a pair with a large static has no home row.
    row: Vec<u32>,
}

impl Columns {
    /// Replaces the columns with the boxes of `ids`, in order.
    fn fill(&mut self, ids: &[u32], aabb: impl Fn(u32) -> Aabb) {
        for c in self.lo.iter_mut().chain(&mut self.hi) {
            c.clear();
        }
        self.proxy.clear();
        self.row.clear();
        for &id in ids {
            let b = aabb(id);
            for k in 0..3 {
                self.lo[k].push(b.lo[k]);
                self.hi[k].push(b.hi[k]);
            }
            self.proxy.push(id);
            self.row.push(u32::MAX);
        }
    }

    /// The columns as the scans read them.
    fn cols(&self) -> Cols<'_> {
        Cols {
            lo: [0, 1, 2].map(|k| &self.lo[k][..]),
            hi: [0, 1, 2].map(|k| &self.hi[k][..]),
            proxy: &self.proxy,
            row: &self.row,
        }
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        4 * (self
            .lo
            .iter()
            .chain(&self.hi)
            .map(Vec::capacity)
            .sum::<usize>()
            + self.proxy.capacity()
            + self.row.capacity())
    }
}

/// Fewest changed boxes worth a task of their own in [`look_up`]: a few batches of
/// lookups, against rayon's few microseconds to start a task.
const PER_TASK: usize = 256;

/// One task's share of [`look_up`] (scratch kept across updates): its rows being looked
/// up and the pairs it found.
#[derive(Clone, Debug, Default)]
pub(super) struct NearSlice {
    lookups: Vec<Lookup>,
    found: Vec<u64>,
}

impl NearSlice {
    /// Its lists cut to about `keep / of` of their capacity ([`crate::trim`]).
    pub(super) fn shrink_share(&mut self, keep: usize, of: usize) {
        crate::trim::shrink_share(&mut self.lookups, keep, of);
        crate::trim::shrink_share(&mut self.found, keep, of);
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.lookups.capacity() * std::mem::size_of::<Lookup>() + self.found.capacity() * 8
    }
}

/// What [`look_up`] did: the slices it filled and the entries it compared.
#[derive(Clone, Copy, Debug)]
pub(super) struct Looked {
    slices: usize,
    compared: u64,
}

/// Looks `boxes` up in the static rows of each of `levels` (rows, and the inverse of their
/// cell edge), in contiguous slices of `boxes` on rayon's pool (one slice on one thread or
/// for few boxes), each into its own [`NearSlice`]; [`gather`] joins them in slice order,
/// so the pairs and their order do not depend on the threads. A slice's pairs come
/// grouped by box in the order of `boxes`, each group sorted, when one level has pairs;
/// sorted, when several do. Either way they ascend when `boxes` ascend by id.
fn look_up(levels: StaticLevels<'_>, boxes: &[(u32, Aabb)], slices: &mut Vec<NearSlice>) -> Looked {
    let kernel = Kernel::best();
    let (per, n) = slices_of(boxes.len(), PER_TASK);
    if slices.len() < n {
        slices.resize_with(n, NearSlice::default);
    }
    let one = |slice: &mut NearSlice, boxes: &[(u32, Aabb)]| {
        slice.found.clear();
        let found = &mut slice.found;
        let (mut compared, mut runs) = (0, 0);
        for (rows, inv) in levels.into_iter().filter(|(rows, _)| rows.count() > 0) {
            let start = found.len();
            compared += query_statics(kernel, rows, boxes, inv, &mut slice.lookups, |d, s| {
                found.push(key(d, s));
            });
            sort_groups(&mut found[start..]);
            runs += usize::from(found.len() > start);
        }
        if runs > 1 {
            // Not the stable sort, which would merge the levels' runs faster but allocates.
            found.sort_unstable();
        }
        compared
    };
    let compared = if n == 1 {
        one(&mut slices[0], boxes)
    } else {
        slices[..n]
            .par_iter_mut()
            .zip(boxes.par_chunks(per))
            .map(|(slice, boxes)| one(slice, boxes))
            .sum()
    };
    Looked {
        slices: n,
        compared,
    }
}

/// Appends the pairs [`look_up`] found to `out`, slice after slice; returns the entries
/// it compared.
fn gather(slices: &[NearSlice], looked: Looked, out: &mut Vec<u64>) -> u64 {
    for slice in &slices[..looked.slices] {
        out.extend_from_slice(&slice.found);
    }
    looked.compared
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
    use crate::broad::place::tests::{random_box, set_twins, update_twins};
    use crate::testing::lcg;

    /// A box compared with columns of boxes finds, by either kernel and in column order,
    /// exactly the boxes it meets (one by one with [`Aabb::overlaps`]): columns of every
    /// length around the eight lanes, boxes of no extent and unbounded ones.
    #[test]
    fn column_scans_find_what_each_box_meets() {
        let mut s = 41u64;
        for n in [0usize, 1, 7, 8, 9, 23, 200] {
            let boxes: Vec<Aabb> = (0..n).map(|_| random_box(&mut s, 6.0)).collect();
            let mut cols = Columns::default();
            cols.fill(&(0..n as u32).collect::<Vec<_>>(), |i| boxes[i as usize]);
            for k in 0..50 {
                let q = match k {
                    0 => Aabb::new([f32::NEG_INFINITY; 3], [f32::INFINITY; 3]),
                    _ => random_box(&mut s, 6.0),
                };
                let want: Vec<u32> = (0..n as u32)
                    .filter(|&i| boxes[i as usize].overlaps(&q))
                    .collect();
                for kernel in Kernel::all() {
                    let mut got = Vec::new();
                    let scan = Scan {
                        from: 0,
                        to: n,
                        home: 3,
                        q: &q,
                    };
                    scan_columns(kernel, cols.cols(), scan, &mut |i| got.push(i));
                    assert_eq!(got, want, "{n} boxes, query {k}, {kernel:?}");
                }
            }
        }
    }

    /// With only dynamic boxes changing among statics, several threads look the statics
    /// up in slices beside the placing ([`BroadPhase::place_and_look_up`]) and find the
    /// pairs, in the same order, that one thread finds after it, and brute force finds:
    /// with boxes removed, re-added and grown large among the changes.
    #[test]
    fn statics_looked_up_beside_the_placing_equal_one_thread() {
        let serial = crate::testing::pool(1);
        let pool = crate::testing::pool(3);
        for seed in 0..3u64 {
            let mut s = seed * 104_729 + 5;
            let (statics, n) = (600, 2000);
            let side = (n as f64 * 2.0).cbrt();
            let small = |s: &mut u64| {
                let c = [0, 1, 2].map(|_| (lcg(s) * side) as f32);
                let h = [0, 1, 2].map(|_| (0.1 + 0.4 * lcg(s)) as f32);
                Aabb::new(
                    [0, 1, 2].map(|k| c[k] - h[k]),
                    [0, 1, 2].map(|k| c[k] + h[k]),
                )
            };
            let mut boxes: Vec<Option<Aabb>> = Vec::new();
            let (mut bp, mut twin) = (BroadPhase::new(), BroadPhase::new());
            for i in 0..n {
                let b = small(&mut s);
                bp.set(i, b, i >= statics).unwrap();
                twin.set(i, b, i >= statics).unwrap();
                boxes.push(Some(b));
            }
            let mut ahead = 0;
            for frame in 0..8 {
                for _ in 0..1200 {
                    let i = statics + (lcg(&mut s) * f64::from(n - statics)) as u32;
                    let r = lcg(&mut s);
                    let new = match boxes[i as usize] {
                        None => Some(small(&mut s)),
                        Some(_) if r < 0.05 => None,
                        // Spanning many rows: a large dynamic box.
                        Some(_) if r < 0.07 => Some(random_box(&mut s, side)),
                        Some(b) => {
                            let m = [0, 1, 2].map(|_| (lcg(&mut s) as f32 - 0.5) * 0.8);
                            Some(Aabb::new(
                                [0, 1, 2].map(|k| b.lo[k] + m[k]),
                                [0, 1, 2].map(|k| b.hi[k] + m[k]),
                            ))
                        }
                    };
                    set_twins(&mut bp, &mut twin, i, new.map(|b| (b, true)));
                    boxes[i as usize] = new;
                }
                ahead += usize::from(twin.splices_static_pairs());
                let live: Vec<_> = (0..n)
                    .filter_map(|i| boxes[i as usize].map(|b| (i, b, i >= statics)))
                    .collect();
                let at = format!("seed {seed} frame {frame}");
                update_twins((&serial, &pool), &mut bp, &mut twin, &live, &at);
            }
            // Every frame but the first (which places the statics) looked ahead.
            assert_eq!(ahead, 7, "seed {seed}");
            assert!(twin.near_slices.len() >= 3, "seed {seed}: too few slices");
        }
    }

    /// Static boxes from ordinary to thousands of times larger go to the rows, to several
    /// levels of coarse rows and (unbounded) to the large list; moving boxes among them find,
    /// on one thread and on three in the same order, the pairs brute force finds: while
    /// only they move (the kept pairs spliced, the coarse rows looked up beside the
    /// placing), when a static box changes level, and with a large static (no splicing).
    #[test]
    fn statics_of_every_size_pair_as_brute_force_finds() {
        let serial = crate::testing::pool(1);
        let pool = crate::testing::pool(3);
        for seed in 0..3u64 {
            let mut s = seed * 7877 + 3;
            let side = 40.0;
            let sized = |s: &mut u64, h: f64| {
                let c = [0, 1, 2].map(|_| (lcg(s) * side) as f32);
                let h = [0, 1, 2].map(|_| (h * (0.5 + lcg(s))) as f32);
                Aabb::new(
                    [0, 1, 2].map(|k| c[k] - h[k]),
                    [0, 1, 2].map(|k| c[k] + h[k]),
                )
            };
            // Half-extents about 0.3 (the rows, the cell fitted to them), and for one box
            // in twenty of the statics 3, 12, 50 and 400 (coarse levels).
            let scale = |i: u32| [3.0, 12.0, 50.0, 400.0].get(i as usize % 80).copied();
            let (statics, n) = (700u32, 1000u32);
            let mut boxes: Vec<Option<(Aabb, bool)>> = Vec::new();
            let (mut bp, mut twin) = (BroadPhase::new(), BroadPhase::new());
            for i in 0..n {
                let b = sized(&mut s, scale(i).filter(|_| i < statics).unwrap_or(0.3));
                bp.set(i, b, i >= statics).unwrap();
                twin.set(i, b, i >= statics).unwrap();
                boxes.push(Some((b, i >= statics)));
            }
            let (mut spliced, mut levels) = (0, 0);
            for frame in 0..10 {
                for i in statics..n {
                    let b = sized(&mut s, 0.3);
                    bp.set(i, b, true).unwrap();
                    twin.set(i, b, true).unwrap();
                    boxes[i as usize] = Some((b, true));
                }
                let changed = match frame {
                    // A static box grows out of its level, one shrinks into the rows, one
                    // moves within its level.
                    4 => vec![
                        (0, sized(&mut s, 60.0)),
                        (2, sized(&mut s, 0.3)),
                        (81, sized(&mut s, 12.0)),
                    ],
                    // An unbounded static box: the large list.
                    7 => vec![(
                        10,
                        Aabb::new([f32::NEG_INFINITY; 3], [0.0, f32::INFINITY, 5.0]),
                    )],
                    _ => vec![],
                };
                for (i, b) in changed {
                    bp.set(i, b, false).unwrap();
                    twin.set(i, b, false).unwrap();
                    boxes[i as usize] = Some((b, false));
                }
                spliced += usize::from(twin.splices_static_pairs());
                let live: Vec<_> = (0..n)
                    .filter_map(|i| boxes[i as usize].map(|(b, d)| (i, b, d)))
                    .collect();
                let at = format!("seed {seed} frame {frame}");
                update_twins((&serial, &pool), &mut bp, &mut twin, &live, &at);
                levels = levels.max(bp.coarse.iter().filter(|r| r.count() > 0).count());
                assert_eq!(bp.large_static.is_empty(), frame < 7, "{at}");
            }
            // Frames 1-3, 5-6 splice (0 places, 4 and 7 change statics, 8-9 have a large one).
            assert_eq!(spliced, 5, "seed {seed}");
            assert!(levels >= 3, "seed {seed}: {levels} coarse levels");
        }
    }

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
