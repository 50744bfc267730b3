//! Keeping the rows sorted (I-COLLIDE's temporal coherence, Cohen et al. 1995, §4.2): the
//! boxes set since the last update are placed; each chunk of dynamic rows they touch is
//! re-sorted in one streaming pass (the entries of changed boxes left out, their new ones,
//! few and sorted, merged in) that sweeps every row as soon as it is complete, the chunks
//! in parallel; the static array is re-sorted when a static box changed; the grid itself
//! is rebuilt when the boxes outgrow it.

use super::patch;
use super::sweep::{Found, Kernel, Pairs, sweep_fresh, sweep_row};
use super::{
    Aabb, BroadPhase, Chunk, ColsMut, Entry, NONE, Place, Proxy, Row, Rows, SKIP, Spare,
    StaticRows, bit, set_bit,
};
use crate::hint::{prefetch_at, prefetch_whole};
use rayon::prelude::*;

/// The cell edge is this many times the chosen percentile of the boxes' largest extent in
/// y and z (`docs/benchmarks.md`, "Design choices", has the measurement behind both).
const CELL_PER_EXTENT: f32 = 1.5;
/// The percentile of the boxes' extents the cell is fitted to: boxes above it may span
/// three cells and go to the large lists.
const EXTENT_PERCENTILE: f64 = 0.95;
/// The first level of coarse cells is this many times the cells: a static box spanning
/// more than two cells goes to the first level of coarse rows where it spans at most two.
/// Fixed ratios, not cells fitted to the large boxes: each level then holds boxes within
/// a small range of sizes whatever their spread, so a row's widest box stays near its
/// cell and a lookup scans few entries it does not meet.
pub(super) const COARSE_MIN: f32 = 4.0;
/// Each level of coarse cells is this many times the one below...
pub(super) const COARSE_STEP: f32 = 4.0;
/// ... over this many levels; a static box too large for all of them is a large one.
pub(super) const COARSE_LEVELS: usize = 6;

/// Every static rows a lookup reads, each with the inverse of its cell edge
/// ([`BroadPhase::static_levels`]).
pub(super) type StaticLevels<'a> = [(&'a StaticRows, f32); 2 * (1 + COARSE_LEVELS)];
/// Entries a chunk is made with; a chunk grown past twice this is split. Small enough
/// that a chunk's columns stay in a core's cache while it is streamed and swept, and that
/// a patch's shift of the entries after a changed row stays short; large enough that a
/// chunk is worth a task and that the placing's per-chunk buckets stay few at 1M boxes.
/// Tests use small chunks, so that splits happen.
#[cfg(not(any(test, fuzzing)))]
const CHUNK: usize = 2048;
#[cfg(any(test, fuzzing))]
const CHUNK: usize = 48;
/// A chunk whose incoming entries are at most one in this many of its entries is swept
/// only for the changed boxes' pairs ([`sweep_fresh`]), its other pairs kept; one with
/// more is swept whole.
const FRESH_SHARE: usize = 2;

/// The grid is rebuilt when more than one box in this many is large...
const MAX_LARGE_SHARE: u64 = 8;
/// ... or rows hold more than this many boxes on average (the boxes shrank away from the
/// cells)...
const MAX_PER_ROW: u64 = 256;
/// ... and either has grown this many times beyond what it was after the last rebuild (so
/// that boxes no cell fits do not rebuild the grid every update).
const WORSE: u64 = 2;

/// The cell coordinate of `v`: `floor(v / cell)`, clamped to 15 bits. Monotonic in `v`
/// (a product by a positive constant rounds monotonically), which is all the rows need: a
/// point of a box lies in one of the rows the box was entered in.
#[inline(always)]
pub(super) fn coord(v: f32, inv: f32) -> i32 {
    // Clamped first (a NaN product, ∞ · 0, counts as 0), then floored by truncation and a
    // step down for negative fractions: `f32::floor` is a library call on the x86_64
    // baseline.
    let c = (v * inv).clamp(-16384.0, 16383.0);
    let t = c as i32;
    t - i32::from((t as f32) > c)
}

/// The bits of an entry's `row` that name the row; the two above them say whether the
/// row is in the z-slab (bit 31) and the y-range (bit 30) of the box's lower corner.
pub(super) const KEY: u32 = (1 << 30) - 1;
/// Both of those bits: a row holding the lower corners of two boxes, in z and in y between
/// them, is the home of their pair.
pub(super) const HOME: u32 = 3 << 30;

/// The key of row (z, y): z-major, so the rows of one z-slab are consecutive.
#[inline(always)]
pub(super) fn key(z: i32, y: i32) -> u32 {
    (((z + 16384) as u32) << 15) | (y + 16384) as u32
}

/// The (z, y) of a row key.
#[inline(always)]
pub(super) fn split(k: u32) -> (i32, i32) {
    (
        ((k & KEY) >> 15) as i32 - 16384,
        (k & 0x7FFF) as i32 - 16384,
    )
}

/// A place in the order of row `row`, lower x bound `x` and id `proxy`: the lower x bound
/// by its bits in an order-preserving form, -0.0 before 0.0. One integer, so that sorting
/// and merging compare without branches; its low 32 bits are zero, room for a position in
/// a list being sorted ([`stream`]).
#[inline(always)]
pub(super) fn rank_of(row: u32, x: f32, proxy: u32) -> u128 {
    let b = x.to_bits();
    let ordered = if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    };
    (u128::from(row & KEY) << 96) | (u128::from(ordered) << 64) | (u128::from(proxy) << 32)
}

/// The low bits of a sort key: the position that [`stream`] packs into a rank.
pub(super) const POSITION: u128 = u32::MAX as u128;

/// An entry's place in the order: row, lower x bound, then id (so that the order depends
/// on the boxes alone).
#[inline(always)]
pub(super) fn rank(e: &Entry) -> u128 {
    rank_of(e.row, e.lo[0], e.proxy)
}

/// The longest x-extent a box in rows of cells of edge `1 / inv` may have, in cells.
const X_CELLS: f32 = 2.0;

/// Whether box `b` is short enough along x for rows of cells of edge `1 / inv`: a row's
/// widest box sets how far back every search and sweep in it reaches, so one box far
/// longer than the rest along x would make every lookup in its rows scan that far.
#[inline(always)]
fn fits_along_x(b: &Aabb, inv: f32) -> bool {
    (b.hi[0] - b.lo[0]) * inv <= X_CELLS
}

impl BroadPhase {
    /// Where proxy `p` goes with the current cell size.
    pub(super) fn placement(&self, p: &Proxy) -> Place {
        if !p.live {
            return Place::None;
        }
        let inv = 1.0 / self.cell;
        let (y0, y1) = (coord(p.aabb.lo[1], inv), coord(p.aabb.hi[1], inv));
        let (z0, z1) = (coord(p.aabb.lo[2], inv), coord(p.aabb.hi[2], inv));
        let normal = y1 - y0 <= 1 && z1 - z0 <= 1 && fits_along_x(&p.aabb, inv);
        match (normal, p.dynamic) {
            (true, true) => Place::Dynamic(key(z0, y0), key(z1, y1)),
            (true, false) => Place::Static(key(z0, y0), key(z1, y1)),
            (false, true) => Place::LargeDynamic,
            (false, false) => self.coarse_placement(&p.aabb),
        }
    }

    /// Where a static box too large for the rows goes: the first level of coarse rows
    /// where it spans at most two cells in y and in z and fits along x, else the large
    /// static list.
    fn coarse_placement(&self, b: &Aabb) -> Place {
        match self.coarse_level(b) {
            Some((level, lo, hi)) => Place::Coarse(lo, hi, level),
            None => Place::LargeStatic,
        }
    }

    /// The first level of coarse rows where box `b` spans at most two cells in y and in z
    /// and fits along x, with the keys of its first and last rows there; `None` if it
    /// fits none.
    pub(super) fn coarse_level(&self, b: &Aabb) -> Option<(u8, u32, u32)> {
        if self.coarse_cell <= 0.0 {
            return None;
        }
        (0..COARSE_LEVELS).find_map(|level| {
            let inv = self.coarse_inv(level);
            let (y0, y1) = (coord(b.lo[1], inv), coord(b.hi[1], inv));
            let (z0, z1) = (coord(b.lo[2], inv), coord(b.hi[2], inv));
            (y1 - y0 <= 1 && z1 - z0 <= 1 && fits_along_x(b, inv))
                .then(|| (level as u8, key(z0, y0), key(z1, y1)))
        })
    }

    /// The inverse of the cell edge of coarse level `level` (the one place it is
    /// computed, so that placing and looking up agree on every cell).
    #[inline]
    pub(super) fn coarse_inv(&self, level: usize) -> f32 {
        1.0 / (self.coarse_cell * COARSE_STEP.powi(level as i32))
    }

    /// The static rows a box looks up, each with the inverse of its cell edge: the rows,
    /// then the levels of coarse rows, then the recent rows of each (`recent.rs`).
    pub(super) fn static_levels(&self) -> StaticLevels<'_> {
        self.levels_of(&self.statics, &self.coarse, &self.recent)
    }

    /// [`BroadPhase::static_levels`] for rows `statics`, coarse rows `coarse` and recent
    /// rows `recent` taken out of `self` (to be read beside a call that changes it).
    pub(super) fn levels_of<'a>(
        &self,
        statics: &'a StaticRows,
        coarse: &'a [StaticRows; COARSE_LEVELS],
        recent: &'a [StaticRows; 1 + COARSE_LEVELS],
    ) -> StaticLevels<'a> {
        let inv = |l: usize| match l {
            0 => 1.0 / self.cell,
            _ => self.coarse_inv(l - 1),
        };
        std::array::from_fn(|l| match l {
            0 => (statics, inv(0)),
            l if l <= COARSE_LEVELS => (&coarse[l - 1], inv(l)),
            l => (&recent[l - 1 - COARSE_LEVELS], inv(l - 1 - COARSE_LEVELS)),
        })
    }

    /// Rows of dynamic boxes, and their entries.
    pub(super) fn dynamic_counts(&self) -> (usize, usize) {
        self.dynamic
            .iter()
            .fold((0, 0), |(r, e), c| (r + c.rows.len(), e + c.rows.count()))
    }

    /// The chunk holding row key `k`, among the chunks of `k`'s z-slab (a table lookup
    /// gives them): step by step when they are few, by a binary search when many (a flat
    /// scene). Not a binary search over every chunk: that is a chain of dependent reads
    /// per key, and placing a changed box asks for up to six keys.
    #[inline]
    pub(super) fn chunk_of(&self, k: u32) -> usize {
        let (firsts, table) = (&self.firsts, &self.slab_chunk);
        let z = split(k).0;
        // The chunks that may hold `k`: from its slab's first chunk to the next slab's.
        let (from, to) = match usize::try_from(z - self.slab_base) {
            Err(_) => (0, table.first().map_or(firsts.len(), |&c| c as usize + 1)),
            Ok(j) if j + 1 < table.len() => (table[j] as usize, table[j + 1] as usize + 1),
            Ok(_) => (table.last().map_or(0, |&c| c as usize), firsts.len()),
        };
        let mut i = from;
        if to - from <= 8 {
            while i + 1 < to && firsts[i + 1] <= k {
                i += 1;
            }
        } else {
            i += firsts[from + 1..to].partition_point(|&f| f <= k);
        }
        i
    }

    /// Sets the chunks' first keys from the chunks, and the table [`BroadPhase::chunk_of`]
    /// starts from: for each z-slab from the second chunk's to the last chunk's, the chunk
    /// holding its first key.
    pub(super) fn index_chunks(&mut self) {
        self.firsts.clear();
        self.firsts.extend(self.dynamic.iter().map(|c| c.first));
        self.slab_chunk.clear();
        let firsts = &self.firsts;
        let (Some(&second), Some(&last)) = (firsts.get(1), firsts.last()) else {
            self.slab_base = 0;
            return;
        };
        let (lo, hi) = (split(second).0, split(last).0);
        self.slab_base = lo;
        self.slab_chunk.extend((lo..=hi).map(|z| {
            let k = key(z, -16384);
            (firsts.partition_point(|&f| f <= k).saturating_sub(1)) as u32
        }));
    }

    /// [`BroadPhase::chunk_of`] by a binary search over all the chunks (its oracle).
    #[cfg(test)]
    pub(super) fn chunk_of_searched(&self, k: u32) -> usize {
        self.firsts.partition_point(|&f| f <= k).saturating_sub(1)
    }

    /// Whether the grid must be (re)built before this update.
    pub(super) fn wants_regrid(&self) -> bool {
        if self.live == 0 {
            return false;
        }
        if self.cell == 0.0 {
            return true;
        }
        if self.fixed {
            return false;
        }
        let live = u64::from(self.live);
        let large = (self.large_dynamic.len() + self.large_static.len()) as u64;
        let (rows, entries) = self.dynamic_counts();
        let rows = (rows + self.statics.len()).max(1) as u64;
        let per_row = (entries + self.statics.count()) as u64 / rows;
        live >= 64
            && ((large * MAX_LARGE_SHARE > live && large > WORSE * self.regrid_large)
                || (per_row > MAX_PER_ROW && per_row > WORSE * self.regrid_per_row))
    }

    /// Rebuilds the chunks, the static array and the large lists, choosing the cell size
    /// from the boxes unless it is fixed; every change since the last update is taken in,
    /// and every dynamic row swept.
    pub(super) fn regrid(&mut self) {
        if !self.fixed {
            self.cell = self.chosen_cell_size();
            self.coarse_cell = self.cell * COARSE_MIN;
        }
        for &id in &self.moved {
            self.proxies[id as usize].moved = false;
        }
        self.moved.clear();
        self.moved_old.clear();
        let (mut dynamic, mut statics) = (Vec::new(), Vec::new());
        let mut coarse: [Vec<Entry>; COARSE_LEVELS] = Default::default();
        self.large_dynamic.clear();
        self.large_static.clear();
        // Every static box goes to the sorted rows: none is recent.
        for r in &mut self.recent {
            r.entries.clear();
            directory(r);
        }
        self.buried.clear();
        self.arrived.clear();
        for job in &mut self.merging {
            job.cancel();
        }
        for id in 0..self.proxies.len() as u32 {
            let placed = self.placement(&self.proxies[id as usize]);
            let p = &mut self.proxies[id as usize];
            p.placed = placed;
            match placed {
                Place::Dynamic(lo, hi) => entries(id, &p.aabb, lo, hi, &mut dynamic),
                Place::Static(lo, hi) => entries(id, &p.aabb, lo, hi, &mut statics),
                Place::Coarse(lo, hi, l) => entries(id, &p.aabb, lo, hi, &mut coarse[l as usize]),
                Place::LargeDynamic => self.large_dynamic.push(id),
                Place::LargeStatic => self.large_static.push(id),
                Place::None => {}
            }
        }
        dynamic.par_sort_unstable_by_key(rank);
        statics.par_sort_unstable_by_key(rank);
        self.dynamic = chunks(&dynamic);
        self.index_chunks();
        self.statics.entries = statics;
        directory(&mut self.statics);
        for (rows, mut entries) in self.coarse.iter_mut().zip(coarse) {
            entries.par_sort_unstable_by_key(rank);
            rows.entries = entries;
            directory(rows);
        }
        self.statics_changed = 0;
        self.regrid_large = (self.large_dynamic.len() + self.large_static.len()) as u64;
        let (rows, entries) = self.dynamic_counts();
        let rows = (rows + self.statics.len()).max(1) as u64;
        self.regrid_per_row = (entries + self.statics.count()) as u64 / rows;
    }

    /// The cell edge: [`CELL_PER_EXTENT`] times the [`EXTENT_PERCENTILE`] of the live boxes'
    /// largest extent in y and z, or x-extent over [`X_CELLS`] if larger (finite ones), or
    /// 1 if that is zero or out of range.
    fn chosen_cell_size(&self) -> f32 {
        let mut ext: Vec<f32> = self
            .proxies
            .iter()
            .filter(|p| p.live)
            .map(|p| {
                let e = |k: usize| p.aabb.hi[k] - p.aabb.lo[k];
                e(1).max(e(2)).max(e(0) / X_CELLS)
            })
            .filter(|e| e.is_finite())
            .collect();
        if ext.is_empty() {
            return 1.0;
        }
        let at = ((ext.len() - 1) as f64 * EXTENT_PERCENTILE) as usize;
        let (_, m, _) = ext.select_nth_unstable_by(at, f32::total_cmp);
        let size = *m * CELL_PER_EXTENT;
        if size.is_normal() && size < f32::MAX / 4.0 {
            size
        } else {
            1.0
        }
    }

    /// Places every proxy set or removed since the last update: the large lists, then the
    /// dynamic chunks where a dynamic entry changed (re-sorted and swept), the static array
    /// where a static one did. Leaves the changed proxies' bits set for the static pairs.
    ///
    /// With more than one thread and many changed proxies, they are placed in slices on
    /// rayon's pool (reading a proxy is a cache miss at scale, and was the serial part of
    /// an update): each slice sorts its new entries into buckets by chunk, which the
    /// chunks' streams gather. The large lists and the proxies' records are then brought
    /// up to date on one thread in the order the proxies were changed, so the result does
    /// not depend on the slices.
    pub(super) fn place_moved(&mut self) {
        let words = self.proxies.len().div_ceil(64);
        if self.moved_bits.len() < words {
            self.moved_bits.resize(words, 0);
        }
        if self.dynamic.is_empty() {
            self.dynamic.push(Chunk::default());
            self.index_chunks();
        }
        let n = self.moved.len();
        let (_, entries) = self.dynamic_counts();
        self.patching = patch::worth_trying(n, entries);
        #[cfg(test)]
        {
            self.patching &= !self.stream_only;
        }
        let threads = rayon::current_num_threads();
        let slices = n.div_ceil(SLICE).min(2 * threads);
        if threads == 1 || slices < 2 {
            self.place_serially();
            self.resort_dynamic(&mut []);
        } else {
            // As many slices as `par_chunks` makes: each one is filled anew.
            let per = n.div_ceil(slices);
            let slices = n.div_ceil(per);
            let mut placing = std::mem::take(&mut self.placing);
            if placing.len() < slices {
                placing.resize_with(slices, Slice::default);
            }
            let chunks = self.dynamic.len();
            let this = &*self;
            placing[..slices]
                .par_iter_mut()
                .zip(this.moved.par_chunks(per))
                .for_each(|(slice, ids)| this.place_slice(ids, chunks, slice));
            for (slice, j) in placing[..slices].iter().zip((0..n).step_by(per)) {
                for (i, &new) in slice.placed.iter().enumerate() {
                    if let Some(&ahead) = self.moved.get(j + i + AHEAD) {
                        prefetch_whole(&self.proxies[ahead as usize]);
                    }
                    self.settle(j + i, new);
                }
                for (i, c) in self.dynamic.iter_mut().enumerate() {
                    c.dirty |= !slice.buckets[i].is_empty();
                }
            }
            self.resort_dynamic(&mut placing[..slices]);
            self.placing = placing;
        }
        self.update_statics();
    }

    /// [`BroadPhase::place_moved`]'s placing on one thread: each changed proxy's old
    /// entries' chunks marked, its new entries put straight into their chunks' incoming
    /// lists.
    fn place_serially(&mut self) {
        for i in 0..self.moved.len() {
            // Changed boxes come in the caller's order, at random in memory: asked for
            // ahead, a proxy arrives while the ones before it are placed.
            if let Some(&ahead) = self.moved.get(i + AHEAD) {
                prefetch_whole(&self.proxies[ahead as usize]);
            }
            let id = self.moved[i];
            let p = self.proxies[id as usize];
            let new = self.placement(&p);
            if let Place::Dynamic(lo, hi) = new {
                // Every entry of a changed box is taken out and merged back in, so that the
                // stream reads no box but those of its own columns.
                for row in rows_of(lo, hi) {
                    let c = self.chunk_of(row & KEY);
                    let c = &mut self.dynamic[c];
                    c.incoming.push(Entry::new(id, &p.aabb, row));
                    prefetch_at(c.incoming.as_ptr().wrapping_add(c.incoming.len() + 2));
                    c.dirty = true;
                }
            }
            self.settle(i, new);
        }
    }

    /// Records the new placement `new` of the changed proxy at `at` in `moved`: its bit,
    /// its record, the large lists, whether the static rows changed, which static entries
    /// it leaves (`recent.rs`) and whether it enters static rows.
    #[inline]
    fn settle(&mut self, at: usize, new: Place) {
        let id = self.moved[at];
        set_bit(&mut self.moved_bits, id);
        let p = &mut self.proxies[id as usize];
        // No longer listed once this update is done (nothing sets a box during it).
        p.moved = false;
        let old = std::mem::replace(&mut p.placed, new);
        if old.rows_bit() != 0 {
            self.buried.push((at as u32, old));
        }
        if new.rows_bit() != 0 {
            self.arrived.push(id);
        }
        if let Place::Dynamic(lo, hi) = old {
            // Its entries leave their chunks: listed, while few, for a patch to find them.
            for row in rows_of(lo, hi) {
                let c = self.chunk_of(row & KEY);
                let c = &mut self.dynamic[c];
                c.dirty = true;
                if self.patching && c.outgoing.len() < patch::limit(c.rows.count()) {
                    c.outgoing.push((row & KEY, id));
                }
            }
        }
        match old {
            Place::LargeDynamic => remove_sorted(&mut self.large_dynamic, id),
            Place::LargeStatic => remove_sorted(&mut self.large_static, id),
            _ => {}
        }
        match new {
            Place::LargeDynamic => insert_sorted(&mut self.large_dynamic, id),
            Place::LargeStatic => insert_sorted(&mut self.large_static, id),
            _ => {}
        }
        self.large_moved |= old == Place::LargeDynamic || new == Place::LargeDynamic;
        self.statics_changed |= old.rows_bit() | new.rows_bit();
    }

    /// Places the changed proxies `ids` into `out` (one slice of [`BroadPhase::place_moved`],
    /// for `chunks` chunks): each one's new placement, the chunks its old entries leave, and
    /// its new dynamic entries in the buckets of their chunks.
    fn place_slice(&self, ids: &[u32], chunks: usize, out: &mut Slice) {
        out.placed.clear();
        if out.buckets.len() != chunks {
            out.buckets.resize_with(chunks, Vec::new);
        }
        for (i, &id) in ids.iter().enumerate() {
            // Changed boxes come in the caller's order, at random in memory: asked for
            // ahead, a proxy arrives while the ones before it are placed.
            if let Some(&ahead) = ids.get(i + AHEAD) {
                prefetch_whole(&self.proxies[ahead as usize]);
            }
            let p = &self.proxies[id as usize];
            let new = self.placement(p);
            out.placed.push(new);
            if let Place::Dynamic(lo, hi) = new {
                // Every entry of a changed box is taken out and merged back in, so that the
                // stream reads no box but those of its own columns.
                for row in rows_of(lo, hi) {
                    let c = self.chunk_of(row & KEY);
                    let b = &mut out.buckets[c];
                    b.push(Entry::new(id, &p.aabb, row));
                    // The bucket's next line, written a few hundred boxes later: asked
                    // for now, the write does not wait for it.
                    prefetch_at(b.as_ptr().wrapping_add(b.len() + 2));
                }
            }
        }
    }

    /// Streams every chunk something changed in into its thread's spare columns, in
    /// parallel: changed entries drop out, their new ones (in its incoming list, or
    /// gathered from the slices' buckets of `placing`; then sorted) merge in, and each row
    /// is swept as it is completed. Chunks grown too large are split.
    fn resort_dynamic(&mut self, placing: &mut [Slice]) {
        let moved = &self.moved_bits;
        let kernel = Kernel::best();
        self.spares.ensure(rayon::current_num_threads());
        let spares = &self.spares;
        let slices = &*placing;
        let patching = self.patching;
        let swept = self
            .dynamic
            .par_iter_mut()
            .enumerate()
            .filter_map(|(i, c)| {
                c.dirty.then(|| {
                    for slice in slices {
                        c.incoming.extend_from_slice(&slice.buckets[i]);
                    }
                    let mut spare = spares.mine();
                    let Spare {
                        rows,
                        pairs,
                        keys,
                        fresh,
                        patch: scratch,
                    } = &mut *spare;
                    sort_incoming(&c.incoming, keys);
                    let swept = patching
                        .then(|| patch::patch(c, kernel, keys, fresh, scratch))
                        .flatten()
                        .unwrap_or_else(|| stream(c, moved, kernel, (rows, pairs), keys, fresh));
                    c.outgoing.clear();
                    swept
                })
            })
            .reduce(Swept::default, |a, b| Swept {
                compared: a.compared + b.compared,
                rows: a.rows + b.rows,
                refreshed: a.refreshed + b.refreshed,
                patched: a.patched + b.patched,
            });
        for bucket in placing.iter_mut().flat_map(|s| &mut s.buckets) {
            bucket.clear();
        }
        self.stats.compared += swept.compared;
        self.stats.rows_swept += swept.rows;
        self.stats.rows_refreshed += swept.refreshed;
        self.stats.chunks_patched += swept.patched;
        let (mut i, mut split) = (0, false);
        while i < self.dynamic.len() {
            if self.dynamic[i].rows.count() > 2 * CHUNK && self.dynamic[i].rows.len() > 1 {
                let half = split_chunk(&mut self.dynamic[i], kernel);
                self.dynamic.insert(i + 1, half);
                split = true;
            } else {
                i += 1;
            }
        }
        if split {
            self.index_chunks();
        }
    }

    /// The static rows `rows` (taken out of `self`; those of [`Place::rows_bit`] `which`)
    /// after this update's changes: changed entries and tombstones (`recent.rs`) drop out,
    /// and the entries of every changed proxy that is now in those rows, and the entries
    /// `extra` (sorted, of unchanged proxies), merge in.
    pub(super) fn resort_statics(&mut self, rows: &mut StaticRows, which: u32, extra: &[Entry]) {
        self.incoming.clear();
        for &id in &self.arrived {
            let p = &self.proxies[id as usize];
            if let Place::Static(lo, hi) | Place::Coarse(lo, hi, _) = p.placed
                && p.placed.rows_bit() == which
            {
                entries(id, &p.aabb, lo, hi, &mut self.incoming);
            }
        }
        self.incoming.sort_unstable_by_key(rank);
        // Sorted already: merged, not sorted again.
        super::merge_sorted_by_key(&mut self.incoming, extra, rank);
        let spare = if which == 1 {
            &mut self.static_spare
        } else {
            &mut self.coarse_spare
        };
        let mut out = std::mem::take(spare);
        emptied_with_room(&mut out, rows.count() + self.incoming.len());
        let inc = &self.incoming;
        let mut j = 0;
        // The next incoming entry's rank, reckoned once.
        let mut next = inc.first().map_or(u128::MAX, rank);
        for e in &rows.entries {
            // A tombstone's bounds are NaN; a box's never are.
            if bit(&self.moved_bits, e.proxy) || e.lo[0].is_nan() {
                continue;
            }
            if next != u128::MAX {
                let r = rank(e);
                while next < r {
                    out.push(inc[j]);
                    j += 1;
                    next = inc.get(j).map_or(u128::MAX, rank);
                }
            }
            out.push(*e);
        }
        out.extend_from_slice(&inc[j..]);
        *spare = std::mem::replace(&mut rows.entries, out);
        directory(rows);
    }

    /// Forgets this update's changes: the bits, the list and the dirty chunks.
    pub(super) fn end_moves(&mut self) {
        for &id in &self.moved {
            if let Some(w) = self.moved_bits.get_mut((id >> 6) as usize) {
                *w = 0;
            }
        }
        self.moved.clear();
        self.moved_old.clear();
        self.statics_touched = false;
        for c in &mut self.dynamic {
            c.dirty = false;
        }
    }
}

/// Writes sorted entries into their rows by index (the columns sized beforehand) and
/// sweeps each row once it is complete: the stream's output side.
struct Builder<'a> {
    out: ColsMut<'a>,
    dir: &'a mut Vec<Row>,
    pair_at: &'a mut Vec<u32>,
    found: Found<'a>,
    kernel: Kernel,
    /// Entries written.
    n: usize,
    /// The row being written: its key, where its entries start, its largest x-extent.
    key: u32,
    start: usize,
    width: f32,
    /// The last row completed and not yet swept, its key and its largest x-extent.
    pending: std::ops::Range<usize>,
    pending_key: u32,
    pending_width: f32,
    /// When only the changed boxes' entries look for pairs ([`sweep_fresh`]): a bit per
    /// place, set where such an entry was written (all clear outside a stream), and the
    /// pairs of two unchanged boxes, kept.
    fresh: Option<(&'a mut Vec<u64>, Kept<'a>)>,
    swept: Swept,
}

/// The pairs a stream keeps when only its changed boxes' entries look for pairs: the
/// chunk's pairs before it, row by row, less those of a changed box.
struct Kept<'a> {
    pairs: &'a [(u32, u32)],
    /// The chunk's rows before the stream, and where their pairs start.
    dir: &'a [Row],
    at: &'a [u32],
    moved: &'a [u64],
    /// The next of `dir` to look at.
    next: usize,
}

impl Kept<'_> {
    /// Writes to `found` the kept pairs of the row of key `key` (keys asked for ascend).
    #[inline]
    fn write(&mut self, key: u32, found: &mut Found) {
        let rows = self.dir.len().saturating_sub(1);
        while self.next < rows && self.dir[self.next].key < key {
            self.next += 1;
        }
        if self.next < rows && self.dir[self.next].key == key {
            let (from, to) = (self.at[self.next] as usize, self.at[self.next + 1] as usize);
            let moved = self.moved;
            found.keep_from(&self.pairs[from..to], |a, b| {
                !(bit(moved, a) | bit(moved, b))
            });
            self.next += 1;
        }
    }
}

/// What the sweeps of a stream or a patch did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Swept {
    /// Candidates compared.
    pub(super) compared: u64,
    /// Rows swept...
    pub(super) rows: u64,
    /// ... of which only for their changed boxes' pairs.
    pub(super) refreshed: u64,
    /// Chunks patched in place (not streamed).
    pub(super) patched: u64,
}

impl<'a> Builder<'a> {
    /// A builder writing into `out`, sized for `cap` entries.
    fn new(out: &'a mut Rows, cap: usize, found: Found<'a>, kernel: Kernel) -> Self {
        out.set_count(cap);
        out.rows.clear();
        out.pair_at.clear();
        let Rows {
            lo,
            hi,
            proxy,
            row,
            rows,
            pair_at,
            ..
        } = out;
        Builder {
            out: ColsMut::cut(lo, hi, proxy, row, cap),
            dir: rows,
            pair_at,
            found,
            kernel,
            n: 0,
            key: NONE,
            start: 0,
            width: 0.0,
            pending: 0..0,
            pending_key: NONE,
            pending_width: 0.0,
            fresh: None,
            swept: Swept::default(),
        }
    }

    /// A builder that sweeps only for the pairs of the entries pushed by
    /// [`Builder::push_fresh`] (their places marked in `bits`, which must be clear),
    /// writing before each row's the pairs `kept` keeps of it.
    fn for_fresh(
        out: &'a mut Rows,
        cap: usize,
        found: Found<'a>,
        kernel: Kernel,
        bits: &'a mut Vec<u64>,
        kept: Kept<'a>,
    ) -> Self {
        if bits.len() < cap / 64 + 1 {
            bits.resize(cap / 64 + 1, 0);
        }
        let mut b = Builder::new(out, cap, found, kernel);
        b.fresh = Some((bits, kept));
        b
    }

    /// [`Builder::push`] for the entry of a changed box.
    #[inline(always)]
    fn push_fresh(&mut self, e: &Entry, r: u128) {
        if let Some((bits, _)) = self.fresh.as_mut() {
            set_bit(bits, self.n as u32);
        }
        self.push(e, r);
    }

    /// Appends `e` (of rank `r`), which sorts after every entry written.
    #[inline(always)]
    fn push(&mut self, e: &Entry, r: u128) {
        debug_assert!(self.n == 0 || self.out.rank(self.n - 1) < r);
        let key = e.row & KEY;
        if key != self.key {
            self.close_row();
            self.dir.push(Row {
                key,
                start: self.n as u32,
                width: 0.0,
            });
            self.key = key;
            self.start = self.n;
            self.width = 0.0;
        }
        // A NaN extent (both bounds the same infinity) is a point: `max` ignores it.
        self.width = self.width.max(e.hi[0] - e.lo[0]);
        self.out.set(self.n, e);
        self.n += 1;
    }

    /// Records the width of the row being written, now complete, and sweeps the row
    /// before it: one row later, so that the sweep's wide loads do not wait for the
    /// stores that wrote the row just completed.
    fn close_row(&mut self) {
        if self.key != NONE {
            if let Some(row) = self.dir.last_mut() {
                row.width = self.width;
            }
            self.sweep_pending();
            self.pending = self.start..self.n;
            self.pending_key = self.key;
            self.pending_width = self.width;
        }
    }

    /// Sweeps the row completed before the last.
    fn sweep_pending(&mut self) {
        let r = std::mem::take(&mut self.pending);
        if r.is_empty() {
            return;
        }
        self.pair_at.push(self.found.len() as u32);
        let cols = self.out.view(self.n);
        if let Some((bits, kept)) = self.fresh.as_mut() {
            kept.write(self.pending_key, &mut self.found);
            let w = self.pending_width;
            self.swept.compared +=
                sweep_fresh(self.kernel, cols, r.start, r.end, bits, w, &mut self.found);
            self.swept.refreshed += 1;
        } else {
            self.swept.compared += sweep_row(self.kernel, cols, r.start, r.end, &mut self.found);
        }
        self.swept.rows += 1;
    }

    /// Sweeps the last rows and closes the directory; returns the entries written and
    /// what the sweeps did.
    fn finish(mut self) -> (usize, Swept) {
        self.close_row();
        self.sweep_pending();
        end(self.dir, self.n);
        self.pair_at.push(self.found.len() as u32);
        self.found.finish();
        if let Some((bits, _)) = self.fresh {
            bits[..self.n.div_ceil(64)].fill(0);
        }
        (self.n, self.swept)
    }
}

/// Writes sorted `entries` into `out` with a [`Builder`], its pairs into `found`.
fn build(
    out: &mut Rows,
    found: &mut Pairs,
    entries: impl ExactSizeIterator<Item = Entry>,
    kernel: Kernel,
) {
    let mut b = Builder::new(out, entries.len(), Found::new(found), kernel);
    for e in entries {
        b.push(&e, rank(&e));
    }
    let (n, ..) = b.finish();
    out.truncate(n);
}

/// Sorts a chunk's `incoming` entries as keys (rank and position, in `keys`), so that the
/// sort moves the keys, not the 32-byte entries, and the stream or patch reads the entries
/// through them.
fn sort_incoming(incoming: &[Entry], keys: &mut Vec<u128>) {
    keys.clear();
    keys.extend(
        incoming
            .iter()
            .enumerate()
            .map(|(i, e)| rank(e) | i as u128),
    );
    keys.sort_unstable();
}

/// Streams `c` into `spare` (its pairs into `spare_pairs`) with its incoming entries
/// merged in (in the order of `keys`, [`sort_incoming`]) and the entries of changed boxes
/// (`moved`) left out, and exchanges the two, its pairs found anew; returns what the
/// sweeps did.
fn stream(
    c: &mut Chunk,
    moved: &[u64],
    kernel: Kernel,
    (spare, spare_pairs): (&mut Rows, &mut Pairs),
    keys: &[u128],
    fresh: &mut Vec<u64>,
) -> Swept {
    let (old, inc) = (c.rows.view(), &c.incoming);
    let cap = old.len() + inc.len();
    let found = Found::new(spare_pairs);
    // Few changed entries: the pairs of two unchanged boxes are kept, and only the changed
    // ones look for theirs. Many: every row is swept anew, which then costs less.
    let mut b = if inc.len() * FRESH_SHARE <= old.len() {
        let kept = Kept {
            pairs: c.found.as_slice(),
            dir: &c.rows.rows,
            at: &c.rows.pair_at,
            moved,
            next: 0,
        };
        Builder::for_fresh(spare, cap, found, kernel, fresh, kept)
    } else {
        Builder::new(spare, cap, found, kernel)
    };
    let key = |j: usize| keys.get(j).copied().unwrap_or(u128::MAX);
    // An incoming entry is a changed box's, every kept old one is not: no rank is in both.
    let (mut j, mut next) = (0, key(0));
    for e in old.iter() {
        if bit(moved, e.proxy) {
            continue;
        }
        let r = rank(&e);
        while next < r {
            b.push_fresh(&inc[(next & POSITION) as usize], next & !POSITION);
            j += 1;
            next = key(j);
        }
        b.push(&e, r);
    }
    for &k in &keys[j..] {
        b.push_fresh(&inc[(k & POSITION) as usize], k & !POSITION);
    }
    let (n, swept) = b.finish();
    spare.truncate(n);
    c.incoming.clear();
    std::mem::swap(&mut c.rows, spare);
    std::mem::swap(&mut c.found, spare_pairs);
    swept
}

/// Cuts sorted `entries` into chunks of about [`CHUNK`] entries at row boundaries (the
/// first chunk from key 0), written and swept in parallel. Never empty.
fn chunks(entries: &[Entry]) -> Vec<Chunk> {
    let mut bounds = vec![0];
    for i in 1..entries.len() {
        let new_row = entries[i].row & KEY != entries[i - 1].row & KEY;
        if new_row && i - bounds[bounds.len() - 1] >= CHUNK {
            bounds.push(i);
        }
    }
    bounds.push(entries.len());
    let kernel = Kernel::best();
    bounds
        .par_windows(2)
        .enumerate()
        .map(|(n, w)| {
            let mut c = Chunk {
                first: if n == 0 { 0 } else { entries[w[0]].row & KEY },
                ..Chunk::default()
            };
            build(
                &mut c.rows,
                &mut c.found,
                entries[w[0]..w[1]].iter().copied(),
                kernel,
            );
            c
        })
        .collect()
}

/// Splits `c` (two rows or more) at the row nearest its middle; `c` keeps the rows before,
/// the returned chunk takes the rest, and both are swept anew (their pairs and their
/// order are those of the rows either way).
fn split_chunk(c: &mut Chunk, kernel: Kernel) -> Chunk {
    let old = std::mem::take(&mut c.rows);
    let n = old.count();
    let m = old.rows[..old.len()]
        .partition_point(|r| (r.start as usize) < n / 2)
        .clamp(1, old.len() - 1);
    let at = old.rows[m].start as usize;
    let mut tail = Chunk {
        first: old.rows[m].key,
        ..Chunk::default()
    };
    let view = old.view();
    build(
        &mut c.rows,
        &mut c.found,
        (0..at).map(|i| view.get(i)),
        kernel,
    );
    build(
        &mut tail.rows,
        &mut tail.found,
        (at..n).map(|i| view.get(i)),
        kernel,
    );
    tail
}

/// Pushes proxy `id`'s entries, one per row from key `lo` to key `hi` (rows of its lower
/// and upper corners), each marked with where it lies from the lower corner's row.
pub(super) fn entries(id: u32, b: &super::Aabb, lo: u32, hi: u32, out: &mut Vec<Entry>) {
    out.extend(rows_of(lo, hi).map(|row| Entry::new(id, b, row)));
}

/// The rows from key `lo` to key `hi` (a box's lower and upper corners' rows, and those
/// between), each with its home bits: whether it is in the lower corner's z-slab and
/// y-range.
pub(super) fn rows_of(lo: u32, hi: u32) -> impl Iterator<Item = u32> {
    let ((z0, y0), (z1, y1)) = (split(lo), split(hi));
    (z0..=z1).flat_map(move |z| {
        (y0..=y1).map(move |y| key(z, y) | (u32::from(z == z0) << 31) | (u32::from(y == y0) << 30))
    })
}

/// Re-makes the row directory of sorted `r.entries`, their lower x bounds and the
/// samples of those.
pub(super) fn directory(r: &mut StaticRows) {
    r.rows.clear();
    r.xs.clear();
    r.skip.clear();
    for (i, e) in r.entries.iter().enumerate() {
        note(&mut r.rows, &mut r.xs, &mut r.skip, i, e);
    }
    end(&mut r.rows, r.entries.len());
}

/// Enters entry `e`, the `i`th, in the directory `dir` (not closed), the lower bounds `xs`
/// and their samples `skip` of rows being written in order.
#[inline(always)]
pub(super) fn note(
    dir: &mut Vec<Row>,
    xs: &mut Vec<f32>,
    skip: &mut Vec<f32>,
    i: usize,
    e: &Entry,
) {
    let k = e.row & KEY;
    match dir.last_mut() {
        Some(row) if row.key == k => {
            // A NaN extent (both bounds the same infinity) is a point: `max` ignores it.
            row.width = row.width.max(e.hi[0] - e.lo[0]);
        }
        _ => dir.push(Row {
            key: k,
            start: i as u32,
            width: 0.0_f32.max(e.hi[0] - e.lo[0]),
        }),
    }
    if i % SKIP == 0 {
        skip.push(e.lo[0]);
    }
    xs.push(e.lo[0]);
}

/// How many changed boxes ahead their proxies are asked for.
const AHEAD: usize = 8;
/// Changed proxies per slice placed on one task: fewer than twice this are placed on one
/// thread, where the tasks and the buckets' gathering would cost more than they save.
#[cfg(not(any(test, fuzzing)))]
const SLICE: usize = 16_384;
#[cfg(any(test, fuzzing))]
const SLICE: usize = 16;

/// One slice of the changed proxies as placed on one task ([`BroadPhase::place_moved`]).
/// Kept between updates, so that its buffers are not allocated anew.
#[derive(Clone, Debug, Default)]
pub(super) struct Slice {
    /// Each proxy's new placement, in the slice's order.
    placed: Vec<Place>,
    /// Per chunk, the slice's new entries that go to it.
    buckets: Vec<Vec<Entry>>,
}

impl Slice {
    /// Its lists cut to about `keep / of` of their capacity ([`crate::trim`]).
    pub(super) fn shrink_share(&mut self, keep: usize, of: usize) {
        crate::trim::shrink_share(&mut self.placed, keep, of);
        for b in &mut self.buckets {
            crate::trim::shrink_share(b, keep, of);
        }
    }

    /// Bytes held (capacities).
    pub(super) fn bytes(&self) -> usize {
        self.placed.capacity() * size_of::<Place>()
            + self
                .buckets
                .iter()
                .map(|b| size_of::<Vec<Entry>>() + b.capacity() * size_of::<Entry>())
                .sum::<usize>()
    }
}

/// Empties `v` and gives it room for `n` entries: a buffer too small is replaced, not grown,
/// as growing it would copy what it held; and replaced with an eighth to spare, so that
/// rows that grow a little do not free and fault in a new buffer at every merge.
pub(super) fn emptied_with_room(v: &mut Vec<Entry>, n: usize) {
    v.clear();
    if v.capacity() < n {
        *v = Vec::with_capacity(n + n / 8);
    }
}

/// Closes a directory: a last row (key `u32::MAX`) holding the end.
pub(super) fn end(dir: &mut Vec<Row>, len: usize) {
    dir.push(Row {
        key: u32::MAX,
        start: len as u32,
        width: 0.0,
    });
}

fn remove_sorted(v: &mut Vec<u32>, id: u32) {
    if let Ok(i) = v.binary_search(&id) {
        v.remove(i);
    }
}

fn insert_sorted(v: &mut Vec<u32>, id: u32) {
    if let Err(i) = v.binary_search(&id) {
        v.insert(i, id);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::broad::{Aabb, brute_force_pairs};
    use crate::testing::lcg;

    /// Updates `bp` on the one-thread pool `serial` and `twin`, given the same calls, on
    /// `pool`, and asserts that both list the same pairs in the same order, none twice,
    /// and that they are brute force's over `live`.
    pub(in crate::broad) fn update_twins(
        (serial, pool): (&rayon::ThreadPool, &rayon::ThreadPool),
        bp: &mut BroadPhase,
        twin: &mut BroadPhase,
        live: &[(u32, Aabb, bool)],
        at: &str,
    ) {
        serial.install(|| bp.update());
        pool.install(|| twin.update());
        let order: Vec<_> = bp.pairs().collect();
        assert_eq!(order, twin.pairs().collect::<Vec<_>>(), "{at}");
        let mut got = order.clone();
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), order.len(), "a pair twice, {at}");
        assert_eq!(got, brute_force_pairs(live), "{at}");
    }

    /// Sets proxy `i` of both twins to `new` (box and whether it moves), or removes it.
    pub(in crate::broad) fn set_twins(
        bp: &mut BroadPhase,
        twin: &mut BroadPhase,
        i: u32,
        new: Option<(Aabb, bool)>,
    ) {
        match new {
            Some((b, d)) => {
                bp.set(i, b, d).unwrap();
                twin.set(i, b, d).unwrap();
            }
            None => {
                bp.remove(i);
                twin.remove(i);
            }
        }
    }

    /// A random box in a cube of side `side`: mostly unit-sized, some points, some long in
    /// x (many candidates along a row), some large (kept out of the rows).
    pub(in crate::broad) fn random_box(s: &mut u64, side: f64) -> Aabb {
        let c = [0, 1, 2].map(|_| (lcg(s) * side) as f32);
        let h = match (lcg(s) * 40.0) as u32 {
            0 => [0.0; 3],
            1 => [4.0, 0.3, 0.3],
            2 => [0.5, 6.0, 0.5],
            _ => [0, 1, 2].map(|_| (0.2 + 0.6 * lcg(s)) as f32),
        };
        Aabb::new(
            [0, 1, 2].map(|k| c[k] - h[k]),
            [0, 1, 2].map(|k| c[k] + h[k]),
        )
    }

    /// The table-led chunk search on chunk layouts the random scenes do not make: many
    /// chunks in one z-slab (a flat scene), slabs without a chunk of their own, keys
    /// beyond the first and last chunks.
    #[test]
    fn chunk_search_finds_what_a_full_search_does() {
        let mut s = 5;
        for layout in 0..4 {
            let mut firsts = vec![0u32];
            let slabs: &[i32] = match layout {
                0 => &[3],
                1 => &[-100, -99, 40],
                2 => &[0, 2, 4, 6, 8, 100],
                _ => &[],
            };
            for &z in slabs {
                let n = 1 + (lcg(&mut s) * 30.0) as i32;
                for y in 0..n {
                    firsts.push(key(z, y * 7 - 40));
                }
            }
            let mut bp = BroadPhase::new();
            bp.dynamic = firsts
                .iter()
                .map(|&first| Chunk {
                    first,
                    ..Chunk::default()
                })
                .collect();
            bp.index_chunks();
            let c = |s: &mut u64, r: f64| (lcg(s) * 2.0 * r - r) as i32;
            for _ in 0..5000 {
                let (z, y) = if lcg(&mut s) < 0.5 {
                    (c(&mut s, 16000.0), c(&mut s, 16000.0))
                } else {
                    (c(&mut s, 110.0), c(&mut s, 250.0))
                };
                let k = key(z, y);
                assert_eq!(
                    bp.chunk_of(k),
                    bp.chunk_of_searched(k),
                    "layout {layout}, key {k:#x}"
                );
            }
            for &f in &firsts {
                for k in [f.saturating_sub(1), f, f + 1] {
                    assert_eq!(bp.chunk_of(k), bp.chunk_of_searched(k), "layout {layout}");
                }
            }
        }
    }

    /// With chunks of a few dozen entries (the tests' [`CHUNK`]), chunks are made, split,
    /// skipped while nothing in them changes and streamed when something does; every
    /// update's pairs equal all pairs compared, each once, and two broad phases given the
    /// same calls list them in the same order whatever the thread count.
    /// The table-led chunk search is checked against a search of every chunk after each
    /// update.
    #[test]
    fn chunks_keep_every_pair_over_random_edits() {
        for seed in 0..6u64 {
            let mut s = seed * 7919 + 1;
            let n = 300 + (seed as usize) * 150;
            let side = (n as f64 * 3.0).cbrt();
            let mut boxes: Vec<Option<(Aabb, bool)>> = Vec::new();
            let mut bp = BroadPhase::new();
            let mut twin = BroadPhase::new();
            // One thread places serially, three in slices (`SLICE` is small in tests):
            // both give the same pairs in the same order.
            let serial = crate::testing::pool(1);
            let pool = crate::testing::pool(3);
            for i in 0..n as u32 {
                let b = random_box(&mut s, side);
                let d = lcg(&mut s) < 0.8;
                bp.set(i, b, d).unwrap();
                twin.set(i, b, d).unwrap();
                boxes.push(Some((b, d)));
            }
            let mut made = 0;
            for frame in 0..12 {
                if frame == 1 {
                    made = bp.dynamic.len();
                }
                if frame == 6 {
                    // A crowd arrives in one place: its chunk must split.
                    for _ in 0..200 {
                        let b = random_box(&mut s, side / 4.0);
                        let i = boxes.len() as u32;
                        bp.set(i, b, true).unwrap();
                        twin.set(i, b, true).unwrap();
                        boxes.push(Some((b, true)));
                    }
                }
                // Odd frames move only boxes in one corner: the other chunks sleep.
                let sleepy = frame % 2 == 1;
                for _ in 0..n / 4 {
                    let i = (lcg(&mut s) * n as f64) as usize;
                    let r = lcg(&mut s);
                    let new = match boxes[i] {
                        Some((b, d)) if r < 0.85 => {
                            if sleepy && b.lo[2] > (side / 3.0) as f32 {
                                continue;
                            }
                            let m = [0, 1, 2].map(|_| (lcg(&mut s) as f32 - 0.5) * 0.6);
                            let b = Aabb::new(
                                [0, 1, 2].map(|k| b.lo[k] + m[k]),
                                [0, 1, 2].map(|k| b.hi[k] + m[k]),
                            );
                            Some((b, if r < 0.8 { d } else { !d }))
                        }
                        _ if r < 0.93 => Some((random_box(&mut s, side), true)),
                        _ => None,
                    };
                    match new {
                        Some((b, d)) => {
                            bp.set(i as u32, b, d).unwrap();
                            twin.set(i as u32, b, d).unwrap();
                        }
                        None => {
                            bp.remove(i as u32);
                            twin.remove(i as u32);
                        }
                    }
                    boxes[i] = new;
                }
                let live: Vec<_> = boxes
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| b.map(|(a, d)| (i as u32, a, d)))
                    .collect();
                let at = format!("seed {seed} frame {frame}");
                update_twins((&serial, &pool), &mut bp, &mut twin, &live, &at);
                // The table-led chunk search finds what a search of every chunk does: at
                // the chunks' first keys and next to them, and anywhere on the grid.
                let near_firsts = bp
                    .firsts
                    .iter()
                    .flat_map(|&f| [f.saturating_sub(1), f, f + 1]);
                let anywhere = (0..200).map(|_| {
                    let c = |s: &mut u64| (lcg(s) * 32768.0) as i32 - 16384;
                    key(c(&mut s), c(&mut s))
                });
                for k in near_firsts.chain(anywhere) {
                    let k = k & KEY;
                    assert_eq!(bp.chunk_of(k), bp.chunk_of_searched(k), "key {k:#x}");
                }
            }
            assert!(made > 3, "seed {seed}: {made} chunks");
            assert!(bp.dynamic.len() > made, "seed {seed}: no chunk was split");
            assert_eq!(
                bp.firsts,
                bp.dynamic.iter().map(|c| c.first).collect::<Vec<_>>()
            );
        }
    }
}
