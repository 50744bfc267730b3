//! Keeping the rows sorted (I-COLLIDE's temporal coherence, Cohen et al. 1995, §4.2): the
//! boxes set since the last update are placed, the dynamic array is re-sorted in one
//! streaming pass (boxes that stay in their rows rewritten in place and put back in order
//! by insertion sort, the others merged in from a sorted list), the static array likewise
//! when a static box changed; the grid itself is rebuilt when the boxes outgrow it.

use super::{BroadPhase, Entry, NONE, Place, Proxy, Row, Rows, SKIP, bit, set_bit};
use crate::hint::prefetch;
use rayon::slice::ParallelSliceMut;

/// The cell edge is this many times the chosen percentile of the boxes' largest extent in
/// y and z (`docs/benchmarks.md`, "Broad phase", has the measurement behind both).
const CELL_PER_EXTENT: f32 = 1.5;
/// The percentile of the boxes' extents the cell is fitted to: boxes above it may span
/// three cells and go to the large lists.
const EXTENT_PERCENTILE: f64 = 0.95;
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

/// An entry's place in the order, but for ties: row, then lower x bound (by its bits in an
/// order-preserving form, -0.0 before 0.0).
#[inline(always)]
fn rank(e: &Entry) -> u64 {
    let b = e.lo[0].to_bits();
    let ordered = if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    };
    (u64::from(e.row & KEY) << 32) | u64::from(ordered)
}

/// Whether `a` sorts before `b`: by row, lower x bound, then id (so that the order depends
/// on the boxes alone).
#[inline(always)]
pub(super) fn before(a: &Entry, b: &Entry) -> bool {
    (rank(a), a.proxy) < (rank(b), b.proxy)
}

impl BroadPhase {
    /// Where proxy `p` goes with the current cell size.
    fn placement(&self, p: &Proxy) -> Place {
        if !p.live {
            return Place::None;
        }
        let inv = 1.0 / self.cell;
        let (y0, y1) = (coord(p.aabb.lo[1], inv), coord(p.aabb.hi[1], inv));
        let (z0, z1) = (coord(p.aabb.lo[2], inv), coord(p.aabb.hi[2], inv));
        let normal = y1 - y0 <= 1 && z1 - z0 <= 1;
        match (normal, p.dynamic) {
            (true, true) => Place::Dynamic(key(z0, y0), key(z1, y1)),
            (true, false) => Place::Static(key(z0, y0), key(z1, y1)),
            (false, true) => Place::LargeDynamic,
            (false, false) => Place::LargeStatic,
        }
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
        let rows = (self.dynamic.len() + self.statics.len()).max(1) as u64;
        let per_row = (self.dynamic.entries.len() + self.statics.entries.len()) as u64 / rows;
        live >= 64
            && ((large * MAX_LARGE_SHARE > live && large > WORSE * self.regrid_large)
                || (per_row > MAX_PER_ROW && per_row > WORSE * self.regrid_per_row))
    }

    /// Rebuilds both arrays and the large lists, choosing the cell size from the boxes
    /// unless it is fixed; every change since the last update is taken in.
    pub(super) fn regrid(&mut self) {
        if !self.fixed {
            self.cell = self.chosen_cell_size();
        }
        for &id in &self.moved {
            self.proxies[id as usize].moved = false;
        }
        self.moved.clear();
        let (mut dynamic, mut statics) = (Vec::new(), Vec::new());
        self.large_dynamic.clear();
        self.large_static.clear();
        for id in 0..self.proxies.len() as u32 {
            let placed = self.placement(&self.proxies[id as usize]);
            let p = &mut self.proxies[id as usize];
            p.placed = placed;
            match placed {
                Place::Dynamic(lo, hi) => entries(id, &p.aabb, lo, hi, &mut dynamic),
                Place::Static(lo, hi) => entries(id, &p.aabb, lo, hi, &mut statics),
                Place::LargeDynamic => self.large_dynamic.push(id),
                Place::LargeStatic => self.large_static.push(id),
                Place::None => {}
            }
        }
        dynamic.par_sort_unstable_by_key(|e| (rank(e), e.proxy));
        statics.par_sort_unstable_by_key(|e| (rank(e), e.proxy));
        self.dynamic.entries = dynamic;
        self.statics.entries = statics;
        directory(&mut self.dynamic);
        directory(&mut self.statics);
        lower_xs(&mut self.statics);
        self.statics_changed = false;
        self.regrid_large = (self.large_dynamic.len() + self.large_static.len()) as u64;
        let rows = (self.dynamic.len() + self.statics.len()).max(1) as u64;
        self.regrid_per_row =
            (self.dynamic.entries.len() + self.statics.entries.len()) as u64 / rows;
    }

    /// The cell edge: [`CELL_PER_EXTENT`] times the [`EXTENT_PERCENTILE`] of the live boxes'
    /// largest extent in y and z (finite ones), or 1 if that is zero or out of range.
    fn chosen_cell_size(&self) -> f32 {
        let mut ext: Vec<f32> = self
            .proxies
            .iter()
            .filter(|p| p.live)
            .map(|p| (p.aabb.hi[1] - p.aabb.lo[1]).max(p.aabb.hi[2] - p.aabb.lo[2]))
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
    /// dynamic array re-sorted where a dynamic entry changed, the static array where a
    /// static one did. Leaves the changed proxies' bits set for the static pairs.
    pub(super) fn place_moved(&mut self) {
        let words = self.proxies.len().div_ceil(64);
        if self.moved_bits.len() < words {
            self.moved_bits.resize(words, 0);
            self.keep_bits.resize(words, 0);
        }
        self.incoming.clear();
        let mut dynamic_changed = false;
        for i in 0..self.moved.len() {
            let id = self.moved[i];
            set_bit(&mut self.moved_bits, id);
            let p = self.proxies[id as usize];
            let (old, new) = (p.placed, self.placement(&p));
            match old {
                Place::Dynamic(..) => {
                    dynamic_changed = true;
                    if new == old {
                        set_bit(&mut self.keep_bits, id);
                    }
                }
                Place::LargeDynamic => remove_sorted(&mut self.large_dynamic, id),
                Place::LargeStatic => remove_sorted(&mut self.large_static, id),
                Place::Static(..) | Place::None => {}
            }
            match new {
                Place::Dynamic(lo, hi) if old != new => {
                    entries(id, &p.aabb, lo, hi, &mut self.incoming);
                    dynamic_changed = true;
                }
                Place::LargeDynamic => insert_sorted(&mut self.large_dynamic, id),
                Place::LargeStatic => insert_sorted(&mut self.large_static, id),
                _ => {}
            }
            if old.is_static() || new.is_static() {
                self.statics_changed = true;
            }
            self.proxies[id as usize].placed = new;
        }
        if dynamic_changed {
            self.resort_dynamic();
        }

        if self.statics_changed {
            self.resort_statics();
        }
    }

    /// The dynamic array after this update's changes, in one pass: entries of boxes that
    /// stay in their rows take their new box, changed entries that leave drop out, new ones merge
    /// in from `incoming` (sorted first), and an insertion sort puts the rewritten ones back
    /// in order (they moved little).
    fn resort_dynamic(&mut self) {
        self.incoming.sort_unstable_by_key(|e| (rank(e), e.proxy));
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        out.reserve_exact(self.dynamic.entries.len() + self.incoming.len());
        let mut dir = std::mem::take(&mut self.dynamic.rows);
        dir.clear();
        let (inc, old) = (&self.incoming, &self.dynamic.entries);
        let mut j = 0;
        for (i, e) in old.iter().enumerate() {
            // The boxes of kept entries further on are read from the proxies, at random:
            // asked for ahead, they arrive while this one is copied.
            if let Some(a) = old.get(i + AHEAD) {
                if bit(&self.moved_bits, a.proxy) {
                    prefetch(&self.proxies[a.proxy as usize]);
                }
            }
            let mut e = *e;
            if bit(&self.moved_bits, e.proxy) {
                if !bit(&self.keep_bits, e.proxy) {
                    continue;
                }
                let b = &self.proxies[e.proxy as usize].aabb;
                e.lo = b.lo;
                e.hi = b.hi;
            }
            while j < inc.len() && before(&inc[j], &e) {
                push(&mut out, &mut dir, inc[j]);
                j += 1;
            }
            push(&mut out, &mut dir, e);
        }
        for e in &inc[j..] {
            push(&mut out, &mut dir, *e);
        }
        end(&mut dir, out.len());
        // Rewritten entries stayed in their rows, so the rows' bounds already hold.
        insertion_sort(&mut out);
        self.spare = std::mem::replace(&mut self.dynamic.entries, out);
        self.dynamic.rows = dir;
    }

    /// The static array after this update's changes: changed entries drop out, and every
    /// changed proxy that is now a static one of the rows merges in anew.
    fn resort_statics(&mut self) {
        self.incoming.clear();
        for &id in &self.moved {
            let p = &self.proxies[id as usize];
            if let Place::Static(lo, hi) = p.placed {
                entries(id, &p.aabb, lo, hi, &mut self.incoming);
            }
        }
        self.incoming.sort_unstable_by_key(|e| (rank(e), e.proxy));
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        out.reserve_exact(self.statics.entries.len() + self.incoming.len());
        let inc = &self.incoming;
        let mut j = 0;
        for e in &self.statics.entries {
            if bit(&self.moved_bits, e.proxy) {
                continue;
            }
            while j < inc.len() && before(&inc[j], e) {
                out.push(inc[j]);
                j += 1;
            }
            out.push(*e);
        }
        out.extend_from_slice(&inc[j..]);
        self.spare = std::mem::replace(&mut self.statics.entries, out);
        directory(&mut self.statics);
        lower_xs(&mut self.statics);
        self.statics_changed = false;
    }

    /// Forgets this update's changes: the bits and the list.
    pub(super) fn end_moves(&mut self) {
        for &id in &self.moved {
            if let Some(w) = self.moved_bits.get_mut((id >> 6) as usize) {
                *w = 0;
                self.keep_bits[(id >> 6) as usize] = 0;
            }
            self.proxies[id as usize].moved = false;
        }
        self.moved.clear();
    }
}

/// Pushes proxy `id`'s entries, one per row from key `lo` to key `hi` (rows of its lower
/// and upper corners), each marked with where it lies from the lower corner's row.
fn entries(id: u32, b: &super::Aabb, lo: u32, hi: u32, out: &mut Vec<Entry>) {
    let ((z0, y0), (z1, y1)) = (split(lo), split(hi));
    for z in z0..=z1 {
        for y in y0..=y1 {
            let home = (u32::from(z == z0) << 31) | (u32::from(y == y0) << 30);
            out.push(Entry::new(id, b, key(z, y) | home));
        }
    }
}

/// Re-makes the row directory of sorted `r.entries`.
fn directory(r: &mut Rows) {
    r.rows.clear();
    let mut last = NONE;
    for (i, e) in r.entries.iter().enumerate() {
        if e.row & KEY != last {
            r.rows.push(Row {
                key: e.row & KEY,
                start: i as u32,
                width: 0.0,
            });
            last = e.row & KEY;
        }
        widen(r.rows.last_mut(), e);
    }
    end(&mut r.rows, r.entries.len());
}

/// Re-makes the array of lower x bounds of `r.entries`, and its samples.
fn lower_xs(r: &mut Rows) {
    r.xs.clear();
    r.xs.extend(r.entries.iter().map(|e| e.lo[0]));
    r.skip.clear();
    r.skip.extend(r.xs.iter().step_by(SKIP));
}

/// Appends `e` to `out` and to the directory `dir` of `out`'s rows.
#[inline(always)]
fn push(out: &mut Vec<Entry>, dir: &mut Vec<Row>, e: Entry) {
    let key = e.row & KEY;
    if dir.last().is_none_or(|r| r.key != key) {
        dir.push(Row {
            key,
            start: out.len() as u32,
            width: 0.0,
        });
    }
    widen(dir.last_mut(), &e);
    out.push(e);
}

/// Grows a row's width to `e`'s x-extent. A NaN extent (both bounds the same infinity) is
/// a point: `max` ignores it.
#[inline(always)]
fn widen(row: Option<&mut Row>, e: &Entry) {
    if let Some(r) = row {
        r.width = r.width.max(e.hi[0] - e.lo[0]);
    }
}

/// Closes a directory: a last row (key `u32::MAX`) holding the end.
fn end(dir: &mut Vec<Row>, len: usize) {
    dir.push(Row {
        key: u32::MAX,
        start: len as u32,
        width: 0.0,
    });
}

/// How many entries ahead the re-sorting pass asks for a proxy's box.
const AHEAD: usize = 16;

/// Sorts nearly sorted `v` ([`before`]) by insertion: linear when entries moved little.
fn insertion_sort(v: &mut [Entry]) {
    for i in 1..v.len() {
        if !before(&v[i], &v[i - 1]) {
            continue;
        }
        let e = v[i];
        let mut j = i;
        while j > 0 && before(&e, &v[j - 1]) {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
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
