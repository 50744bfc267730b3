//! An editable tree of k-DOPs (Klosowski et al. 1998, §6.1, "Dynamic environments": parts
//! inserted and deleted with local rebalancing), after Box2D v3's dynamic tree: a node pool
//! with parent links, a free list and `u32` indices; leaves under *fat* k-DOPs (the item's
//! bound enlarged by a margin) so that small moves change nothing; insertion by a
//! branch-and-bound search for the sibling of least cost (Bittner, Hapala and Havran 2013,
//! insertion-based optimisation), then rotations on the way up; deletion by promoting the
//! sibling.
//!
//! One file per operation: `insert.rs`, `remove.rs`, `rotate.rs`, `optimize.rs`
//! (incremental re-insertion within a budget, and a full rebuild), `validate.rs`; queries
//! and the cost here.
//!
//! The cost of a tree is the sum of its internal nodes' areas (the surface area of their
//! bounding boxes): the surface-area heuristic's expected work of a query, up to constants.
//! [`DynamicTree::cost_ratio`] compares it with a fresh top-down build of the same leaves.

mod insert;
mod optimize;
mod remove;
mod rotate;
mod validate;

use crate::dop::Dop;
use crate::error::{Error, Result};
use crate::hint::prefetch_whole;

/// No node.
const NULL: u32 = u32::MAX;
/// The height of a node on the free list.
const FREE: u32 = u32::MAX;

/// A leaf of a [`DynamicTree`]: its node and the generation that node had when the leaf was
/// made, so a handle to a removed leaf is an error, never another leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TreeLeaf {
    index: u32,
    generation: u32,
}

/// One node of the pool. In C order, what the sibling search reads first (the links, the
/// height, then the k-DOP, whose box bounds open it), so that the search's reads of a node
/// span its first 76 bytes.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct TreeNode<const K: usize> {
    /// An internal node's children's children (`NULL` under a leaf child): the sibling
    /// search asks for them two levels ahead of its reads.
    grand: [u32; 4],
    /// The two children of an internal node; a leaf's `[NULL, item]`.
    pub(crate) child: [u32; 2],
    /// 0 for a leaf, one more than the higher child for an internal node, [`FREE`] on the
    /// free list.
    pub(crate) height: u32,
    /// A leaf's fat k-DOP, or the union of an internal node's children's.
    pub(crate) dop: Dop<K>,
    /// The parent, or [`NULL`] for the root; on the free list, the next free node.
    pub(crate) parent: u32,
    /// Bumped each time the node is freed.
    generation: u32,
}

const _: () = assert!(size_of::<TreeNode<18>>() == 108);

impl<const K: usize> TreeNode<K> {
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.height == 0
    }
}

/// A tree of k-DOPs that takes insertions, removals and moves of its leaves, each leaf
/// carrying a `u32` item (a part index, an object id).
///
/// # Example
/// ```
/// use glam::DVec3;
/// use kdop::{Dop, DynamicTree};
/// let cube = |c: f64| Dop::<18>::from_points(&[DVec3::splat(c - 0.5), DVec3::splat(c + 0.5)]);
/// let mut tree = DynamicTree::<18>::new(0.1)?;
/// let a = tree.insert(&cube(0.0), 7)?;
/// let b = tree.insert(&cube(5.0), 8)?;
/// let mut hits = Vec::new();
/// tree.query(&cube(4.5), |item| hits.push(item));
/// assert_eq!(hits, [8]);
/// tree.remove(b)?;
/// assert!(tree.remove(b).is_err(), "a removed leaf's handle is stale");
/// assert_eq!(tree.item(a)?, 7);
/// # Ok::<(), kdop::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynamicTree<const K: usize> {
    pub(crate) nodes: Vec<TreeNode<K>>,
    pub(crate) root: u32,
    free: u32,
    leaves: u32,
    /// The margin leaves are enlarged by, as a share of their largest box extent.
    margin: f64,
    /// Traversal scratch, kept so that queries and insertions do not allocate.
    stack: Vec<u32>,
    /// The sibling search's stack: (what a node's ancestors grow by, the node).
    search: Vec<(f32, u32)>,
    /// Where [`DynamicTree::optimize`] goes on in the pool.
    optimize_at: u32,
}

impl<const K: usize> DynamicTree<K> {
    /// An empty tree whose leaves are enlarged by about `margin` times their largest
    /// extent on every side (0 for tight leaves; the bound is always contained).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite margin.
    pub fn new(margin: f64) -> Result<Self> {
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "margin",
                reason: format!("must be finite and not negative, got {margin}"),
            });
        }
        Ok(DynamicTree {
            nodes: Vec::new(),
            root: NULL,
            free: NULL,
            leaves: 0,
            margin,
            stack: Vec::new(),
            search: Vec::new(),
            optimize_at: 0,
        })
    }

    /// Number of leaves.
    #[must_use]
    pub fn len(&self) -> usize {
        self.leaves as usize
    }

    /// Whether the tree has no leaves.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.leaves == 0
    }

    /// Height of the root (0 for one leaf or none).
    #[must_use]
    pub fn height(&self) -> u32 {
        if self.root == NULL {
            0
        } else {
            self.nodes[self.root as usize].height
        }
    }

    /// The item of `leaf`.
    ///
    /// # Errors
    /// [`Error::StaleHandle`] for a removed leaf, or one of another tree that names no
    /// leaf here.
    pub fn item(&self, leaf: TreeLeaf) -> Result<u32> {
        Ok(self.nodes[self.check(leaf)?].child[1])
    }

    /// Gives a live leaf another item (the world names a part's leaf once the part is
    /// stored).
    pub(crate) fn set_item(&mut self, leaf: TreeLeaf, item: u32) {
        if let Ok(i) = self.check(leaf) {
            self.nodes[i].child[1] = item;
        }
    }

    /// The fat k-DOP of `leaf`.
    ///
    /// # Errors
    /// As [`DynamicTree::item`].
    pub fn fat(&self, leaf: TreeLeaf) -> Result<Dop<K>> {
        Ok(self.nodes[self.check(leaf)?].dop)
    }

    /// Calls `found` with the item of every leaf whose fat k-DOP overlaps `dop`, in tree
    /// order.
    pub fn query(&mut self, dop: &Dop<K>, found: impl FnMut(u32)) {
        let mut stack = std::mem::take(&mut self.stack);
        self.query_with(dop, &mut stack, found);
        self.stack = stack;
    }

    /// [`DynamicTree::query`] through a shared reference, with the caller's `stack` as
    /// scratch: queries from many threads at once.
    pub fn query_with(&self, dop: &Dop<K>, stack: &mut Vec<u32>, mut found: impl FnMut(u32)) {
        stack.clear();
        if self.root == NULL {
            return;
        }
        stack.push(self.root);
        while let Some(i) = stack.pop() {
            let node = &self.nodes[i as usize];
            if !node.dop.overlaps(dop) {
                continue;
            }
            if node.is_leaf() {
                found(node.child[1]);
            } else {
                stack.extend([node.child[1], node.child[0]]);
            }
        }
    }

    /// Moves `leaf` to the bound `dop`: nothing changes while `dop` stays inside the leaf's
    /// fat k-DOP; otherwise the leaf is re-inserted under a new fat k-DOP around `dop`.
    /// Returns whether it was re-inserted.
    ///
    /// # Errors
    /// As [`DynamicTree::item`], and as [`DynamicTree::insert`] for `dop`.
    pub fn move_leaf(&mut self, leaf: TreeLeaf, dop: &Dop<K>) -> Result<bool> {
        let i = self.check(leaf)?;
        check_bound(dop)?;
        if self.nodes[i].dop.contains(dop) {
            return Ok(false);
        }
        let item = self.nodes[i].child[1];
        self.detach(i as u32);
        let fat = self.fattened(dop);
        self.nodes[i].dop = fat;
        self.nodes[i].child = [NULL, item];
        self.attach(i as u32);
        Ok(true)
    }

    /// The sum of the internal nodes' areas (see the module page); 0 for a tree of at most
    /// one leaf.
    #[must_use]
    pub fn cost(&self) -> f64 {
        self.internal_nodes().map(|n| area(&n.dop)).sum()
    }

    /// [`DynamicTree::cost`] over the cost of a fresh top-down build of the same fat
    /// leaves (the surface-area rule of [`crate::BuildOptions`]): how much the edits have
    /// worn the tree. 1 for fewer than three leaves.
    #[must_use]
    pub fn cost_ratio(&self) -> f64 {
        if self.leaves < 3 {
            return 1.0;
        }
        let (_, fresh, _) = self.fresh_build();
        let fresh: f64 = fresh
            .iter()
            .filter(|n| !n.is_leaf())
            .map(|n| area(&n.dop))
            .sum();
        if fresh > 0.0 {
            self.cost() / fresh
        } else {
            1.0
        }
    }

    /// A fresh top-down build (the surface-area rule) over the leaves' fat bounds: the
    /// leaves' nodes in pool order, the built nodes, and per built leaf position the index
    /// of its leaf in that list. What [`DynamicTree::cost_ratio`] measures against and
    /// [`DynamicTree::rebuild`] installs.
    pub(crate) fn fresh_build(&self) -> (Vec<u32>, Vec<crate::hierarchy::Node<K>>, Vec<u32>) {
        let leaves: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&i| self.nodes[i as usize].is_leaf())
            .collect();
        let dops: Vec<Dop<K>> = leaves.iter().map(|&i| self.nodes[i as usize].dop).collect();
        let centres: Vec<glam::DVec3> = dops.iter().map(centre).collect();
        let (built, order) = crate::hierarchy::build_over_boxes(
            &centres,
            &dops,
            crate::hierarchy::AxisRule::SurfaceArea,
        );
        (leaves, built, order)
    }

    /// Bytes held.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<TreeNode<K>>()
            + self.stack.capacity() * 4
            + self.search.capacity() * size_of::<(f32, u32)>()
    }

    fn internal_nodes(&self) -> impl Iterator<Item = &TreeNode<K>> {
        self.nodes
            .iter()
            .filter(|n| n.height != FREE && !n.is_leaf())
    }

    /// The node of a live leaf handle.
    fn check(&self, leaf: TreeLeaf) -> Result<usize> {
        match self.nodes.get(leaf.index as usize) {
            Some(n) if n.generation == leaf.generation && n.height == 0 => Ok(leaf.index as usize),
            _ => Err(Error::StaleHandle { what: "tree leaf" }),
        }
    }

    /// `dop` enlarged by the tree's margin: about that much (rounded in `f32`, outward
    /// or not at all), as deformable nodes are; the slack is a heuristic, so it needs no
    /// rounding control, only to contain `dop`.
    fn fattened(&self, dop: &Dop<K>) -> Dop<K> {
        dop.padded_by_extent(self.margin)
    }

    /// A node from the free list, or a new one.
    fn allocate(&mut self) -> u32 {
        if self.free != NULL {
            let i = self.free;
            self.free = self.nodes[i as usize].parent;
            return i;
        }
        self.nodes.push(TreeNode {
            dop: Dop::EMPTY,
            parent: NULL,
            child: [NULL; 2],
            height: FREE,
            generation: 0,
            grand: [NULL; 4],
        });
        (self.nodes.len() - 1) as u32
    }

    /// Puts node `i` on the free list.
    fn release(&mut self, i: u32) {
        let node = &mut self.nodes[i as usize];
        node.height = FREE;
        node.generation = node.generation.wrapping_add(1);
        node.child = [NULL; 2];
        node.parent = self.free;
        self.free = i;
    }

    /// Puts `new` where `old` was among `parent`'s children (or at the root, for no
    /// parent), and makes `parent` the parent of `new`.
    pub(crate) fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        self.nodes[new as usize].parent = parent;
        if parent == NULL {
            self.root = new;
            return;
        }
        let c = &mut self.nodes[parent as usize].child;
        let slot = usize::from(c[1] == old);
        c[slot] = new;
        self.regrand(parent);
        self.regrand(self.nodes[parent as usize].parent);
    }

    /// Sets internal node `i`'s [`TreeNode::grand`] from its children (nothing for `NULL`).
    fn regrand(&mut self, i: u32) {
        if i == NULL {
            return;
        }
        let [a, b] = self.nodes[i as usize].child;
        let below = |c: u32| {
            let n = &self.nodes[c as usize];
            if n.is_leaf() { [NULL; 2] } else { n.child }
        };
        let ([w, x], [y, z]) = (below(a), below(b));
        self.nodes[i as usize].grand = [w, x, y, z];
    }

    /// Makes node `i` its children's union again; its height too.
    pub(crate) fn refit(&mut self, i: u32) {
        let [a, b] = self.nodes[i as usize].child;
        let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
        let dop = na.dop.merge(&nb.dop);
        let height = 1 + na.height.max(nb.height);
        let node = &mut self.nodes[i as usize];
        node.dop = dop;
        node.height = height;
    }
}

/// Asks for every line of internal node `i`'s children (a hint: the searches read their
/// links and bounds next, the walk up their whole k-DOPs, and the misses overlap when
/// asked for ahead).
#[inline(always)]
fn prefetch_children<const K: usize>(nodes: &[TreeNode<K>], i: u32) {
    for c in nodes[i as usize].child {
        prefetch_whole(&nodes[c as usize]);
    }
}

/// Asks for internal node `i`'s grandchildren, from its links (a hint, as
/// [`prefetch_children`]).
#[inline(always)]
fn prefetch_grandchildren<const K: usize>(nodes: &[TreeNode<K>], i: u32) {
    for g in nodes[i as usize].grand {
        if g != NULL {
            prefetch_whole(&nodes[g as usize]);
        }
    }
}

/// The area of a k-DOP for the cost: the surface area of its bounding box.
#[inline]
pub(crate) fn area<const K: usize>(d: &Dop<K>) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if let Some((lo, hi)) = box_lanes(d) {
        return box_area_sse(lo, hi);
    }
    let e = d.box_extent();
    2.0 * (e.x * e.y + e.y * e.z + e.z * e.x)
}

/// A k-DOP's box bounds as two vectors, its four lower and four upper bounds (the fourth
/// ignored), where K leaves room for the four-lane loads (K >= 8); `None` for smaller K.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn box_lanes<const K: usize>(
    d: &Dop<K>,
) -> Option<(std::arch::x86_64::__m128, std::arch::x86_64::__m128)> {
    use std::arch::x86_64::_mm_loadu_ps;
    if K < 8 {
        return None;
    }
    let p = d.b.as_ptr();
    // SAFETY: SSE is part of the x86_64 baseline; with K >= 8 the four floats from
    // `K / 2` lie inside the array (`K / 2 + 4 <= K`), and the loads are unaligned.
    unsafe { Some((_mm_loadu_ps(p), _mm_loadu_ps(p.add(K / 2)))) }
}

/// The surface area of the box from `lo` to `hi` (the first three lanes of each), with
/// the extents taken in `f64` as [`Dop::box_extent`] takes them.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn box_area_sse(lo: std::arch::x86_64::__m128, hi: std::arch::x86_64::__m128) -> f64 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe {
        let xy = _mm_sub_pd(_mm_cvtps_pd(hi), _mm_cvtps_pd(lo));
        let zw = _mm_sub_pd(
            _mm_cvtps_pd(_mm_movehl_ps(hi, hi)),
            _mm_cvtps_pd(_mm_movehl_ps(lo, lo)),
        );
        let (x, y, z) = (
            _mm_cvtsd_f64(xy),
            _mm_cvtsd_f64(_mm_unpackhi_pd(xy, xy)),
            _mm_cvtsd_f64(zw),
        );
        2.0 * (x * y + y * z + z * x)
    }
}

/// The area the sibling search and the rotations weigh: half of [`area`], reckoned in
/// `f32` (extents, products and the sum `(x·y + y·z) + z·x`). A heuristic needs no more,
/// and the search waits on one such area a level, so a shorter chain of operations is a
/// shorter search (`docs/benchmarks.md`, "Design choices"). A box inside another weighs no
/// more (rounding is monotone), so a union weighs at least its parts. Extents past about
/// 1.8e19 weigh as infinite.
#[inline]
pub(crate) fn search_area<const K: usize>(d: &Dop<K>) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let Some((lo, hi)) = box_lanes(d) {
        return box_area_sse_f32(lo, hi);
    }
    search_union_area_portable(d, d)
}

/// [`search_area`] of the union of two k-DOPs' boxes.
#[inline]
pub(crate) fn search_union_area<const K: usize>(a: &Dop<K>, b: &Dop<K>) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let (Some((alo, ahi)), Some((blo, bhi))) = (box_lanes(a), box_lanes(b)) {
        use std::arch::x86_64::{_mm_max_ps, _mm_min_ps};
        // SAFETY: SSE is part of the x86_64 baseline.
        let (lo, hi) = unsafe { (_mm_min_ps(alo, blo), _mm_max_ps(ahi, bhi)) };
        return box_area_sse_f32(lo, hi);
    }
    search_union_area_portable(a, b)
}

/// Half the surface area of the box from `lo` to `hi` (the first three lanes of each), as
/// [`search_area`] reckons it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn box_area_sse_f32(lo: std::arch::x86_64::__m128, hi: std::arch::x86_64::__m128) -> f32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE is part of the x86_64 baseline.
    unsafe {
        let e = _mm_sub_ps(hi, lo);
        // Lanes (y, z, x, w): the products x·y, y·z, z·x in the first three.
        let p = _mm_mul_ps(e, _mm_shuffle_ps(e, e, 0b11_00_10_01));
        let xy_yz = _mm_add_ss(p, _mm_shuffle_ps(p, p, 0b01));
        _mm_cvtss_f32(_mm_add_ss(xy_yz, _mm_movehl_ps(p, p)))
    }
}

/// [`search_union_area`] one coordinate at a time (every K; the tests compare the two).
#[inline]
fn search_union_area_portable<const K: usize>(a: &Dop<K>, b: &Dop<K>) -> f32 {
    let e = |i: usize| a.hi(i).max(b.hi(i)) - a.lo(i).min(b.lo(i));
    let (x, y, z) = (e(0), e(1), e(2));
    x * y + y * z + z * x
}

/// The centre of a k-DOP's bounding box.
fn centre<const K: usize>(d: &Dop<K>) -> glam::DVec3 {
    let lo = glam::DVec3::new(d.lo(0).into(), d.lo(1).into(), d.lo(2).into());
    let hi = glam::DVec3::new(d.hi(0).into(), d.hi(1).into(), d.hi(2).into());
    (lo + hi) / 2.0
}

/// Whether two k-DOPs are equal bit for bit (one pass without early exits, unlike `==` on
/// floats; a zero of the other sign counts as a change, which only walks a level further).
#[inline]
pub(crate) fn same_bits<const K: usize>(a: &Dop<K>, b: &Dop<K>) -> bool {
    a.b.iter()
        .zip(&b.b)
        .fold(0, |acc, (x, y)| acc | (x.to_bits() ^ y.to_bits()))
        == 0
}

/// A bound a leaf can have: not empty, every value finite.
fn check_bound<const K: usize>(dop: &Dop<K>) -> Result<()> {
    if dop.is_empty() || (0..K / 2).any(|i| !(dop.lo(i).is_finite() && dop.hi(i).is_finite())) {
        return Err(Error::InvalidParameter {
            name: "bound",
            reason: "a leaf's k-DOP must be finite and not empty".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
