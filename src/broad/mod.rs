//! The broad phase: sweep-and-prune (Klosowski et al. 1998, §6.1, "Multiple flying
//! objects", after I-COLLIDE: Cohen, Lin, Manocha and Ponamgi 1995, §4.2) within the cells
//! of a coarse uniform grid, as multi-box pruning does (PhysX's MBP).
//!
//! A single sweep along one axis does not scale in 3-D: the boxes overlapping along x grow
//! as N^(2/3). Here each cell keeps its own list of the boxes that touch it, sorted by their
//! lower x bound and kept sorted from frame to frame by insertion sort (temporal coherence:
//! boxes move little, so the lists are nearly sorted). A pair is reported only by its *home
//! cell*, the cell holding the lower corner of the two boxes' intersection, so a pair met
//! in several cells is reported once.
//!
//! Cells are not stored by key: a cell's key hashes to one of a fixed number of buckets
//! (spatial hashing, Teschner et al. 2003), so placing a box costs arithmetic and the
//! bucket's own memory, no map lookup.
//!
//! Boxes spanning more than [`LARGE_CELLS`] cells are not put into cells; each is checked
//! against the cells it covers (`large.rs`). Each cell keeps its static boxes in a list of
//! their own that is never swept; their pairs with dynamic boxes are kept from update to
//! update and looked for again only for boxes placed since (`statics.rs`), so static and
//! sleeping boxes cost nothing per frame until they or a neighbour move.
//!
//! One file per operation: `update.rs` places boxes into cells, `sweep.rs` finds the pairs
//! of dynamic boxes, `statics.rs` keeps their pairs with static ones, `large.rs` the pairs
//! of large boxes, `brute.rs` holds the oracles (all pairs, and one plain sweep).

mod brute;
mod large;
mod query;
mod statics;
mod sweep;
mod update;

pub use brute::{brute_force_pairs, single_sweep_pairs};

use crate::error::{Error, Result};

/// A box that covers more cells than this is kept out of the cells ([`BroadPhase`]).
pub const LARGE_CELLS: u64 = 64;

/// A proxy id that names no proxy.
const NONE: u32 = u32::MAX;

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

/// Integer coordinates of a grid cell.
type CellKey = [i32; 3];

/// One bucket of the spatial hash: the entries of the boxes that touch any of its cells,
/// each box once, sorted by lower x bound. Cells whose keys hash alike share a bucket; the
/// home-cell test keeps each pair to one bucket all the same.
#[derive(Clone, Debug, Default)]
struct Cell {
    /// Entries of dynamic proxies, sorted by (lower x, id).
    entries: Vec<Entry>,
    /// The bucket's static entries, boxed: most buckets hold none (a world's broad phase
    /// holds no static boxes at all), and the bucket table has two buckets per box.
    statics: Option<Box<StaticEntries>>,
    /// Whether entries changed since the last sort.
    dirty: bool,
    /// Whether the cell is listed in `BroadPhase::active`.
    active: bool,
}

const _: () = assert!(size_of::<Cell>() == 40);

/// A bucket's static entries and what finds them.
#[derive(Clone, Debug, Default)]
struct StaticEntries {
    /// Entries of static proxies, sorted by (lower x, id): swept only against the dynamic
    /// entries, so static boxes cost nothing where no dynamic box comes.
    list: Vec<Entry>,
    /// At least the largest x-extent among `list` (exact after each sort), so that a
    /// dynamic box finds the statics it may meet by a binary search.
    width: f32,
    /// The lower x bounds of `list`, in its order (re-made with each sort): the binary
    /// search reads 4 bytes per entry instead of an entry's cache line.
    lo: Vec<f32>,
    /// Whether `list` changed since the last sort (most frames, none did).
    dirty: bool,
}

impl Cell {
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.static_list().is_empty()
    }

    /// The static entries (none when the bucket never held one).
    fn static_list(&self) -> &[Entry] {
        self.statics.as_ref().map_or(&[], |s| &s.list)
    }

    /// The static part, made on first use.
    fn statics_mut(&mut self) -> &mut StaticEntries {
        self.statics.get_or_insert_with(Default::default)
    }

    /// The list an entry of this kind goes to.
    fn list(&mut self, dynamic: bool) -> &mut Vec<Entry> {
        if dynamic {
            &mut self.entries
        } else {
            &mut self.statics_mut().list
        }
    }
}

/// A box as a cell holds it: its bounds inline, so a sweep reads one record per box.
/// Whether it moves is which of the cell's lists holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    lo: [f32; 3],
    hi: [f32; 3],
    proxy: u32,
}

impl Entry {
    /// The entry of proxy `id`, whose record is `p`.
    fn of(id: u32, p: &Proxy) -> Entry {
        Entry {
            lo: p.aabb.lo,
            hi: p.aabb.hi,
            proxy: id,
        }
    }

    fn aabb(&self) -> Aabb {
        Aabb::new(self.lo, self.hi)
    }
}

/// Per proxy: its box, whether it moves, and where it was placed.
#[derive(Clone, Copy, Debug)]
struct Proxy {
    aabb: Aabb,
    /// Cells covered at the last placement: lower and upper cell keys; `None` when the proxy
    /// is large, not yet placed, or removed.
    cells: Option<(CellKey, CellKey)>,
    live: bool,
    dynamic: bool,
    large: bool,
    /// Whether it is listed in `BroadPhase::moved`.
    moved: bool,
    /// Whether it was placed in this update (listed in `BroadPhase::touched`).
    touched: bool,
}

/// Counters of the last [`BroadPhase::update`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BroadStats {
    /// Proxies whose box changed since the update before.
    pub moved: u64,
    /// Buckets swept (those holding a dynamic box).
    pub cells_swept: u64,
    /// Box pairs compared along y and z after overlapping along x.
    pub compared: u64,
    /// Pairs found.
    pub pairs: u64,
    /// Proxies kept out of the cells for their size.
    pub large: u64,
    /// Whether the grid was rebuilt with a new cell size.
    pub regridded: bool,
}

/// Sweep-and-prune in grid cells over boxes named by `u32` proxy ids.
///
/// Ids are the caller's (dense small integers work best: storage is indexed by them, as in
/// Box2D's proxy ids). [`BroadPhase::update`] then finds every overlapping pair with at least
/// one dynamic box; [`BroadPhase::pairs`] lists them, each as `(smaller id, larger id)`, in an
/// order that depends only on the sequence of calls (not on threads).
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
/// An update costs the moved boxes times the size of their cells (insertion into sorted
/// lists) plus, per cell holding a dynamic box, the dynamic pairs overlapping along x
/// within it. Static boxes cost only when they or a dynamic box near them is set: their
/// pairs with dynamic boxes are kept from update to update.
/// The cell size follows the boxes: at the first update it is a few times their median
/// largest extent, and the grid is rebuilt when the boxes outgrow or shrink away from it.
#[derive(Clone, Debug, Default)]
pub struct BroadPhase {
    proxies: Vec<Proxy>,
    /// Proxies changed since the last update.
    moved: Vec<u32>,
    /// Large proxies (kept out of the cells), in id order.
    large: Vec<u32>,
    /// The spatial hash's buckets (a power of two of them, at least twice the boxes).
    cells: Vec<Cell>,
    /// Buckets of the old and new cells of the box being placed (scratch).
    old_buckets: Vec<u32>,
    new_buckets: Vec<u32>,
    /// Cells with a dynamic entry (some may have lost it since; pruned at each update).
    active: Vec<u32>,
    /// Cells whose entries changed since the last sort.
    dirty: Vec<u32>,
    /// Cells holding at least one entry.
    filled: u32,
    /// Pairs found per active cell, then the large proxies' pairs last.
    found: Vec<Vec<(u32, u32)>>,
    /// Pairs of a dynamic box in cells with a static one, `(dynamic, static)`, sorted; kept
    /// across updates.
    static_pairs: Vec<(u32, u32)>,
    /// Proxies placed in this update (scratch of `update_static_pairs`).
    touched: Vec<u32>,
    /// New dynamic–static pairs of this update (scratch).
    fresh: Vec<(u32, u32)>,
    /// Cell edge length; 0 until the first update fixes it (or [`BroadPhase::with_cell_size`]).
    cell: f32,
    /// Whether the cell size came from the caller (never changed automatically).
    fixed: bool,
    /// Entries over all cells, and of those, entries of static proxies.
    entries: u64,
    static_entries: u64,
    live: u32,
    stats: BroadStats,
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
        aabb.check(id)?;
        if id == NONE {
            return Err(Error::InvalidParameter {
                name: "proxy id",
                reason: "u32::MAX is reserved".into(),
            });
        }
        let i = id as usize;
        if i >= self.proxies.len() {
            self.proxies.resize(
                i + 1,
                Proxy {
                    aabb,
                    cells: None,
                    live: false,
                    dynamic,
                    large: false,
                    moved: false,
                    touched: false,
                },
            );
        }
        let p = &mut self.proxies[i];
        if !p.live {
            p.live = true;
            self.live += 1;
        }
        p.aabb = aabb;
        p.dynamic = dynamic;
        if !p.moved {
            p.moved = true;
            self.moved.push(id);
        }
        Ok(())
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
        if !p.moved {
            p.moved = true;
            self.moved.push(id);
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

    /// Applies the changes since the last update and finds all pairs: cells swept in
    /// parallel (rayon), results merged in a fixed order.
    pub fn update(&mut self) {
        zone!("BroadPhase::update");
        self.stats = BroadStats {
            moved: self.moved.len() as u64,
            ..BroadStats::default()
        };
        let regridded = self.wants_regrid();
        if regridded {
            self.regrid();
            self.stats.regridded = true;
        } else {
            self.place_moved();
        }
        self.sort_dirty();
        let static_compared = self.update_static_pairs(regridded);
        self.sweep();
        self.stats.compared += static_compared;
        self.stats.pairs += self.static_pairs.len() as u64;
        self.stats.large = self.large.len() as u64;
    }

    /// The pairs found by the last update, each `(smaller id, larger id)`, once.
    pub fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let kept = self.static_pairs.iter().map(|&(d, s)| (d.min(s), d.max(s)));
        self.found.iter().flatten().copied().chain(kept)
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
        use std::mem::size_of;
        self.proxies.capacity() * size_of::<Proxy>()
            + self.moved.capacity() * 4
            + self.large.capacity() * 4
            + (self.static_pairs.capacity() + self.fresh.capacity()) * 8
            + self.touched.capacity() * 4
            + (self.active.capacity() + self.dirty.capacity()) * 4
            + self
                .cells
                .iter()
                .map(|c| {
                    size_of::<Cell>()
                        + c.entries.capacity() * size_of::<Entry>()
                        + c.statics.as_ref().map_or(0, |s| {
                            size_of::<StaticEntries>()
                                + s.list.capacity() * size_of::<Entry>()
                                + s.lo.capacity() * 4
                        })
                })
                .sum::<usize>()
            + self
                .found
                .iter()
                .map(|f| size_of::<Vec<(u32, u32)>>() + f.capacity() * 8)
                .sum::<usize>()
    }
}

/// Merges sorted `fresh` into sorted `kept`, in place from the back (kept pairs of the
/// broad phase and of the world are brought up to date this way each update).
pub(crate) fn merge_sorted<T: Copy + Ord + Default>(kept: &mut Vec<T>, fresh: &[T]) {
    let old = kept.len();
    kept.resize(old + fresh.len(), T::default());
    let (mut i, mut j, mut k) = (old, fresh.len(), old + fresh.len());
    while j > 0 {
        k -= 1;
        if i > 0 && kept[i - 1] > fresh[j - 1] {
            kept[k] = kept[i - 1];
            i -= 1;
        } else {
            kept[k] = fresh[j - 1];
            j -= 1;
        }
    }
}
