//! The OBBTree: top-down build and tree-against-tree queries (Gottschalk, Lin, Manocha
//! 1996, §4 and §5; the traversal and statistics are the k-DOP queries', Klosowski et al.
//! 1998 §4.2).

use super::{Obb, Placed, fit_axes, sat};
use crate::error::{Error, Result};
use crate::mesh::Mesh;
use crate::pose::Pose;
use crate::query::{
    Control, Descent, Ended, Expand, Full, Mode, NodePair, PairStack, QueryOptions, QueryStats,
};
use crate::tri::{Triangle, triangle_distance, triangles_intersect};
use glam::DVec3;
use std::sync::atomic::{AtomicU64, Ordering};

/// Identifies a tree to the query states bound to it.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One node: its box, and either two children (adjacent, at `first` and `first + 1`) or
/// `count > 0` triangles starting at leaf position `first`.
#[derive(Clone, Copy, Debug)]
struct Node {
    obb: Obb,
    first: u32,
    count: u32,
}

/// A hierarchy of oriented bounding boxes over one triangle mesh: the "RAPID" back-end.
///
/// The same tree serves as an environment (it stays where it is) and as a flying object
/// (placed by a [`Pose`] at each query). Answers are the exact ones, as with the k-DOP
/// hierarchies: the boxes only prune.
///
/// # Example
/// ```
/// use glam::DVec3;
/// use kdop::{Mesh, ObbQueryState, ObbTree, Pose, QueryOptions};
/// let tet = Mesh::new(
///     vec![DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::Z],
///     vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
/// )?;
/// let env = ObbTree::from_mesh(&tet, 1)?;
/// let obj = ObbTree::from_mesh(&tet, 1)?;
/// let mut state = ObbQueryState::new();
/// let apart = Pose::from_translation(DVec3::new(3.0, 0.0, 0.0))?;
/// assert!(!env.collide(&obj, &apart, &QueryOptions::DETECT, &mut state)?.collides);
/// let touching = Pose::from_translation(DVec3::new(1.0, 0.0, 0.0))?;
/// assert!(env.collide(&obj, &touching, &QueryOptions::DETECT, &mut state)?.collides);
/// # Ok::<(), kdop::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ObbTree {
    id: u64,
    nodes: Vec<Node>,
    /// Triangles in leaf order, and their indices in the mesh.
    tris: Vec<Triangle>,
    ids: Vec<u32>,
}

impl ObbTree {
    /// Builds the tree of `mesh` with at most `leaf_size` triangles per leaf (the paper's
    /// τ; RAPID uses 1).
    ///
    /// Each node's axes are fitted to the convex hull of its triangles' corners, so a build
    /// costs O(n log² n) hull work: much slower than a k-DOP build, as in the papers.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a leaf size of 0.
    pub fn from_mesh(mesh: &Mesh, leaf_size: u32) -> Result<ObbTree> {
        if leaf_size == 0 {
            return Err(Error::InvalidParameter {
                name: "leaf_size",
                reason: "must be at least 1".into(),
            });
        }
        let verts = mesh.vertices();
        let tris = mesh.triangles();
        let centroid = |t: u32| {
            let [a, b, c] = tris[t as usize].map(|i| verts[i as usize]);
            (a + b + c) / 3.0
        };
        let mut order: Vec<u32> = (0..tris.len() as u32).collect();
        let mut nodes = vec![Node {
            obb: Obb::around(glam::DMat3::IDENTITY, std::iter::once(DVec3::ZERO)),
            first: 0,
            count: 0,
        }];
        let mut stack = vec![(0usize, 0usize, tris.len())];
        let mut ids: Vec<u32> = Vec::new();
        while let Some((ni, s, e)) = stack.pop() {
            let mut vid: Vec<u32> = order[s..e].iter().flat_map(|&t| tris[t as usize]).collect();
            vid.sort_unstable();
            vid.dedup();
            let pts: Vec<DVec3> = vid.iter().map(|&i| verts[i as usize]).collect();
            let obb = Obb::around(fit_axes(&pts), pts.iter().copied());
            nodes[ni].obb = obb;
            if e - s <= leaf_size as usize {
                // A leaf's range of `order` is final (later splits touch only other
                // ranges): remember where it starts until the renumbering below.
                nodes[ni].first = s as u32;
                nodes[ni].count = (e - s) as u32;
                continue;
            }
            // Split at the mean of the centroids along the longest axis; if that leaves a
            // side empty, the other axes; if all do (equal centroids), in the middle.
            let longest = obb.longest();
            let mut mid = None;
            for axis in [longest, (longest + 1) % 3, (longest + 2) % 3] {
                let dir = obb.rows.row(axis);
                let mean = order[s..e]
                    .iter()
                    .map(|&t| dir.dot(centroid(t)))
                    .sum::<f64>()
                    / (e - s) as f64;
                let (below, above): (Vec<u32>, Vec<u32>) = order[s..e]
                    .iter()
                    .partition(|&&t| dir.dot(centroid(t)) < mean);
                if !below.is_empty() && !above.is_empty() {
                    let m = s + below.len();
                    order[s..m].copy_from_slice(&below);
                    order[m..e].copy_from_slice(&above);
                    mid = Some(m);
                    break;
                }
            }
            let m = mid.unwrap_or((s + e) / 2);
            let j = nodes.len();
            nodes[ni].first = j as u32;
            nodes.extend([nodes[ni]; 2]);
            // The first child is built (and so laid out) first: pushed last.
            stack.push((j + 1, m, e));
            stack.push((j, s, m));
        }
        // Leaves index triangles by leaf position: lay them out in node order.
        let mut leaf_tris = Vec::with_capacity(tris.len());
        for n in nodes.iter_mut().filter(|n| n.count > 0) {
            let s = n.first as usize;
            n.first = leaf_tris.len() as u32;
            for &t in &order[s..s + n.count as usize] {
                leaf_tris.push(tris[t as usize].map(|i| verts[i as usize]));
                ids.push(t);
            }
        }
        Ok(ObbTree {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            nodes,
            tris: leaf_tris,
            ids,
        })
    }

    /// Number of nodes.
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of triangles.
    #[must_use]
    pub fn triangle_count(&self) -> usize {
        self.tris.len()
    }

    /// Bytes held by the tree (nodes, triangles in leaf order, their mesh indices).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.nodes.len() * std::mem::size_of::<Node>()
            + self.tris.len() * (std::mem::size_of::<Triangle>() + 4)
    }

    /// Contacts between this tree, where it stands, and `object` placed by `pose`: the
    /// intersecting triangle pairs `[this tree's triangle, object's triangle]` (indices in
    /// the meshes), sorted, or in detect mode the first found. With `options.epsilon > 0`,
    /// pairs closer than epsilon count too.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite epsilon.
    pub fn collide<'s>(
        &self,
        object: &ObbTree,
        pose: &Pose,
        options: &QueryOptions,
        state: &'s mut ObbQueryState,
    ) -> Result<ObbOutcome<'s>> {
        Ok(self
            .collide_under(object, pose, options, state, &mut Full)?
            .0)
    }

    /// [`ObbTree::collide`] under `control` (from its start pairs, if any, as `[flying
    /// node, 0, this tree's node]`), and how the descent ended; a stopped descent leaves
    /// its unvisited pairs in the state.
    pub(crate) fn collide_under<'s>(
        &self,
        object: &ObbTree,
        pose: &Pose,
        options: &QueryOptions,
        state: &'s mut ObbQueryState,
        control: &mut impl Control,
    ) -> Result<(ObbOutcome<'s>, Ended)> {
        let eps = options.epsilon;
        if !(eps >= 0.0 && eps.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "epsilon",
                reason: format!("{eps} is not a finite non-negative number"),
            });
        }
        let start = control.start();
        if let Some([f, _, e]) = start
            .iter()
            .find(|&&[f, _, e]| f as usize >= object.nodes.len() || e as usize >= self.nodes.len())
        {
            return Err(Error::InvalidParameter {
                name: "start",
                reason: format!("node pair ({e}, {f}) is not in these trees"),
            });
        }
        state.bind(object);
        state.contacts.clear();
        state.stack.clear();
        if start.is_empty() {
            state.stack.push_if([0, 0, 0], true);
        }
        for &[f, _, e] in start {
            state.stack.push_if([f, 0, e], true);
        }
        let mut side = ObbSide {
            env: self,
            object,
            pose,
            a: pose.linear(),
            t: pose.translation(),
            a_norm: pose.linear_inf_norm(),
            eps,
            detect: options.mode == Mode::Detect,
            descent: options.descent,
            state,
            stats: QueryStats::default(),
        };
        let ended = crate::query::descend(&mut side, control);
        let (state, mut stats) = (side.state, side.stats);
        state.contacts.sort_unstable();
        stats.contacts = state.contacts.len() as u64;
        Ok((
            ObbOutcome {
                collides: !state.contacts.is_empty(),
                contacts: &state.contacts,
                stats,
            },
            ended,
        ))
    }
}

/// The OBB trees' side of the descent: a pair is tested when it is popped (a box test
/// costs about what a push does), then split on the larger box or expanded into triangle
/// pairs.
struct ObbSide<'a, 's> {
    env: &'a ObbTree,
    object: &'a ObbTree,
    pose: &'a Pose,
    a: glam::DMat3,
    t: DVec3,
    a_norm: f64,
    eps: f64,
    detect: bool,
    descent: Descent,
    state: &'s mut ObbQueryState,
    stats: QueryStats,
}

impl Expand for ObbSide<'_, '_> {
    #[inline(always)]
    fn stack(&mut self) -> &mut PairStack {
        &mut self.state.stack
    }

    #[inline(always)]
    fn stats(&self) -> &QueryStats {
        &self.stats
    }

    #[inline(always)]
    fn expand(&mut self, [fi, _, ei]: NodePair) -> bool {
        let (env, object, eps) = (self.env, self.object, self.eps);
        let (en, fnode) = (&env.nodes[ei as usize], &object.nodes[fi as usize]);
        let stamp = self.state.stamp;
        let slot = &mut self.state.placed[fi as usize];
        if slot.0 != stamp {
            *slot = (stamp, Placed::new(&fnode.obb, &self.a, self.t, self.a_norm));
            self.stats.nu += 1;
        }
        let fb = slot.1;
        self.stats.nv += 1;
        if !sat(&en.obb, &fb, eps) {
            return false;
        }
        let stack = &mut self.state.stack;
        match (en.count > 0, fnode.count > 0) {
            (true, true) => {
                for e in en.first..en.first + en.count {
                    let et = &env.tris[e as usize];
                    for f in fnode.first..fnode.first + fnode.count {
                        let ft = self.state.placed_tri(object, self.pose, f);
                        self.stats.np += 1;
                        let hit = if eps == 0.0 {
                            triangles_intersect(et, &ft)
                        } else {
                            triangle_distance(et, &ft) <= eps
                        };
                        if hit {
                            self.state
                                .contacts
                                .push([env.ids[e as usize], object.ids[f as usize]]);
                            if self.detect {
                                return true;
                            }
                        }
                    }
                }
            }
            (true, false) => split_fly(stack, fnode.first, ei),
            (false, true) => split_env(stack, fi, en.first),
            (false, false) => {
                let fly_size: f64 = fb.edges.iter().map(|e| e.length()).sum();
                let env_first = match self.descent {
                    Descent::EnvironmentFirst => true,
                    Descent::Larger => en.obb.size() >= fly_size,
                };
                if env_first {
                    split_env(stack, fi, en.first);
                } else {
                    split_fly(stack, fnode.first, ei);
                }
            }
        }
        false
    }
}

/// Pushes the pairs of a static node's children `c`, `c + 1` with flying node `fi`, the
/// first child to be popped first.
fn split_env(stack: &mut PairStack, fi: u32, c: u32) {
    stack.push_two([fi, 0, c + 1], true, [fi, 0, c], true);
}

/// Pushes the pairs of flying node `fi`'s children `c`, `c + 1` with static node `ei`, the
/// first child to be popped first.
fn split_fly(stack: &mut PairStack, c: u32, ei: u32) {
    stack.push_two([c + 1, 0, ei], true, [c, 0, ei], true);
}

/// Reusable scratch for [`ObbTree::collide`]: the flying boxes and triangles placed for the
/// current query, the traversal stack, the contacts. Nothing allocates per query once it
/// has warmed up. Use one per thread.
#[derive(Clone, Debug, Default)]
pub struct ObbQueryState {
    object: u64,
    stamp: u32,
    placed: Vec<(u32, Placed)>,
    tri_stamp: Vec<u32>,
    tri_world: Vec<Triangle>,
    stack: PairStack,
    contacts: Vec<[u32; 2]>,
}

impl ObbQueryState {
    /// An empty state; it binds to an object on first use.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sizes the per-node and per-triangle records for `object`, so that the first query
    /// costs what the next ones do (queries do it themselves otherwise).
    pub fn prepare(&mut self, object: &ObbTree) {
        self.bind(object);
        self.stack
            .reserve(64 * (object.nodes.len().max(1).ilog2() as usize + 8));
    }

    /// Binds to `object` (resetting what belongs to another) and starts a new stamp.
    fn bind(&mut self, object: &ObbTree) {
        if self.object != object.id {
            self.object = object.id;
            self.placed.clear();
            self.placed
                .resize(object.nodes.len(), (0, Placed::default()));
            self.tri_stamp.clear();
            self.tri_stamp.resize(object.tris.len(), 0);
            self.tri_world.clear();
            self.tri_world.resize(object.tris.len(), [DVec3::ZERO; 3]);
            self.stamp = 0;
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.placed.iter_mut().for_each(|p| p.0 = 0);
            self.tri_stamp.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
    }

    /// The object's triangle at leaf position `f` under `pose`, placed once per query.
    fn placed_tri(&mut self, object: &ObbTree, pose: &Pose, f: u32) -> Triangle {
        let f = f as usize;
        if self.tri_stamp[f] != self.stamp {
            self.tri_stamp[f] = self.stamp;
            self.tri_world[f] = object.tris[f].map(|v| pose.transform_point(v));
        }
        self.tri_world[f]
    }
}

/// The answer of one [`ObbTree::collide`]; contacts borrow the [`ObbQueryState`].
#[derive(Debug)]
pub struct ObbOutcome<'a> {
    /// Whether any contact was found.
    pub collides: bool,
    /// `[environment triangle, object triangle]` pairs (indices in the meshes), sorted; in
    /// detect mode at most one.
    pub contacts: &'a [[u32; 2]],
    /// Work done: `nv` box tests, `np` triangle tests, `nu` flying boxes placed.
    pub stats: QueryStats,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Limit;
    use crate::testing::{lcg, soup};

    /// The OBB trees run the same descent as the k-DOP hierarchies: stopped after a few
    /// pairs and resumed from the pairs left, round after round, they find exactly the
    /// contacts of one full query, none twice; and start pairs outside the trees are
    /// typed errors.
    #[test]
    fn stopped_obb_descents_resume_to_the_full_answer() {
        let mut s = 21u64;
        let env = ObbTree::from_mesh(&soup(1500, 0.8, &mut s), 2).unwrap();
        let obj = ObbTree::from_mesh(&soup(200, 0.6, &mut s), 1).unwrap();
        let (mut full, mut part) = (ObbQueryState::new(), ObbQueryState::new());
        let (mut stops, mut contacts) = (0, 0);
        for i in 0..30 {
            let q = glam::DQuat::from_axis_angle(
                DVec3::new(lcg(&mut s), 1.0, 0.3).normalize(),
                2.0 * i as f64,
            );
            let t = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 4.0;
            let pose = Pose::new(glam::DMat3::from_quat(q), t).unwrap();
            let options = QueryOptions {
                descent: [Descent::Larger, Descent::EnvironmentFirst][i % 2],
                epsilon: [0.0, 0.05][(i / 2) % 2],
                ..QueryOptions::REPORT
            };
            let want = env
                .collide(&obj, &pose, &options, &mut full)
                .unwrap()
                .contacts
                .to_vec();
            let mut got = Vec::new();
            let mut limit = Limit::default();
            loop {
                limit.left = 1 + (lcg(&mut s) * 12.0) as usize;
                let (out, ended) = env
                    .collide_under(&obj, &pose, &options, &mut part, &mut limit)
                    .unwrap();
                got.extend_from_slice(out.contacts);
                if ended == Ended::Done {
                    break;
                }
                stops += 1;
                assert!(stops < 1_000_000, "the descent does not progress");
                limit.start = part.stack.live().to_vec();
            }
            got.sort_unstable();
            assert_eq!(got, want, "pose {i}");
            contacts += want.len();
        }
        assert!(
            stops > 1000 && contacts > 100,
            "{stops} stops, {contacts} contacts"
        );
        let pose = Pose::IDENTITY;
        for bad in [
            [obj.node_count() as u32, 0, 0],
            [0, 0, env.node_count() as u32],
        ] {
            let mut start = Limit {
                left: usize::MAX,
                start: vec![bad],
            };
            let got = env.collide_under(&obj, &pose, &QueryOptions::REPORT, &mut part, &mut start);
            assert!(
                matches!(got, Err(Error::InvalidParameter { name: "start", .. })),
                "{bad:?}"
            );
        }
    }
}
