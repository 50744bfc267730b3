//! Deformable objects (Klosowski et al. 1998, §6.1, "Deformable objects"): the caller
//! replaces the vertices, the triangles stay, and the hierarchy keeps its topology. Each
//! node's k-DOP is *enlarged* by a margin when it is re-made, so a node is refit only when
//! its geometry escapes that bound (van den Bergen 1997, refitting AABB trees of deformable
//! models; the enlargement is the fat bound of dynamic trees). Parents are checked against
//! their children's bounds, so a refit climbs only as far as the escape reaches.
//!
//! What cannot be kept across a deformation is re-made: the leaves' byte codes (the
//! triangles moved inside their leaves), the own corners of nodes that keep their
//! triangles' vertices, and the convex hull of the root's climb. Refit nodes that kept
//! their k-DOP's corners keep none ([`CornerSet::Slabs`]): they are re-bounded from their
//! slabs, since enumerating a k-DOP's corners costs far more than refitting it. The
//! object gets a new identity, so no query state reuses a bound or a placed triangle of the
//! old geometry.

use super::{CornerArrays, CornerSet, FlyingObject, NEXT_ID, own_corners, slack_of, write_lanes};
use crate::dop::Dop;
use crate::env::tree::area;
use crate::error::{Error, Result};
use crate::hierarchy::{Bvh, END, LEAF, Node, codes};
use crate::mesh::check_point;
use glam::DVec3;
use rayon::prelude::*;
use smallvec::SmallVec;
use std::sync::atomic::Ordering as AtomicOrdering;

/// What one [`FlyingObject::deform`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeformStats {
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
    /// Whether [`crate::World::deform_shape`] rebuilt the hierarchy afterwards, the cost
    /// ratio having passed [`crate::WorldOptions::rebuild_at`] (never set by
    /// [`FlyingObject::deform`] itself).
    pub rebuilt: bool,
}

/// Buffers a deforming object keeps between deformations, and what its topology gives
/// once: each node's link, the subtrees refit in parallel, and the vertices of the nodes
/// that keep their own corners.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeformScratch<const K: usize> {
    /// Per vertex: whether this deformation moved it.
    moved: Vec<bool>,
    /// Per node, its link (first child, or `LEAF | first triangle`): the topology without
    /// the bounds, so that skipping a still subtree does not stream its k-DOPs.
    links: Vec<u32>,
    /// Per node, whether its bound was re-made by this deformation.
    refit: Vec<bool>,
    /// Disjoint subtrees refit in parallel, in slot order: each one's descendants fill one
    /// range of node slots, and its triangles one range of positions.
    pieces: Vec<Piece>,
    /// What each piece did this deformation (kept to add them in a fixed order).
    tallies: Vec<Tally>,
    /// The nodes outside every piece's range (the pieces' roots and their ancestors), in
    /// descending slot order: refit after the pieces.
    top: Vec<u32>,
    /// Node `i`'s own corners are the vertices `own[own_at[i]..own_at[i + 1]]` (none for
    /// nodes that keep their k-DOP's corners).
    own: Vec<u32>,
    own_at: Vec<u32>,
}

/// A subtree refit on its own: its descendants' node slots and its triangle positions.
#[derive(Clone, Copy, Debug, Default)]
struct Piece {
    nodes: (u32, u32),
    tris: (u32, u32),
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
    moved: &'a [bool],
    margin: f64,
}

/// The nodes `base..base + nodes.len()` and the triangle positions
/// `tbase..tbase + codes.len()` (no codes: a hierarchy of single-triangle leaves), written
/// by one refit.
struct Span<'a, const K: usize> {
    base: usize,
    nodes: &'a mut [Node<K>],
    refit: &'a mut [bool],
    tbase: usize,
    codes: &'a mut [[u8; K]],
}

impl<const K: usize> FlyingObject<K> {
    /// Replaces the object's vertex positions (same count, same triangles) and refits its
    /// hierarchy: a node whose geometry left its bound gets the new exact bound enlarged
    /// by `margin` times its largest box extent, so that the next small deformations leave
    /// it alone. Queries afterwards are exact for the new geometry.
    ///
    /// A deformed object's root is re-bounded from its slabs, not hill-climbed on its
    /// convex hull (which is not re-made): its root bound contains it without being tight.
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
        // One pass reads: which vertices moved, the first bad one, the largest coordinate.
        scratch.moved.resize(expected, false);
        let (bad, magnitude) = scratch
            .moved
            .par_iter_mut()
            .zip(vertices)
            .zip(&self.part.bvh.vertices)
            .enumerate()
            .with_min_len(4096)
            .map(|(i, ((moved, new), old))| {
                *moved = new != old;
                let bad = if check_point(*new, i).is_err() {
                    i
                } else {
                    usize::MAX
                };
                (bad, new.abs().max_element())
            })
            .reduce(|| (usize::MAX, 0.0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
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
            .par_iter_mut()
            .zip(vertices)
            .with_min_len(4096)
            .for_each(|(slot, &v)| *slot = v);
        let stats = self.refit(&mut scratch, margin);
        self.recorner(&scratch);
        self.top[0].dop = self.part.bvh.root_dop();
        self.magnitude = magnitude;
        self.id = NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed);
        self.deform = Some(scratch);
        Ok(stats)
    }

    /// Every node bottom-up (children come after their parent): a leaf whose vertices
    /// moved gets its triangles' new bound, re-made only when the stored one does not
    /// contain it, and its triangles' codes; an inner node is re-made only when its stored
    /// bound does not contain its children's. The pieces run in parallel, then the nodes
    /// above them.
    fn refit(&mut self, scratch: &mut DeformScratch<K>, margin: f64) -> DeformStats {
        let Bvh {
            nodes,
            vertices,
            tris,
            ids,
        } = &mut self.part.bvh;
        let codes = &mut self.part.codes[..];
        let DeformScratch {
            moved,
            links,
            refit,
            pieces,
            tallies,
            top,
            ..
        } = scratch;
        let shared = Shared {
            links,
            tris,
            ids,
            vertices,
            moved,
            margin,
        };
        let (mut nodes_rest, mut refit_rest) = (&mut nodes[..], &mut refit[..]);
        let mut codes_rest = &mut codes[..];
        let (mut at, mut tat) = (0usize, 0usize);
        let has_codes = !codes_rest.is_empty();
        rayon::scope(|scope| {
            for (p, tally) in pieces.iter().zip(tallies.iter_mut()) {
                let (lo, hi) = (p.nodes.0 as usize, p.nodes.1 as usize);
                let (n, rest) = std::mem::take(&mut nodes_rest)[lo - at..].split_at_mut(hi - lo);
                nodes_rest = rest;
                let (r, rest) = std::mem::take(&mut refit_rest)[lo - at..].split_at_mut(hi - lo);
                refit_rest = rest;
                at = hi;
                let (tlo, thi) = (p.tris.0 as usize, p.tris.1 as usize);
                let c = if has_codes {
                    let (c, rest) =
                        std::mem::take(&mut codes_rest)[tlo - tat..].split_at_mut(thi - tlo);
                    codes_rest = rest;
                    tat = thi;
                    c
                } else {
                    &mut []
                };
                let shared = &shared;
                scope.spawn(move |_| {
                    let mut span = Span {
                        base: lo,
                        nodes: n,
                        refit: r,
                        tbase: tlo,
                        codes: c,
                    };
                    *tally = span.refit((lo..hi).rev(), shared);
                });
            }
        });
        let mut span = Span {
            base: 0,
            nodes,
            refit,
            tbase: 0,
            codes,
        };
        let last = span.refit(top.iter().map(|&i| i as usize), &shared);
        let mut stats = DeformStats {
            nodes: nodes.len() as u32,
            leaves: (nodes.len() as u32).div_ceil(2),
            ..DeformStats::default()
        };
        for t in tallies.iter().chain([&last]) {
            stats.refit += t.refit;
            stats.escaped_leaves += t.escaped;
            self.inner_area += t.area;
        }
        let root = area(&nodes[0].dop).max(f64::MIN_POSITIVE);
        stats.cost_ratio = if self.built_cost > 0.0 {
            self.inner_area / root / self.built_cost
        } else {
            1.0 // One leaf: nothing to wear.
        };
        stats
    }

    /// The nodes' corners, in place: nodes that keep their own triangles' corners read the
    /// moved vertices; refit nodes that kept their k-DOP's corners keep none from now on
    /// ([`CornerSet::Slabs`]).
    fn recorner(&mut self, scratch: &DeformScratch<K>) {
        let FlyingObject { part, stored, .. } = self;
        let CornerArrays {
            vstart,
            verts,
            own_start,
            own_pts,
            slack,
            corners,
        } = stored;
        let vertices = &part.bvh.vertices;
        let n = corners.len();
        // Up to 64 runs of consecutive nodes, in parallel: each run's corners, own points
        // and slack are consecutive in their arrays, so the runs split them apart.
        let per = n.div_ceil(64).max(1024);
        let (mut verts, mut own_pts, mut slack, mut corners) = (
            &mut verts[..],
            &mut own_pts[..],
            &mut slack[..],
            &mut corners[..],
        );
        rayon::scope(|scope| {
            let mut first = 0;
            while first < n {
                let last = (first + per).min(n);
                let take = |v: &[u32]| (v[last] - v[first]) as usize;
                let (v, rest) = std::mem::take(&mut verts).split_at_mut(take(vstart));
                verts = rest;
                let (o, rest) = std::mem::take(&mut own_pts).split_at_mut(take(own_start));
                own_pts = rest;
                let (sl, rest) = std::mem::take(&mut slack).split_at_mut(last - first);
                slack = rest;
                let (c, rest) = std::mem::take(&mut corners).split_at_mut(last - first);
                corners = rest;
                let (vstart, own_start) = (&vstart[first..=last], &own_start[first..=last]);
                scope.spawn(move |_| {
                    let mut pts: SmallVec<[DVec3; 48]> = SmallVec::new();
                    for (j, i) in (first..last).enumerate() {
                        match c[j] {
                            CornerSet::Dop if scratch.refit[i] => c[j] = CornerSet::Slabs,
                            CornerSet::Dop | CornerSet::Slabs => {}
                            set @ (CornerSet::Own | CornerSet::OwnLanes) => {
                                let own = &scratch.own
                                    [scratch.own_at[i] as usize..scratch.own_at[i + 1] as usize];
                                if !own.iter().any(|&v| scratch.moved[v as usize]) {
                                    continue;
                                }
                                pts.clear();
                                pts.extend(own.iter().map(|&v| vertices[v as usize]));
                                sl[j] = slack_of(&pts);
                                // Offsets within this run's slices.
                                let at = |starts: &[u32]| {
                                    (starts[j] - starts[0]) as usize
                                        ..(starts[j + 1] - starts[0]) as usize
                                };
                                if set == CornerSet::OwnLanes {
                                    for (slot, p) in o[at(own_start)].iter_mut().zip(&pts) {
                                        *slot = p.as_vec3().to_array();
                                    }
                                } else {
                                    write_lanes(&mut v[at(vstart)], &pts);
                                }
                            }
                        }
                    }
                });
                first = last;
            }
        });
    }
}

impl<const K: usize> Span<'_, K> {
    /// Refits the nodes `order` names (each after its children), returning what it did.
    fn refit(&mut self, order: impl Iterator<Item = usize>, s: &Shared<K>) -> Tally {
        let mut tally = Tally::default();
        let grown =
            |exact: Dop<K>| exact.padded((s.margin * exact.box_extent().max_element()) as f32);
        for i in order {
            let link = s.links[i];
            let at = i - self.base;
            if link & LEAF != 0 {
                self.refit[at] = self.refit_leaf(at, (link & !LEAF) as usize, s, &grown);
                tally.escaped += u32::from(self.refit[at]);
            } else {
                let c = link as usize - self.base;
                self.refit[at] = false;
                if !self.refit[c] && !self.refit[c + 1] {
                    continue; // Its children's bounds are those it was checked against.
                }
                let exact = self.nodes[c].dop.merge(&self.nodes[c + 1].dop);
                let node = &mut self.nodes[at];
                if !node.dop.contains(&exact) {
                    let old = area(&node.dop);
                    node.dop = grown(exact);
                    tally.area += area(&node.dop) - old;
                    self.refit[at] = true;
                }
            }
            tally.refit += u32::from(self.refit[at]);
        }
        tally
    }

    /// The leaf at `at` whose triangles start at position `first`: its new bound if its
    /// triangles left the stored one (then `true`), and the codes of its triangles that
    /// moved or whose leaf was re-made.
    fn refit_leaf(
        &mut self,
        at: usize,
        first: usize,
        s: &Shared<K>,
        grown: &impl Fn(Dop<K>) -> Dop<K>,
    ) -> bool {
        let mut last = first;
        while s.ids[last] & END == 0 {
            last += 1;
        }
        let tris = &s.tris[first..=last];
        let moved = |t: &[u32; 3]| t.iter().any(|&v| s.moved[v as usize]);
        if !tris.iter().any(moved) {
            return false;
        }
        // Each triangle's bound as the build makes it (`codes::own_bound`).
        let mut own: SmallVec<[Dop<K>; 8]> = SmallVec::new();
        for t in tris {
            let v = |k: usize| Dop::<K>::from_point_quick(s.vertices[t[k] as usize]);
            own.push(v(0).merge(&v(1)).merge(&v(2)));
        }
        let exact = own.iter().fold(Dop::EMPTY, |d, o| d.merge(o));
        let node = &mut self.nodes[at];
        let escaped = !node.dop.contains(&exact);
        if escaped {
            node.dop = grown(exact);
        }
        if !self.codes.is_empty() {
            let leaf = codes::Encoder::new(&node.dop);
            let codes = &mut self.codes[first - self.tbase..=last - self.tbase];
            for ((code, own), t) in codes.iter_mut().zip(&own).zip(tris) {
                if escaped || (moved(t) && !codes::decode(&node.dop, code).contains(own)) {
                    *code = leaf.encode(own);
                }
            }
        }
        escaped
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
            refit: vec![false; n],
            ..Self::default()
        };
        // Per node: its subtree's node count and triangle positions, children first.
        let mut size = vec![1u32; n];
        let mut span = vec![(0u32, 0u32); n];
        for i in (0..n).rev() {
            let node = &bvh.nodes[i];
            if node.is_leaf() {
                let first = node.first_triangle();
                let mut last = first as usize;
                while bvh.ids[last] & END == 0 {
                    last += 1;
                }
                span[i] = (first, last as u32 + 1);
            } else {
                let c = node.first_child() as usize;
                size[i] = 1 + size[c] + size[c + 1];
                span[i] = (span[c].0, span[c + 1].1);
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
                    tris: span[i],
                });
            }
        }
        s.pieces.sort_unstable_by_key(|p| p.nodes.0);
        s.top.sort_unstable_by(|a, b| b.cmp(a));
        s.tallies = vec![Tally::default(); s.pieces.len()];
        s.own_at.push(0);
        let mut own = Vec::new();
        for i in 0..n {
            if matches!(obj.stored.corners[i], CornerSet::Own | CornerSet::OwnLanes) {
                let complete = own_corners(bvh, i, &mut own);
                debug_assert!(
                    complete,
                    "a node's own corners depend on its triangles only"
                );
                s.own.extend_from_slice(&own);
            }
            s.own_at.push(s.own.len() as u32);
        }
        s
    }
}

/// The fewest nodes worth a piece of their own (below that, a task costs more than it
/// saves).
const PIECE_MIN: u32 = 4096;

#[cfg(test)]
mod tests {
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
    fn sphere(rings: usize, segments: usize) -> Mesh {
        crate::scene::uv_sphere(2.0, segments, rings).unwrap()
    }

    /// `rest` deformed: a wobble of a few percent (of the upper half only, if `partial`:
    /// the lower half stays where it is `now`), or (`far`) stretched, moved by more than
    /// its own size and with some vertices collapsed onto the first (degenerate triangles).
    fn deformed(
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

    /// Against an environment and against another object, on either side of a pair: every
    /// answer after a deformation equals brute force on a fresh build of the deformed mesh,
    /// with the same query state (warmed on the old geometry) at the same pose, so no
    /// cached bound or placed triangle of the old geometry may survive.
    fn answers_as_fresh_builds<const K: usize>() {
        let mut s = 7;
        let env = Environment::<K>::from_mesh(soup(300, 2.0, &mut s), &BuildOptions::ENVIRONMENT)
            .unwrap();
        let rest = sphere(9, 14);
        let tris = rest.triangles().to_vec();
        let mut obj = FlyingObject::<K>::new(rest.clone(), &BuildOptions::FLYING).unwrap();
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
            obj.part.bvh.validate_with_codes(&obj.part.codes).unwrap();
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
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
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
            pieces
                .part
                .bvh
                .validate_with_codes(&pieces.part.codes)
                .unwrap();
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
        let fresh =
            FlyingObject::<18>::new(Mesh::new(now, tris).unwrap(), &BuildOptions::FLYING).unwrap();
        let pose = Pose::new(glam::DMat3::IDENTITY, DVec3::splat(5.0) - centre).unwrap();
        let want = brute_force_contacts(&env, &fresh, &pose, 0.0);
        assert!(
            want.len() > 10,
            "too few contacts to compare: {}",
            want.len()
        );
        let mut state = QueryState::new();
        let got = env
            .collide(&pieces, &pose, &QueryOptions::REPORT, &mut state)
            .unwrap();
        assert_eq!(got.contacts, want.as_slice());
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
        obj.part.bvh.validate_with_codes(&obj.part.codes).unwrap();
        // A move of one vertex far out refits its leaves and their paths to the root only.
        let mut third = second.clone();
        third[0] += DVec3::Z * 10.0;
        let stats = obj.deform(&third, 0.2).unwrap();
        assert!(
            stats.escaped_leaves >= 1 && stats.escaped_leaves < stats.leaves / 4,
            "{stats:?}"
        );
        obj.part.bvh.validate_with_codes(&obj.part.codes).unwrap();
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
            let pts: Vec<DVec3> = own.iter().map(|&v| bvh.vertices[v as usize]).collect();
            assert_eq!(obj.stored.slack[i], slack_of(&pts), "node {i}");
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
            obj.part.bvh.validate_with_codes(&obj.part.codes).unwrap();
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
