//! Deformable objects (Klosowski et al. 1998, §6.1, "Deformable objects"): the caller
//! replaces the vertices, the triangles stay, and the hierarchy keeps its topology. Each
//! node's k-DOP is *enlarged* by a margin when it is re-made, so a node is refit only when
//! its geometry escapes that bound (van den Bergen 1997, refitting AABB trees of deformable
//! models; the enlargement is the fat bound of dynamic trees), or stands several margins
//! off it (the shape shrank or drew back). A leaf is enlarged by the margin times its own
//! size, a leaf's parent by the margin of a typical leaf, the nodes above not at all (their
//! children's room is theirs): margins of each node's own size would add up level by level
//! to the root. Parents are checked against their children's bounds, so a refit climbs
//! only as far as the escape reaches.
//!
//! What cannot be kept across a deformation is re-made or dropped. The own corners of
//! nodes that keep their triangles' vertices are re-made in the refit's visit. The leaves'
//! byte codes are dropped at the first deformation, since re-encoding them every frame was
//! a large share of the refit (`docs/benchmarks.md`, "Deformable refit"); a query that
//! refines a leaf bounds its triangles from their corners instead (`Part::refined_bound`).
//! The convex hull of the root's climb is not re-made: the root is re-bounded from its
//! slabs. Refit nodes that kept their k-DOP's corners keep none ([`CornerSet::Slabs`]):
//! enumerating a k-DOP's corners costs far more than refitting it. The object gets a new
//! identity, so no query state reuses a bound or a placed triangle of the old geometry.

use super::leaf::refit_leaf;
use super::{
    CornerArrays, CornerSet, FlyingObject, LANES, NEXT_ID, inner_area, moved, own_corners,
    round_points_at, write_lanes, write_points, write_points_at,
};
use crate::dop::Dop;
use crate::env::tree::area;
use crate::error::{Error, Result};
use crate::hierarchy::{Bvh, END, LEAF, Node, leaf_span};
use crate::hint::{prefetch, prefetch_whole};
use crate::mesh::{check_point, point_in_range};
use glam::DVec3;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

/// What one [`FlyingObject::deform`] (or [`FlyingObject::deform_some`]) did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeformStats {
    /// Vertices whose position changed (bit for bit); every vertex when a rebuilt
    /// hierarchy took over.
    pub moved_vertices: u32,
    /// Nodes of the hierarchy.
    pub nodes: u32,
    /// Nodes whose bound was re-made because their geometry left it.
    pub refit: u32,
    /// Leaves of the hierarchy.
    pub leaves: u32,
    /// Of those, leaves whose triangles left their enlarged bound.
    pub escaped_leaves: u32,
    /// The tree's surface-area cost (its inner nodes' box areas over the root's) over the
    /// same as built: how far the deformations so far have worn the hierarchy, whose
    /// topology was chosen for the rest shape. A rebuild ([`FlyingObject::new`] of
    /// [`FlyingObject::mesh`]) brings it back to 1.
    pub cost_ratio: f64,
    /// How far the subtrees [`FlyingObject::renew`] rebuilds have grown into each other:
    /// their roots' summed box area over the area of the box around them all, over the
    /// same as built (the cost ratio of the whole tree when it is too small to have such
    /// subtrees). Renewing them cannot bring it down; only a rebuild of the whole
    /// hierarchy can.
    pub top_cost_ratio: f64,
    /// The work [`crate::World::deform_shape`] spent renewing the hierarchy afterwards
    /// ([`FlyingObject::renew`], [`crate::Renewal::work`]; never set by
    /// [`FlyingObject::deform`] itself).
    pub renewed: u64,
    /// Whether a rebuild of the whole hierarchy is under way after this call, in
    /// [`crate::World::deform_shape`] (never set by [`FlyingObject::deform`] itself).
    pub rebuilding: bool,
    /// Whether a rebuilt whole hierarchy took over in this call: one that
    /// [`FlyingObject::renew`] finished, or [`crate::World::deform_shape`] built without a
    /// renewal budget.
    pub rebuilt: bool,
}

/// Buffers a deforming object keeps between deformations, and what its topology gives
/// once: each node's link, the subtrees refit in parallel, and the vertices of the nodes
/// that keep their own corners.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeformScratch<const K: usize> {
    /// Per vertex, a bit: whether this deformation moved it.
    pub(super) moved: Vec<u64>,
    /// Per vertex, a bit: whether `deform_some` has met it in its list, or a renewal's
    /// `index_leaves` has listed its leaves (all clear between calls).
    listed: Vec<u64>,
    /// Vertex `v`'s triangles, by original index, are `tris_of[tris_at[v]..tris_at[v + 1]]`:
    /// with `leaf_of`, the leaves a moved vertex touches.
    tris_at: Vec<u32>,
    tris_of: Vec<u32>,
    /// Per original triangle, the slot of the leaf that holds it.
    leaf_of: Vec<u32>,
    /// Vertex `v`'s distinct leaves are `leaves_of[tris_at[v]..leaves_end[v]]` (room for
    /// one a triangle; most vertices have one or two): the marking reads these few words
    /// a moved vertex rather than its triangles and their leaves, which after another
    /// program's frame come from memory.
    leaves_of: Vec<u32>,
    leaves_end: Vec<u32>,
    /// Per node slot, a bit: whether a sparse refit is to visit it.
    marks: Marks,
    /// Per piece, the nodes its last sparse refit visited (whose flags are cleared after).
    visited: Vec<Vec<u32>>,
    /// Tests force one refit or the other: `Some(true)` sparse, `Some(false)` dense.
    #[cfg(test)]
    pub(super) force_sparse: Option<bool>,
    /// Per node, its link (first child, or `LEAF | first triangle`): the topology without
    /// the bounds, so that skipping a still subtree does not stream its k-DOPs.
    pub(super) links: Vec<u32>,
    /// Per node, what this deformation did to it: [`REFIT`] and [`TOUCHED`].
    pub(super) flags: Vec<u8>,
    /// Disjoint subtrees refit in parallel, in slot order: each one's descendants fill one
    /// range of node slots.
    pub(super) pieces: Vec<Piece>,
    /// What each piece did this deformation (kept to add them in a fixed order).
    tallies: Vec<Tally>,
    /// The nodes outside every piece's range (the pieces' roots and their ancestors), in
    /// descending slot order: refit after the pieces.
    top: Vec<u32>,
    /// Node `i`'s distinct corners are the vertices `own[own_at[i]..own_at[i + 1]]`: listed
    /// for every leaf that has few enough, and for the inner nodes that keep their own.
    pub(super) own: Vec<u32>,
    pub(super) own_at: Vec<u32>,
    /// How far the pieces overlapped when they were cut ([`DeformScratch::overlap`]):
    /// what [`DeformStats::top_cost_ratio`] compares with.
    pub(super) top_built: f64,
    /// The margin of the last deformation, which renewed nodes are grown by.
    pub(super) margin: f64,
    /// The mean largest box extent of the leaves as built (or taken over): an inner node's
    /// room to move is the margin times this ([`inner_pad`]).
    pub(super) leaf_extent: f64,
    /// Buffers of [`FlyingObject::renew`], kept so that renewing allocates nothing once
    /// grown.
    pub(super) renew: super::renew::RenewScratch,
}

/// A subtree refit on its own, and rebuilt on its own once worn ([`FlyingObject::renew`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Piece {
    /// Its descendants' node slots.
    pub(super) nodes: (u32, u32),
    /// Its root's slot (a top node).
    pub(super) root: u32,
    /// The summed box area of its inner descendants now, and that over its root's area
    /// when it was built or last renewed.
    pub(super) area: f64,
    pub(super) built: f64,
}

impl Piece {
    /// Measures the piece as it stands, its cost now being its cost as built (after it is
    /// cut or renewed).
    pub(super) fn measure<const K: usize>(&mut self, nodes: &[Node<K>]) {
        self.area = inner_area(&nodes[self.nodes.0 as usize..self.nodes.1 as usize]);
        self.built = self.area / area(&nodes[self.root as usize].dop).max(f64::MIN_POSITIVE);
    }

    /// How far deformations have worn the piece since it was built: its surface-area cost
    /// now over then, given its root's area now.
    pub(super) fn wear(&self, root_area: f64) -> f64 {
        if self.built > 0.0 {
            self.area / root_area.max(f64::MIN_POSITIVE) / self.built
        } else {
            1.0
        }
    }
}

/// What a refit did over some nodes; pieces' tallies are summed in slot order so that the
/// cost ratio does not depend on the number of threads.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    refit: u32,
    escaped: u32,
    /// Change of the inner nodes' summed box area.
    area: f64,
}

/// The geometry every piece reads.
struct Shared<'a, const K: usize> {
    links: &'a [u32],
    tris: &'a [[u32; 3]],
    ids: &'a [u32],
    vertices: &'a [DVec3],
    /// Per vertex, a bit: whether it moved.
    moved: &'a [u64],
    /// Per node, its distinct corners where listed (`DeformScratch::own`).
    own: &'a [u32],
    own_at: &'a [u32],
    /// Where each node's corners start in the corner arrays ([`CornerArrays`]).
    vstart: &'a [u32],
    own_start: &'a [u32],
    margin: f64,
    /// An inner node's room to move ([`inner_pad`]).
    pad: f32,
    /// Whether every vertex moved: then every leaf did, without a look at its corners.
    all_moved: bool,
}

impl<const K: usize> Shared<'_, K> {
    /// Node `i`'s distinct corners, where listed.
    #[inline]
    fn own(&self, i: usize) -> &[u32] {
        &self.own[self.own_at[i] as usize..self.own_at[i + 1] as usize]
    }

    /// Whether vertex `v` moved.
    #[inline]
    fn moved(&self, v: u32) -> bool {
        self.moved[v as usize / 64] >> (v % 64) & 1 != 0
    }
}

/// A bit per node slot: whether a sparse refit is to visit it. Each thread that marks
/// writes a set of its own, so that a new mark is a plain store: a locked operation on a
/// shared word is a full barrier, which the marking waited on at every new mark. The walks
/// take the union; pieces' slot ranges are not aligned to words, so two walks may share a
/// word.
#[derive(Debug, Default)]
struct Marks {
    sets: Vec<Vec<AtomicU64>>,
}

impl Clone for Marks {
    fn clone(&self) -> Self {
        let copy = |set: &Vec<AtomicU64>| {
            set.iter()
                .map(|w| AtomicU64::new(w.load(AtomicOrdering::Relaxed)))
                .collect()
        };
        Marks {
            sets: self.sets.iter().map(copy).collect(),
        }
    }
}

impl Marks {
    /// Room for `n` slots, all clear, in one set (more come with [`Marks::for_threads`]).
    fn reset(&mut self, n: usize) {
        self.sets.truncate(1);
        if self.sets.is_empty() {
            self.sets.push(Vec::new());
        }
        self.sets[0].clear();
        self.sets[0].resize_with(n.div_ceil(64), AtomicU64::default);
    }

    /// Words in each set (every set has as many as the first).
    fn words(&self) -> usize {
        self.sets.first().map_or(0, Vec::len)
    }

    /// A set for each of `threads` threads (rayon's pool that marks), all clear.
    fn for_threads(&mut self, threads: usize) {
        let words = self.words();
        while self.sets.len() < threads.max(1) {
            self.sets.push(
                std::iter::repeat_with(AtomicU64::default)
                    .take(words)
                    .collect(),
            );
        }
    }

    /// The set the calling thread of rayon's pool writes alone (the pool's threads are
    /// counted by [`Marks::for_threads`] before they mark).
    fn own_set(&self) -> &[AtomicU64] {
        let i = rayon::current_thread_index().unwrap_or(0);
        &self.sets[i % self.sets.len()]
    }

    /// Sets slot `i`'s mark in `set`, which the calling thread alone writes; says whether
    /// it was clear before (so that the caller goes on from it).
    #[inline]
    fn set(set: &[AtomicU64], i: usize) -> bool {
        let (w, bit) = (&set[i / 64], 1u64 << (i % 64));
        let old = w.load(AtomicOrdering::Relaxed);
        if old & bit != 0 {
            return false;
        }
        w.store(old | bit, AtomicOrdering::Relaxed);
        true
    }

    /// Sets slot `i`'s mark in `set`, which the calling thread alone writes, without
    /// looking first.
    #[inline]
    fn or(set: &[AtomicU64], i: usize) {
        let w = &set[i / 64];
        w.store(
            w.load(AtomicOrdering::Relaxed) | 1u64 << (i % 64),
            AtomicOrdering::Relaxed,
        );
    }

    /// Clears slot `i`'s mark in every set.
    fn clear(&mut self, i: usize) {
        for set in &mut self.sets {
            *set[i / 64].get_mut() &= !(1u64 << (i % 64));
        }
    }

    /// Whether no mark is set.
    #[cfg(test)]
    fn all_clear(&self) -> bool {
        self.sets
            .iter()
            .flatten()
            .all(|w| w.load(AtomicOrdering::Relaxed) == 0)
    }

    /// The marks of word `w` among the slots `lo..hi` (the union of the sets), taken
    /// (cleared) by the thread that alone walks those slots: a word wholly inside them is
    /// cleared without a locked operation.
    #[inline]
    fn take_word(&self, w: usize, lo: usize, hi: usize) -> u64 {
        let from = w * 64;
        let mut mask = u64::MAX;
        if hi < from + 64 {
            mask &= (1u64 << (hi - from)) - 1;
        }
        if lo > from {
            mask &= !((1u64 << (lo - from)) - 1);
        }
        let mut union = 0;
        for set in &self.sets {
            let word = &set[w];
            let bits = word.load(AtomicOrdering::Relaxed) & mask;
            if bits != 0 {
                if mask == u64::MAX {
                    word.store(0, AtomicOrdering::Relaxed);
                } else {
                    word.fetch_and(!bits, AtomicOrdering::Relaxed);
                }
                union |= bits;
            }
        }
        union
    }
}

/// What one refit writes: the nodes `base..base + nodes.len()` and their corner
/// entries, whose lanes start at `vbase` in [`CornerArrays::verts`] and whose single
/// points start at `obase` in [`CornerArrays::own_pts`].
struct Span<'a, const K: usize> {
    base: usize,
    nodes: &'a mut [Node<K>],
    flags: &'a mut [u8],
    sets: &'a mut [CornerSet],
    slack: &'a mut [(f64, f64)],
    vbase: usize,
    verts: &'a mut [[[f32; LANES]; 3]],
    obase: usize,
    own_pts: &'a mut [[f32; 3]],
}

/// The corners of one node, gathered from the vertices by index: at most
/// [`super::MAX_VERTS`] (a node's listed corners never exceed it), in a plain array
/// rather than a growable vector that checks its room on every push.
struct Gathered {
    pts: [DVec3; super::MAX_VERTS],
    len: usize,
}

impl Gathered {
    fn new() -> Self {
        Gathered {
            pts: [DVec3::ZERO; super::MAX_VERTS],
            len: 0,
        }
    }

    fn clear(&mut self) {
        self.len = 0;
    }

    /// The vertices `ids` names, in place of what it held.
    #[inline(always)]
    fn gather(&mut self, ids: &[u32], vertices: &[DVec3]) {
        let room = &mut self.pts[..ids.len()];
        for (slot, &v) in room.iter_mut().zip(ids) {
            *slot = vertices[v as usize];
        }
        self.len = ids.len();
    }

    fn as_slice(&self) -> &[DVec3] {
        &self.pts[..self.len]
    }
}

/// From this many listed vertices, an increasing list of [`FlyingObject::deform_some`] is
/// applied on rayon's pool, in slices of at most this many ([`put_list`]). Tests and
/// fuzzing use small objects: a smaller count there, so that lists are cut. At least 128,
/// so that a list longer than it is cut with entries on both sides.
#[cfg(not(any(test, fuzzing)))]
const PARALLEL_LIST: usize = 4096;
#[cfg(any(test, fuzzing))]
const PARALLEL_LIST: usize = 128;
const _: () = assert!(PARALLEL_LIST >= 128);

/// What a check of part of a [`FlyingObject::deform_some`] list found: its first fault
/// (an index past the vertices or a position out of range; `usize::MAX` for none),
/// whether its indices increase, and its first and last index. Slices checked apart are
/// joined in list order by [`Listed::then`].
#[derive(Clone, Copy, Debug)]
struct Listed {
    fault: usize,
    increasing: bool,
    /// First and last index, `None` for no entries.
    ends: Option<(u32, u32)>,
}

impl Listed {
    const EMPTY: Listed = Listed {
        fault: usize::MAX,
        increasing: true,
        ends: None,
    };

    /// Entry `at`, index `v`, at fault or not.
    #[inline]
    fn one(at: usize, v: u32, fault: bool) -> Listed {
        Listed {
            fault: if fault { at } else { usize::MAX },
            increasing: true,
            ends: Some((v, v)),
        }
    }

    /// The part of a list from entry `base` on: `indices` and their `positions`, for a
    /// shape of `n` vertices.
    fn of(base: usize, indices: &[u32], positions: &[DVec3], n: usize) -> Listed {
        indices
            .iter()
            .zip(positions)
            .enumerate()
            .fold(Listed::EMPTY, |l, (j, (&v, &p))| {
                let fault = v as usize >= n || !point_in_range(p);
                l.then(Listed::one(base + j, v, fault))
            })
    }

    /// This part followed by `next`.
    #[inline]
    fn then(self, next: Listed) -> Listed {
        let (ends, step) = match (self.ends, next.ends) {
            (Some((first, last)), Some((head, tail))) => (Some((first, tail)), last < head),
            (a, b) => (a.or(b), true),
        };
        Listed {
            fault: self.fault.min(next.fault),
            increasing: self.increasing && next.increasing && step,
            ends,
        }
    }
}

/// Stores `p` in `slot` and sets `bit` of `bits` if it moves the vertex (bit for bit);
/// says whether it did.
#[inline]
fn put(slot: &mut DVec3, p: DVec3, bits: &mut u64, bit: u64) -> bool {
    let moved = p.to_array().map(f64::to_bits) != slot.to_array().map(f64::to_bits);
    if moved {
        *slot = p;
        *bits |= bit;
    }
    moved
}

/// Applies an increasing list of [`FlyingObject::deform_some`] (no vertex twice) to the
/// vertices from word `base` of moved bits on (`verts`, `moved`): halves of the list cut
/// between two words go in parallel, each with the vertices and words it alone writes,
/// so the work follows the list, not the object. Returns how many moved and the largest
/// coordinate given.
fn put_list(
    verts: &mut [DVec3],
    moved: &mut [u64],
    base: usize,
    indices: &[u32],
    positions: &[DVec3],
) -> (usize, f64) {
    if indices.len() <= PARALLEL_LIST {
        let (mut count, mut magnitude) = (0, 0.0f64);
        for (&v, &p) in indices.iter().zip(positions) {
            let v = v as usize - base * 64;
            magnitude = magnitude.max(p.abs().max_element());
            count += usize::from(put(&mut verts[v], p, &mut moved[v / 64], 1 << (v % 64)));
        }
        return (count, magnitude);
    }
    // The middle entry's word and all after it go right; the list increases and is over
    // 128 long, so at most 63 of the 64 or more entries before the middle one share its
    // word, and the left half is not empty.
    let word = indices[indices.len() / 2] as usize / 64;
    let cut = indices.partition_point(|&v| (v as usize / 64) < word);
    let (vl, vr) = verts.split_at_mut((word - base) * 64);
    let (ml, mr) = moved.split_at_mut(word - base);
    let (il, ir) = indices.split_at(cut);
    let (pl, pr) = positions.split_at(cut);
    let (a, b) = rayon::join(
        || put_list(vl, ml, base, il, pl),
        || put_list(vr, mr, word, ir, pr),
    );
    (a.0 + b.0, a.1.max(b.1))
}

impl<const K: usize> FlyingObject<K> {
    /// Replaces the object's vertex positions (same count, same triangles) and refits its
    /// hierarchy: a node whose geometry left its bound gets the new exact bound enlarged
    /// by `margin` times its largest box extent, so that the next small deformations leave
    /// it alone. Queries afterwards are exact for the new geometry.
    ///
    /// A deformed object's root is re-bounded from its slabs, not hill-climbed on its
    /// convex hull (which is not re-made): its root bound contains it without being tight.
    /// An object that deforms frame after frame is best built with
    /// [`BuildOptions::DEFORMING`](crate::BuildOptions::DEFORMING): fewer, fuller leaves
    /// for the refit to re-make.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a vertex count other than the object's or a
    /// negative or non-finite margin; [`Error::NonFiniteCoordinate`] and
    /// [`Error::CoordinateOutOfRange`] name the first bad vertex. The object is unchanged
    /// then.
    ///
    /// # Complexity
    /// Linear in the vertices and in the nodes (disjoint subtrees in parallel on rayon's
    /// pool); a leaf none of whose vertices moved costs a look at its corners. The first
    /// deformation also lists what the topology gives once.
    pub fn deform(&mut self, vertices: &[DVec3], margin: f64) -> Result<DeformStats> {
        let expected = self.part.bvh.vertices.len();
        if vertices.len() != expected {
            return Err(Error::InvalidParameter {
                name: "vertices",
                reason: format!(
                    "{} vertices given for a shape of {expected} (a deformation keeps them all)",
                    vertices.len()
                ),
            });
        }
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "margin",
                reason: format!("{margin} is not a finite share ≥ 0"),
            });
        }
        let had_scratch = self.deform.is_some();
        let mut scratch = self
            .deform
            .take()
            .unwrap_or_else(|| DeformScratch::new(self));
        // One pass reads: which vertices moved (bit for bit, so that the stored vertices are
        // the given ones), the first bad one, the largest coordinate, how many moved.
        scratch.moved.resize(expected.div_ceil(64), 0);
        let (bad, magnitude, count) = scratch
            .moved
            .par_iter_mut()
            .zip(vertices.par_chunks(64))
            .zip(self.part.bvh.vertices.par_chunks(64))
            .enumerate()
            .with_min_len(64)
            .map(|(w, ((bits, new), old))| {
                let word = moved::scan(new, old);
                *bits = word.moved;
                let bad = if word.bad == 0 {
                    usize::MAX
                } else {
                    w * 64 + word.bad.trailing_zeros() as usize
                };
                (bad, word.magnitude, word.moved.count_ones() as usize)
            })
            .reduce(
                || (usize::MAX, 0.0, 0),
                |a, b| (a.0.min(b.0), a.1.max(b.1), a.2 + b.2),
            );
        if let Some(e) = vertices.get(bad).and_then(|&v| check_point(v, bad).err()) {
            // Unchanged: an object never deformed stays one (its root still climbs).
            if had_scratch {
                self.deform = Some(scratch);
            }
            return Err(e);
        }
        self.part
            .bvh
            .vertices
            .par_chunks_mut(64)
            .zip(vertices.par_chunks(64))
            .zip(&scratch.moved)
            .with_min_len(64)
            .for_each(|((to, from), &bits)| {
                if bits == u64::MAX {
                    // All 64 moved (a whole chunk): one copy rather than one per bit.
                    to.copy_from_slice(from);
                    return;
                }
                let mut b = bits;
                while b != 0 {
                    let k = b.trailing_zeros() as usize;
                    b &= b - 1;
                    to[k] = from[k];
                }
            });
        Ok(self.refit_moved(scratch, count, magnitude, margin))
    }

    /// Moves some of the object's vertices: vertex `indices[i]` to `positions[i]`, the
    /// others kept; then refits as [`FlyingObject::deform`] does. For a body whose
    /// deformation is local (a dent, a pressed cushion, a cut): the call costs what the
    /// listed vertices and their leaves do, where `deform` first reads every vertex. A
    /// vertex listed twice takes its last position.
    ///
    /// The object's largest coordinate (which sizes the rounding margins of queries) is
    /// kept as an upper bound, the largest of the old one and the new positions', not
    /// recomputed over every vertex: queries stay exact, and may prune a hair less than
    /// after a full `deform` to the same vertices.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when the two lists differ in length, for an index that
    /// names no vertex (it names its place in `indices`), or a negative or non-finite
    /// margin; [`Error::NonFiniteCoordinate`] and [`Error::CoordinateOutOfRange`] name
    /// the first bad vertex. The object is unchanged then.
    ///
    /// # Example
    /// ```
    /// use glam::DVec3;
    /// use kdop::{FlyingObject, Mesh};
    ///
    /// let mesh = Mesh::new(
    ///     vec![DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::Z],
    ///     vec![[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]],
    /// )?;
    /// let mut tet = FlyingObject::<18>::new(mesh, &Default::default())?;
    /// let stats = tet.deform_some(&[3], &[DVec3::new(0.0, 0.0, 2.0)], 0.05)?;
    /// assert_eq!(stats.moved_vertices, 1);
    /// # Ok::<(), kdop::Error>(())
    /// ```
    pub fn deform_some(
        &mut self,
        indices: &[u32],
        positions: &[DVec3],
        margin: f64,
    ) -> Result<DeformStats> {
        let n = self.part.bvh.vertices.len();
        if indices.len() != positions.len() {
            return Err(Error::InvalidParameter {
                name: "positions",
                reason: format!(
                    "{} positions for {} indices (one each)",
                    positions.len(),
                    indices.len()
                ),
            });
        }
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "margin",
                reason: format!("{margin} is not a finite share ≥ 0"),
            });
        }
        // One pass checks the lists and learns whether the indices increase (then no
        // vertex is listed twice, and a long list can go in parallel); a long list is
        // checked in slices on the pool, each entry read once either way.
        let list = if indices.len() <= PARALLEL_LIST {
            Listed::of(0, indices, positions, n)
        } else {
            indices
                .par_chunks(PARALLEL_LIST)
                .zip(positions.par_chunks(PARALLEL_LIST))
                .enumerate()
                .map(|(k, (iv, ip))| Listed::of(k * PARALLEL_LIST, iv, ip, n))
                .reduce(|| Listed::EMPTY, Listed::then)
        };
        if list.fault != usize::MAX {
            let (at, v, p) = (list.fault, indices[list.fault], positions[list.fault]);
            if v as usize >= n {
                return Err(Error::InvalidParameter {
                    name: "indices",
                    reason: format!("indices[{at}] is {v}, and the shape has {n} vertices"),
                });
            }
            // Out of range, so this is an error.
            check_point(p, v as usize)?;
        }
        let increasing = list.increasing;
        let mut scratch = self
            .deform
            .take()
            .unwrap_or_else(|| DeformScratch::new(self));
        scratch.moved.clear();
        scratch.moved.resize(n.div_ceil(64), 0);
        let vertices = &mut self.part.bvh.vertices;
        let (count, magnitude) = if increasing {
            put_list(vertices, &mut scratch.moved, 0, indices, positions)
        } else {
            scratch.listed.resize(n.div_ceil(64), 0);
            let (mut count, mut magnitude) = (0, 0.0f64);
            // From the back, so that a vertex listed twice is decided by its last position
            // alone (one put back where it was has not moved).
            for (&v, &p) in indices.iter().zip(positions).rev() {
                let v = v as usize;
                let (word, bit) = (v / 64, 1u64 << (v % 64));
                if scratch.listed[word] & bit != 0 {
                    continue;
                }
                scratch.listed[word] |= bit;
                magnitude = magnitude.max(p.abs().max_element());
                count += usize::from(put(&mut vertices[v], p, &mut scratch.moved[word], bit));
            }
            for &v in indices {
                scratch.listed[v as usize / 64] = 0;
            }
            (count, magnitude)
        };
        let magnitude = magnitude.max(self.magnitude);
        Ok(self.refit_moved(scratch, count, magnitude, margin))
    }

    /// What [`FlyingObject::deform`] and [`FlyingObject::deform_some`] share once the
    /// vertices are stored: `count` of them moved, marked in `scratch.moved`, and the
    /// object's largest coordinate is now `magnitude`. Refits, takes over a finished
    /// renewal, and keeps the scratch.
    fn refit_moved(
        &mut self,
        mut scratch: DeformScratch<K>,
        count: usize,
        magnitude: f64,
        margin: f64,
    ) -> DeformStats {
        let expected = self.part.bvh.vertices.len();
        // Queries bound a refined leaf's triangles from their corners from now on.
        self.part.codes = Vec::new();
        // A whole tree rebuilt by `renew` takes over here, every node re-made.
        let took_over = self.take_over(&mut scratch);
        if took_over {
            scratch.moved.fill(u64::MAX);
            if expected % 64 != 0 {
                scratch.moved[expected / 64] = (1u64 << (expected % 64)) - 1;
            }
        }
        // Few moved vertices: their leaves are marked and only those and their ancestors
        // visited. Many: one pass over every node reads less than the marking would.
        let sparse = !took_over && count <= expected / 2;
        #[cfg(test)]
        let sparse = scratch.force_sparse.unwrap_or(sparse);
        if sparse {
            scratch.mark_leaves(&self.parent);
        }
        let all_moved = took_over || count == expected;
        let mut stats = self.refit(&mut scratch, margin, sparse, all_moved);
        if took_over {
            self.settle_take_over(&mut scratch);
            (stats.cost_ratio, stats.top_cost_ratio) = self.cost_ratios_with(&scratch);
            stats.rebuilt = true;
        }
        stats.moved_vertices = if took_over { expected } else { count } as u32;
        self.top[0].dop = self.part.bvh.root_dop();
        self.magnitude = magnitude;
        self.id = NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed);
        self.deform = Some(scratch);
        stats
    }

    /// Lists what the topology gives once for deformations ([`DeformScratch`]) ahead of
    /// the first, so that it costs that deformation nothing: for a hierarchy built on a
    /// thread of its own to take over a deforming shape. The object counts as deformed
    /// from now on (its root is re-bounded from its slabs).
    pub(crate) fn prepare_deform(&mut self) {
        if self.deform.is_none() {
            self.deform = Some(DeformScratch::new(self));
        }
    }

    /// Every node bottom-up (children come after their parent): a leaf whose vertices
    /// moved gets its triangles' new bound, re-made only when the stored one does not
    /// contain it; an inner node is re-made only when its stored bound does not contain
    /// its children's. The corners are re-made in the same visit: nodes that keep their
    /// own triangles' corners read the moved vertices, and refit nodes that kept their
    /// k-DOP's corners keep none from now on ([`CornerSet::Slabs`]). The pieces run in
    /// parallel, then the nodes above them.
    ///
    /// A `sparse` refit visits in each piece only the nodes marked in
    /// [`DeformScratch::marks`] (the leaves of moved vertices, by
    /// [`DeformScratch::mark_leaves`]) and their ancestors; a dense one visits
    /// every node. Both leave the same bounds, corners and counts. `all_moved` says every
    /// vertex moved, so every leaf did.
    fn refit(
        &mut self,
        scratch: &mut DeformScratch<K>,
        margin: f64,
        sparse: bool,
        all_moved: bool,
    ) -> DeformStats {
        let FlyingObject { part, stored, .. } = self;
        let Bvh {
            nodes,
            vertices,
            tris,
            ids,
        } = &mut part.bvh;
        let CornerArrays {
            vstart,
            verts,
            own_start,
            own_pts,
            slack,
            corners,
        } = stored;
        let leaf_extent = scratch.leaf_extent;
        let DeformScratch {
            moved,
            links,
            flags,
            pieces,
            tallies,
            top,
            own,
            own_at,
            marks,
            visited,
            ..
        } = scratch;
        let shared = Shared {
            links,
            tris,
            ids,
            vertices,
            moved,
            own,
            own_at,
            vstart,
            own_start,
            margin,
            pad: inner_pad(margin, leaf_extent),
            all_moved,
        };
        // All the nodes: cut into the pieces, and again afterwards for the nodes above them.
        macro_rules! whole {
            () => {
                Span {
                    base: 0,
                    nodes: &mut nodes[..],
                    flags: &mut flags[..],
                    sets: &mut corners[..],
                    slack: &mut slack[..],
                    vbase: 0,
                    verts: &mut verts[..],
                    obase: 0,
                    own_pts: &mut own_pts[..],
                }
            };
        }
        let mut rest = whole!();
        let walked = &*marks;
        rayon::scope(|scope| {
            for ((p, tally), seen) in pieces
                .iter()
                .zip(tallies.iter_mut())
                .zip(visited.iter_mut())
            {
                let (lo, hi) = (p.nodes.0 as usize, p.nodes.1 as usize);
                let mut span = rest.split_off(lo, hi, &shared);
                let shared = &shared;
                scope.spawn(move |_| {
                    *tally = if sparse {
                        span.refit_sparse(lo, hi, walked, seen, shared)
                    } else {
                        span.refit((lo..hi).rev(), shared)
                    };
                });
            }
        });
        let last = whole!().refit(top.iter().map(|&i| i as usize), &shared);
        // Every flag clear again, and every mark (the top's leaves may be marked), for the
        // next deformation's sparse refit.
        if sparse {
            for seen in visited.iter() {
                for &i in seen {
                    flags[i as usize] = 0;
                }
            }
            for &i in top.iter() {
                flags[i as usize] = 0;
                marks.clear(i as usize);
            }
        } else {
            flags.fill(0);
        }
        let mut stats = DeformStats {
            nodes: nodes.len() as u32,
            leaves: (nodes.len() as u32).div_ceil(2),
            ..DeformStats::default()
        };
        for (t, p) in tallies.iter().zip(pieces.iter_mut()) {
            p.area += t.area;
        }
        for t in tallies.iter().chain([&last]) {
            stats.refit += t.refit;
            stats.escaped_leaves += t.escaped;
            self.inner_area += t.area;
        }
        scratch.margin = margin;
        (stats.cost_ratio, stats.top_cost_ratio) = self.cost_ratios_with(scratch);
        stats
    }

    /// The tree's surface-area cost over its cost as built, and the pieces' overlap over
    /// theirs ([`DeformStats::cost_ratio`], [`DeformStats::top_cost_ratio`]).
    pub(super) fn cost_ratios_with(&self, scratch: &DeformScratch<K>) -> (f64, f64) {
        let root = area(&self.part.bvh.nodes[0].dop).max(f64::MIN_POSITIVE);
        if self.built_cost <= 0.0 {
            return (1.0, 1.0); // One leaf: nothing to wear.
        }
        let whole = self.inner_area / root / self.built_cost;
        let top = if scratch.top_built > 0.0 {
            scratch.overlap(&self.part.bvh.nodes) / scratch.top_built
        } else {
            whole
        };
        (whole, top)
    }
}

impl<'a, const K: usize> Span<'a, K> {
    /// The span of the nodes `lo..hi` (all at or after this span's start), cut off the
    /// front of this one, which keeps the nodes from `hi` on.
    fn split_off(&mut self, lo: usize, hi: usize, s: &Shared<K>) -> Span<'a, K> {
        fn cut<'b, T>(rest: &mut &'b mut [T], from: usize, to: usize) -> &'b mut [T] {
            let (part, after) = std::mem::take(rest)[from..].split_at_mut(to - from);
            *rest = after;
            part
        }
        let (b, vb, ob) = (self.base, self.vbase, self.obase);
        let (v0, v1) = (s.vstart[lo] as usize, s.vstart[hi] as usize);
        let (o0, o1) = (s.own_start[lo] as usize, s.own_start[hi] as usize);
        let span = Span {
            base: lo,
            nodes: cut(&mut self.nodes, lo - b, hi - b),
            flags: cut(&mut self.flags, lo - b, hi - b),
            sets: cut(&mut self.sets, lo - b, hi - b),
            slack: cut(&mut self.slack, lo - b, hi - b),
            vbase: v0,
            verts: cut(&mut self.verts, v0 - vb, v1 - vb),
            obase: o0,
            own_pts: cut(&mut self.own_pts, o0 - ob, o1 - ob),
        };
        (self.base, self.vbase, self.obase) = (hi, v1, o1);
        span
    }

    /// Refits the nodes `order` names (each after its children), returning what it did.
    fn refit(&mut self, order: impl Iterator<Item = usize> + Clone, s: &Shared<K>) -> Tally {
        let mut tally = Tally::default();
        // First which leaves have a moved vertex, in one pass over their corner lists, so
        // that only their corners are asked for ahead and gathered.
        for i in order.clone() {
            if s.links[i] & LEAF != 0 {
                let moved = s.all_moved || s.own(i).iter().any(|&v| s.moved(v));
                self.flags[i - self.base] = if moved { TOUCHED } else { 0 };
            }
        }
        let mut pts = Gathered::new();
        for i in order {
            // The corners of a moved leaf a few nodes on: gathered by index, they are the
            // wait.
            if let Some(j) = i.checked_sub(AHEAD)
                && j >= self.base
                && s.links[j] & LEAF != 0
                && self.flags[j - self.base] & TOUCHED != 0
            {
                for &v in s.own(j) {
                    prefetch_whole(&s.vertices[v as usize]);
                }
            }
            self.visit(i, &mut pts, &mut tally, s);
        }
        tally
    }

    /// Refits the marked nodes among this span's, `lo..hi` (a piece's), highest slot first
    /// (children come after their parent); clears the marks and lists the visited nodes in
    /// `seen`. The marks are the leaves of moved vertices and all their ancestors
    /// ([`DeformScratch::mark_leaves`]): the nodes it skips are those a dense refit would
    /// leave as they are, and it visits the others in the same order.
    fn refit_sparse(
        &mut self,
        lo: usize,
        hi: usize,
        marks: &Marks,
        seen: &mut Vec<u32>,
        s: &Shared<K>,
    ) -> Tally {
        let mut tally = Tally::default();
        let mut pts = Gathered::new();
        seen.clear();
        if lo == hi {
            return tally;
        }
        let mut scout = Scout::new(lo, hi);
        while let Some(i) = scout.next(marks, self, s) {
            seen.push(i as u32);
            if s.links[i] & LEAF != 0 {
                // Marked by a moved vertex of one of its triangles.
                self.flags[i - self.base] = TOUCHED;
            }
            self.visit(i, &mut pts, &mut tally, s);
        }
        tally
    }

    /// Refits node `i` after its children: a leaf flagged [`TOUCHED`] gets its triangles'
    /// bound, an inner node its children's if one was [`REFIT`], each re-made only when the
    /// stored bound does not contain it; then its flags and corners.
    #[inline]
    fn visit(&mut self, i: usize, pts: &mut Gathered, tally: &mut Tally, s: &Shared<K>) {
        let link = s.links[i];
        let at = i - self.base;
        let mut refit = false;
        pts.clear();
        let touched = if link & LEAF != 0 {
            let own = s.own(i);
            if self.sets[at] == CornerSet::OwnLanes && !own.is_empty() {
                // The common leaf: bounded, re-made and its corners rounded in one pass.
                let touched = self.flags[at] & TOUCHED != 0;
                if touched {
                    let o = self.own_range(i, s);
                    let node = &mut self.nodes[at];
                    let (room, slack) = (&mut self.own_pts[o], &mut self.slack[at]);
                    refit = refit_leaf(&mut node.dop, own, s.vertices, s.margin, room, slack);
                }
                tally.escaped += u32::from(refit);
                tally.refit += u32::from(refit);
                self.flags[at] = if refit { REFIT } else { 0 } | if touched { TOUCHED } else { 0 };
                return;
            }
            let exact = self.leaf_bound(i, (link & !LEAF) as usize, pts, s);
            if let Some(exact) = exact {
                let node = &mut self.nodes[at];
                // `Dop::padded_by_extent`, with the room kept for the look at staleness.
                let room = (s.margin * exact.box_extent().max_element()) as f32;
                refit = stale(&node.dop, &exact, room);
                if refit {
                    node.dop = exact.padded(room);
                }
            }
            tally.escaped += u32::from(refit);
            exact.is_some()
        } else {
            let c = link as usize - self.base;
            let both = self.flags[c] | self.flags[c + 1];
            if both & REFIT != 0 {
                let exact = self.nodes[c].dop.merge(&self.nodes[c + 1].dop);
                let node = &mut self.nodes[at];
                let pad = inner_room(s.links[c + self.base], s.links[c + 1 + self.base], s.pad);
                if stale(&node.dop, &exact, pad) {
                    // The area from the new bound as computed, not read back across the
                    // stores that wrote it (the CPU stalls on such a read).
                    let new = exact.padded(pad);
                    tally.area += area(&new) - area(&node.dop);
                    node.dop = new;
                    refit = true;
                }
            }
            // Its vertices are its children's: one moved if one of theirs did.
            let touched = both & TOUCHED != 0;
            if touched {
                match self.sets[at] {
                    CornerSet::OwnLanes => {
                        let o = self.own_range(i, s);
                        // Its corners are its children's, so its slack is the larger of
                        // theirs where they keep their own (`max` commutes with the
                        // rounding in `slack_done`): the corners are only rounded.
                        let own_sets =
                            |j: usize| matches!(self.sets[j], CornerSet::Own | CornerSet::OwnLanes);
                        if own_sets(c) && own_sets(c + 1) {
                            let (a, b) = (self.slack[c], self.slack[c + 1]);
                            round_points_at(&mut self.own_pts[o], s.own(i), s.vertices);
                            self.slack[at] = (a.0.max(b.0), a.1.max(b.1));
                        } else {
                            self.slack[at] =
                                write_points_at(&mut self.own_pts[o], s.own(i), s.vertices);
                        }
                    }
                    CornerSet::Own => pts.gather(s.own(i), s.vertices),
                    CornerSet::Dop | CornerSet::Slabs => {}
                }
            }
            touched
        };
        self.flags[at] = if refit { REFIT } else { 0 } | if touched { TOUCHED } else { 0 };
        tally.refit += u32::from(refit);
        self.recorner(i, pts.as_slice(), s);
    }

    /// The bound of leaf `i`, whose triangles start at position `first`, if one of its
    /// vertices moved (none otherwise); its distinct corners, where listed, into `pts`.
    fn leaf_bound(
        &self,
        i: usize,
        first: usize,
        pts: &mut Gathered,
        s: &Shared<K>,
    ) -> Option<Dop<K>> {
        let own = s.own(i);
        if own.is_empty() {
            // Too many corners to list: every corner of its triangles.
            let corners = s.tris[leaf_span(s.ids, first)].as_flattened();
            if !corners.iter().any(|&v| s.moved(v)) {
                return None;
            }
            return Some(Dop::from_points_quick(
                corners.iter().map(|&v| s.vertices[v as usize]),
            ));
        }
        if self.flags[i - self.base] & TOUCHED == 0 {
            return None;
        }
        pts.gather(own, s.vertices);
        Some(Dop::from_slice_quick(pts.as_slice()))
    }

    /// Where node `i`'s single points lie in this span's [`Span::own_pts`].
    #[inline]
    fn own_range(&self, i: usize, s: &Shared<K>) -> std::ops::Range<usize> {
        s.own_start[i] as usize - self.obase..s.own_start[i + 1] as usize - self.obase
    }

    /// Node `i`'s corners after its refit: its own corners `pts` (when one moved) written
    /// over the stored ones, or no corners from now on for a refit node that kept its
    /// k-DOP's.
    fn recorner(&mut self, i: usize, pts: &[DVec3], s: &Shared<K>) {
        let at = i - self.base;
        match self.sets[at] {
            CornerSet::Dop if self.flags[at] & REFIT != 0 => self.sets[at] = CornerSet::Slabs,
            CornerSet::Dop | CornerSet::Slabs => {}
            _ if pts.is_empty() => {}
            CornerSet::OwnLanes => {
                // A renewed leaf may have fewer corners than its slot has room for.
                let o = self.own_range(i, s);
                self.slack[at] = write_points(&mut self.own_pts[o], pts);
            }
            CornerSet::Own => {
                let v = s.vstart[i] as usize - self.vbase..s.vstart[i + 1] as usize - self.vbase;
                self.slack[at] = write_lanes(&mut self.verts[v], pts);
            }
        }
    }
}

impl<const K: usize> DeformScratch<K> {
    /// What `obj`'s topology gives once: its links, the pieces and the nodes above them,
    /// and the vertex lists of the nodes that keep their own corners.
    fn new(obj: &FlyingObject<K>) -> Self {
        let bvh = &obj.part.bvh;
        let n = bvh.nodes.len();
        let mut s = DeformScratch {
            links: bvh.nodes.iter().map(|node| node.link).collect(),
            flags: vec![0; n],
            ..Self::default()
        };
        s.marks.reset(n);
        // Each vertex's triangles: counted, then placed.
        let mut at = vec![0u32; bvh.vertices.len() + 1];
        for &v in bvh.tris.as_flattened() {
            at[v as usize + 1] += 1;
        }
        for v in 1..at.len() {
            at[v] += at[v - 1];
        }
        let mut next = at.clone();
        s.tris_of = vec![0; bvh.tris.len() * 3];
        for (tri, &id) in bvh.tris.iter().zip(&bvh.ids) {
            for &v in tri {
                s.tris_of[next[v as usize] as usize] = id & !END;
                next[v as usize] += 1;
            }
        }
        s.tris_at = at;
        s.leaf_of = vec![0; bvh.tris.len()];
        s.leaves_of = vec![0; s.tris_of.len()];
        s.leaves_end = vec![0; bvh.vertices.len()];
        s.leaf_extent = mean_leaf_extent(bvh);
        s.index_leaves(bvh, 0..n);
        s.cut_pieces(bvh);
        s.own_at.push(0);
        let mut own = Vec::new();
        for i in 0..n {
            // Leaves list their corners to be bounded from (unless they have too many);
            // inner nodes only where they keep them.
            if matches!(obj.stored.corners[i], CornerSet::Own | CornerSet::OwnLanes) {
                let complete = own_corners(bvh, i, &mut own);
                debug_assert!(
                    complete,
                    "a node's own corners depend on its triangles only"
                );
                s.own.extend_from_slice(&own);
            } else if bvh.nodes[i].is_leaf() && own_corners(bvh, i, &mut own) {
                s.own.extend_from_slice(&own);
            }
            s.own_at.push(s.own.len() as u32);
        }
        s
    }

    /// Points each triangle of the leaves among the slots `nodes` at its leaf, after a
    /// build or a renewal laid them out, and lists anew the leaves of those triangles'
    /// vertices.
    pub(super) fn index_leaves(&mut self, bvh: &Bvh<K>, nodes: std::ops::Range<usize>) {
        let leaves = || {
            nodes.clone().filter_map(|j| {
                let link = bvh.nodes[j].link;
                (link & LEAF != 0).then(|| (j, leaf_span(&bvh.ids, (link & !LEAF) as usize)))
            })
        };
        for (j, span) in leaves() {
            for &id in &bvh.ids[span] {
                self.leaf_of[(id & !END) as usize] = j as u32;
            }
        }
        if nodes.len() == bvh.nodes.len() {
            for v in 0..bvh.vertices.len() {
                self.list_leaves(v);
            }
            return;
        }
        // Each vertex once (`listed` is clear between calls, and cleared again after).
        self.listed.resize(bvh.vertices.len().div_ceil(64), 0);
        for (_, span) in leaves() {
            for &v in bvh.tris[span].as_flattened() {
                let (w, bit) = (v as usize / 64, 1u64 << (v % 64));
                if self.listed[w] & bit == 0 {
                    self.listed[w] |= bit;
                    self.list_leaves(v as usize);
                }
            }
        }
        self.listed.fill(0);
    }

    /// Lists vertex `v`'s distinct leaves ([`DeformScratch::leaves_of`]) from its
    /// triangles' leaves: sorted and deduplicated in place, so that a vertex shared by
    /// many triangles (a fan's centre) costs their number's logarithm each, not their
    /// number.
    fn list_leaves(&mut self, v: usize) {
        let (from, to) = (self.tris_at[v] as usize, self.tris_at[v + 1] as usize);
        let list = &mut self.leaves_of[from..to];
        for (slot, &t) in list.iter_mut().zip(&self.tris_of[from..to]) {
            *slot = self.leaf_of[t as usize];
        }
        list.sort_unstable();
        let mut end = 0;
        for k in 0..list.len() {
            if k == 0 || list[k] != list[end - 1] {
                list[end] = list[k];
                end += 1;
            }
        }
        self.leaves_end[v] = (from + end) as u32;
    }

    /// Marks, for a sparse refit, every leaf holding a triangle of a moved vertex and
    /// every ancestor of those, in two passes on rayon's pool, each thread in a set of its
    /// own ([`Marks`]): first the leaves, over the moved vertices (each of its distinct
    /// leaves, [`DeformScratch::leaves_of`], by a plain OR: no test to mispredict), then
    /// the ancestors, climbing from each marked leaf's parent until a node already
    /// marked. Two threads may both climb from a node, which marks nothing wrong.
    fn mark_leaves(&mut self, parent: &[u32]) {
        self.marks.for_threads(rayon::current_num_threads());
        let (at, end, leaves) = (&self.tris_at, &self.leaves_end, &self.leaves_of);
        let marks = &self.marks;
        self.moved
            .par_iter()
            .enumerate()
            .with_min_len(256)
            .for_each_init(
                || marks.own_set(),
                |set, (w, &bits)| {
                    let mut b = bits;
                    while b != 0 {
                        let v = w * 64 + b.trailing_zeros() as usize;
                        b &= b - 1;
                        for &leaf in &leaves[at[v] as usize..end[v] as usize] {
                            Marks::or(set, leaf as usize);
                        }
                    }
                },
            );
        // Climbs from the first pass's marks, word by word. A word may also hold
        // ancestors another thread's climb marked already: climbing from one of those
        // marks what is marked, so the union stays every marked leaf and its ancestors.
        let words = marks.words();
        (0..words).into_par_iter().with_min_len(64).for_each_init(
            || marks.own_set(),
            |set, w| {
                let mut b = marks
                    .sets
                    .iter()
                    .fold(0, |acc, s| acc | s[w].load(AtomicOrdering::Relaxed));
                while b != 0 {
                    let leaf = w * 64 + b.trailing_zeros() as usize;
                    b &= b - 1;
                    let mut i = parent[leaf];
                    while i != u32::MAX && Marks::set(set, i as usize) {
                        i = parent[i as usize];
                    }
                }
            },
        );
    }

    /// Bytes of what it keeps.
    pub(super) fn memory_bytes(&self) -> usize {
        self.moved.len() * 8
            + (self.tris_at.len() + self.tris_of.len() + self.leaf_of.len()) * 4
            + (self.leaves_of.len() + self.leaves_end.len()) * 4
            + self.marks.sets.len() * self.marks.words() * 8
            + self.visited.iter().map(|v| v.capacity() * 4).sum::<usize>()
            + self.links.len() * 4
            + self.flags.len()
            + (self.own.len() + self.own_at.len() + self.top.len()) * 4
            + self.pieces.len() * std::mem::size_of::<Piece>()
    }

    /// How far the pieces overlap: their roots' summed box area over the area of the box
    /// around them all (not the root's, whose bound the refit's margins inflate more).
    fn overlap(&self, nodes: &[Node<K>]) -> f64 {
        let mut all = Dop::<K>::EMPTY;
        let mut sum = 0.0;
        for p in &self.pieces {
            let d = &nodes[p.root as usize].dop;
            all = all.merge(d);
            sum += area(d);
        }
        sum / area(&all).max(f64::MIN_POSITIVE)
    }

    /// Cuts the tree into the pieces refit (and renewed) on their own and the nodes above
    /// them, and measures the pieces ([`DeformScratch::measure_pieces`]).
    pub(super) fn cut_pieces(&mut self, bvh: &Bvh<K>) {
        let n = bvh.nodes.len();
        let s = self;
        s.pieces.clear();
        s.top.clear();
        // Per node: its subtree's node count, children first.
        let mut size = vec![1u32; n];
        for i in (0..n).rev() {
            let node = &bvh.nodes[i];
            if !node.is_leaf() {
                let c = node.first_child() as usize;
                size[i] = 1 + size[c] + size[c + 1];
            }
        }
        // Subtrees of at most a 32nd of the tree (and not tiny) become pieces; the nodes
        // above them stay on top. A small tree is all top: one thread refits it.
        let limit = (n as u32 / 32).max(PIECE_MIN);
        let mut todo = vec![0usize];
        while let Some(i) = todo.pop() {
            let node = &bvh.nodes[i];
            s.top.push(i as u32);
            if node.is_leaf() {
                continue;
            }
            let c = node.first_child() as usize;
            if size[i] > limit || n < 2 * PIECE_MIN as usize {
                todo.extend([c, c + 1]);
            } else {
                // Its descendants are the slots after its first child (`flatten` lays a
                // subtree's pairs out together).
                s.pieces.push(Piece {
                    nodes: (c as u32, c as u32 + size[i] - 1),
                    root: i as u32,
                    ..Piece::default()
                });
            }
        }
        s.pieces.sort_unstable_by_key(|p| p.nodes.0);
        s.top.sort_unstable_by(|a, b| b.cmp(a));
        s.tallies = vec![Tally::default(); s.pieces.len()];
        s.visited.resize_with(s.pieces.len(), Vec::new);
        s.measure_pieces(&bvh.nodes);
    }

    /// Takes the pieces' costs and their overlap as they stand for their costs as built,
    /// from which wear is measured.
    pub(super) fn measure_pieces(&mut self, nodes: &[Node<K>]) {
        for p in &mut self.pieces {
            p.measure(nodes);
        }
        self.top_built = self.overlap(nodes);
    }
}

/// Takes a sparse refit through the marked nodes of its slots, highest first, running
/// ahead of it to ask early for what their visits read. Marked leaves lie far apart in
/// slot order, so the hardware does not see them coming, and each read depends on the one
/// before: a node's place in the corner lists, its list, then its corners. Each is asked
/// for a few nodes before the next needs it. Every mark is set before the walk
/// ([`DeformScratch::mark_leaves`]), so the nodes found ahead are the walk's queue.
struct Scout {
    /// The marked nodes found ahead, `head..tail` of them not yet visited.
    ring: [u32; SCOUT_RING],
    head: usize,
    tail: usize,
    /// The slots walked, `lo..hi`; the next word of marks to read; the marks of the
    /// last one read not yet found, and its first slot (each word is taken, so cleared,
    /// when read).
    lo: usize,
    hi: usize,
    word: usize,
    bits: u64,
    bits_at: usize,
    /// Whether every word down to `lo` has been read.
    read_all: bool,
}

/// Room of the scout's ring (a power of two, at least [`SCOUT_FAR`]).
const SCOUT_RING: usize = 32;
/// Marked nodes the scout keeps ahead of the refit: their records and places in the
/// corner lists are asked for when found...
const SCOUT_FAR: usize = 24;
/// ... their corner lists once this many more are found...
const SCOUT_LIST: usize = 8;
/// ... and their corners once this many more are found.
const SCOUT_CORNERS: usize = 16;

impl Scout {
    /// A walk of the slots `lo..hi` (not empty).
    fn new(lo: usize, hi: usize) -> Self {
        Scout {
            ring: [0; SCOUT_RING],
            head: 0,
            tail: 0,
            lo,
            hi,
            word: (hi - 1) / 64,
            bits: 0,
            bits_at: 0,
            read_all: false,
        }
    }

    /// The next marked slot, highest first, if any is left; finds more ahead of it.
    #[inline]
    fn next<const K: usize>(
        &mut self,
        marks: &Marks,
        span: &Span<'_, K>,
        s: &Shared<K>,
    ) -> Option<usize> {
        while self.tail - self.head < SCOUT_FAR {
            let Some(j) = self.find(marks) else {
                break;
            };
            prefetch(&s.own_at[j]);
            prefetch_whole(&span.nodes[j - span.base]);
            self.ring[self.tail % SCOUT_RING] = j as u32;
            self.tail += 1;
            if let Some(x) = self
                .found(SCOUT_LIST)
                .and_then(|k| s.own.get(s.own_at[k] as usize))
            {
                prefetch(x);
            }
            if let Some(k) = self.found(SCOUT_CORNERS) {
                for &v in s.own(k) {
                    prefetch_whole(&s.vertices[v as usize]);
                }
            }
        }
        (self.head < self.tail).then(|| {
            self.head += 1;
            self.ring[(self.head - 1) % SCOUT_RING] as usize
        })
    }

    /// The highest marked slot below those found so far, taking each word of marks as it
    /// is reached.
    #[inline]
    fn find(&mut self, marks: &Marks) -> Option<usize> {
        while self.bits == 0 {
            if self.read_all {
                return None;
            }
            self.bits = marks.take_word(self.word, self.lo, self.hi);
            self.bits_at = self.word * 64;
            if self.bits_at <= self.lo {
                self.read_all = true;
            } else {
                self.word -= 1;
            }
        }
        let top = 63 - self.bits.leading_zeros() as usize;
        self.bits &= !(1u64 << top);
        Some(self.bits_at + top)
    }

    /// The node found `back` nodes before the last, if the refit has not reached it.
    #[inline]
    fn found(&self, back: usize) -> Option<usize> {
        let at = self.tail.checked_sub(back + 1)?;
        (at >= self.head).then(|| self.ring[at % SCOUT_RING] as usize)
    }
}

/// How many margins off its geometry a node may stand before it is re-made: a shape that
/// shrank, or moved back, would keep loose bounds otherwise.
pub(super) const LOOSE: f32 = 3.0;

/// Whether a node's stored bound must be re-made for its geometry's bound `exact` (a
/// leaf's triangles', an inner node's children's merge), `room` being what it is padded by
/// when re-made: when it no longer contains `exact`, or its box stands more than [`LOOSE`]
/// times `room` off `exact`'s (the box alone: a cheap look, since most leaves are looked
/// at every deformation).
#[inline]
pub(super) fn stale<const K: usize>(stored: &Dop<K>, exact: &Dop<K>, room: f32) -> bool {
    let slack = LOOSE * room;
    let mut off = false;
    for i in 0..3 {
        off |= (stored.lo(i) < exact.lo(i) - slack) | (stored.hi(i) > exact.hi(i) + slack);
    }
    off || !stored.contains(exact)
}

/// The room to move of a leaf's parent: the margin of a typical leaf. A leaf is padded by
/// the margin of its own size; inner nodes padded so, each from its children's padded
/// bounds, would add a margin at every level up to the root, whose bound would then stand
/// far off the shape (`docs/benchmarks.md`, "Deformable refit").
pub(super) fn inner_pad(margin: f64, leaf_extent: f64) -> f32 {
    (margin * leaf_extent) as f32
}

/// The room to move of an inner node whose children have links `a` and `b`: `pad` where one
/// is a leaf ([`inner_pad`]); none above, where the children's own room is the parent's,
/// so that the margins do not add up.
#[inline]
pub(super) fn inner_room(a: u32, b: u32, pad: f32) -> f32 {
    if (a | b) & LEAF != 0 { pad } else { 0.0 }
}

/// The mean largest box extent of `bvh`'s leaves (0 for none, or for unbounded ones).
pub(super) fn mean_leaf_extent<const K: usize>(bvh: &Bvh<K>) -> f64 {
    let (sum, n) = bvh
        .nodes
        .iter()
        .filter(|node| node.is_leaf())
        .fold((0.0, 0u32), |(sum, n), node| {
            (sum + node.dop.box_extent().max_element(), n + 1)
        });
    if n > 0 && sum.is_finite() {
        sum / f64::from(n)
    } else {
        0.0
    }
}

/// A node's flag: its bound was re-made by this deformation.
const REFIT: u8 = 1;
/// A node's flag: one of its vertices moved in this deformation.
const TOUCHED: u8 = 2;

/// How many nodes ahead in slot order a refit asks for a leaf's corners.
const AHEAD: usize = 8;

/// The fewest nodes worth a piece of their own (below that, a task costs more than it
/// saves). Fuzzing builds cut the small trees it can afford into pieces too, so that
/// renewing pieces is fuzzed as well as renewing whole trees.
#[cfg(not(fuzzing))]
const PIECE_MIN: u32 = 4096;
#[cfg(fuzzing)]
const PIECE_MIN: u32 = 16;

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::env::Environment;
    use crate::hierarchy::BuildOptions;
    use crate::mesh::Mesh;
    use crate::oracle::{brute_force_contacts, brute_force_object_contacts};
    use crate::pose::Pose;
    use crate::query::{QueryOptions, QueryState};
    use crate::testing::{for_each_k, lcg, soup};

    /// A closed latitude–longitude sphere of radius 2 about the origin (the built-in
    /// shape): shared vertices, so a moved vertex moves several triangles of different
    /// leaves; its first vertex is a pole.
    pub(crate) fn sphere(rings: usize, segments: usize) -> Mesh {
        crate::scene::uv_sphere(2.0, segments, rings).unwrap()
    }

    /// `rest` deformed: a wobble of a few percent (of the upper half only, if `partial`:
    /// the lower half stays where it is `now`), or (`far`) stretched, moved by more than
    /// its own size and with some vertices collapsed onto the first (degenerate triangles).
    pub(crate) fn deformed(
        rest: &[DVec3],
        now: &[DVec3],
        far: bool,
        partial: bool,
        s: &mut u64,
    ) -> Vec<DVec3> {
        // A jump of 3 to 5 per axis: out of the rest shape's box.
        let jump = (DVec3::new(lcg(s), lcg(s), lcg(s)) * 4.0 - 2.0).map(|x| x + 3.0f64.copysign(x));
        let stretch = DVec3::new(0.3 + lcg(s) * 2.0, 0.3 + lcg(s) * 2.0, 1.0);
        rest.iter()
            .zip(now)
            .map(|(&v, &was)| {
                let wobble = (DVec3::new(lcg(s), lcg(s), lcg(s)) - 0.5) * 0.1;
                if !far && partial && v.z < 0.0 {
                    was
                } else if !far {
                    v + wobble
                } else if lcg(s) < 0.1 {
                    rest[0]
                } else {
                    v * stretch + jump + wobble
                }
            })
            .collect()
    }

    /// A deformed object's hierarchy is sound, and it keeps no leaf codes (queries bound
    /// refined triangles from their corners).
    pub(crate) fn valid<const K: usize>(obj: &FlyingObject<K>) {
        assert!(obj.part.codes.is_empty(), "codes kept after a deformation");
        obj.part.bvh.validate().unwrap();
    }

    /// Against an environment and against another object, on either side of a pair: every
    /// answer after a deformation equals brute force on a fresh build of the deformed mesh,
    /// with the same query state (warmed on the old geometry) at the same pose, so no
    /// cached bound or placed triangle of the old geometry may survive. Leaves of the
    /// rigid default and of the deforming one.
    fn answers_as_fresh_builds<const K: usize>() {
        answers_as_fresh_builds_with::<K>(None, &BuildOptions::FLYING);
        answers_as_fresh_builds_with::<K>(None, &BuildOptions::DEFORMING);
    }

    /// Asserts that `obj` at `pose` against `env` reports exactly the contacts of brute
    /// force on a fresh build of `verts` and `tris` (`what` names the case); returns them.
    pub(crate) fn matches_fresh_build(
        env: &Environment<18>,
        obj: &FlyingObject<18>,
        (verts, tris): (Vec<DVec3>, Vec<[u32; 3]>),
        pose: &Pose,
        state: &mut QueryState<18>,
        what: &str,
    ) -> usize {
        let fresh = FlyingObject::<18>::new(Mesh::new(verts, tris).unwrap(), &BuildOptions::FLYING)
            .unwrap();
        let want = brute_force_contacts(env, &fresh, pose, 0.0);
        let got = env
            .collide(obj, pose, &QueryOptions::REPORT, state)
            .unwrap();
        assert_eq!(got.contacts, want.as_slice(), "{what}");
        want.len()
    }

    /// [`answers_as_fresh_builds`] with `renew` called on the object after each
    /// deformation (with the round), the object built with `build`.
    pub(crate) fn answers_as_fresh_builds_with<const K: usize>(
        renew: Option<fn(&mut FlyingObject<K>, usize)>,
        build: &BuildOptions,
    ) {
        let mut s = 7;
        let env = Environment::<K>::from_mesh(soup(300, 2.0, &mut s), &BuildOptions::ENVIRONMENT)
            .unwrap();
        let rest = sphere(9, 14);
        let tris = rest.triangles().to_vec();
        let mut obj = FlyingObject::<K>::new(rest.clone(), build).unwrap();
        let other = FlyingObject::<K>::new(soup(80, 1.5, &mut s), &BuildOptions::FLYING).unwrap();
        // Turned poses: a pose without rotation shifts stored bounds and would never
        // read the corners or the hull.
        let turn = |a: f64, t: DVec3| {
            let q = glam::DQuat::from_axis_angle(DVec3::new(1.0, 2.0, 3.0).normalize(), a);
            Pose::new(glam::DMat3::from_quat(q), t).unwrap()
        };
        let pose = turn(0.7, DVec3::splat(5.0));
        let other_pose = turn(-0.4, DVec3::ZERO);
        // An object smaller than the sphere, across its surface: the sphere is then the
        // static side of the pair (its hierarchy in its own frame, under its one-leaf top).
        let shrink = Pose::new(glam::DMat3::from_diagonal(DVec3::splat(0.15)), DVec3::ZERO);
        let small = soup(20, 8.0, &mut s).transformed(&shrink.unwrap()).unwrap();
        let small = FlyingObject::<K>::new(small, &BuildOptions::FLYING).unwrap();

        let mut state = QueryState::new();
        let report = QueryOptions::REPORT;
        let mut found = [0usize; 4];
        let mut now = rest.vertices().to_vec();
        for round in 0..10 {
            env.collide(&obj, &pose, &report, &mut state).unwrap();
            obj.collide_with(&pose, &other, &other_pose, &report, &mut state)
                .unwrap();
            let verts = deformed(
                rest.vertices(),
                &now,
                round % 3 == 2,
                round % 3 == 1,
                &mut s,
            );
            now.clone_from(&verts);
            obj.deform(&verts, 0.05).unwrap();
            valid(&obj);
            if let Some(renew) = renew {
                renew(&mut obj, round);
                valid(&obj);
            }
            if round % 3 != 0 {
                crate::tumble::tests::props_of(&obj);
            }
            let fresh = FlyingObject::<K>::new(
                Mesh::new(verts, tris.clone()).unwrap(),
                &BuildOptions::FLYING,
            )
            .unwrap();
            let got = env
                .collide(&obj, &pose, &report, &mut state)
                .unwrap()
                .contacts
                .to_vec();
            assert_eq!(
                got,
                brute_force_contacts(&env, &fresh, &pose, 0.0),
                "k {K}, round {round}"
            );
            found[0] += got.len();
            let want = brute_force_object_contacts(&fresh, &pose, &other, &other_pose, 0.0);
            let got = obj
                .collide_with(&pose, &other, &other_pose, &report, &mut state)
                .unwrap();
            assert_eq!(got.contacts, want.as_slice(), "k {K}, round {round}");
            found[1] += want.len();
            let want = brute_force_object_contacts(&other, &other_pose, &fresh, &pose, 0.0);
            let got = other
                .collide_with(&other_pose, &obj, &pose, &report, &mut state)
                .unwrap();
            assert_eq!(got.contacts, want.as_slice(), "k {K}, round {round}");
            found[2] += want.len();
            // Across the sphere's (moved) pole, wherever the deformation took it.
            let pole = pose.transform_point(fresh.bvh().vertices[0]);
            let small_pose = turn(0.2, pole - DVec3::splat(0.75));
            let want = brute_force_object_contacts(&small, &small_pose, &fresh, &pose, 0.0);
            let got = small
                .collide_with(&small_pose, &obj, &pose, &report, &mut state)
                .unwrap();
            assert_eq!(got.reference, crate::pair::Reference::B);
            assert_eq!(got.contacts, want.as_slice(), "k {K}, round {round}");
            found[3] += want.len();
        }
        assert!(
            found.iter().all(|&n| n > 20),
            "too few contacts to compare: {found:?}"
        );
    }

    #[test]
    fn deformed_objects_answer_as_fresh_builds() {
        for_each_k!(answers_as_fresh_builds);
    }

    /// A hierarchy large enough to be refit in pieces gives, piece by piece in parallel,
    /// what one pass over all its nodes gives (bounds, codes, counts), for partial, whole
    /// and far deformations; and its answers equal brute force on a fresh build.
    #[test]
    fn pieces_refit_as_one_pass() {
        let rest = sphere(110, 180);
        let tris = rest.triangles().to_vec();
        let mut pieces = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let mut one = pieces.clone();
        let mut scratch = DeformScratch::new(&one);
        assert!(
            scratch.pieces.len() >= 4,
            "{} pieces: too few to test",
            scratch.pieces.len()
        );
        scratch.pieces.clear();
        scratch.tallies.clear();
        scratch.top = (0..one.part.bvh.nodes.len() as u32).rev().collect();
        one.deform = Some(scratch);
        let pool = crate::testing::pool(3);
        let mut s = 11;
        let mut now = rest.vertices().to_vec();
        for round in 0..6 {
            let verts = deformed(rest.vertices(), &now, round == 4, round % 2 == 1, &mut s);
            now.clone_from(&verts);
            let a = pool.install(|| pieces.deform(&verts, 0.05)).unwrap();
            let b = one.deform(&verts, 0.05).unwrap();
            assert!(a.refit > 0 && a.escaped_leaves > 0, "round {round}: {a:?}");
            assert_eq!(
                (a.nodes, a.leaves, a.refit, a.escaped_leaves),
                (b.nodes, b.leaves, b.refit, b.escaped_leaves),
                "round {round}"
            );
            assert!((a.cost_ratio - b.cost_ratio).abs() < 1e-9 * b.cost_ratio);
            assert!(pieces.part.bvh.nodes == one.part.bvh.nodes, "round {round}");
            assert!(pieces.part.codes == one.part.codes, "round {round}");
            valid(&pieces);
        }
        let leaves = pieces.part.bvh.nodes.iter().filter(|n| n.is_leaf()).count();
        assert_eq!(
            pieces.deform(&now, 0.05).unwrap().leaves as usize,
            leaves,
            "leaf count"
        );
        let env = Environment::<18>::from_mesh(soup(200, 1.5, &mut s), &BuildOptions::ENVIRONMENT)
            .unwrap();
        // The deformed sphere moved to the centre of the soup (in [0, 10]³).
        let centre = now.iter().sum::<DVec3>() / now.len() as f64;
        let pose = Pose::new(glam::DMat3::IDENTITY, DVec3::splat(5.0) - centre).unwrap();
        let mut state = QueryState::new();
        let found = matches_fresh_build(&env, &pieces, (now, tris), &pose, &mut state, "pieces");
        assert!(found > 10, "too few contacts to compare: {found}");
    }

    /// The scout's walk finds exactly the marked slots of its range, highest first, in
    /// and across words, at the ends of the range and with no mark at all, whichever
    /// thread's set holds them, and clears those marks and no others.
    #[test]
    fn the_scout_walks_the_marks_of_its_range() {
        let mut s = 7u64;
        for n in [1usize, 63, 64, 65, 130, 700] {
            for lo in [0, 1, n / 3, n.saturating_sub(1)] {
                for hi in [lo + 1, (lo + n).div_ceil(2).max(lo + 1), n] {
                    if hi > n {
                        continue;
                    }
                    let mut marks = Marks::default();
                    marks.reset(n);
                    marks.for_threads(3);
                    let mut model = vec![false; n];
                    for _ in 0..(lcg(&mut s) * (n / 5 + 2) as f64) as usize {
                        let i = ((lcg(&mut s) * n as f64) as usize).min(n - 1);
                        // In any thread's set: the walk takes their union.
                        let set = ((lcg(&mut s) * 3.0) as usize).min(2);
                        Marks::set(&marks.sets[set], i);
                        model[i] = true;
                    }
                    let want: Vec<usize> = (lo..hi).rev().filter(|&i| model[i]).collect();
                    let mut scout = Scout::new(lo, hi);
                    let got: Vec<usize> = std::iter::from_fn(|| scout.find(&marks)).collect();
                    assert_eq!(got, want, "n {n} lo {lo} hi {hi}");
                    for (i, &m) in model.iter().enumerate() {
                        let set = marks.sets.iter().any(|set| {
                            set[i / 64].load(AtomicOrdering::Relaxed) >> (i % 64) & 1 == 1
                        });
                        let left = m && !(lo..hi).contains(&i);
                        assert_eq!(set, left, "n {n} lo {lo} hi {hi}: mark {i}");
                    }
                }
            }
        }
    }

    /// The sparse refit (only the leaves of moved vertices and their ancestors) leaves
    /// what the dense one (every node) does: bounds, corners, counts and cost, over
    /// deformations of one vertex, of a cap, of half the object, of all of it, and after
    /// subtrees were renewed (which moves triangles to other leaves).
    #[test]
    fn sparse_and_dense_refits_agree() {
        let rest = sphere(110, 180);
        let mut sparse = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        sparse.prepare_deform();
        let mut dense = sparse.clone();
        sparse.deform.as_mut().unwrap().force_sparse = Some(true);
        dense.deform.as_mut().unwrap().force_sparse = Some(false);
        assert!(sparse.deform.as_ref().unwrap().pieces.len() >= 4);
        // Pools of three threads and of one in turn: the marks' sets grow with the first
        // and outnumber the second's threads.
        let pools = [crate::testing::pool(3), crate::testing::pool(1)];
        let mut s = 21;
        let mut now = rest.vertices().to_vec();
        let mut visited = 0;
        for round in 0..12 {
            let pool = &pools[round % 2];
            let next: Vec<DVec3> = match round % 4 {
                // One vertex far out, then back.
                0 => one_moved(&now, &mut s, |s| {
                    DVec3::new(0.5, -3.0, 1.0) * (lcg(s) + 0.5)
                }),
                // A cap: the vertices near a random point pushed out.
                1 => {
                    let c = now[(lcg(&mut s) * now.len() as f64) as usize];
                    now.iter()
                        .map(|&v| {
                            let d = v.distance(c);
                            if d < 0.8 {
                                v + (v - c).normalize_or_zero() * (0.8 - d)
                            } else {
                                v
                            }
                        })
                        .collect()
                }
                2 => deformed(rest.vertices(), &now, false, true, &mut s),
                _ => deformed(rest.vertices(), &now, round == 11, false, &mut s),
            };
            now = next;
            let a = pool.install(|| sparse.deform(&now, 0.05)).unwrap();
            let b = pool.install(|| dense.deform(&now, 0.05)).unwrap();
            assert!(a.refit > 0, "round {round}: nothing refit");
            assert_eq!(a, b, "round {round}");
            assert!(
                sparse.part.bvh.nodes == dense.part.bvh.nodes,
                "round {round}"
            );
            let (x, y) = (&sparse.stored, &dense.stored);
            assert!(
                x.corners == y.corners
                    && x.slack == y.slack
                    && x.own_pts == y.own_pts
                    && x.verts == y.verts,
                "round {round}: corners"
            );
            let scratch = sparse.deform.as_ref().unwrap();
            assert!(
                scratch.flags.iter().all(|&f| f == 0),
                "round {round}: flags"
            );
            assert!(scratch.marks.all_clear(), "round {round}: marks");
            visited += scratch.visited.iter().map(Vec::len).sum::<usize>();
            valid(&sparse);
            if round % 4 == 3 {
                // Renew the same subtree of both: its triangles go to other leaves.
                for obj in [&mut sparse, &mut dense] {
                    let mut sc = obj.deform.take().unwrap();
                    let p = sc.pieces[round / 4];
                    assert!(obj.renew_subtree(
                        &mut sc,
                        p.root as usize,
                        p.nodes.0 as usize,
                        p.nodes.1 as usize
                    ));
                    obj.deform = Some(sc);
                }
                assert!(
                    sparse.part.bvh.nodes == dense.part.bvh.nodes,
                    "round {round}: renewed"
                );
            }
        }
        // Not a dense refit in disguise: the one-vertex rounds visit few nodes.
        assert!(visited > 0);
        let mut one = now.clone();
        one[0] += DVec3::splat(5.0);
        sparse.deform(&one, 0.05).unwrap();
        let seen: usize = sparse
            .deform
            .as_ref()
            .unwrap()
            .visited
            .iter()
            .map(Vec::len)
            .sum();
        assert!(
            seen > 0 && seen < sparse.part.bvh.nodes.len() / 20,
            "{seen} visited"
        );
    }

    #[test]
    fn small_deformations_inside_the_margin_refit_nothing() {
        let rest = sphere(9, 14);
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        // A first deformation moves every vertex out of the build's tight bounds, so every
        // leaf is refit and enlarged by 20 % of its largest extent.
        let first: Vec<DVec3> = rest.vertices().iter().map(|&v| v * 1.1).collect();
        let stats = obj.deform(&first, 0.2).unwrap();
        assert_eq!(stats.escaped_leaves, stats.leaves);
        // A leaf of this sphere spans at least a tenth of a unit; a move of 1/1000 stays
        // well inside a margin of 0.02.
        let smallest = (0..obj.part.bvh.nodes.len())
            .filter(|&i| obj.part.bvh.nodes[i].is_leaf())
            .map(|i| obj.part.bvh.nodes[i].dop.box_extent().max_element())
            .fold(f64::INFINITY, f64::min);
        assert!(smallest > 0.1, "{smallest}");
        let second: Vec<DVec3> = first
            .iter()
            .map(|&v| v + DVec3::new(1e-3, -1e-3, 5e-4))
            .collect();
        let stats = obj.deform(&second, 0.2).unwrap();
        assert_eq!((stats.refit, stats.escaped_leaves), (0, 0));
        valid(&obj);
        // A move of one vertex far out refits its leaves and their paths to the root only.
        let mut third = second.clone();
        third[0] += DVec3::Z * 10.0;
        let stats = obj.deform(&third, 0.2).unwrap();
        assert!(
            stats.escaped_leaves >= 1 && stats.escaped_leaves < stats.leaves / 4,
            "{stats:?}"
        );
        valid(&obj);
    }

    /// Every node that keeps its own corners holds its triangles' vertices as they are now
    /// (rounded to `f32`), in lanes or one by one, and its slack covers their rounding.
    fn own_corners_are_current<const K: usize>(obj: &FlyingObject<K>) {
        let bvh = &obj.part.bvh;
        let mut own = Vec::new();
        for i in 0..bvh.nodes.len() {
            let stored: Vec<[f32; 3]> = match obj.stored.corners[i] {
                CornerSet::OwnLanes => obj.stored.own_pts
                    [obj.stored.own_start[i] as usize..obj.stored.own_start[i + 1] as usize]
                    .to_vec(),
                CornerSet::Own => obj.stored.verts
                    [obj.stored.vstart[i] as usize..obj.stored.vstart[i + 1] as usize]
                    .iter()
                    .flat_map(|c| (0..super::super::LANES).map(|l| [c[0][l], c[1][l], c[2][l]]))
                    .collect(),
                CornerSet::Dop | CornerSet::Slabs => continue,
            };
            assert!(own_corners(bvh, i, &mut own), "node {i}");
            let want: Vec<[f32; 3]> = own
                .iter()
                .map(|&v| bvh.vertices[v as usize].as_vec3().to_array())
                .collect();
            assert_eq!(&stored[..want.len()], &want[..], "node {i}");
            assert!(
                stored[want.len()..].iter().all(|p| *p == want[0]),
                "node {i}: padding"
            );
            // The slack by its definition: the largest change of a coordinate rounded to
            // `f32` (never 0), and the largest rounded coordinate magnitude.
            let (mut s, mut m) = (0.0f64, 0.0f64);
            for &v in &own {
                let p = bvh.vertices[v as usize];
                let back = p.as_vec3().as_dvec3();
                s = s.max((back - p).abs().max_element());
                m = m.max(back.abs().max_element());
            }
            assert_eq!(obj.stored.slack[i], (s + f64::MIN_POSITIVE, m), "node {i}");
        }
    }

    /// A sphere of some 20,000 triangles (many runs of nodes, updated in parallel), half of
    /// it deformed, then all of it: every node's own corners are the current vertices.
    #[test]
    fn own_corners_follow_partial_and_full_deformations() {
        let rest = sphere(70, 140);
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        assert!(
            obj.part.bvh.nodes.len() > 8 * 1024,
            "{}",
            obj.part.bvh.nodes.len()
        );
        let mut s = 5;
        let mut now = rest.vertices().to_vec();
        for round in 0..4 {
            now = deformed(rest.vertices(), &now, round == 3, round % 2 == 0, &mut s);
            obj.deform(&now, 0.05).unwrap();
            own_corners_are_current(&obj);
            valid(&obj);
        }
    }

    /// A wobble leaves the tree's cost near its cost as built; the same vertex positions
    /// shuffled among the vertices (every leaf now spans the object) multiply it; a fresh
    /// build of `mesh()` brings it back, with the same triangles under the same numbers.
    #[test]
    fn cost_ratio_tells_a_worn_tree() {
        let rest = sphere(30, 40);
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let mut s = 9;
        let wobble = deformed(rest.vertices(), rest.vertices(), false, false, &mut s);
        let stats = obj.deform(&wobble, 0.05).unwrap();
        assert!(stats.cost_ratio < 1.3, "{stats:?}");
        let mut shuffled = rest.vertices().to_vec();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (lcg(&mut s) * (i + 1) as f64) as usize);
        }
        let stats = obj.deform(&shuffled, 0.05).unwrap();
        assert!(stats.cost_ratio > 4.0, "{stats:?}");
        let fresh = FlyingObject::<18>::new(obj.mesh(), &BuildOptions::FLYING).unwrap();
        assert_eq!(fresh.mesh().triangles(), rest.triangles());
        assert_eq!(fresh.mesh().vertices(), &shuffled[..]);
        for id in [0, 17, rest.triangle_count() as u32 - 1] {
            assert_eq!(fresh.bvh().triangle(id), obj.bvh().triangle(id));
        }
    }

    /// A shape grown to twice its size and brought back is bounded about as tightly as a
    /// fresh build of it: a leaf stands at most a few margins of its own size off its
    /// triangles, a leaf's parent has a leaf's margin of room and the nodes above it none
    /// of their own, so the root's box stands within a few leaf margins of the fresh root's
    /// on each side, where margins of each node's own size, added level by level, would
    /// leave it far wider (`docs/benchmarks.md`, "Deformable refit"). With margin 0 every
    /// bound is its geometry's.
    #[test]
    fn a_shape_grown_and_brought_back_is_bounded_as_a_fresh_build() {
        let rest = sphere(9, 14);
        let grown: Vec<DVec3> = rest.vertices().iter().map(|&v| v * 2.0).collect();
        let fresh = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let width = |o: &FlyingObject<18>| o.part.bvh.nodes[0].dop.box_extent().max_element();
        let inner = |o: &FlyingObject<18>| inner_area(&o.part.bvh.nodes);
        let leaf = fresh
            .part
            .bvh
            .nodes
            .iter()
            .filter(|n| n.is_leaf())
            .map(|n| n.dop.box_extent().max_element())
            .fold(0.0, f64::max);
        for margin in [0.05, 0.0] {
            let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
            obj.deform(&grown, margin).unwrap();
            obj.deform(rest.vertices(), margin).unwrap();
            let (w, f) = (width(&obj), width(&fresh));
            // Four leaf margins a side, and f32 rounding.
            let room = 2.0 * 4.0 * margin * leaf + 1e-5 * f;
            assert!(
                w <= f + room,
                "margin {margin}: root {w} against {f} + {room}"
            );
            let (a, b) = (inner(&obj), inner(&fresh));
            if margin == 0.0 {
                assert!(
                    a <= b * (1.0 + 1e-5),
                    "margin 0: inner area {a} against {b}"
                );
            }
        }
    }

    /// `now` with one vertex, picked at random, moved by what `by` gives.
    fn one_moved(now: &[DVec3], s: &mut u64, by: impl FnOnce(&mut u64) -> DVec3) -> Vec<DVec3> {
        let mut v = now.to_vec();
        let k = (lcg(s) * v.len() as f64) as usize;
        v[k] += by(s);
        v
    }

    /// Moving the listed vertices leaves the object as a full deformation to the same
    /// vertices does (bounds, corners, counts), and its answers equal brute force on the
    /// deformed mesh, through a sequence of local, partial and far deformations.
    #[test]
    fn deforming_some_vertices_is_deforming_to_all() {
        let mut s = 31;
        let env = Environment::<18>::from_mesh(soup(300, 2.0, &mut s), &BuildOptions::ENVIRONMENT)
            .unwrap();
        // Over `PARALLEL_LIST` vertices, so that whole lists go in parallel.
        let rest = sphere(70, 100);
        assert!(rest.vertices().len() > PARALLEL_LIST);
        let tris = rest.triangles().to_vec();
        let mut some = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let mut all = some.clone();
        let pose = Pose::new(
            glam::DMat3::from_quat(glam::DQuat::from_axis_angle(
                DVec3::new(1.0, 2.0, 3.0).normalize(),
                0.7,
            )),
            DVec3::splat(0.5),
        )
        .unwrap();
        let mut state = QueryState::new();
        let mut now = rest.vertices().to_vec();
        let mut contacts = 0;
        for round in 0..12 {
            let next: Vec<DVec3> = match round % 4 {
                0 => one_moved(&now, &mut s, |_| DVec3::new(0.5, -3.0, 1.0)),
                1 => deformed(rest.vertices(), &now, false, true, &mut s),
                2 => now.clone(),
                _ => deformed(rest.vertices(), &now, round == 11, false, &mut s),
            };
            // The moved vertices and an unmoved one, in increasing order; on every third
            // round vertex 0 is listed twice, first wrongly (the order then does not
            // increase).
            let (mut indices, mut positions) = (vec![], vec![]);
            if round % 3 == 1 {
                indices.push(0u32);
                positions.push(now[0] + DVec3::splat(9.0));
            }
            for (i, (a, b)) in now.iter().zip(&next).enumerate() {
                if a != b || i == 0 || i == 5 {
                    indices.push(i as u32);
                    positions.push(*b);
                }
            }
            now = next;
            let a = some.deform_some(&indices, &positions, 0.05).unwrap();
            let b = all.deform(&now, 0.05).unwrap();
            assert_eq!(a, b, "round {round}");
            assert_eq!(some.part.bvh.vertices, now, "round {round}");
            assert!(some.part.bvh.nodes == all.part.bvh.nodes, "round {round}");
            let (x, y) = (&some.stored, &all.stored);
            assert!(
                x.corners == y.corners && x.own_pts == y.own_pts && x.verts == y.verts,
                "round {round}: corners"
            );
            valid(&some);
            contacts += matches_fresh_build(
                &env,
                &some,
                (now.clone(), tris.clone()),
                &pose,
                &mut state,
                &format!("round {round}"),
            );
        }
        assert!(contacts > 0, "no round had a contact to compare");
    }

    /// A fan's centre lies in every leaf of the fan (thousands, listed once and
    /// deduplicated); moved alone, by `deform_some` and by `deform`, every one of those
    /// leaves is refit: the hierarchy stays valid (each bound holds its triangles) and
    /// answers as a fresh build. Large enough to be cut into pieces, so that the refit
    /// is sparse and visits only the marked leaves.
    #[test]
    fn a_fan_centre_moved_alone_refits_every_leaf_it_is_in() {
        let ring = 40_000u32;
        let mut verts = vec![DVec3::ZERO];
        verts.extend((0..ring).map(|i| {
            let a = f64::from(i) / f64::from(ring) * std::f64::consts::TAU;
            DVec3::new(a.cos(), a.sin(), 0.0)
        }));
        let tris: Vec<[u32; 3]> = (0..ring).map(|i| [0, 1 + i, 1 + (i + 1) % ring]).collect();
        let fan = Mesh::new(verts.clone(), tris.clone()).unwrap();
        let env = Environment::<18>::from_mesh(
            Mesh::new(
                vec![
                    DVec3::new(-2.0, -2.0, 0.5),
                    DVec3::new(2.0, -2.0, 0.5),
                    DVec3::new(0.0, 2.0, 0.5),
                ],
                vec![[0, 1, 2]],
            )
            .unwrap(),
            &BuildOptions::ENVIRONMENT,
        )
        .unwrap();
        let mut some = FlyingObject::<18>::new(fan, &BuildOptions::FLYING).unwrap();
        some.prepare_deform();
        assert!(
            some.deform.as_ref().is_some_and(|d| !d.pieces.is_empty()),
            "the fan is refit in pieces"
        );
        let mut all = some.clone();
        let mut state = QueryState::new();
        // Up through the plane at z = 0.5 and back: the fan turns into a cone and back.
        for (round, z) in [1.0, 0.25, 2.0, 0.0].into_iter().enumerate() {
            verts[0] = DVec3::new(0.0, 0.0, z);
            let a = some.deform_some(&[0], &[verts[0]], 0.05).unwrap();
            let b = all.deform(&verts, 0.05).unwrap();
            assert_eq!(a, b, "round {round}");
            assert_eq!(a.moved_vertices, 1);
            valid(&some);
            valid(&all);
            let hits = matches_fresh_build(
                &env,
                &some,
                (verts.clone(), tris.clone()),
                &Pose::IDENTITY,
                &mut state,
                &format!("round {round}"),
            );
            assert_eq!(hits > 0, z >= 0.5, "round {round}: {hits} contacts");
        }
    }

    /// Bad lists are refused by name and change nothing.
    #[test]
    fn deforming_some_refuses_bad_lists() {
        let rest = sphere(5, 6);
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let (id, nodes) = (obj.id, obj.part.bvh.nodes.clone());
        let n = rest.vertices().len() as u32;
        let p = DVec3::splat(0.25);
        for (indices, positions, what) in [
            (vec![1, 2], vec![p], "positions"),
            (vec![1, n], vec![p, p], "indices"),
        ] {
            match obj.deform_some(&indices, &positions, 0.1) {
                Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, what),
                other => panic!("{what}: {other:?}"),
            }
        }
        assert!(matches!(
            obj.deform_some(&[1, 4], &[p, DVec3::new(0.0, f64::NAN, 0.0)], 0.1),
            Err(Error::NonFiniteCoordinate { vertex: 4 })
        ));
        assert!(matches!(
            obj.deform_some(&[7], &[DVec3::new(1e300, 0.0, 0.0)], 0.1),
            Err(Error::CoordinateOutOfRange { vertex: 7, .. })
        ));
        assert!(matches!(
            obj.deform_some(&[1], &[p], -1.0),
            Err(Error::InvalidParameter { name: "margin", .. })
        ));
        assert_eq!((obj.id, &obj.part.bvh.nodes), (id, &nodes));
        assert!(obj.deform.is_none());
        assert_eq!(obj.part.bvh.vertices, rest.vertices());
    }

    /// A list long enough to be applied in parallel is refused by its first fault in list
    /// order, whichever kind it is, and changes nothing; put right, it is applied whole.
    #[test]
    fn long_lists_are_refused_by_their_first_fault() {
        let rest = sphere(100, 120);
        let n = rest.vertices().len();
        assert!(n > 2 * PARALLEL_LIST);
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let (id, nodes) = (obj.id, obj.part.bvh.nodes.clone());
        let indices: Vec<u32> = (0..n as u32).collect();
        let positions: Vec<DVec3> = rest.vertices().iter().map(|&v| v * 1.5).collect();
        let pool = crate::testing::pool(3);
        for (bad_index, nan) in [(5_000, 6_000), (6_000, 5_000), (n - 1, 100)] {
            let (mut ix, mut pos) = (indices.clone(), positions.clone());
            ix[bad_index] = n as u32 + 3;
            pos[nan].z = f64::NAN;
            let got = pool.install(|| obj.deform_some(&ix, &pos, 0.05));
            if bad_index < nan {
                assert!(
                    matches!(&got, Err(Error::InvalidParameter { name: "indices", reason })
                        if reason.starts_with(&format!("indices[{bad_index}]"))),
                    "{got:?}"
                );
            } else {
                assert!(
                    matches!(got, Err(Error::NonFiniteCoordinate { vertex }) if vertex == nan),
                    "{got:?}"
                );
            }
        }
        assert_eq!((obj.id, &obj.part.bvh.nodes), (id, &nodes));
        assert_eq!(obj.part.bvh.vertices, rest.vertices());
        // And the whole list, put right, moves every vertex.
        let stats = pool
            .install(|| obj.deform_some(&indices, &positions, 0.05))
            .unwrap();
        assert_eq!(stats.moved_vertices as usize, n);
        assert_eq!(obj.part.bvh.vertices, positions);
    }

    /// A long list is checked in slices; a repeat or a step back where two slices meet
    /// still makes it a list that does not increase, whose last position of a vertex wins.
    #[test]
    fn a_repeat_between_checked_slices_is_seen() {
        let rest = sphere(100, 120);
        let n = rest.vertices().len();
        assert!(n > 4 * PARALLEL_LIST);
        let pool = crate::testing::pool(3);
        for back in [0, 1] {
            let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
            // Slices start at multiples of `PARALLEL_LIST`: entry `PARALLEL_LIST` repeats
            // (or steps back from) the last index of the slice before it.
            let mut indices: Vec<u32> = (0..n as u32).collect();
            indices[PARALLEL_LIST] = indices[PARALLEL_LIST - 1] - back;
            let positions: Vec<DVec3> = indices
                .iter()
                .enumerate()
                .map(|(at, &v)| rest.vertices()[v as usize] + DVec3::splat(at as f64 * 1e-3))
                .collect();
            let mut want = rest.vertices().to_vec();
            for (&v, &p) in indices.iter().zip(&positions) {
                want[v as usize] = p;
            }
            let stats = pool
                .install(|| obj.deform_some(&indices, &positions, 0.05))
                .unwrap();
            assert_eq!(obj.part.bvh.vertices, want, "stepping back by {back}");
            // Each vertex counted once, however often listed.
            let moved = want.iter().zip(rest.vertices()).filter(|(a, b)| a != b);
            assert_eq!(stats.moved_vertices as usize, moved.count());
            valid(&obj);
        }
    }

    #[test]
    fn bad_vertices_are_refused_and_change_nothing() {
        let rest = sphere(5, 6);
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let (id, nodes) = (obj.id, obj.part.bvh.nodes.clone());
        let mut bad = rest.vertices().to_vec();
        bad[3].y = f64::NAN;
        assert!(matches!(
            obj.deform(&bad, 0.1),
            Err(Error::NonFiniteCoordinate { vertex: 3 })
        ));
        bad[3].y = 1e300;
        assert!(matches!(
            obj.deform(&bad, 0.1),
            Err(Error::CoordinateOutOfRange { vertex: 3, .. })
        ));
        // The vector kernel takes vertices four at a time and leaves the rest of a word to
        // the portable loop: a bad vertex in that tail is named, and one before it wins.
        let mut bad = rest.vertices().to_vec();
        assert_eq!(bad.len() % 4, 2, "a word ending in a tail of two");
        let last = bad.len() - 1;
        bad[last].x = f64::INFINITY;
        assert!(matches!(
            obj.deform(&bad, 0.1),
            Err(Error::NonFiniteCoordinate { vertex }) if vertex == last
        ));
        bad[last - 2].z = -1e300;
        assert!(matches!(
            obj.deform(&bad, 0.1),
            Err(Error::CoordinateOutOfRange { vertex, .. }) if vertex == last - 2
        ));
        let short = &rest.vertices()[1..];
        assert!(matches!(
            obj.deform(short, 0.1),
            Err(Error::InvalidParameter {
                name: "vertices",
                ..
            })
        ));
        for m in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                obj.deform(rest.vertices(), m),
                Err(Error::InvalidParameter { name: "margin", .. })
            ));
        }
        assert_eq!((obj.id, &obj.part.bvh.nodes), (id, &nodes));
        assert!(
            obj.deform.is_none(),
            "a refused first deformation made it a deformed object"
        );
        assert_eq!(obj.part.bvh.vertices, rest.vertices());
    }
}
