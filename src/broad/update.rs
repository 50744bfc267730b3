//! Placing changed boxes into the grid's cells, and choosing the cell size (sweep-and-prune
//! in cells, see the module page). A box that moved within the cells it already covered only
//! has its entries rewritten in place; the insertion sort of `sort_dirty` then restores each
//! touched cell's order in time proportional to how far its entries moved.

use super::{BroadPhase, Cell, CellKey, Entry, LARGE_CELLS, Proxy};

/// The cell edge is this many times the median of the boxes' largest extents: larger cells
/// mean fewer bucket lists to place boxes into and visit, smaller ones fewer boxes compared
/// per list; chosen by measurement (`docs/benchmarks.md`, "Broad phase").
const CELL_PER_EXTENT: f32 = 4.0;
/// The grid is rebuilt when boxes cover this many cells each on average (cells too small).
const MAX_ENTRIES_PER_BOX: u64 = 6;
/// ... or when this share of the boxes is too large for the cells.
const MAX_LARGE_SHARE: u64 = 8;
/// ... or when cells hold this many entries each on average (cells too large).
const MAX_ENTRIES_PER_CELL: u64 = 128;
/// Cell coordinates are clamped to ±2^30, so an unbounded box still has a finite range.
const MAX_COORD: f32 = (1u32 << 30) as f32;

/// The cell coordinate of `x`: monotone in `x`, so a point inside a box has its cell
/// inside the box's range.
#[inline]
pub(super) fn coord(x: f32, inv: f32) -> i32 {
    // `floor` without a libm call: truncate, then step down for negative fractions.
    let t = (x * inv).clamp(-MAX_COORD, MAX_COORD);
    let i = t as i32;
    i - i32::from((i as f32) > t)
}

/// Number of cells in a range (as u64: ranges may be huge).
fn count(lo: CellKey, hi: CellKey) -> u64 {
    (0..3)
        .map(|i| (i64::from(hi[i]) - i64::from(lo[i]) + 1) as u64)
        .fold(1, u64::saturating_mul)
}

/// The bucket of cell `k` among `mask + 1` buckets.
#[inline]
pub(super) fn bucket(k: CellKey, mask: usize) -> usize {
    let h = (k[0] as u32 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (k[1] as u32 as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (k[2] as u32 as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    (h >> 29) as usize & mask
}

/// The distinct buckets of the cells of a range (at most [`LARGE_CELLS`] cells), sorted.
pub(super) fn buckets_of(lo: CellKey, hi: CellKey, mask: usize, out: &mut Vec<u32>) {
    out.clear();
    for z in lo[2]..=hi[2] {
        for y in lo[1]..=hi[1] {
            for x in lo[0]..=hi[0] {
                out.push(bucket([x, y, z], mask) as u32);
            }
        }
    }
    if out.len() > 1 {
        out.sort_unstable();
        out.dedup();
    }
}

impl BroadPhase {
    /// The range of cells a box covers.
    pub(super) fn range(&self, p: &Proxy) -> (CellKey, CellKey) {
        let inv = 1.0 / self.cell;
        let c = |v: [f32; 3]| [coord(v[0], inv), coord(v[1], inv), coord(v[2], inv)];
        (c(p.aabb.lo), c(p.aabb.hi))
    }

    /// Whether the cell size should be (re)chosen before placing the moved boxes.
    pub(super) fn wants_regrid(&self) -> bool {
        if self.fixed {
            return self.cell > 0.0 && self.bucket_table_misfits();
        }
        if self.live == 0 {
            return false;
        }
        if self.cell == 0.0 {
            return true;
        }
        let live = u64::from(self.live);
        let filled = u64::from(self.filled);
        live >= 64
            && (self.entries > MAX_ENTRIES_PER_BOX * live
                || self.large.len() as u64 * MAX_LARGE_SHARE > live
                || self.entries > MAX_ENTRIES_PER_CELL * filled.max(1))
            || self.bucket_table_misfits()
    }

    /// The bucket table is re-sized (grid rebuilt, same cell size) when the boxes outnumber
    /// its buckets or shrink to a sixteenth of them, so memory follows the boxes.
    fn bucket_table_misfits(&self) -> bool {
        let buckets = self.cells.len();
        buckets > 1024 && buckets > 16 * self.live as usize || buckets < self.live as usize
    }

    /// Rebuilds every cell, choosing the cell size from the boxes unless it is fixed; every
    /// live proxy is placed again, in id order.
    pub(super) fn regrid(&mut self) {
        if !self.fixed {
            self.cell = self.chosen_cell_size();
        }
        let buckets = (2 * self.live as usize).max(1024).next_power_of_two();
        self.cells.clear();
        self.cells.resize_with(buckets, Cell::default);
        self.active.clear();
        self.large.clear();
        self.dirty.clear();
        self.entries = 0;
        self.static_entries = 0;
        self.filled = 0;
        for p in &mut self.proxies {
            p.cells = None;
            p.large = false;
            p.moved = false;
            p.touched = false;
        }
        self.touched.clear();
        self.moved.clear();
        for id in 0..self.proxies.len() as u32 {
            if self.proxies[id as usize].live {
                self.place(id);
            }
        }
    }

    /// [`CELL_PER_EXTENT`] times the median largest extent of the live boxes (finite ones),
    /// or 1 if all are points.
    fn chosen_cell_size(&self) -> f32 {
        let mut ext: Vec<f32> = self
            .proxies
            .iter()
            .filter(|p| p.live)
            .map(|p| {
                (0..3)
                    .map(|i| p.aabb.hi[i] - p.aabb.lo[i])
                    .fold(0.0f32, f32::max)
            })
            .filter(|e| e.is_finite())
            .collect();
        if ext.is_empty() {
            return 1.0;
        }
        let mid = ext.len() / 2;
        let (_, m, _) = ext.select_nth_unstable_by(mid, f32::total_cmp);
        let size = *m * CELL_PER_EXTENT;
        if size.is_normal() && size < f32::MAX / 4.0 {
            size
        } else {
            1.0
        }
    }

    /// Applies every change since the last update.
    pub(super) fn place_moved(&mut self) {
        if self.cells.is_empty() {
            // Nothing was ever placed (no live box at any update): nothing to take out.
            for &id in &self.moved {
                self.proxies[id as usize].moved = false;
            }
            self.moved.clear();
            return;
        }
        let moved = std::mem::take(&mut self.moved);
        for &id in &moved {
            self.place(id);
        }
        self.moved = moved;
        self.moved.clear();
    }

    /// Brings proxy `id`'s cell entries (or its place in the large list) up to date.
    fn place(&mut self, id: u32) {
        let p = self.proxies[id as usize];
        self.proxies[id as usize].moved = false;
        if !p.touched {
            self.proxies[id as usize].touched = true;
            self.touched.push(id);
        }
        let new = p.live.then(|| self.range(&p));
        let new_large = new.is_some_and(|(lo, hi)| count(lo, hi) > LARGE_CELLS);
        if p.large && !(p.live && new_large) {
            if let Ok(at) = self.large.binary_search(&id) {
                self.large.remove(at);
            }
            self.proxies[id as usize].large = false;
        }
        let old = p.cells;
        let new_cells = new.filter(|_| !new_large);
        if new_large && !p.large {
            if let Err(at) = self.large.binary_search(&id) {
                self.large.insert(at, id);
            }
            self.proxies[id as usize].large = true;
        }
        let mask = self.cells.len() - 1;
        let mut old_b = std::mem::take(&mut self.old_buckets);
        let mut new_b = std::mem::take(&mut self.new_buckets);
        match old {
            Some((lo, hi)) => buckets_of(lo, hi, mask, &mut old_b),
            None => old_b.clear(),
        }
        match new_cells {
            Some((lo, hi)) => buckets_of(lo, hi, mask, &mut new_b),
            None => new_b.clear(),
        }
        let (entry, dynamic) = (Entry::of(id, &p), p.dynamic);
        // Both lists are sorted: one merge finds the buckets left, kept and entered.
        let (mut i, mut j) = (0, 0);
        while i < old_b.len() || j < new_b.len() {
            let (o, n) = (old_b.get(i).copied(), new_b.get(j).copied());
            match (o, n) {
                (Some(o), Some(n)) if o == n => {
                    self.rewrite_entry(o as usize, entry, dynamic);
                    i += 1;
                    j += 1;
                }
                (Some(o), n) if n.is_none_or(|n| o < n) => {
                    self.remove_entry(o as usize, id);
                    i += 1;
                }
                (_, Some(n)) => {
                    self.add_entry(n as usize, entry, dynamic);
                    j += 1;
                }
                _ => unreachable!("one list is not exhausted"),
            }
        }
        self.old_buckets = old_b;
        self.new_buckets = new_b;
        self.proxies[id as usize].cells = new_cells;
    }

    fn add_entry(&mut self, c: usize, e: Entry, dynamic: bool) {
        let cell = &mut self.cells[c];
        if cell.is_empty() {
            self.filled += 1;
        }
        cell.list(dynamic).push(e);
        note_static(cell, &e, dynamic);
        mark_dirty(cell, c, &mut self.dirty);
        self.static_entries += u64::from(!dynamic);
        if !cell.entries.is_empty() && !cell.active {
            cell.active = true;
            self.active.push(c as u32);
        }
        self.entries += 1;
    }

    fn rewrite_entry(&mut self, c: usize, e: Entry, dynamic: bool) {
        let cell = &mut self.cells[c];
        if let Some(slot) = cell.list(dynamic).iter_mut().find(|x| x.proxy == e.proxy) {
            *slot = e;
        } else if let Some(at) = if dynamic {
            cell.static_list()
        } else {
            &cell.entries
        }
        .iter()
        .position(|x| x.proxy == e.proxy)
        {
            // The proxy turned dynamic or static: its entry changes lists.
            cell.list(!dynamic).remove(at);
            cell.list(dynamic).push(e);
            cell.statics_mut().dirty = true;
            if dynamic {
                self.static_entries -= 1;
            } else {
                self.static_entries += 1;
            }
        }
        note_static(cell, &e, dynamic);
        mark_dirty(cell, c, &mut self.dirty);
        if !cell.entries.is_empty() && !cell.active {
            cell.active = true;
            self.active.push(c as u32);
        }
    }

    fn remove_entry(&mut self, c: usize, id: u32) {
        let cell = &mut self.cells[c];
        for dynamic in [true, false] {
            if !dynamic && cell.statics.is_none() {
                return;
            }
            let list = cell.list(dynamic);
            if let Some(at) = list.iter().position(|x| x.proxy == id) {
                // `remove`, not `swap_remove`: the rest stays sorted.
                list.remove(at);
                if !dynamic {
                    // The lower-x keys follow the statics at the next sort.
                    cell.statics_mut().dirty = true;
                    mark_dirty(cell, c, &mut self.dirty);
                }
                if cell.is_empty() {
                    self.filled -= 1;
                }
                self.entries -= 1;
                self.static_entries -= u64::from(!dynamic);
                return;
            }
        }
    }

    /// Restores the order of every changed cell by insertion sort on (lower x, id), and
    /// drops cells without dynamic entries from the active list.
    pub(super) fn sort_dirty(&mut self) {
        let cells = &mut self.cells;
        self.active.retain(|&c| {
            let cell = &mut cells[c as usize];
            cell.active = !cell.entries.is_empty();
            cell.active
        });
        for &c in &self.dirty {
            let cell = &mut cells[c as usize];
            cell.dirty = false;
            insertion_sort(&mut cell.entries);
            if let Some(s) = cell.statics.as_mut().filter(|s| s.dirty) {
                s.dirty = false;
                insertion_sort(&mut s.list);
                s.width = s.list.iter().map(|e| e.hi[0] - e.lo[0]).fold(0.0, f32::max);
                s.lo.clear();
                s.lo.extend(s.list.iter().map(|e| e.lo[0]));
            }
        }
        self.dirty.clear();
    }
}

/// Records that a static entry was added or rewritten: its list needs sorting and may be
/// wider.
fn note_static(cell: &mut Cell, e: &Entry, dynamic: bool) {
    if !dynamic {
        let s = cell.statics_mut();
        s.dirty = true;
        s.width = s.width.max(e.hi[0] - e.lo[0]);
    }
}

fn mark_dirty(cell: &mut Cell, c: usize, dirty: &mut Vec<u32>) {
    if !cell.dirty {
        cell.dirty = true;
        dirty.push(c as u32);
    }
}

/// Sorts nearly sorted entries by (lower x, proxy id): linear when nothing moved far.
fn insertion_sort(v: &mut [Entry]) {
    let before =
        |a: &Entry, b: &Entry| a.lo[0] < b.lo[0] || (a.lo[0] == b.lo[0] && a.proxy < b.proxy);
    for i in 1..v.len() {
        let e = v[i];
        let mut j = i;
        while j > 0 && before(&e, &v[j - 1]) {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
}
