//! The broad phase: sweep-and-prune (Klosowski et al. 1998, §6.1, "Multiple flying
//! objects", after I-COLLIDE: Cohen, Lin, Manocha and Ponamgi 1995, §4.2), run within the
//! rows of a coarse grid over the y and z axes.
//!
//! A single sweep along one axis does not scale in 3-D: the boxes overlapping along x grow
//! as N^(2/3). Here the y–z plane is cut into square cells, each the foot of a *row* (the
//! column of cells along x), and a box is entered in every row it touches (at most two
//! cells in y and in z: boxes that span more are *large*, see below). Each row is a list
//! sorted by lower x bound and swept on its own; a pair met in several rows is reported
//! only by its *home row*, the one holding the lower corner (in y and z) of the two boxes'
//! intersection, so once.
//!
//! The rows' entries sit in columns sorted by (row, lower x, id), cut into *chunks* of
//! consecutive rows, and are kept sorted from frame to frame: every entry of a box set
//! since the last update is taken out, and its new entries, few and sorted, are merged
//! back in (temporal coherence: the rest stay in order). Each chunk where a box was set
//! is streamed once per update, in parallel, and each of its rows swept right after the
//! stream has completed it, while the row is still cached; a chunk nothing changed in
//! keeps its pairs, and one where few boxes changed keeps those of two unchanged boxes
//! and sweeps only from the changed ones' entries. Where very few changed, the chunk is
//! patched in place instead: only the changed boxes' rows are read and swept, so a scene
//! of resting boxes pays for its moving ones alone. Pairs come out chunk by chunk and row
//! by row, in an order that depends on the boxes and the sequence of calls alone.
//!
//! Static boxes sit in an array of their own; a static box that changes leaves tombstones
//! there and enters small *recent* rows beside it, and the array is re-sorted only when
//! those outgrow a share of it (`recent.rs`). Their pairs with dynamic boxes are kept from
//! update to update and looked for again only for boxes set since (`statics.rs`, on
//! rayon's pool beside the placing when only dynamic boxes changed), so static and
//! sleeping boxes cost nothing per frame until they or a neighbour move. A box spanning
//! more than two cells in y or z, or longer than two along x (a row's longest box sets how
//! far back every search in it reaches), is *large*.
//! A large static box goes to the rows of a coarser grid, the first of a few levels (each
//! cell a fixed multiple of the one below) where it fits, looked up there as in the rows:
//! a hierarchical grid, so that large statics cost their neighbours' worth, not their
//! number. Large dynamic boxes, and static ones too large for every level, are kept in
//! lists of their own (`large.rs`).
//!
//! One file per operation: `place.rs` keeps the arrays sorted, `patch.rs` edits a chunk
//! where few boxes changed in place, `sweep.rs` finds the pairs of dynamic boxes in a row
//! (eight candidates at a time, AVX2 or scalar), `recent.rs` takes changed static boxes in,
//! `statics.rs` keeps their pairs with static ones, `large.rs` the pairs of large dynamic
//! boxes, `query.rs` the boxes overlapping a given box, `brute.rs` holds the oracles (all
//! pairs, and one plain sweep), `trim.rs` gives back the scratch a burst of changes grew.

mod brute;
mod large;
mod merge;
mod patch;
mod place;
mod query;
mod recent;
mod statics;
mod sweep;
mod trim;

pub use brute::{brute_force_pairs, single_sweep_pairs};

use crate::error::{Error, Result};
use crate::hint::prefetch_whole;

/// A proxy id that names no proxy.
const NONE: u32 = u32::MAX;

/// How `n` items are cut into contiguous slices for rayon's pool, about `per_task` to a
/// slice and at most four slices a thread (one slice on one thread): the slice length and
/// the slice count, which is as many as `par_chunks` of that length makes, so that every
/// slice joined was filled anew.
fn slices_of(n: usize, per_task: usize) -> (usize, usize) {
    let threads = rayon::current_num_threads();
    let want = if threads == 1 {
        1
    } else {
        n.div_ceil(per_task).clamp(1, 4 * threads)
    };
    let per = n.div_ceil(want).max(1);
    (per, n.div_ceil(per).max(1))
}

/// A changed proxy as the last update left it, taken when it is first set or removed since.
#[derive(Clone, Copy, Debug)]
struct Before {
    id: u32,
    /// Its box then.
    aabb: Aabb,
    /// Whether it was placed then, and not as a large dynamic box: its pairs with the large
    /// dynamic boxes are then in their lists (`large.rs`).
    listed: bool,
}

impl Before {
    fn of(id: u32, p: &Proxy) -> Before {
        Before {
            id,
            aabb: p.aabb,
            listed: !matches!(p.placed, Place::LargeDynamic | Place::None),
        }
    }
}

/// An axis-aligned box: lower and upper corners. Closed: boxes that touch overlap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub lo: [f32; 3],
    /// Upper corner.
    pub hi: [f32; 3],
}

impl Aabb {
    /// The box with corners `lo` and `hi`.
    #[must_use]
    pub const fn new(lo: [f32; 3], hi: [f32; 3]) -> Self {
        Aabb { lo, hi }
    }

    /// Whether the two closed boxes share a point.
    #[inline]
    #[must_use]
    pub fn overlaps(&self, other: &Aabb) -> bool {
        (0..3).all(|i| self.lo[i] <= other.hi[i] && other.lo[i] <= self.hi[i])
    }

    /// Whether `other` lies inside this box.
    #[inline]
    #[must_use]
    pub fn contains(&self, other: &Aabb) -> bool {
        (0..3).all(|i| self.lo[i] <= other.lo[i] && other.hi[i] <= self.hi[i])
    }

    fn check(&self, proxy: u32) -> Result<()> {
        let bad = |reason: &str| {
            Err(Error::InvalidParameter {
                name: "box",
                reason: reason.to_string(),
            }
            .context(format!("broad-phase proxy {proxy}")))
        };
        if self.lo.iter().chain(&self.hi).any(|v| v.is_nan()) {
            return bad("a bound is NaN");
        }
        if (0..3).any(|i| self.lo[i] > self.hi[i]) {
            return bad("a lower bound is above its upper bound");
        }
        Ok(())
    }
}

/// A box as a row holds it (one entry per row it touches): its bounds and the row, so
/// that the sorted columns need no other key. [`Rows`] keeps entries in columns; this is
/// one of them in hand. In C order: the static lookup loads a record as eight lanes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Entry {
    lo: [f32; 3],
    hi: [f32; 3],
    proxy: u32,
    row: u32,
}

impl Entry {
    /// The entry of proxy `id` with box `b` in row `row`.
    fn new(id: u32, b: &Aabb, row: u32) -> Entry {
        Entry {
            lo: b.lo,
            hi: b.hi,
            proxy: id,
            row,
        }
    }
}

/// Where a proxy was put by the last update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Nowhere: removed, or never placed.
    None,
    /// In the dynamic chunks, in the rows from the first key to the second (the rows
    /// of its lower and upper corners, and those between).
    Dynamic(u32, u32),
    /// In the sorted static array, in the rows from the first key to the second.
    Static(u32, u32),
    /// In the large dynamic list.
    LargeDynamic,
    /// In the coarse static rows of the level of the third field (too large for the rows
    /// and the levels below), in the rows of that level from the first key to the second.
    Coarse(u32, u32, u8),
    /// In the large static list (too large for every level of coarse rows).
    LargeStatic,
}

impl Place {
    fn is_static(self) -> bool {
        matches!(
            self,
            Place::Static(..) | Place::Coarse(..) | Place::LargeStatic
        )
    }

    /// Which static rows hold it, as a bit: the rows the first, each level of the coarse
    /// rows the next ones (0 for none).
    fn rows_bit(self) -> u32 {
        match self {
            Place::Static(..) => 1,
            Place::Coarse(.., level) => 2 << level,
            _ => 0,
        }
    }
}

/// Per proxy: its box, whether it moves, and where it was placed.
#[derive(Clone, Copy, Debug)]
struct Proxy {
    aabb: Aabb,
    live: bool,
    dynamic: bool,
    /// Whether it is listed in `BroadPhase::moved`.
    moved: bool,
    placed: Place,
}

/// One row of a sorted array: its key, where its entries start, and the largest x-extent
/// among them (so that a box finds the entries it may meet by a binary search).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Row {
    key: u32,
    start: u32,
    width: f32,
}

/// Entries sorted by (row, lower x, id), in columns (each bound, the ids, the rows), with
/// the directory of their rows. Columns, so that the sweep compares eight candidates per
/// instruction and reads only the bounds it tests.
#[derive(Clone, Debug, Default)]
struct Rows {
    lo: [Vec<f32>; 3],
    hi: [Vec<f32>; 3],
    proxy: Vec<u32>,
    /// Each entry's row key and home bits (`place::KEY`, `place::HOME`).
    row: Vec<u32>,
    /// The rows in key order, and a last one (key `u32::MAX`) holding the end.
    rows: Vec<Row>,
    /// Where each row's pairs start in its chunk's pairs (those whose home it is, row by
    /// row), and the end: one per row of `rows`.
    pair_at: Vec<u32>,
    /// Entries: the first `n` of each column. The columns keep their length when there
    /// are fewer, so that columns passed from chunk to chunk as spares are not filled
    /// again each time a larger chunk is streamed into them.
    n: usize,
}

/// The columns of some entries, each of the same length: what the sweep reads.
#[derive(Clone, Copy, Debug)]
struct Cols<'a> {
    lo: [&'a [f32]; 3],
    hi: [&'a [f32]; 3],
    proxy: &'a [u32],
    row: &'a [u32],
}

impl Cols<'_> {
    /// Number of entries.
    #[inline(always)]
    fn len(&self) -> usize {
        self.proxy.len()
    }

    /// The entries in order: zipped, so that the columns' lengths are compared once and
    /// not at every read.
    #[inline(always)]
    fn iter(&self) -> impl Iterator<Item = Entry> + '_ {
        let ([x0, y0, z0], [x1, y1, z1]) = (self.lo, self.hi);
        x0.iter()
            .zip(y0)
            .zip(z0)
            .zip(x1)
            .zip(y1)
            .zip(z1)
            .zip(self.proxy)
            .zip(self.row)
            .map(
                |(((((((&x0, &y0), &z0), &x1), &y1), &z1), &proxy), &row)| Entry {
                    lo: [x0, y0, z0],
                    hi: [x1, y1, z1],
                    proxy,
                    row,
                },
            )
    }

    /// Entry `i`.
    #[inline(always)]
    fn get(&self, i: usize) -> Entry {
        Entry {
            lo: [self.lo[0][i], self.lo[1][i], self.lo[2][i]],
            hi: [self.hi[0][i], self.hi[1][i], self.hi[2][i]],
            proxy: self.proxy[i],
            row: self.row[i],
        }
    }
}

/// Columns being written by index (sized beforehand), each `len` long: made only by
/// [`ColsMut::cut`], which [`ColsMut::set`]'s unchecked writes rely on.
#[derive(Debug)]
struct ColsMut<'a> {
    lo: [&'a mut [f32]; 3],
    hi: [&'a mut [f32]; 3],
    proxy: &'a mut [u32],
    row: &'a mut [u32],
    len: usize,
}

impl<'a> ColsMut<'a> {
    /// The first `len` values of each of the columns `lo`, `hi`, `proxy` and `row` of
    /// some [`Rows`] (each at least that long).
    fn cut(
        lo: &'a mut [Vec<f32>; 3],
        hi: &'a mut [Vec<f32>; 3],
        proxy: &'a mut [u32],
        row: &'a mut [u32],
        len: usize,
    ) -> Self {
        ColsMut {
            lo: lo.each_mut().map(|c| &mut c[..len]),
            hi: hi.each_mut().map(|c| &mut c[..len]),
            proxy: &mut proxy[..len],
            row: &mut row[..len],
            len,
        }
    }
}

impl ColsMut<'_> {
    /// Writes `e` at `i`, which must be below `len`.
    #[inline(always)]
    fn set(&mut self, i: usize, e: &Entry) {
        // One check for the eight columns: checked one by one, each write reloaded its
        // column's length, the column views being too many to stay in registers.
        assert!(
            i < self.len,
            "entry {i} written past the columns' {}",
            self.len
        );
        // SAFETY: every column is `len` long (`ColsMut::cut`), and `i < len`.
        unsafe {
            for k in 0..3 {
                *self.lo[k].get_unchecked_mut(i) = e.lo[k];
                *self.hi[k].get_unchecked_mut(i) = e.hi[k];
            }
            *self.proxy.get_unchecked_mut(i) = e.proxy;
            *self.row.get_unchecked_mut(i) = e.row;
        }
    }

    /// Entry `i`'s place in the order.
    #[inline(always)]
    fn rank(&self, i: usize) -> u128 {
        place::rank_of(self.row[i], self.lo[0][i], self.proxy[i])
    }

    /// The first `n` entries, to read.
    #[inline(always)]
    fn view(&self, n: usize) -> Cols<'_> {
        Cols {
            lo: [0, 1, 2].map(|k| &self.lo[k][..n]),
            hi: [0, 1, 2].map(|k| &self.hi[k][..n]),
            proxy: &self.proxy[..n],
            row: &self.row[..n],
        }
    }
}

/// Static entries sorted by (row, lower x, id), one record each, with the directory of
/// their rows. Records, not columns: static boxes are only ever looked up (a query reads
/// a few neighbouring entries, which a record keeps in one line and columns spread over
/// eight).
#[derive(Clone, Debug, Default)]
struct StaticRows {
    entries: Vec<Entry>,
    /// The rows in key order, and a last one (key `u32::MAX`) holding the end.
    rows: Vec<Row>,
    /// The entries' lower x bounds, in their order: a search in a row reads 4 bytes per
    /// step instead of an entry.
    xs: Vec<f32>,
    /// Every [`SKIP`]th of `xs` (`xs[SKIP * j]`): small enough to stay cached, so a search
    /// in a row reads one or two lines of `xs` instead of one per step
    /// ([`query::first_at_least`]).
    skip: Vec<f32>,
}

impl StaticRows {
    /// Number of entries.
    fn count(&self) -> usize {
        self.entries.len()
    }

    /// Number of rows (not counting the end).
    fn len(&self) -> usize {
        self.rows.len().saturating_sub(1)
    }

    fn bytes(&self) -> usize {
        self.entries.capacity() * size_of::<Entry>()
            + self.rows.capacity() * size_of::<Row>()
            + (self.xs.capacity() + self.skip.capacity()) * 4
    }
}

/// The stride of [`StaticRows::skip`]: one cache line of lower x bounds.
const SKIP: usize = 16;

impl Rows {
    /// Number of entries.
    #[inline(always)]
    fn count(&self) -> usize {
        self.n
    }

    /// Entry `i` (tests read rows this way; scans read the columns).
    #[cfg(test)]
    fn entry(&self, i: usize) -> Entry {
        self.view().get(i)
    }

    /// Appends `e` (tests build rows this way; updates write by index).
    #[cfg(test)]
    fn push(&mut self, e: &Entry) {
        self.resize(self.n + 1);
        let n = self.n;
        let mut cols = ColsMut::cut(
            &mut self.lo,
            &mut self.hi,
            &mut self.proxy,
            &mut self.row,
            n,
        );
        cols.set(n - 1, e);
    }

    /// Makes room for `n` entries, for writing by index (a column shorter than that
    /// grows, its new places zero), and counts `n`. Grown exactly: columns are never
    /// pushed to, so doubling would only hold memory.
    fn resize(&mut self, n: usize) {
        fn exact<T: Copy + Default>(c: &mut Vec<T>, n: usize) {
            if c.len() < n {
                c.reserve_exact(n - c.len());
                c.resize(n, T::default());
            }
        }
        for k in 0..3 {
            exact(&mut self.lo[k], n);
            exact(&mut self.hi[k], n);
        }
        exact(&mut self.proxy, n);
        exact(&mut self.row, n);
        self.n = n;
    }

    /// Counts `n` entries, the columns grown if shorter, with room for a sixteenth more:
    /// a patch grows a chunk by a few entries at a time, and columns grown exactly (by a
    /// stream or by the last patch) would be copied whole by the next patch that adds one.
    fn set_count(&mut self, n: usize) {
        if self.proxy.len() < n {
            self.resize(n + n / 16);
        }
        self.n = n;
    }

    /// Keeps the first `n` entries.
    fn truncate(&mut self, n: usize) {
        self.n = self.n.min(n);
    }

    /// The columns, each cut to the entries.
    #[inline]
    fn view(&self) -> Cols<'_> {
        let n = self.count();
        Cols {
            lo: [0, 1, 2].map(|k| &self.lo[k][..n]),
            hi: [0, 1, 2].map(|k| &self.hi[k][..n]),
            proxy: &self.proxy[..n],
            row: &self.row[..n],
        }
    }

    /// The entries of row `r` (an index into `rows`).
    #[cfg(test)]
    fn span(&self, r: usize) -> std::ops::Range<usize> {
        self.rows[r].start as usize..self.rows[r + 1].start as usize
    }

    /// Number of rows (not counting the end).
    fn len(&self) -> usize {
        self.rows.len().saturating_sub(1)
    }

    fn bytes(&self) -> usize {
        self.proxy.capacity() * size_of::<Entry>()
            + self.rows.capacity() * size_of::<Row>()
            + self.pair_at.capacity() * 4
    }
}

/// A run of consecutive rows of the dynamic boxes: the unit of parallel work, of
/// re-sorting and of the order of pairs. Chunks split the row keys between them, each
/// from its `first` key to the next chunk's; a chunk nothing changed in is not touched by
/// an update, and keeps its pairs.
#[derive(Clone, Debug, Default)]
struct Chunk {
    /// The smallest row key this chunk holds (the first chunk's is 0).
    first: u32,
    rows: Rows,
    /// The pairs whose home row is in this chunk, row by row (`Rows::pair_at`): in a row,
    /// those kept from the sweep before first, in their order, then those its last sweep
    /// found.
    found: sweep::Pairs,
    /// The entries of boxes set since the last update that go to this chunk (scratch).
    incoming: Vec<Entry>,
    /// Row key and proxy of the entries of boxes set since the last update that leave
    /// this chunk, while few enough for a patch (scratch; `patch.rs`).
    outgoing: Vec<(u32, u32)>,
    /// Whether something in it changed in this update (scratch).
    dirty: bool,
}

impl Chunk {
    fn bytes(&self) -> usize {
        self.rows.bytes()
            + self.found.bytes()
            + self.incoming.capacity() * size_of::<Entry>()
            + self.outgoing.capacity() * 8
    }
}

/// Columns to stream a chunk into, one per thread: a chunk is streamed into its thread's
/// columns, which it then takes in exchange for its old ones. So the dynamic entries are
/// held once and not twice (scratch belongs to threads), and the next chunk on that thread
/// writes into lines it has just read.
#[derive(Debug, Default)]
struct Spares(Vec<parking_lot::Mutex<Spare>>);

/// One thread's scratch for streaming chunks: the columns, and the sort keys of a chunk's
/// incoming entries.
#[derive(Debug, Default)]
struct Spare {
    rows: Rows,
    /// The pairs of a chunk being streamed.
    pairs: sweep::Pairs,
    keys: Vec<u128>,
    /// A bit per place of a chunk being streamed: where a changed box's entry went.
    fresh: Vec<u64>,
    /// What patching a chunk needs.
    patch: patch::Scratch,
}

impl Clone for Spares {
    /// Scratch is not copied: a clone starts with none.
    fn clone(&self) -> Self {
        Spares::default()
    }
}

impl Spares {
    /// At least `threads` columns.
    fn ensure(&mut self, threads: usize) {
        if self.0.len() < threads {
            self.0.resize_with(threads, Default::default);
        }
    }

    /// The columns of the calling thread of the pool (all of one thread's tasks run one
    /// after another, so the lock is never contended).
    fn mine(&self) -> parking_lot::MutexGuard<'_, Spare> {
        let i = rayon::current_thread_index().unwrap_or(0) % self.0.len();
        self.0[i].lock()
    }

    fn bytes(&self) -> usize {
        self.0
            .iter()
            .map(|s| {
                let s = s.lock();
                s.rows.bytes()
                    + s.pairs.bytes()
                    + s.keys.capacity() * 16
                    + s.fresh.capacity() * 8
                    + s.patch.bytes()
            })
            .sum()
    }
}

/// Counters of the last [`BroadPhase::update`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BroadStats {
    /// Proxies whose box changed since the update before.
    pub moved: u64,
    /// Rows of dynamic boxes swept (those of chunks something changed in; the others
    /// keep their pairs).
    pub rows_swept: u64,
    /// Of those, rows swept only for the pairs of the boxes that changed in them (few had):
    /// their pairs of two unchanged boxes were kept from the update before.
    pub rows_refreshed: u64,
    /// Chunks of rows edited in place where few boxes changed (the others where something
    /// changed were re-sorted whole).
    pub chunks_patched: u64,
    /// Box pairs compared: candidates of the sweep (eight at a time, so up to seven past
    /// the last that overlaps along x) and entries of the lookups.
    pub compared: u64,
    /// Pairs found.
    pub pairs: u64,
    /// Proxies kept out of the rows for their size.
    pub large: u64,
    /// Whether the pairs of large dynamic boxes with unchanged boxes were kept from the
    /// update before (only the changed boxes looked up), rather than all found anew: the
    /// choice is made by what each way's lookups last cost.
    pub large_kept: bool,
    /// Whether the grid was rebuilt with a new cell size.
    pub regridded: bool,
}

/// Sweep-and-prune in the rows of a grid over boxes named by `u32` proxy ids.
///
/// Ids are the caller's (dense small integers work best: storage is indexed by them, as in
/// Box2D's proxy ids). [`BroadPhase::update`] then finds every overlapping pair with at least
/// one dynamic box; [`BroadPhase::pairs`] lists them, each as `(smaller id, larger id)`, in an
/// order that depends only on the boxes and the sequence of calls (not on threads).
///
/// # Example
/// ```
/// use kdop::{Aabb, BroadPhase};
///
/// let mut bp = BroadPhase::new();
/// bp.set(0, Aabb::new([0.0; 3], [1.0; 3]), true)?;
/// bp.set(1, Aabb::new([0.5; 3], [2.0; 3]), false)?;
/// bp.set(2, Aabb::new([5.0; 3], [6.0; 3]), true)?;
/// bp.update();
/// assert_eq!(bp.pairs().collect::<Vec<_>>(), vec![(0, 1)]);
/// # Ok::<(), kdop::Error>(())
/// ```
///
/// # Complexity
/// An update costs, in each chunk of rows where a box was set, one streaming pass over
/// its entries (re-sorting them: linear when they move little) that sweeps each row as
/// soon as it is complete, linear in the entries plus the pairs overlapping along x within
/// a row; where very few boxes of a chunk were set, their rows alone and the entries that
/// shift to make room. Chunks where nothing was set keep their pairs, so sleeping boxes
/// cost nothing.
/// Static boxes cost only when they or a dynamic box near them is set: their pairs with
/// dynamic boxes are kept from update to update. The cell size follows the boxes: at the
/// first update it is chosen from their extents, and the grid is rebuilt when too many of
/// them outgrow it.
///
/// # Performance
/// No allocation once the buffers have grown to the scene. `docs/benchmarks.md` ("Broad
/// phase") has the figures against parry3d's broad phase.
#[derive(Clone, Debug, Default)]
pub struct BroadPhase {
    proxies: Vec<Proxy>,
    /// Proxies changed since the last update.
    moved: Vec<u32>,
    /// Each of them as it was at the last update (where its pairs were found then).
    moved_old: Vec<Before>,
    /// One bit per proxy: changed since the last update (set during an update only).
    moved_bits: Vec<u64>,
    /// Dynamic boxes in rows, in chunks of consecutive rows (never empty once placed),
    /// and each chunk's first key, for finding a key's chunk in a small array.
    dynamic: Vec<Chunk>,
    /// The columns a chunk is streamed into, one per thread of the pool (scratch of
    /// `place.rs`).
    spares: Spares,
    firsts: Vec<u32>,
    /// Where a search of `firsts` starts for a key of z-slab `slab_base + j`: the chunk
    /// holding that slab's first key ([`BroadPhase::chunk_of`]).
    slab_chunk: Vec<u32>,
    slab_base: i32,
    /// The changed proxies' slices as placed in parallel (scratch of `place.rs`).
    placing: Vec<place::Slice>,
    /// New static entries of this update (scratch), sorted before they are merged in.
    incoming: Vec<Entry>,
    /// Static boxes in rows, and the buffer they are re-sorted into.
    statics: StaticRows,
    static_spare: Vec<Entry>,
    /// Static boxes too large for the rows, each in the first level of coarser rows where
    /// it spans at most two cells in y and z, as `statics` (level `l` has cells of edge
    /// `coarse_cell` times [`place::COARSE_STEP`]^`l`, `coarse_cell` a multiple of `cell`),
    /// and the buffer they are re-sorted into.
    coarse: [StaticRows; place::COARSE_LEVELS],
    coarse_spare: Vec<Entry>,
    coarse_cell: f32,
    /// Per level (the rows, then each coarse level), the entries of the static boxes set
    /// since the level was last sorted, in rows of their own (`recent.rs`).
    recent: [StaticRows; 1 + place::COARSE_LEVELS],
    /// Per level, its recent rows' merge into its sorted rows when one is under way, a
    /// slice per update (`merge.rs`).
    merging: [merge::Merging; 1 + place::COARSE_LEVELS],
    /// The changed proxies whose static entries become tombstones this update: each one's
    /// place in `moved` and its placement before it (scratch of `place.rs`).
    buried: Vec<(u32, Place)>,
    /// The changed proxies placed in static rows this update, whose entries go in anew
    /// (scratch of `place.rs`): the static rows read these, not every changed proxy.
    arrived: Vec<u32>,
    /// Which static rows changed since they were sorted, a bit each ([`Place::rows_bit`]:
    /// the rows, then each coarse level).
    statics_changed: u32,
    /// Large proxies, dynamic and static, each in id order.
    large_dynamic: Vec<u32>,
    large_static: Vec<u32>,
    /// The boxes of `large_static` as columns (scratch of `statics.rs`).
    large_static_columns: statics::Columns,
    /// Pairs of large dynamic boxes, one list per box of `large_ids` (in its order): the
    /// boxes it found its pairs with (`large.rs`).
    large_pairs: Vec<Vec<u32>>,
    /// The boxes `large_pairs` lists were found by (`large_dynamic` at the last update).
    large_ids: Vec<u32>,
    /// The large dynamic boxes in rows of the coarse levels (kept by `large.rs` while
    /// they do not change), and whether one changed since they were entered.
    large_rows: large::LargeRows,
    large_moved: bool,
    /// The changed boxes found near unchanged large boxes, one list per task (scratch of
    /// `large.rs`).
    near_large: Vec<large::NearLarge>,
    /// What its two lookups cost, as last measured: whether it keeps pairs or finds them
    /// all anew.
    large_costs: large::Costs,
    /// Pairs of a dynamic box with a static one, as `statics::key(dynamic, static)`,
    /// sorted; kept across updates.
    static_pairs: Vec<u64>,
    /// The buffer the next update merges the kept and new static pairs into.
    pairs_spare: Vec<u64>,
    /// New dynamic–static pairs of this update (scratch).
    fresh: Vec<u64>,
    /// Whether a box that is or was static was set or removed since the last update.
    statics_touched: bool,
    /// The changed dynamic boxes that look for statics near them (with their boxes), and
    /// the lookups of each task that looks them up (scratch of `statics.rs`).
    near_boxes: Vec<(u32, Aabb)>,
    near_slices: Vec<statics::NearSlice>,
    /// Cell edge length; 0 until the first update fixes it (or [`BroadPhase::with_cell_size`]).
    cell: f32,
    /// Whether the cell size came from the caller (never changed automatically).
    fixed: bool,
    /// Large boxes and boxes per row right after the last rebuild of the grid.
    regrid_large: u64,
    regrid_per_row: u64,
    live: u32,
    /// The most boxes changed in an update lately (`trim.rs`).
    burst: crate::trim::Burst,
    stats: BroadStats,
    /// Whether this update patches the chunks where few boxes changed (`patch.rs`): when
    /// so many changed that none is likely to be patched, their entries are not listed.
    patching: bool,
    /// Tests only: every chunk where something changed is streamed, none patched (the
    /// oracle of `patch.rs`).
    #[cfg(test)]
    stream_only: bool,
}

impl BroadPhase {
    /// An empty broad phase; the cell size is chosen at the first update.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty broad phase with cells of edge `size`, never changed.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `size` is positive and finite.
    pub fn with_cell_size(size: f32) -> Result<Self> {
        if !(size.is_finite() && size > 0.0) {
            return Err(Error::InvalidParameter {
                name: "cell size",
                reason: format!("must be positive and finite, got {size}"),
            });
        }
        Ok(BroadPhase {
            cell: size,
            coarse_cell: size * place::COARSE_MIN,
            fixed: true,
            ..Self::default()
        })
    }

    /// Sets proxy `id`'s box (adding the proxy if new) and whether it moves. Pairs of two
    /// static proxies are never reported.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a NaN bound, a lower bound above its upper one, or
    /// `id == u32::MAX`; nothing changes then.
    pub fn set(&mut self, id: u32, aabb: Aabb, dynamic: bool) -> Result<()> {
        check_proxy(id, &aabb)?;
        self.set_checked(id, aabb, dynamic);
        Ok(())
    }

    /// [`BroadPhase::set`] for many proxies, all dynamic or all static: the same result
    /// as setting them one by one, faster for many (a proxy's record is a cache miss at
    /// scale, and the records of the boxes a few places ahead are asked for early).
    ///
    /// # Errors
    /// As [`BroadPhase::set`], for the first bad box in `boxes`; nothing changes then.
    pub fn set_many(&mut self, boxes: &[(u32, Aabb)], dynamic: bool) -> Result<()> {
        for (id, aabb) in boxes {
            check_proxy(*id, aabb)?;
        }
        for (i, &(id, aabb)) in boxes.iter().enumerate() {
            if let Some(p) = boxes
                .get(i + SET_AHEAD)
                .and_then(|&(ahead, _)| self.proxies.get(ahead as usize))
            {
                prefetch_whole(p);
            }
            self.set_checked(id, aabb, dynamic);
        }
        Ok(())
    }

    /// [`BroadPhase::set`] once its arguments were checked.
    #[inline]
    fn set_checked(&mut self, id: u32, aabb: Aabb, dynamic: bool) {
        let i = id as usize;
        if i >= self.proxies.len() {
            self.proxies.resize(
                i + 1,
                Proxy {
                    aabb,
                    live: false,
                    dynamic,
                    moved: false,
                    placed: Place::None,
                },
            );
        }
        let p = &mut self.proxies[i];
        if !p.live {
            p.live = true;
            self.live += 1;
        }
        // Kept static pairs can only be dropped one by one if a static box changes.
        self.statics_touched |= !dynamic || p.placed.is_static();
        if !p.moved {
            p.moved = true;
            self.moved.push(id);
            self.moved_old.push(Before::of(id, p));
        }
        p.aabb = aabb;
        p.dynamic = dynamic;
    }

    /// Removes proxy `id`; `false` if there was none.
    pub fn remove(&mut self, id: u32) -> bool {
        let Some(p) = self.proxies.get_mut(id as usize) else {
            return false;
        };
        if !p.live {
            return false;
        }
        p.live = false;
        self.live -= 1;
        self.statics_touched |= p.placed.is_static();
        if !p.moved {
            p.moved = true;
            self.moved.push(id);
            self.moved_old.push(Before::of(id, p));
        }
        true
    }

    /// Proxy `id`'s box, if it has one.
    #[must_use]
    pub fn aabb(&self, id: u32) -> Option<Aabb> {
        self.proxies
            .get(id as usize)
            .filter(|p| p.live)
            .map(|p| p.aabb)
    }

    /// Number of proxies.
    #[must_use]
    pub fn len(&self) -> usize {
        self.live as usize
    }

    /// Whether there are no proxies.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The cell edge length (0 before the first update of an automatic grid).
    #[must_use]
    pub fn cell_size(&self) -> f32 {
        self.cell
    }

    /// Applies the changes since the last update and finds all pairs: the chunks of rows
    /// where something changed re-sorted and swept in parallel (rayon), results kept in
    /// chunk order.
    pub fn update(&mut self) {
        zone!("BroadPhase::update");
        self.stats = BroadStats {
            moved: self.moved.len() as u64,
            ..BroadStats::default()
        };
        let regridded = self.wants_regrid();
        // The static lookups, when they ran beside the placing.
        let mut looked = None;
        if regridded {
            self.regrid();
            self.stats.regridded = true;
        } else if rayon::current_num_threads() > 1 && self.splices_static_pairs() {
            looked = Some(self.place_and_look_up());
        } else {
            self.place_moved();
        }
        let static_compared = self.update_static_pairs(regridded, looked);
        self.large_pairs(regridded);
        self.end_moves();
        self.trim_scratch(self.stats.moved as usize);
        self.advance_merges();
        self.stats.compared += static_compared;
        self.stats.pairs += self
            .dynamic
            .iter()
            .map(|c| c.found.len() as u64)
            .sum::<u64>();
        self.stats.pairs += self.static_pairs.len() as u64;
        self.stats.large = (self.large_dynamic.len() + self.large_static.len()) as u64;
    }

    /// The pairs found by the last update, each `(smaller id, larger id)`, once.
    pub fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let kept = self.static_pairs.iter().map(|&k| {
            let (d, s) = statics::unkey(k);
            (d.min(s), d.max(s))
        });
        let large = self.large_ids.iter().zip(&self.large_pairs);
        self.dynamic
            .iter()
            .flat_map(|c| c.found.as_slice())
            .copied()
            .chain(large.flat_map(|(&l, others)| others.iter().map(move |&o| (l.min(o), l.max(o)))))
            .chain(kept)
    }

    /// Number of pairs found by the last update.
    #[must_use]
    pub fn pair_count(&self) -> usize {
        self.stats.pairs as usize
    }

    /// Counters of the last update.
    #[must_use]
    pub fn stats(&self) -> BroadStats {
        self.stats
    }

    /// Bytes held (capacities), for per-object memory figures.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.proxies.capacity() * size_of::<Proxy>()
            + (self.moved.capacity() + self.large_dynamic.capacity() + self.large_static.capacity())
                * 4
            + self.moved_bits.capacity() * 8
            + (self.firsts.capacity() + self.slab_chunk.capacity()) * 4
            + self
                .dynamic
                .iter()
                .map(|c| size_of::<Chunk>() + c.bytes())
                .sum::<usize>()
            + self.spares.bytes()
            + self.statics.bytes()
            + self.coarse.iter().map(StaticRows::bytes).sum::<usize>()
            + self.recent.iter().map(StaticRows::bytes).sum::<usize>()
            + self
                .merging
                .iter()
                .map(merge::Merging::bytes)
                .sum::<usize>()
            + self.buried.capacity() * size_of::<(u32, Place)>()
            + self.arrived.capacity() * size_of::<u32>()
            + (self.static_spare.capacity() + self.coarse_spare.capacity()) * size_of::<Entry>()
            + self.incoming.capacity() * size_of::<Entry>()
            + self.placing.iter().map(place::Slice::bytes).sum::<usize>()
            + (self.static_pairs.capacity() + self.pairs_spare.capacity() + self.fresh.capacity())
                * 8
            + self.moved_old.capacity() * size_of::<Before>()
            + self.large_ids.capacity() * 4
            + self
                .large_pairs
                .iter()
                .map(|s| size_of::<Vec<u32>>() + s.capacity() * 4)
                .sum::<usize>()
            + self.near_boxes.capacity() * size_of::<(u32, Aabb)>()
            + self.large_static_columns.bytes()
            + self.large_rows.bytes()
            + self
                .near_large
                .iter()
                .map(large::NearLarge::bytes)
                .sum::<usize>()
            + self
                .near_slices
                .iter()
                .map(statics::NearSlice::bytes)
                .sum::<usize>()
    }
}

/// How many boxes ahead [`BroadPhase::set_many`] asks for a proxy's record.
const SET_AHEAD: usize = 16;

/// [`BroadPhase::set`]'s checks of its arguments.
fn check_proxy(id: u32, aabb: &Aabb) -> Result<()> {
    aabb.check(id)?;
    if id == NONE {
        return Err(Error::InvalidParameter {
            name: "proxy id",
            reason: "u32::MAX is reserved".into(),
        });
    }
    Ok(())
}

/// Merges `fresh` into `kept`, both sorted by `key`, in place from the back (the coarse
/// rows' entries are brought up to date this way by rank).
pub(crate) fn merge_sorted_by_key<T: Copy, K: Ord>(
    kept: &mut Vec<T>,
    fresh: &[T],
    key: impl Fn(&T) -> K,
) {
    let Some(&filler) = fresh.first() else {
        return;
    };
    let old = kept.len();
    kept.resize(old + fresh.len(), filler);
    let (mut i, mut j, mut k) = (old, fresh.len(), old + fresh.len());
    while j > 0 {
        k -= 1;
        if i > 0 && key(&kept[i - 1]) > key(&fresh[j - 1]) {
            kept[k] = kept[i - 1];
            i -= 1;
        } else {
            kept[k] = fresh[j - 1];
            j -= 1;
        }
    }
}

/// The lower x bound below which no entry of a row of widest entry `width` reaches `x`:
/// an entry reaching it has lo ≥ x − its x-extent ≥ x − the row's width, lowered a little
/// further for the roundings of the extents and of that subtraction (NaN for unbounded
/// boxes, which compares false: then the row is scanned from its start).
#[inline(always)]
fn reach(x: f32, width: f32) -> f32 {
    let t = x - width;
    t - (x.abs() + width) * 1e-6
}

/// Whether bit `i` of `bits` is set.
#[inline(always)]
pub(crate) fn bit(bits: &[u64], i: u32) -> bool {
    bits[(i >> 6) as usize] & (1 << (i & 63)) != 0
}

/// Sets bit `i` of `bits`.
#[inline(always)]
pub(crate) fn set_bit(bits: &mut [u64], i: u32) {
    bits[(i >> 6) as usize] |= 1 << (i & 63);
}

/// Clears bit `i` of `bits`.
#[inline(always)]
pub(crate) fn clear_bit(bits: &mut [u64], i: u32) {
    bits[(i >> 6) as usize] &= !(1 << (i & 63));
}
