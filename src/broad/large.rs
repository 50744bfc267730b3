//! Pairs of large dynamic boxes, those spanning more than two cells in y or z or longer
//! than two along x (the rows' neighbourhood cannot hold them): each is compared anew every
//! update with the rows it covers, dynamic, static and coarse static (`query_rows`), with
//! the statics too large for every level, and with the other large dynamic boxes. For
//! those, the large dynamic boxes are entered in rows of the coarse levels (as the coarse
//! statics are, `place.rs`; anew when one of them changed) and each looks up its own level
//! and the coarser ones, so that their pairs cost what their neighbours do, not the square
//! of their number. A scene's few large boxes cost their own pairs' worth; many of them are
//! looked up in slices on rayon's pool. Each large box keeps the boxes it found its pairs
//! with, a list of its own, so the pairs come out box by box (the same pairs in the same
//! order for any number of threads).
//!
//! When few boxes changed since the last update (fewer than the measured costs of the two
//! ways make worth it, [`Costs`]), the pairs of two unchanged boxes are kept: a changed
//! box's pairs leave the lists of the unchanged large boxes that met its box of the last
//! update (found in their coarse rows, as it finds the ones it meets now), only the changed
//! large boxes are looked up, and every other changed box joins the lists of the unchanged
//! large boxes near it. Sleeping large boxes so cost nothing until they or a neighbour
//! move, and a moving box costs the large boxes near it, not all pairs. Both lookups run in
//! slices on rayon's pool when there are many, joined in slice order.

use super::place::{COARSE_LEVELS, directory, entries, rank};
use super::query::query_rows;
use super::sweep::{Kernel, find};
use super::{Aabb, BroadPhase, Entry, Place, StaticRows, bit, merge_sorted_by_key, slices_of};
use rayon::prelude::*;

/// Large boxes per task on rayon's pool: a large box's lookup reads tens of rows, far more
/// than a task costs to hand over.
const PER_TASK: usize = 8;

/// Changed boxes per task on rayon's pool when they are looked up among the unchanged large
/// boxes: each lookup reads a few coarse rows.
const NEAR_PER_TASK: usize = 256;

/// The level of a large dynamic box too large for every coarse level.
const HUGE: u8 = u8::MAX;

/// Until both lookups have been measured, the pairs of unchanged boxes are kept when at
/// most this many boxes changed per large dynamic box: each changed box then costs a
/// lookup in the large boxes' coarse rows, a small share of what a large box's own lookup
/// costs among boxes of the same size ([`Costs`] decides once measured).
const KEEP_UP_TO: usize = 8;

/// What the two lookups of [`BroadPhase::large_pairs`] cost, in boxes compared each, as
/// measured by the last update that made them: a changed box's among the large boxes'
/// coarse rows (`near`, twice per changed box), and a large box's own (`own`). Their ratio
/// is not one constant: among boxes of a size a changed box meets few large ones, but in
/// real geometry (a building's walls and floors among its small triangles) thousands of
/// large boxes fill the coarse rows, and each changed box compares hundreds.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Costs {
    near: Option<f64>,
    own: Option<f64>,
}

impl Costs {
    /// Whether keeping the pairs of unchanged boxes costs less than finding every large
    /// box's anew, with `moved` boxes changed among `large` large dynamic ones.
    fn keep(&self, moved: usize, large: usize) -> bool {
        match (self.near, self.own) {
            (Some(near), Some(own)) => 2.0 * moved as f64 * near < large as f64 * own,
            _ => moved <= KEEP_UP_TO * large,
        }
    }
}

/// `compared` boxes over `lookups`, when there were lookups.
fn per_lookup(compared: u64, lookups: u64) -> Option<f64> {
    (lookups > 0).then(|| compared as f64 / lookups as f64)
}

/// The large dynamic boxes as rows of the coarse levels, remade at an update where one of
/// them changed.
#[derive(Clone, Debug, Default)]
pub(super) struct LargeRows {
    levels: [StaticRows; COARSE_LEVELS],
    /// The level of each box of `large_dynamic`, in its order ([`HUGE`] for none).
    level: Vec<u8>,
    /// The boxes of no level, in the order of `large_dynamic`.
    huge: Vec<u32>,
    /// Per level, the changed boxes' new entries (scratch of `reindex_large`).
    fresh: [Vec<Entry>; COARSE_LEVELS],
}

/// What one slice of [`BroadPhase::near_changes`] found: (place in `large_dynamic`, box
/// id) pairs, for the lists the boxes leave and those they join, and the boxes it compared.
#[derive(Clone, Debug, Default)]
pub(super) struct NearLarge {
    left: Vec<(u32, u32)>,
    joined: Vec<(u32, u32)>,
    compared: u64,
    /// Lookups made (one or two per changed box).
    lookups: u64,
    /// The large boxes one changed box met, and meets (scratch).
    was: Vec<u32>,
    now: Vec<u32>,
}

impl NearLarge {
    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + (self.left.capacity() + self.joined.capacity()) * 8
            + (self.was.capacity() + self.now.capacity()) * 4
    }
}

impl LargeRows {
    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.levels.iter().map(StaticRows::bytes).sum::<usize>()
            + self.level.capacity()
            + self.huge.capacity() * 4
            + self
                .fresh
                .iter()
                .map(|f| f.capacity() * size_of::<Entry>())
                .sum::<usize>()
    }
}

impl BroadPhase {
    /// Finds every pair of a large dynamic box, into `large_pairs` (each box's list the
    /// pairs it found): all anew after a rebuild of the grid or where that costs less than
    /// keeping them ([`Costs`]), else from the pairs of the last update and the changed
    /// boxes (whose bits must still be set), the lists first moved to their boxes' new
    /// places if a box joined or left the large ones.
    pub(super) fn large_pairs(&mut self, regridded: bool) {
        let n = self.large_dynamic.len();
        if !regridded && n > 0 && self.large_costs.keep(self.moved.len(), n) {
            // The coarse rows hold the large boxes of the last update, which `large_ids`
            // names: where none joined or left, only the changed ones are entered anew.
            let joined = self.large_ids != self.large_dynamic;
            if joined {
                self.realign_large_pairs();
            }
            match (self.large_moved, joined) {
                (true, true) => self.index_large(),
                (true, false) => self.reindex_large(),
                (false, _) => {}
            }
            if !self.moved.is_empty() {
                self.update_large_pairs();
            }
            self.stats.large_kept = true;
            self.count_large_pairs();
            return;
        }
        let mut lists = std::mem::take(&mut self.large_pairs);
        lists.resize_with(n, Vec::new);
        self.index_large();
        let (compared, looked) = self.find_large_pairs(&mut lists, None);
        self.large_costs.own = per_lookup(compared, looked).or(self.large_costs.own);
        self.stats.compared += compared;
        self.large_pairs = lists;
        self.large_ids.clone_from(&self.large_dynamic);
        self.count_large_pairs();
    }

    /// Finds anew the list of every large dynamic box (its place in `large_dynamic` is its
    /// place in `lists`), or with `changed` of every changed one alone; returns the boxes
    /// compared and the boxes looked up. Many boxes are looked up in slices on rayon's
    /// pool, each slice holding about [`PER_TASK`] boxes to look up; each list is written
    /// by its box alone, so the lists do not depend on the threads.
    fn find_large_pairs(&self, lists: &mut [Vec<u32>], changed: Option<&[u64]>) -> (u64, u64) {
        let wanted = |l: u32| changed.is_none_or(|bits| bit(bits, l));
        let one = |i: usize, found: &mut Vec<u32>| {
            if wanted(self.large_dynamic[i]) {
                found.clear();
                self.large_box_pairs(i, changed, found)
            } else {
                0
            }
        };
        let n = lists.len();
        let looked = match changed {
            None => n,
            Some(_) => self.large_dynamic.iter().filter(|&&l| wanted(l)).count(),
        };
        if looked <= PER_TASK || rayon::current_num_threads() == 1 {
            let compared = lists.iter_mut().enumerate().map(|(i, f)| one(i, f)).sum();
            return (compared, looked as u64);
        }
        // Slices of the lists holding about PER_TASK boxes to look up each.
        let per = (PER_TASK * n).div_ceil(looked).clamp(PER_TASK, n);
        let compared = lists
            .par_chunks_mut(per)
            .enumerate()
            .with_max_len(1)
            .map(|(t, lists)| {
                let at = t * per;
                lists
                    .iter_mut()
                    .enumerate()
                    .map(|(k, f)| one(at + k, f))
                    .sum::<u64>()
            })
            .sum();
        (compared, looked as u64)
    }

    /// Gives each box of `large_dynamic` its list of the last update (`large_ids` names
    /// the boxes the lists were found by): a box that joined the large ones starts with an
    /// empty list (it changed, so its list is found anew), and the lists of those that left
    /// go (their pairs with the boxes still large are in those boxes' lists, and leave them
    /// as any changed box's do).
    fn realign_large_pairs(&mut self) {
        let mut old = std::mem::take(&mut self.large_pairs).into_iter();
        let mut ids = self.large_ids.iter().copied().peekable();
        let mut lists = Vec::with_capacity(self.large_dynamic.len());
        for &l in &self.large_dynamic {
            while ids.next_if(|&o| o < l).is_some() {
                old.next();
            }
            if ids.next_if_eq(&l).is_some() {
                lists.push(old.next().unwrap_or_default());
            } else {
                lists.push(Vec::new());
            }
        }
        self.large_pairs = lists;
        self.large_ids.clone_from(&self.large_dynamic);
    }

    fn count_large_pairs(&mut self) {
        self.stats.pairs += self.large_pairs.iter().map(|l| l.len() as u64).sum::<u64>();
    }

    /// [`BroadPhase::large_pairs`] from the last update's pairs. A changed box's pairs with
    /// the unchanged large boxes are in those boxes' lists, and those boxes met its box of
    /// the last update: they are found by that box in the large boxes' coarse rows, and the
    /// pairs dropped from their lists alone (not looked for among all pairs). Then each
    /// changed large box's list is found anew, and every other changed box's pairs with
    /// the unchanged large boxes join those boxes' lists. A box listed before and after
    /// (neither large nor new nor removed) leaves and joins only the lists of the large
    /// boxes it stopped or started meeting: most of a small move's pairs stay where they are.
    fn update_large_pairs(&mut self) {
        let mut lists = std::mem::take(&mut self.large_pairs);
        let mut slices = std::mem::take(&mut self.near_large);
        let looked = self.near_changes(&mut slices);
        let kernel = Kernel::best();
        let (mut compared, mut lookups) = (0, 0);
        // Drops first, then joins, as one box can be in both (its old box and its new).
        for slice in &slices[..looked] {
            compared += slice.compared;
            lookups += slice.lookups;
            for &(i, c) in &slice.left {
                let list = &mut lists[i as usize];
                if let Some(k) = find(kernel, list, c) {
                    list.remove(k);
                }
            }
        }
        for slice in &slices[..looked] {
            for &(i, o) in &slice.joined {
                lists[i as usize].push(o);
            }
        }
        let costs = &mut self.large_costs;
        costs.near = per_lookup(compared, lookups).or(costs.near);
        let (own, looked) = self.find_large_pairs(&mut lists, Some(&self.moved_bits));
        self.large_costs.own = per_lookup(own, looked).or(self.large_costs.own);
        self.stats.compared += compared + own;
        self.large_pairs = lists;
        self.near_large = slices;
    }

    /// Looks up every changed box among the unchanged large dynamic boxes, its box of the
    /// last update and its new one (unless it is large, or removed, now), in contiguous
    /// slices of the changed boxes on rayon's pool (one slice on one thread or for few
    /// boxes), each slice into its own [`NearLarge`] as (place in `large_dynamic`, id) in
    /// the order of the changes: the lists a box may leave, and those it joins. Returns the
    /// slices filled; joined in slice order they are the order one pass would meet them in.
    fn near_changes(&self, slices: &mut Vec<NearLarge>) -> usize {
        let kernel = Kernel::best();
        let (old, proxies) = (&self.moved_old, &self.proxies);
        let n = old.len();
        let (per, count) = slices_of(n, NEAR_PER_TASK);
        if slices.len() < count {
            slices.resize_with(count, NearLarge::default);
        }
        let one = |slice: &mut NearLarge, t: usize| {
            let NearLarge {
                left,
                joined,
                compared,
                lookups,
                was,
                now,
            } = slice;
            left.clear();
            joined.clear();
            *compared = 0;
            *lookups = 0;
            for b in &old[t * per..n.min((t + 1) * per)] {
                let (c, before) = (b.id, b.aabb);
                let p = &proxies[c as usize];
                let joins = !matches!(p.placed, Place::LargeDynamic | Place::None);
                *lookups += 1 + u64::from(joins);
                if !(joins && b.listed) {
                    *compared += self.near_unchanged(kernel, &before, |i| left.push((i as u32, c)));
                    if joins {
                        *compared +=
                            self.near_unchanged(kernel, &p.aabb, |i| joined.push((i as u32, c)));
                    }
                    continue;
                }
                // Listed before and after: in exactly the lists of the boxes its old box
                // met, and to be in exactly those its new box meets.
                was.clear();
                now.clear();
                *compared += self.near_unchanged(kernel, &before, |i| was.push(i as u32));
                *compared += self.near_unchanged(kernel, &p.aabb, |i| now.push(i as u32));
                if was.len() * now.len() > 1024 {
                    // Among many large boxes: searched sorted, not compared all with all.
                    was.sort_unstable();
                    now.sort_unstable();
                    left.extend(
                        was.iter()
                            .filter(|i| now.binary_search(i).is_err())
                            .map(|&i| (i, c)),
                    );
                    joined.extend(
                        now.iter()
                            .filter(|i| was.binary_search(i).is_err())
                            .map(|&i| (i, c)),
                    );
                } else {
                    left.extend(was.iter().filter(|i| !now.contains(i)).map(|&i| (i, c)));
                    joined.extend(now.iter().filter(|i| !was.contains(i)).map(|&i| (i, c)));
                }
            }
        };
        if count == 1 {
            one(&mut slices[0], 0);
        } else {
            slices[..count]
                .par_iter_mut()
                .enumerate()
                .for_each(|(t, slice)| one(slice, t));
        }
        count
    }

    /// Calls `each` with the place in `large_dynamic` of every unchanged large dynamic box
    /// that may meet `b` (found in the large boxes' coarse rows, or among the huge ones);
    /// returns the boxes compared.
    fn near_unchanged(&self, kernel: Kernel, b: &Aabb, mut each: impl FnMut(usize)) -> u64 {
        let (bits, large) = (&self.moved_bits, &self.large_rows);
        let mut one = |l: u32| {
            if !bit(bits, l)
                && let Ok(i) = self.large_dynamic.binary_search(&l)
            {
                each(i);
            }
        };
        let mut compared = 0;
        for (level, rows) in large.levels.iter().enumerate() {
            if rows.count() > 0 {
                compared += query_rows(kernel, rows, b, self.coarse_inv(level), &mut one);
            }
        }
        for &l in &large.huge {
            compared += 1;
            if self.proxies[l as usize].aabb.overlaps(b) {
                one(l);
            }
        }
        compared
    }

    /// Brings the coarse rows of the large dynamic boxes up to date where only some of them
    /// changed and none joined or left: the changed ones' entries leave, and their new ones,
    /// sorted, are merged in (the same rows [`BroadPhase::index_large`] makes, without
    /// sorting every box's entries again).
    fn reindex_large(&mut self) {
        let mut rows = std::mem::take(&mut self.large_rows);
        debug_assert_eq!(
            rows.level.len(),
            self.large_dynamic.len(),
            "the same large boxes"
        );
        let bits = &self.moved_bits;
        let mut fresh = std::mem::take(&mut rows.fresh);
        for f in &mut fresh {
            f.clear();
        }
        for (i, &id) in self.large_dynamic.iter().enumerate() {
            if !bit(bits, id) {
                continue;
            }
            let b = self.proxies[id as usize].aabb;
            rows.level[i] = match self.coarse_level(&b) {
                Some((level, lo, hi)) => {
                    entries(id, &b, lo, hi, &mut fresh[level as usize]);
                    level
                }
                None => HUGE,
            };
        }
        for (level, new) in rows.levels.iter_mut().zip(&mut fresh) {
            let before = level.entries.len();
            level.entries.retain(|e| !bit(bits, e.proxy));
            if new.is_empty() && level.entries.len() == before {
                continue;
            }
            new.sort_unstable_by_key(rank);
            merge_sorted_by_key(&mut level.entries, new, rank);
            directory(level);
        }
        rows.huge.clear();
        let levels = self.large_dynamic.iter().zip(&rows.level);
        rows.huge
            .extend(levels.filter(|&(_, &l)| l == HUGE).map(|(&id, _)| id));
        rows.fresh = fresh;
        self.large_rows = rows;
        self.large_moved = false;
    }

    /// Enters the large dynamic boxes in the rows of their coarse levels.
    fn index_large(&mut self) {
        let mut rows = std::mem::take(&mut self.large_rows);
        for level in &mut rows.levels {
            level.entries.clear();
        }
        rows.level.clear();
        rows.huge.clear();
        for &id in &self.large_dynamic {
            let b = self.proxies[id as usize].aabb;
            match self.coarse_level(&b) {
                Some((level, lo, hi)) => {
                    entries(id, &b, lo, hi, &mut rows.levels[level as usize].entries);
                    rows.level.push(level);
                }
                None => {
                    rows.huge.push(id);
                    rows.level.push(HUGE);
                }
            }
        }
        for level in rows
            .levels
            .iter_mut()
            .filter(|l| !l.entries.is_empty() || l.len() > 0)
        {
            level.entries.sort_unstable_by_key(rank);
            directory(level);
        }
        self.large_rows = rows;
        self.large_moved = false;
    }

    /// Calls `found` with every large box, dynamic or static, whose box meets `q`, as of
    /// the last update: the large dynamic boxes of a level through their coarse rows (each
    /// once, by its home row), the rest one by one. Not every large box one by one: a
    /// scattered proxy record each, where a query meets a handful of them.
    pub(super) fn query_large(&self, kernel: Kernel, q: &Aabb, mut found: impl FnMut(u32)) {
        let large = &self.large_rows;
        for (level, rows) in large.levels.iter().enumerate() {
            if rows.count() > 0 {
                query_rows(kernel, rows, q, self.coarse_inv(level), &mut found);
            }
        }
        for &o in large.huge.iter().chain(&self.large_static) {
            if self.proxies[o as usize].aabb.overlaps(q) {
                found(o);
            }
        }
    }

    /// Pushes the boxes the large dynamic box at `i` (its place in `large_dynamic`) forms
    /// its pairs with onto `out`; returns the boxes compared. A pair of two large dynamic
    /// boxes is found by the one of the lower level, or of the lower id on one level; one of
    /// a box of no level, by that box (the lower id if both are). With `changed` (one bit per changed
    /// proxy, when only the changed boxes are looked up), a pair with an unchanged large
    /// box is found by the changed one, whatever their levels.
    fn large_box_pairs(&self, i: usize, changed: Option<&[u64]>, out: &mut Vec<u32>) -> u64 {
        let kept = |o: u32| changed.is_some_and(|bits| !bit(bits, o));
        let (kernel, inv) = (Kernel::best(), 1.0 / self.cell);
        let large = &self.large_rows;
        let mut compared = 0;
        let l = self.large_dynamic[i];
        let b = self.proxies[l as usize].aabb;
        let mut pair = |o: u32| out.push(o);
        compared += self.query_dynamic(kernel, &b, inv, &mut pair);
        for (rows, inv) in self.static_levels() {
            if rows.count() > 0 {
                compared += query_rows(kernel, rows, &b, inv, &mut pair);
            }
        }
        let own = large.level[i];
        if own == HUGE {
            // Every other large dynamic box but the huge ones before it.
            let others = self.large_dynamic.iter().zip(&large.level);
            let others = others.filter(|&(&o, &lv)| lv != HUGE || o > l || kept(o));
            for (&o, _) in others.chain(self.large_static.iter().map(|o| (o, &0))) {
                compared += 1;
                if self.proxies[o as usize].aabb.overlaps(&b) {
                    pair(o);
                }
            }
            return compared;
        }
        // Unchanged large boxes below its level are its to find too.
        let from = if changed.is_some() { 0 } else { own as usize };
        let levels = large.levels.iter().enumerate().skip(from);
        for (level, rows) in levels.filter(|(_, rows)| rows.count() > 0) {
            compared += query_rows(kernel, rows, &b, self.coarse_inv(level), |o| {
                if (level > own as usize || (level == own as usize && o > l)) || kept(o) {
                    pair(o);
                }
            });
        }
        // A changed box of a level also finds the unchanged huge ones.
        if changed.is_some() {
            for &o in &large.huge {
                compared += 1;
                if kept(o) && self.proxies[o as usize].aabb.overlaps(&b) {
                    pair(o);
                }
            }
        }
        for &o in &self.large_static {
            compared += 1;
            if self.proxies[o as usize].aabb.overlaps(&b) {
                pair(o);
            }
        }
        compared
    }
}
