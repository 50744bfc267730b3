//! Renewing the worn subtrees of a deformable object (Klosowski et al. 1998, §6.1,
//! "Deformable objects"; issue 20 §3, "subtrees are rebuilt in bounded slices over
//! frames"). A refit keeps the topology chosen for the rest shape, so deformations that
//! stretch, twist or fold the object wear it: its boxes grow and overlap, and its
//! surface-area cost rises. A worn subtree is rebuilt over its own triangles from their
//! current positions, a few subtrees per call, into the node slots it had: it keeps its
//! number of leaves, so its node count and its place in the layout (a node's descendants
//! fill the slots after its first child, its leaves one run of triangle positions; see
//! `hierarchy::build::flatten`) stay, and nothing outside it moves. Splits are binned
//! surface-area splits on the triangles' box centres (Wald 2007, "On fast construction of
//! SAH-based bounding volume hierarchies"), moved to the nearest count that the leaf
//! budget allows.
//!
//! The subtrees are the pieces the refit runs in parallel ([`DeformScratch`]). Once they
//! have grown into each other, renewing them cannot help: the whole tree is then laid out
//! the same way in slices over several calls, staged (triangle order, corner arrays and
//! lists) and swapped in by the next deformation, which refits all of it.

use super::deform::{DeformScratch, inner_pad, inner_room, mean_leaf_extent, stale};
use super::{
    CornerArrays, CornerSet, FlyingObject, LANES, NEXT_ID, distinct_corners, inner_area,
    own_in_lanes, triangle_span, write_lanes, write_points,
};
use crate::dop::Dop;
use crate::env::tree::area;
use crate::hierarchy::{Bvh, END, LEAF, leaf_span, longest_leaf};
use glam::{DVec3, Vec3};
use rayon::prelude::*;
use std::sync::atomic::Ordering as AtomicOrdering;

/// What one [`FlyingObject::renew`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Renewal {
    /// Work done, in triangles passed through one split (or read for a whole rebuild):
    /// renewing a subtree of m triangles costs about m log2(m / leaf size).
    pub work: u64,
    /// Worn subtrees rebuilt this call.
    pub subtrees: u32,
    /// Subtrees still worn past the threshold, left to later calls by the budget.
    pub worn_left: u32,
    /// Whether a rebuild of the whole hierarchy is under way: slices left to later calls,
    /// or all done and waiting for the next [`FlyingObject::deform`] to take over
    /// ([`DeformStats::rebuilt`](super::DeformStats::rebuilt)).
    pub rebuilding: bool,
}

/// Buffers of [`FlyingObject::renew`], kept between calls, and the rebuild under way.
#[derive(Clone, Debug, Default)]
pub(crate) struct RenewScratch {
    items: Vec<Item>,
    stack: Vec<Task>,
    /// The worn pieces this call: wear and index.
    worn: Vec<(f64, u32)>,
    /// The new leaves' distinct corners, and per slot of the subtree where its run starts
    /// and how long it is (0: not listed).
    corners: Vec<u32>,
    runs: Vec<(u32, u32)>,
    /// One leaf's distinct corners, and their positions.
    own: Vec<u32>,
    pts: Vec<DVec3>,
    /// The subtree being rebuilt: its layout so far is in `links` and `parent`.
    plan: Option<Plan>,
    /// A whole tree laid out, being staged for the deformation that takes it over.
    staged: Option<Box<Staged>>,
    /// The planned link and parent of the subtree's root (entry 0) and of its descendants'
    /// slots `lo..hi` (entry `1 + j - lo`).
    links: Vec<u32>,
    parent: Vec<u32>,
}

/// A subtree being rebuilt, over one call or (the whole tree) several.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Its root's slot, and its descendants' slots `lo..hi`.
    root: u32,
    lo: u32,
    hi: u32,
    /// Its triangles' positions `t0..t1`.
    t0: u32,
    t1: u32,
    /// No leaf gets more triangles than the largest had.
    most: u32,
    /// Triangles read into items so far (their positions then are what splits see).
    made: u32,
    /// The next free slot of the layout.
    next: u32,
}

/// What a whole rebuilt tree brings besides its links, made in slices after its layout:
/// the triangle order, the nodes' corner arrays and the leaves' corner lists, all in slot
/// order, ready to be swapped in.
#[derive(Clone, Debug)]
struct Staged {
    tris: Vec<[u32; 3]>,
    ids: Vec<u32>,
    stored: CornerArrays,
    own: Vec<u32>,
    own_at: Vec<u32>,
    /// Triangles copied from the items so far, and the next slot to list.
    copied: u32,
    slot: u32,
}

/// A triangle being partitioned: its box's centre and bounds (`f32`: they only choose
/// the split), its corners and its original index.
#[derive(Clone, Copy, Debug)]
struct Item {
    centre: [f32; 3],
    lo: [f32; 3],
    hi: [f32; 3],
    tri: [u32; 3],
    id: u32,
}

/// A node to lay out: its items, how many leaves it gets, and its slot.
#[derive(Clone, Copy, Debug)]
struct Task {
    items: (u32, u32),
    leaves: u32,
    slot: u32,
}

/// How many times `at` the whole tree's cost may reach before it is rebuilt whole, even
/// where its pieces have not grown into each other ([`FlyingObject::renew`]): pieces worn
/// faster than the budget renews them.
const WORN_WHOLE: f64 = 2.0;

/// Bins per axis of a split.
const BINS: usize = 16;

impl<const K: usize> FlyingObject<K> {
    /// Renews a deformed hierarchy within `budget` units of work
    /// ([`Renewal::work`]; one subtree, or one split, may pass it). Subtrees that
    /// deformations have worn past `at` times their surface-area cost as built are
    /// rebuilt, most worn first; once they have grown into each other past `at`
    /// ([`DeformStats::top_cost_ratio`](super::DeformStats::top_cost_ratio)), or the whole
    /// tree's cost has passed twice `at` (its subtrees wear faster than the budget renews
    /// them), the whole hierarchy is rebuilt instead, in slices over the calls that follow
    /// (deformations go on refitting the old one meanwhile), and the first deformation
    /// after the last slice takes it over and refits all of it. Each rebuilt tree keeps
    /// its node slots and leaf count, and is bounded from the current vertices when it
    /// takes over. Called after every [`FlyingObject::deform`], it keeps a deforming
    /// hierarchy fit at a bounded cost per frame. Queries are exact throughout, and the
    /// object gets a new identity when a rebuilt tree takes over.
    ///
    /// The subtrees are those the refit runs in parallel, each about a 32nd of the tree;
    /// a hierarchy too small to have them is rebuilt whole. An object never deformed has
    /// nothing to renew.
    ///
    /// # Complexity
    /// A look at each subtree's cost, then the budget (the first split of a whole rebuild
    /// reads every triangle once). A whole tree's take-over costs its deformation about a
    /// refit of every node.
    pub fn renew(&mut self, at: f64, budget: u64) -> Renewal {
        let Some(mut scratch) = self.deform.take() else {
            return Renewal::default();
        };
        let mut out = Renewal::default();
        let n = self.part.bvh.nodes.len();
        let (whole, top) = self.cost_ratios_with(&scratch);
        if scratch.renew.plan.is_none() && n >= 7 && (top > at || whole > WORN_WHOLE * at) {
            self.plan_start(&mut scratch.renew, 0, 1, n);
        }
        if scratch.renew.plan.is_some_and(|p| p.root == 0) {
            out.work = self.plan_step(&mut scratch.renew, budget);
            if scratch
                .renew
                .plan
                .is_some_and(|p| plan_done(&p, &scratch.renew))
            {
                out.work += self.stage_step(&mut scratch.renew, budget.saturating_sub(out.work));
            }
            out.rebuilding = true;
        } else {
            out = self.renew_pieces(&mut scratch, at, budget);
        }
        if out.subtrees > 0 {
            self.id = NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed);
        }
        self.deform = Some(scratch);
        out
    }

    /// The worn pieces, most worn first, each rebuilt within the call, while work is left.
    fn renew_pieces(&mut self, scratch: &mut DeformScratch<K>, at: f64, budget: u64) -> Renewal {
        let mut out = Renewal::default();
        let mut worn = std::mem::take(&mut scratch.renew.worn);
        worn.clear();
        let nodes = &self.part.bvh.nodes;
        for (p, piece) in scratch.pieces.iter().enumerate() {
            let wear = piece.wear(area(&nodes[piece.root as usize].dop));
            if wear > at {
                worn.push((wear, p as u32));
            }
        }
        worn.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out.worn_left = worn.len() as u32;
        for &(_, p) in &worn {
            if out.work >= budget {
                break;
            }
            out.worn_left -= 1;
            let piece = scratch.pieces[p as usize];
            let (lo, hi) = (piece.nodes.0 as usize, piece.nodes.1 as usize);
            if !self.plan_start(&mut scratch.renew, piece.root as usize, lo, hi) {
                continue;
            }
            out.work += self.plan_step(&mut scratch.renew, u64::MAX);
            self.plan_apply(scratch);
            out.subtrees += 1;
            scratch.pieces[p as usize].measure(&self.part.bvh.nodes);
        }
        scratch.renew.worn = worn;
        out
    }

    /// The surface-area cost ratios of a deformed object now
    /// ([`DeformStats::cost_ratio`](super::DeformStats::cost_ratio) and
    /// [`DeformStats::top_cost_ratio`](super::DeformStats::top_cost_ratio)); `(1, 1)` for
    /// an object never deformed.
    #[must_use]
    pub fn cost_ratios(&self) -> (f64, f64) {
        self.deform
            .as_ref()
            .map_or((1.0, 1.0), |s| self.cost_ratios_with(s))
    }

    /// Starts rebuilding the subtree under node `root`, whose descendants are the slots
    /// `lo..hi`; `false` (nothing started) for one of fewer than four leaves, which has
    /// too few nodes for a choice.
    fn plan_start(&self, r: &mut RenewScratch, root: usize, lo: usize, hi: usize) -> bool {
        let leaves = (hi - lo) / 2 + 1;
        if leaves < 4 {
            return false;
        }
        let bvh = &self.part.bvh;
        debug_assert_eq!(bvh.nodes[root].first_child() as usize, lo);
        let (t0, t1) = triangle_span(bvh, root);
        let most = longest_leaf(&bvh.ids[t0..t1]) as u32;
        r.items.clear();
        r.stack.clear();
        r.stack.push(Task {
            items: (0, (t1 - t0) as u32),
            leaves: leaves as u32,
            slot: root as u32,
        });
        r.links.clear();
        r.links.resize(hi - lo + 1, 0);
        r.parent.clear();
        r.parent.resize(hi - lo + 1, 0);
        r.plan = Some(Plan {
            root: root as u32,
            lo: lo as u32,
            hi: hi as u32,
            t0: t0 as u32,
            t1: t1 as u32,
            most,
            made: 0,
            next: lo as u32,
        });
        true
    }

    /// Advances the plan by about `budget` units of work: the triangles' items read from
    /// their current positions, then splits in `flatten`'s layout (a node's two children
    /// get the next two slots when it is laid out, the left subtree before the right).
    /// Returns the work done.
    fn plan_step(&self, r: &mut RenewScratch, budget: u64) -> u64 {
        let Some(mut p) = r.plan else {
            return 0;
        };
        let bvh = &self.part.bvh;
        let mut used = 0u64;
        let total = p.t1 - p.t0;
        if p.made < total {
            let end = (u64::from(p.made) + budget.max(1)).min(u64::from(total)) as u32;
            r.items.extend((p.t0 + p.made..p.t0 + end).map(|pos| {
                let pos = pos as usize;
                let tri = bvh.tris[pos];
                let [a, b, c] = tri.map(|v| bvh.vertices[v as usize]);
                let (l, h) = (a.min(b).min(c).as_vec3(), a.max(b).max(c).as_vec3());
                Item {
                    centre: ((l + h) * 0.5).to_array(),
                    lo: l.to_array(),
                    hi: h.to_array(),
                    tri,
                    id: bvh.ids[pos] & !END,
                }
            }));
            used += u64::from(end - p.made);
            p.made = end;
        }
        while p.made == total && used < budget {
            let Some(t) = r.stack.pop() else { break };
            let (a, b) = (t.items.0 as usize, t.items.1 as usize);
            used += (b - a) as u64;
            let link = if t.leaves == 1 {
                r.items[b - 1].id |= END;
                LEAF | (p.t0 as usize + a) as u32
            } else {
                let (n1, l1) = split(&mut r.items[a..b], t.leaves, p.most as usize);
                let first = p.next;
                p.next += 2;
                for c in [first, first + 1] {
                    r.parent[(1 + c - p.lo) as usize] = t.slot;
                }
                let mid = (a + n1) as u32;
                r.stack.push(Task {
                    items: (mid, t.items.1),
                    leaves: t.leaves - l1,
                    slot: first + 1,
                });
                r.stack.push(Task {
                    items: (t.items.0, mid),
                    leaves: l1,
                    slot: first,
                });
                first
            };
            let at = if t.slot == p.root {
                0
            } else {
                1 + t.slot - p.lo
            };
            r.links[at as usize] = link;
        }
        r.plan = Some(p);
        used
    }

    /// Puts a finished plan in place: links, parents and triangle order, then bounds from
    /// the current vertices (grown as a refit's), up through the ancestors whose bound no
    /// longer contains the subtree, and the new nodes' corners.
    fn plan_apply(&mut self, scratch: &mut DeformScratch<K>) {
        let Some(p) = scratch.renew.plan.take() else {
            return;
        };
        debug_assert!(plan_done(&p, &scratch.renew));
        debug_assert_eq!(p.next, p.hi);
        let (root, lo, hi) = (p.root as usize, p.lo as usize, p.hi as usize);
        let margin = scratch.margin;
        let pad = inner_pad(margin, scratch.leaf_extent);
        let bvh = &mut self.part.bvh;
        let r = &scratch.renew;
        let old_area = inner_area(&bvh.nodes[lo..hi]);
        for (j, at) in std::iter::once((root, 0)).chain((lo..hi).map(|j| (j, 1 + j - lo))) {
            let link = r.links[at];
            bvh.nodes[j].link = link;
            self.links[j] = link;
            scratch.links[j] = link;
            if j != root {
                self.parent[j] = r.parent[at];
            }
        }
        let t0 = p.t0 as usize;
        for (k, it) in r.items.iter().enumerate() {
            bvh.tris[t0 + k] = it.tri;
            bvh.ids[t0 + k] = it.id;
        }
        scratch.index_leaves(bvh, lo..hi);
        // Bounds: the leaves in parallel (each gathers its corners, the wait), then the
        // inner nodes, children before parents (they come after them).
        let Bvh {
            nodes,
            vertices,
            tris,
            ids,
        } = &mut *bvh;
        nodes[lo..hi]
            .par_iter_mut()
            .with_min_len(1024)
            .filter(|node| node.link & LEAF != 0)
            .for_each(|node| {
                let first = (node.link & !LEAF) as usize;
                let corners = tris[leaf_span(ids, first)].as_flattened();
                let exact = Dop::from_points_quick(corners.iter().map(|&v| vertices[v as usize]));
                node.dop = exact.padded_by_extent(margin);
            });
        for j in (lo..hi).rev() {
            let link = nodes[j].link;
            if link & LEAF == 0 {
                let c = link as usize;
                let room = inner_room(nodes[c].link, nodes[c + 1].link, pad);
                nodes[j].dop = nodes[c].dop.merge(&nodes[c + 1].dop).padded(room);
            }
        }
        scratch.flags[lo..hi].fill(0);
        self.inner_area += inner_area(&bvh.nodes[lo..hi]) - old_area;
        let mut j = root;
        loop {
            let c = bvh.nodes[j].first_child() as usize;
            let exact = bvh.nodes[c].dop.merge(&bvh.nodes[c + 1].dop);
            let room = inner_room(bvh.nodes[c].link, bvh.nodes[c + 1].link, pad);
            if !stale(&bvh.nodes[j].dop, &exact, room) {
                break;
            }
            let old = area(&bvh.nodes[j].dop);
            bvh.nodes[j].dop = exact.padded(room);
            // A piece's root's ancestors are top nodes: no piece's cost changes.
            self.inner_area += area(&bvh.nodes[j].dop) - old;
            if j == 0 {
                break;
            }
            j = self.parent[j] as usize;
        }
        self.top[0].dop = bvh.root_dop();
        self.recorner_subtree(scratch, lo, hi);
    }

    /// Stages a whole tree laid out by its plan, about `budget` units of work: its
    /// triangle order, then slot by slot the corners each leaf keeps (its distinct corners,
    /// where few enough; inner nodes keep none). Returns the work done.
    fn stage_step(&self, r: &mut RenewScratch, budget: u64) -> u64 {
        let Some(p) = r.plan else {
            return 0;
        };
        let bvh = &self.part.bvh;
        let n = bvh.nodes.len();
        let st = r.staged.get_or_insert_with(|| {
            Box::new(Staged {
                tris: Vec::with_capacity(r.items.len()),
                ids: Vec::with_capacity(r.items.len()),
                stored: CornerArrays::with_capacity(n),
                own: Vec::new(),
                own_at: vec![0],
                copied: 0,
                slot: 0,
            })
        });
        let mut used = 0u64;
        let total = p.t1 - p.t0;
        if st.copied < total {
            let end = (u64::from(st.copied) + budget.max(1)).min(u64::from(total)) as u32;
            for it in &r.items[st.copied as usize..end as usize] {
                st.tris.push(it.tri);
                st.ids.push(it.id);
            }
            used += u64::from(end - st.copied);
            st.copied = end;
        }
        while st.copied == total && (st.slot as usize) < n && used < budget {
            let j = st.slot as usize;
            st.slot += 1;
            used += 1;
            // The plan of the whole tree lists slot `j` at entry `j` (its descendants start at 1).
            let link = r.links[j];
            let first = (link & !LEAF) as usize;
            if link & LEAF != 0 && distinct_corners(&st.tris[leaf_span(&st.ids, first)], &mut r.own)
            {
                used += r.own.len() as u64;
                st.own.extend_from_slice(&r.own);
                r.pts.clear();
                r.pts
                    .extend(r.own.iter().map(|&v| bvh.vertices[v as usize]));
                st.stored.push::<K>(&r.pts, CornerSet::Own, 0.0);
            } else {
                st.stored.push::<K>(&[], CornerSet::Slabs, 0.0);
            }
            st.own_at.push(st.own.len() as u32);
        }
        used
    }

    /// Swaps in a whole tree staged to the end, before a deformation's refit: its links,
    /// parents, triangle order, corner arrays and lists, and the pieces cut anew, every
    /// bound a point to be re-made. The refit then treats every vertex as moved (the
    /// staged corners are from earlier frames), and [`FlyingObject::settle_take_over`]
    /// measures the new tree. Returns whether it took over.
    pub(super) fn take_over(&mut self, scratch: &mut DeformScratch<K>) -> bool {
        let n = self.part.bvh.nodes.len();
        let r = &mut scratch.renew;
        // Staging starts once the layout is done and lists every slot last.
        if r.staged.as_ref().is_none_or(|st| st.slot as usize != n) {
            return false;
        }
        let mut st = r.staged.take().expect("checked above");
        r.plan = None;
        let bvh = &mut self.part.bvh;
        let point = Dop::<K>::from_points_quick(std::iter::once(DVec3::ZERO));
        for j in 0..n {
            let link = r.links[j];
            bvh.nodes[j] = crate::hierarchy::Node { dop: point, link };
            self.links[j] = link;
            scratch.links[j] = link;
            if j > 0 {
                self.parent[j] = r.parent[j];
            }
        }
        std::mem::swap(&mut bvh.tris, &mut st.tris);
        std::mem::swap(&mut bvh.ids, &mut st.ids);
        scratch.index_leaves(bvh, 0..n);
        std::mem::swap(&mut self.stored, &mut st.stored);
        // The new tree keeps no k-DOP corners.
        self.later = std::sync::OnceLock::new();
        std::mem::swap(&mut scratch.own, &mut st.own);
        std::mem::swap(&mut scratch.own_at, &mut st.own_at);
        scratch.flags.fill(0);
        scratch.cut_pieces(bvh);
        true
    }

    /// After the refit that took a whole rebuilt tree over: its summed inner area, its
    /// pieces' costs and overlap, and its cost as built, from the bounds just made (the
    /// pieces were cut by [`FlyingObject::take_over`]).
    pub(super) fn settle_take_over(&mut self, scratch: &mut DeformScratch<K>) {
        let nodes = &self.part.bvh.nodes;
        self.inner_area = inner_area(nodes);
        scratch.measure_pieces(nodes);
        // The new tree's leaves may be of another size than the old one's.
        scratch.leaf_extent = mean_leaf_extent(&self.part.bvh);
        let root = area(&nodes[0].dop).max(f64::MIN_POSITIVE);
        self.built_cost = self.inner_area / root;
    }

    /// Rebuilds the subtree under node `root`, whose descendants are the slots `lo..hi`,
    /// within the call (tests renew any subtree this way). Returns whether it was rebuilt.
    #[cfg(test)]
    pub(super) fn renew_subtree(
        &mut self,
        scratch: &mut DeformScratch<K>,
        root: usize,
        lo: usize,
        hi: usize,
    ) -> bool {
        if !self.plan_start(&mut scratch.renew, root, lo, hi) {
            return false;
        }
        self.plan_step(&mut scratch.renew, u64::MAX);
        self.plan_apply(scratch);
        true
    }

    /// The corners of the renewed slots `lo..hi`: each new leaf's distinct corners listed
    /// for the refit while they fit in the room the old nodes' lists left, and kept for
    /// re-bounding while they fit in the room the old slots' corner arrays left (padded
    /// with copies of the first, harmless for extremes); inner nodes and the rest keep
    /// none.
    fn recorner_subtree(&mut self, scratch: &mut DeformScratch<K>, lo: usize, hi: usize) {
        let bvh = &self.part.bvh;
        let r = &mut scratch.renew;
        let (room_lo, room_hi) = (scratch.own_at[lo], scratch.own_at[hi]);
        let mut room = room_hi - room_lo;
        r.corners.clear();
        r.runs.clear();
        for j in lo..hi {
            let link = bvh.nodes[j].link;
            let start = r.corners.len() as u32;
            let first = (link & !LEAF) as usize;
            let len = if link & LEAF != 0
                && distinct_corners(&bvh.tris[leaf_span(&bvh.ids, first)], &mut r.own)
                && r.own.len() as u32 <= room
            {
                r.corners.extend_from_slice(&r.own);
                r.own.len() as u32
            } else {
                0
            };
            room -= len;
            r.runs.push((start, len));
        }
        // The room left over (`room`) goes to the first inner node, whose list the refit
        // never reads (inner renewed nodes keep no corners).
        let gap_at = (lo..hi).find(|&j| bvh.nodes[j].link & LEAF == 0);
        let mut cursor = room_lo;
        let stored = &mut self.stored;
        // The slots' corner arrays are re-cut among the new nodes: each kept list takes
        // what it needs, in slot order (one by one where that pays, else in lanes), and
        // the last slot's ranges take what is left. The old slots' ranges would leave a
        // leaf with more corners than its slot held, or on an inner node's slot with
        // none, bounded from its slabs.
        let (mut pts_at, pts_end) = (stored.own_start[lo], stored.own_start[hi]);
        let (mut lanes_at, lanes_end) = (stored.vstart[lo], stored.vstart[hi]);
        for j in lo..hi {
            scratch.own_at[j] = cursor;
            stored.own_start[j] = pts_at;
            stored.vstart[j] = lanes_at;
            let (start, len) = r.runs[j - lo];
            let (start, len) = (start as usize, len as usize);
            let mut set = CornerSet::Slabs;
            if len > 0 {
                let at = cursor as usize;
                scratch.own[at..at + len].copy_from_slice(&r.corners[start..start + len]);
                cursor += len as u32;
                let chunks = len.div_ceil(LANES) as u32;
                let points = pts_at + len as u32 <= pts_end;
                if lanes_at + chunks <= lanes_end && !(own_in_lanes(K) && points) {
                    lanes_at += chunks;
                    set = CornerSet::Own;
                } else if points {
                    pts_at += len as u32;
                    set = CornerSet::OwnLanes;
                }
            } else if Some(j) == gap_at {
                cursor += room;
            }
            stored.corners[j] = set;
            stored.slack[j] = (0.0, 0.0);
        }
        // Then the corners into their ranges, padded to them with copies of the first.
        for j in lo..hi {
            let set = stored.corners[j];
            if !matches!(set, CornerSet::Own | CornerSet::OwnLanes) {
                continue;
            }
            let (start, len) = r.runs[j - lo];
            r.pts.clear();
            r.pts.extend(
                r.corners[start as usize..(start + len) as usize]
                    .iter()
                    .map(|&v| bvh.vertices[v as usize]),
            );
            let (o, v) = (
                stored.own_start[j] as usize..stored.own_start[j + 1] as usize,
                stored.vstart[j] as usize..stored.vstart[j + 1] as usize,
            );
            stored.slack[j] = if set == CornerSet::Own {
                write_lanes(&mut stored.verts[v], &r.pts)
            } else {
                write_points(&mut stored.own_pts[o], &r.pts)
            };
        }
        debug_assert_eq!(cursor, room_hi, "the renewed lists fill the old room");
    }
}

/// Whether every triangle of the plan has been read and every node laid out.
fn plan_done(p: &Plan, r: &RenewScratch) -> bool {
    p.made == p.t1 - p.t0 && r.stack.is_empty()
}

/// Splits `items` (a node of `leaves` leaves, none of more than `most` triangles) in two:
/// the binned surface-area split of their centres along their longest axis, moved to the
/// nearest count both halves can be laid out with. Returns the left half's item and leaf
/// counts, the items partitioned.
fn split(items: &mut [Item], leaves: u32, most: usize) -> (usize, u32) {
    let n = items.len();
    let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    for it in items.iter() {
        let c = Vec3::from(it.centre);
        lo = lo.min(c);
        hi = hi.max(c);
    }
    let extent = hi - lo;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let want = if extent[axis] > 0.0 {
        sah_count(items, axis, lo[axis], extent[axis])
    } else {
        n / 2
    };
    let n1 = nearest_feasible(want, n, leaves, most);
    items.select_nth_unstable_by(n1, |a, b| a.centre[axis].total_cmp(&b.centre[axis]));
    let (l_lo, l_hi) = leaf_range(n1, n, leaves, most).expect("a feasible count");
    // Leaves in proportion to triangles, within what both halves allow.
    let share = ((leaves as f64 * n1 as f64 / n as f64).round() as u32).clamp(l_lo, l_hi);
    (n1, share)
}

/// The count of items left of the cheapest of [`BINS`] − 1 planes across `axis`, by the
/// surface-area heuristic over the items' boxes.
fn sah_count(items: &[Item], axis: usize, lo: f32, extent: f32) -> usize {
    let scale = BINS as f32 / extent;
    let mut count = [0usize; BINS];
    let mut bins = [(Vec3::INFINITY, Vec3::NEG_INFINITY); BINS];
    for it in items {
        let b = (((it.centre[axis] - lo) * scale) as usize).min(BINS - 1);
        count[b] += 1;
        bins[b].0 = bins[b].0.min(Vec3::from(it.lo));
        bins[b].1 = bins[b].1.max(Vec3::from(it.hi));
    }
    let half_area = |(l, h): (Vec3, Vec3)| {
        let e = (h - l).max(Vec3::ZERO);
        f64::from(e.x * e.y + e.y * e.z + e.z * e.x)
    };
    let join = |a: (Vec3, Vec3), b: (Vec3, Vec3)| (a.0.min(b.0), a.1.max(b.1));
    // Right-hand costs of each plane, then a sweep from the left.
    let mut right = [0.0f64; BINS];
    let (mut acc, mut m) = ((Vec3::INFINITY, Vec3::NEG_INFINITY), 0);
    for b in (1..BINS).rev() {
        acc = join(acc, bins[b]);
        m += count[b];
        right[b] = if m > 0 {
            half_area(acc) * m as f64
        } else {
            0.0
        };
    }
    let (mut acc, mut m) = ((Vec3::INFINITY, Vec3::NEG_INFINITY), 0);
    let (mut best, mut best_cost) = (items.len() / 2, f64::INFINITY);
    for b in 0..BINS - 1 {
        acc = join(acc, bins[b]);
        m += count[b];
        if m == 0 || m == items.len() {
            continue;
        }
        let cost = half_area(acc) * m as f64 + right[b + 1];
        if cost < best_cost {
            (best, best_cost) = (m, cost);
        }
    }
    best
}

/// The leaf counts the left half of a split of `n` items at `n1` may take, with `leaves`
/// in all and at most `most` items per leaf: each half needs a leaf per `most` items and
/// at most one per item. `None` when there is none.
fn leaf_range(n1: usize, n: usize, leaves: u32, most: usize) -> Option<(u32, u32)> {
    if n1 == 0 || n1 >= n {
        return None;
    }
    let n2 = n - n1;
    let need = |m: usize| m.div_ceil(most) as u32;
    let lo = need(n1).max(leaves.saturating_sub(n2 as u32));
    let hi = (n1 as u32).min(leaves.checked_sub(need(n2))?);
    (lo <= hi).then_some((lo, hi))
}

/// The feasible left count ([`leaf_range`]) nearest `want`. One always exists for a node
/// laid out before with as many leaves (a leaf of at most `most` items, the rest right).
fn nearest_feasible(want: usize, n: usize, leaves: u32, most: usize) -> usize {
    let want = want.clamp(1, n - 1);
    for d in 0..n {
        for c in [want.checked_sub(d), Some(want + d)].into_iter().flatten() {
            if leaf_range(c, n, leaves, most).is_some() {
                return c;
            }
        }
    }
    unreachable!("a node of {n} items and {leaves} leaves has a split")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Environment;
    use crate::hierarchy::BuildOptions;
    use crate::pose::Pose;
    use crate::query::QueryState;
    use crate::testing::{for_each_k, lcg, soup};
    use crate::tumble::deform::tests::{
        answers_as_fresh_builds_with, matches_fresh_build, sphere, valid,
    };

    /// Node `i`'s subtree size in nodes.
    fn size<const K: usize>(obj: &FlyingObject<K>, i: usize) -> usize {
        let node = &obj.part.bvh.nodes[i];
        if node.is_leaf() {
            1
        } else {
            let c = node.first_child() as usize;
            1 + size(obj, c) + size(obj, c + 1)
        }
    }

    /// The distinct corners of node `i`'s triangles, sorted.
    fn corners_of<const K: usize>(obj: &FlyingObject<K>, i: usize) -> Vec<u32> {
        let (a, b) = triangle_span(&obj.part.bvh, i);
        let mut v: Vec<u32> = obj.part.bvh.tris[a..b].as_flattened().to_vec();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// What the refit and re-bounding read of a node's corners is true of its triangles:
    /// a leaf's listed corners are exactly its distinct corners; a node that keeps its
    /// own corners has them listed, and its stored points are those corners (padded with
    /// copies).
    pub(super) fn corners_sound<const K: usize>(obj: &FlyingObject<K>) {
        let s = obj.deform.as_ref().expect("deformed");
        let st = &obj.stored;
        for i in 0..obj.part.bvh.nodes.len() {
            let listed = &s.own[s.own_at[i] as usize..s.own_at[i + 1] as usize];
            let keeps = matches!(st.corners[i], CornerSet::Own | CornerSet::OwnLanes);
            let leaf = obj.part.bvh.nodes[i].is_leaf();
            if (leaf && !listed.is_empty()) || keeps {
                assert_eq!(listed, corners_of(obj, i).as_slice(), "node {i}'s list");
            }
            let f32_of = |v: u32| obj.part.bvh.vertices[v as usize].as_vec3().to_array();
            let want: Vec<[f32; 3]> = listed.iter().map(|&v| f32_of(v)).collect();
            let kept: Vec<[f32; 3]> = match st.corners[i] {
                CornerSet::OwnLanes => {
                    st.own_pts[st.own_start[i] as usize..st.own_start[i + 1] as usize].to_vec()
                }
                CornerSet::Own => st.verts[st.vstart[i] as usize..st.vstart[i + 1] as usize]
                    .iter()
                    .flat_map(|c| (0..LANES).map(move |l| [c[0][l], c[1][l], c[2][l]]))
                    .collect(),
                _ => continue,
            };
            for p in &want {
                assert!(kept.contains(p), "node {i} lost a corner");
            }
            for p in &kept {
                assert!(
                    want.contains(p),
                    "node {i} keeps a stranger: leaf {leaf} {:?} listed {} kept {} {p:?} {want:?}",
                    st.corners[i],
                    listed.len(),
                    kept.len()
                );
            }
        }
    }

    /// Renews the whole tree in the first round, then a few random subtrees (nested ones
    /// too, each after the one before).
    fn renew_some<const K: usize>(obj: &mut FlyingObject<K>, round: usize) {
        let mut s = round as u64 + 5;
        let mut scratch = obj.deform.take().expect("deformed");
        let n = obj.part.bvh.nodes.len();
        for pick in 0..4 {
            let root = if pick == 0 && round == 0 {
                0
            } else {
                (lcg(&mut s) * n as f64) as usize
            };
            if obj.part.bvh.nodes[root].is_leaf() {
                continue;
            }
            let lo = obj.part.bvh.nodes[root].first_child() as usize;
            let hi = lo + size(obj, root) - 1;
            let before = obj.part.bvh.tris[triangle_span(&obj.part.bvh, root).0..].len();
            obj.renew_subtree(&mut scratch, root, lo, hi);
            assert_eq!(
                obj.part.bvh.tris[triangle_span(&obj.part.bvh, root).0..].len(),
                before,
                "the subtree's triangles moved"
            );
        }
        obj.deform = Some(scratch);
        obj.id = NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed);
        corners_sound(obj);
    }

    /// Renewed subtrees leave every answer equal to brute force on a fresh build (against
    /// an environment, another object, on either side of a pair; later deformations refit
    /// the renewed nodes as any others), and the hierarchy valid.
    #[test]
    fn renewed_objects_answer_as_fresh_builds() {
        fn with<const K: usize>() {
            answers_as_fresh_builds_with::<K>(Some(renew_some::<K>), &BuildOptions::FLYING);
            answers_as_fresh_builds_with::<K>(Some(renew_some::<K>), &BuildOptions::DEFORMING);
        }
        for_each_k!(with);
    }

    /// A large sphere twisted about its axis, more with each frame: its pieces wear, the
    /// most worn are renewed within the budget per call (one piece may pass it) and the
    /// whole tree's cost falls; once the twisted pieces overlap, the whole tree is rebuilt
    /// in slices; answers equal brute force.
    #[test]
    fn twisted_pieces_are_renewed_within_the_budget() {
        let rest = sphere(110, 180);
        let tris = rest.triangles().to_vec();
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let mut twisted = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let twist = |turns: f64| -> Vec<DVec3> {
            rest.vertices()
                .iter()
                .map(|p| {
                    let a = turns * std::f64::consts::TAU * p.z;
                    DVec3::new(
                        p.x * a.cos() - p.y * a.sin(),
                        p.x * a.sin() + p.y * a.cos(),
                        p.z,
                    )
                })
                .collect()
        };
        const BUDGET: u64 = 100_000;
        let (mut subtrees, mut rebuilt) = (0, false);
        let mut verts = Vec::new();
        for frame in 1..=16 {
            verts = twist(frame as f64 * 0.2);
            let stats = obj.deform(&verts, 0.05).unwrap();
            twisted.deform(&verts, 0.05).unwrap();
            let pieces = &obj.deform.as_ref().unwrap().pieces;
            assert!(
                pieces.len() >= 4,
                "{} pieces: too few to test",
                pieces.len()
            );
            // A piece of m triangles costs m per level, under 20 levels here.
            let largest = pieces
                .iter()
                .map(|p| (p.nodes.1 - p.nodes.0) as u64 * 2 + 2)
                .max()
                .unwrap();
            let r = obj.renew(2.0, BUDGET);
            subtrees += r.subtrees;
            rebuilt |= stats.rebuilt;
            // Twisted bands overlap: the whole tree may come to be rebuilt, in slices.
            if r.rebuilding {
                assert!(r.work <= BUDGET + tris.len() as u64, "frame {frame}: {r:?}");
            }
            valid(&obj);
            corners_sound(&obj);
            // Renewed leaves keep their corners: the subtree's room (its old leaves' and
            // small inner nodes' corners) holds the new leaves', however they fall on
            // the old slots.
            let bare = (0..obj.part.bvh.nodes.len())
                .filter(|&i| obj.part.bvh.nodes[i].is_leaf())
                .filter(|&i| obj.stored.corners[i] == CornerSet::Slabs)
                .count();
            assert_eq!(bare, 0, "frame {frame}: leaves bounded from their slabs");
            let (whole, _) = obj.cost_ratios();
            if r.subtrees > 0 {
                assert!(
                    whole < stats.cost_ratio,
                    "frame {frame}: {whole} ≥ {stats:?}"
                );
                assert!(r.work < BUDGET + 20 * largest, "frame {frame}: {r:?}");
            }
        }
        assert!(subtrees > 0, "the twist wore no piece past 2");
        // Without renewal the same twists leave a costlier tree.
        assert!(rebuilt, "the overlapping pieces were not rebuilt whole");
        assert!(obj.cost_ratios().0 < twisted.cost_ratios().0);
        let mut s = 3;
        let env = Environment::<18>::from_mesh(soup(300, 4.0, &mut s), &BuildOptions::ENVIRONMENT)
            .unwrap();
        let mut state = QueryState::new();
        let mut found = 0;
        for k in 0..4 {
            let q = glam::DQuat::from_axis_angle(DVec3::new(1.0, 2.0, 3.0).normalize(), k as f64);
            let pose = Pose::new(glam::DMat3::from_quat(q), DVec3::splat(2.0)).unwrap();
            let mesh = (verts.clone(), tris.clone());
            found += matches_fresh_build(&env, &obj, mesh, &pose, &mut state, &format!("pose {k}"));
        }
        assert!(found > 20, "too few contacts to compare: {found}");
    }
}

/// Whole rebuilds in slices.
#[cfg(test)]
mod whole {
    use super::tests::corners_sound;
    use super::*;
    use crate::env::Environment;
    use crate::hierarchy::BuildOptions;
    use crate::pose::Pose;
    use crate::query::QueryState;
    use crate::testing::{lcg, soup};
    use crate::tumble::deform::tests::{matches_fresh_build, sphere, valid};

    /// A sphere whose positions are dealt out to other vertices (every triangle across
    /// it, the subtrees grown into each other) is rebuilt whole in slices over several
    /// calls, each within the budget but for one split, while the old tree goes on being
    /// refit and answering; the next deformation takes the new one over, its cost ratio
    /// comes back to 1 and its corners are its own, and every answer on the way equals
    /// brute force.
    #[test]
    fn a_dealt_sphere_is_rebuilt_whole_in_slices() {
        let rest = sphere(110, 180);
        let tris = rest.triangles().to_vec();
        let n = rest.vertices().len();
        let mut s = 9u64;
        let mut deal: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            deal.swap(i, (lcg(&mut s) * (i + 1) as f64) as usize % (i + 1));
        }
        let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
        let env = Environment::<18>::from_mesh(soup(300, 4.0, &mut s), &BuildOptions::ENVIRONMENT)
            .unwrap();
        let mut state = QueryState::new();
        const BUDGET: u64 = 60_000;
        let (mut slices, mut rebuilt_at, mut found) = (0, None, 0);
        for frame in 1..=40 {
            // Dealt, then breathing a little.
            let k = 1.0 + 0.01 * frame as f64;
            let verts: Vec<DVec3> = deal.iter().map(|&i| rest.vertices()[i] * k).collect();
            let stats = obj.deform(&verts, 0.05).unwrap();
            if stats.rebuilt {
                assert!(rebuilt_at.is_none(), "rebuilt twice");
                rebuilt_at = Some(frame);
                let (whole, top) = obj.cost_ratios();
                assert!((whole - 1.0).abs() < 1e-9 && (top - 1.0).abs() < 1e-9);
                assert_eq!((stats.cost_ratio, stats.top_cost_ratio), (whole, top));
                corners_sound(&obj);
            }
            valid(&obj);
            let r = obj.renew(2.0, BUDGET);
            // One split of every triangle is the largest step.
            if r.rebuilding {
                assert!(r.work <= BUDGET + tris.len() as u64, "frame {frame}: {r:?}");
            }
            slices += u32::from(r.rebuilding);
            if frame % 4 == 0 || stats.rebuilt {
                let pose = Pose::new(glam::DMat3::IDENTITY, DVec3::splat(2.0)).unwrap();
                let mesh = (verts, tris.clone());
                let what = format!("frame {frame}");
                found += matches_fresh_build(&env, &obj, mesh, &pose, &mut state, &what);
            }
        }
        assert!(slices >= 3, "{slices} slices: the rebuild was not spread");
        assert!(rebuilt_at.is_some(), "never taken over");
        assert!(found > 20, "too few contacts to compare: {found}");
    }
}
