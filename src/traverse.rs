//! Simultaneous descent of the flying hierarchy and the environment (Klosowski et al. 1998,
//! §4.2, Algorithm 1), iterative, in two modes: *detect* (stop at the first intersecting
//! triangle pair) and *report* (every intersecting pair, sorted).
//!
//! Algorithm 1 descends the environment first; only when it reaches an environment leaf
//! does it descend the flying hierarchy, so flying nodes are re-bounded (tumbled) only where
//! the environment is close. The environment is one tree: the part tree, whose leaves lead
//! into the parts' own hierarchies.
//!
//! Every query returns its statistics, the terms of the paper's cost model
//! `T = Nv·Cv + Np·Cp + Nu·Cu` (§3.1, equation 2).

use crate::dop::{Dop, Growth, Narrow, OverlapForm, Wide};
use crate::env::{Environment, Part, PartId};
use crate::error::{Error, Result};
use crate::hierarchy::{Bvh, END, Node, codes};
use crate::pose::Pose;
use crate::tri::{
    BATCH, TriBox, intersect_batch, intersect_filtered, set_bits, triangle_distance,
    triangle_meets_dop,
};
use crate::tumble::{
    Climber, FlyingObject, PoseFrame, Rebound, root_dop, root_dop_unkept, tumble_node,
};
use glam::DVec3;

/// Marks a part-tree entry on the traversal stack.
const TOP: u32 = u32::MAX;
/// Marks an environment entry that is one triangle of a refined leaf: the other bits index
/// `QueryState::tri_dops`.
const TRI: u32 = 1 << 31;
/// Marks a flying entry that is one triangle of a flying leaf: the other bits are its leaf
/// position.
const FTRI: u32 = 1 << 31;
/// A flying leaf goes on as its triangles (`tri::node`) only when it is this many times
/// larger than the environment node (sum of box extents): nearer in size its k-DOP prunes
/// as well and the per-triangle tests cost more than they save.
const LARGE: f32 = 4.0;
/// An environment triangle screens flying nodes by `tri::node` only when it is this many
/// times larger than them: long triangles of parts of similar size pass most screens, so
/// below this the test costs more than it prunes. Both factors were chosen by measurement
/// (`docs/benchmarks.md`, "Issue 18").
const LARGE_ENV: f32 = 64.0;

/// Stop at the first contact, or find them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Is there any contact? Stops at the first intersecting triangle pair (the paper's
    /// "detect"), which is then the one contact reported.
    Detect,
    /// Every intersecting triangle pair (the paper's "detect and report").
    Report,
}

/// Which hierarchy to descend when both nodes are internal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Descent {
    /// The paper's Algorithm 1: always the environment first, the flying object only at
    /// environment leaves (fewest flying nodes re-bounded).
    EnvironmentFirst,
    /// The node whose k-DOP is larger (sum of its x, y, z extents); both trees descend
    /// together, which pays off when large parts of the two are close (parallel close
    /// proximity, §5.2.2's nested spheres).
    Larger,
}

/// How to run a query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueryOptions {
    /// Detect or report.
    pub mode: Mode,
    /// Descent rule; see [`Descent`].
    pub descent: Descent,
    /// The user epsilon of §5: with `epsilon > 0`, pairs of triangles closer than this are
    /// contacts too. `0` (the default) reports exactly the intersecting pairs.
    pub epsilon: f64,
    /// Detect mode: first re-test the triangle pair that was the last contact found with
    /// this [`QueryState`] (temporal coherence: a contact that persists from one pose to the
    /// next answers the query with one triangle test, before any k-DOP is re-bounded). The
    /// answer is exact either way; only *which* contact a detect query reports can differ
    /// from a query with a fresh state. `false` makes every query descend the hierarchies
    /// (as the paper measured). Ignored in report mode.
    pub witness: bool,
    /// How flying nodes are re-bounded under a turning pose; see [`Rebound`]. Answers are
    /// the same either way; the work (`Nv`, `Np`, time) differs.
    pub rebound: Rebound,
}

impl QueryOptions {
    /// Exact detection.
    pub const DETECT: QueryOptions = QueryOptions {
        mode: Mode::Detect,
        descent: Descent::Larger,
        epsilon: 0.0,
        witness: true,
        rebound: Rebound::Slabs,
    };
    /// Exact report of all intersecting pairs.
    pub const REPORT: QueryOptions = QueryOptions {
        mode: Mode::Report,
        descent: Descent::Larger,
        epsilon: 0.0,
        witness: true,
        rebound: Rebound::Slabs,
    };
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions::REPORT
    }
}

/// One contact: a triangle of a part (its index in the part's mesh) and a triangle of the
/// flying object (its index in the object's mesh).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Contact {
    /// The environment part.
    pub part: PartId,
    /// Triangle index within the part's mesh.
    pub env_triangle: u32,
    /// Triangle index within the flying object's mesh.
    pub object_triangle: u32,
}

/// What a query did: the terms of the paper's cost model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// `Nv`: k-DOP overlap tests.
    pub nv: u64,
    /// `Np`: triangle pair tests.
    pub np: u64,
    /// `Nu`: flying nodes re-bounded (tumbled), the root included.
    pub nu: u64,
    /// Contacts found.
    pub contacts: u64,
    /// Moves made by hill-climbing the root's exact k-DOP.
    pub climb_steps: u64,
    /// 1 if the query was answered by re-testing the last contact (see
    /// [`QueryOptions::witness`]), else 0; a sum over queries counts them.
    pub witness_hits: u64,
}

/// The answer of one query; contacts borrow the [`QueryState`].
#[derive(Debug)]
pub struct Outcome<'a> {
    /// Whether any contact was found.
    pub collides: bool,
    /// The contacts, sorted by part (in build order), environment triangle, object triangle.
    /// In detect mode at most one.
    pub contacts: &'a [Contact],
    /// Work done.
    pub stats: QueryStats,
}

/// Reusable scratch for queries of one flying object: tumbled k-DOPs with their stamps,
/// placed triangles (128 bytes per object triangle: corners and box), the hill-climbing
/// state, the traversal stack and a memo of refined environment leaves (8 bytes per node
/// of every part a query has reached, sized for the largest environment queried). Nothing
/// allocates per query once it has warmed up. Use one per thread.
#[derive(Clone, Debug, Default)]
pub struct QueryState<const K: usize> {
    object: u64,
    stamp: u32,
    /// The current pose, epsilon (bits) and re-bounding method: the key of the stamped
    /// re-bounded nodes.
    last: Option<(Pose, u64, Rebound)>,
    /// The margins of that epsilon, per direction.
    growth: Growth,
    frame: Option<PoseFrame<K>>,
    /// Per flying node: its re-bounded k-DOP, the stamp of the pose it is for, its link.
    /// One record, so a node costs one cache miss, not three.
    fly: Vec<FlyNode<K>>,
    /// Per object triangle (leaf order): its placed corners, their box, and the stamp of
    /// the pose they are for. One record per triangle rather than per vertex: a pair's test reads
    /// one record with one stamp check, where three vertex lookups cost about 80
    /// instructions per pair on the Swept flight.
    placed: Vec<PlacedTri>,
    /// The same for object-against-object queries, whose triangles are tested placed into
    /// the world frame (`Twin`): keyed by `twin_stamp`, which changes with the flying
    /// object's world pose (`twin_pose`), not with the relative pose.
    twin_placed: Vec<PlacedTri>,
    twin_stamp: u32,
    twin_pose: Option<Pose>,
    climber: Climber,
    stack: PairStack,
    /// Bounds of single triangles of refined environment leaves: (k-DOP, leaf position).
    tri_dops: Vec<(Dop<K>, u32)>,
    /// Per part, per node: `(query << 32) | slot` when that leaf was refined during query
    /// number `query`, its triangles' bounds starting at `tri_dops[slot]`. A leaf reached
    /// by several flying nodes is refined once per query.
    refined: Vec<Vec<u64>>,
    /// Number of the current query (for `refined`); never 0 once a query has started.
    query: u32,
    raw: Vec<[u32; 3]>,
    contacts: Vec<Contact>,
    /// The contacts of the last object-against-object query.
    pair_contacts: Vec<crate::pair::ObjectContact>,
    /// The last contact found, as (dense part index, environment leaf position, object
    /// leaf position), for [`QueryOptions::witness`]. Positions are checked against the
    /// environment before use: a state may meet another environment.
    witness: Option<[u32; 3]>,
}

impl<const K: usize> QueryState<K> {
    /// An empty state; it binds to an object on first use.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sizes everything a query of `object` against `env` uses: the per-node and
    /// per-triangle records of the object, the refinement memo of every part, the pose
    /// frame and a traversal stack. Queries do this themselves as they first need it;
    /// calling it up front (as `kdop check` does before its timer starts) makes the first
    /// query cost what the next ones do. Only the stack and the contact lists grow later,
    /// to the deepest descent and the largest report.
    pub fn prepare(&mut self, env: &Environment<K>, object: &FlyingObject<K>) {
        match env.flying_for(object) {
            Some(part) => self.prepare_for(object.statics(), part),
            None => self.prepare_for(env.statics(), object),
        }
    }

    /// [`QueryState::prepare`] for object-against-object queries between `a` and `b`
    /// ([`FlyingObject::collide_with`]), in either order.
    pub fn prepare_objects(&mut self, a: &FlyingObject<K>, b: &FlyingObject<K>) {
        match crate::pair::Reference::of(a, b) {
            crate::pair::Reference::A => self.prepare_for(a.statics(), b),
            crate::pair::Reference::B => self.prepare_for(b.statics(), a),
        }
    }

    fn prepare_for(&mut self, statics: Statics<'_, K>, object: &FlyingObject<K>) {
        self.bind(object);
        if self.frame.is_none() {
            self.frame = Some(PoseFrame::new(&Pose::IDENTITY, object.magnitude));
        }
        self.start_query(statics.parts.len());
        for (p, part) in statics.parts.iter().enumerate() {
            memo_entry(&mut self.refined, p as u32, 0, part.bvh.nodes.len());
        }
        // Deep enough for both hierarchies' depths several times over.
        let depth = statics
            .parts
            .iter()
            .map(|p| p.bvh.depth())
            .max()
            .unwrap_or(0)
            + statics.top.len().ilog2() as usize
            + object.part.bvh.depth();
        self.stack.reserve(16 * (depth + 8));
    }

    fn bind(&mut self, obj: &FlyingObject<K>) {
        if self.object == obj.id {
            return;
        }
        self.object = obj.id;
        self.last = None;
        self.witness = None;
        self.fly.clear();
        self.fly.extend(obj.links.iter().map(|&link| FlyNode {
            dop: Dop::EMPTY,
            stamp: 0,
            link,
            size: 0.0,
        }));
        // Triangle records are not rewritten, only grown: new stamps make every record
        // of the object before stale (many objects of several shapes share a thread's
        // state in the world, and rewriting them cost a pass per change of shape).
        self.next_stamp();
        self.twin_pose = None;
        let n = obj.part.bvh.tris.len();
        let blank = PlacedTri {
            stamp: 0,
            corners: [DVec3::ZERO; 3],
            bbox: TriBox::new(&[DVec3::ZERO; 3]),
        };
        if self.placed.len() < n {
            self.placed.resize(n, blank);
        }
        if self.twin_placed.len() < n {
            self.twin_placed.resize(n, blank);
        }
        self.climber.reset(obj.hull_pts.len(), K);
    }

    /// Starts a new pose (new stamp, root re-bounded exactly) unless it is the last one;
    /// the climbing steps when it started one.
    fn set_pose(
        &mut self,
        obj: &FlyingObject<K>,
        pose: &Pose,
        eps: f64,
        method: Rebound,
    ) -> Option<u64> {
        let key = (*pose, eps.to_bits(), method);
        if self.last == Some(key) {
            return None;
        }
        self.last = Some(key);
        self.growth = Growth::new::<K>(eps);
        self.next_stamp();
        // In place: the frame holds a matrix of up to 3 KB for `Rebound::Slabs`.
        let frame = match &mut self.frame {
            Some(frame) => {
                frame.set(pose, obj.magnitude);
                frame
            }
            none => none.insert(PoseFrame::new(pose, obj.magnitude)),
        };
        let before = self.climber.steps;
        let root = root_dop(obj, frame, &mut self.climber);
        self.fly[0].dop = if eps > 0.0 {
            root.grown(&self.growth)
        } else {
            root
        };
        self.fly[0].size = size(&self.fly[0].dop);
        self.fly[0].stamp = self.stamp;
        Some(self.climber.steps - before)
    }

    /// A bound of `obj` placed by `pose` (exact where the hull is scanned or the pose only
    /// moves, else re-bounded from the slabs) for an object that keeps no state here: the
    /// world's objects and parts share a thread's state as scratch, without re-binding it
    /// (a pass over the object's nodes and triangles each time the shape changes).
    pub(crate) fn root_bound_unkept(&mut self, obj: &FlyingObject<K>, pose: &Pose) -> Dop<K> {
        // The frame is re-set below, so the cached pose no longer describes it.
        self.last = None;
        let frame = match &mut self.frame {
            Some(frame) => {
                frame.set(pose, obj.magnitude);
                frame
            }
            none => none.insert(PoseFrame::new(pose, obj.magnitude)),
        };
        root_dop_unkept(obj, frame, &mut self.climber)
    }

    /// A new stamp: every re-bounded node and placed triangle is stale.
    fn next_stamp(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.fly.iter_mut().for_each(|n| n.stamp = 0);
            self.placed.iter_mut().for_each(|t| t.stamp = 0);
            self.stamp = 1;
        }
    }

    /// Readies the placed-triangle cache for `pose` without re-bounding the root (the
    /// witness test needs one placed triangle, not the hierarchy). Unless `pose` is the current
    /// one, the cache is invalidated and the pose is forgotten, so that the next descent
    /// starts with [`QueryState::set_pose`] in full.
    fn place_only(&mut self, pose: &Pose, eps: f64, method: Rebound) {
        if self.last != Some((*pose, eps.to_bits(), method)) {
            self.last = None;
            self.next_stamp();
        }
    }

    /// The tumbled k-DOP of flying node `f`, re-bounded now if not yet for this pose.
    /// Inlined: most calls find the node current (a stamp comparison).
    #[inline(always)]
    fn fly_dop(
        &mut self,
        obj: &FlyingObject<K>,
        f: u32,
        eps: f64,
        stats: &mut QueryStats,
    ) -> &Dop<K> {
        let fi = f as usize;
        if self.fly[fi].stamp != self.stamp {
            self.rebound(obj, fi, eps, stats);
        }
        &self.fly[fi].dop
    }

    /// Re-bounds flying node `fi` for the current pose.
    #[inline(never)]
    fn rebound(&mut self, obj: &FlyingObject<K>, fi: usize, eps: f64, stats: &mut QueryStats) {
        // Queries reach nodes only after `set_pose`, which sets both.
        if let (Some((_, _, method)), Some(frame)) = (self.last, self.frame.as_mut()) {
            let mut dop = tumble_node(obj, fi, frame, method);
            if eps > 0.0 {
                dop = dop.grown(&self.growth);
            }
            if !frame.translation_only && obj.corners[fi] == crate::tumble::CornerSet::Dop {
                // The parent was reached first, so its bound is current; both contain
                // the node's geometry, and so does their intersection. (A shifted node
                // lies inside its shifted parent already. A node bounded from its own
                // triangle corners is skipped: on the paper's flights and the nested
                // spheres the intersection never changed Nv or Np for those, and cost
                // 1.5 % of Swept's instructions. It stays sound either way.)
                dop = dop.intersect(&self.fly[obj.parent[fi] as usize].dop);
            }
            self.fly[fi].dop = dop;
            self.fly[fi].size = size(&dop);
            self.fly[fi].stamp = self.stamp;
            stats.nu += 1;
        }
    }

    /// Pushes the children `c`, `c + 1` of a flying node paired with environment entry
    /// `(p, e)` whose bound is `env`, each if its (re-bounded) k-DOP overlaps `env` and, when
    /// the entry is one large triangle given as `screen`, may meet that triangle
    /// (`tri::node`; flying k-DOPs are enlarged by eps already).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn descend_fly(
        &mut self,
        form: impl OverlapForm,
        obj: &FlyingObject<K>,
        c: u32,
        p: u32,
        e: u32,
        env: &Dop<K>,
        screen: Option<(&[DVec3; 3], &TriBox)>,
        eps: f64,
        stats: &mut QueryStats,
    ) {
        stats.nv += 2;
        let mut keep = |state: &mut Self, f: u32| {
            let fd = state.fly_dop(obj, f, eps, stats);
            form.overlaps(fd, env)
                && screen.is_none_or(|(t, tb)| triangle_meets_dop(t, tb, fd, 0.0))
        };
        let right = keep(self, c + 1);
        let left = keep(self, c);
        self.stack.push_two([c + 1, p, e], right, [c, p, e], left);
    }

    /// Numbers a new query for the refinement memo and gives the memo a slot per part of
    /// an environment of `parts` parts (each slot grows when the query first refines a
    /// leaf of that part, see [`memo_entry`]).
    fn start_query(&mut self, parts: usize) {
        self.query = self.query.wrapping_add(1);
        if self.query == 0 {
            self.refined.iter_mut().for_each(|m| m.fill(0));
            self.query = 1;
        }
        if self.refined.len() < parts {
            self.refined.resize_with(parts, Vec::new);
        }
    }

    /// The object triangle at leaf-order position `pos`, placed (corners and box) once
    /// per pose.
    #[inline]
    fn placed(&mut self, obj: &FlyingObject<K>, pose: &Pose, pos: usize) -> &PlacedTri {
        let rec = &mut self.placed[pos];
        if rec.stamp != self.stamp {
            rec.place(self.stamp, obj, pose, pos);
        }
        rec
    }

    /// Flying triangle `pos` of `walk` placed where its pairs are decided: by the world
    /// pose for object pairs ([`Twin`]), else by the query's pose.
    #[inline]
    fn flying_triangle(&mut self, walk: &Walk<'_, K>, pos: usize) -> &PlacedTri {
        if walk.twin.is_some() {
            self.twin_placed(walk.object, pos)
        } else {
            self.placed(walk.object, walk.pose, pos)
        }
    }

    /// Starts an object-against-object query whose flying object is placed by `flying` in
    /// the world frame: its cached world-placed triangles stay valid if that pose did not
    /// change since the last such query.
    fn twin_begin(&mut self, flying: &Pose) {
        if self.twin_pose == Some(*flying) {
            return;
        }
        self.twin_pose = Some(*flying);
        self.twin_stamp = self.twin_stamp.wrapping_add(1);
        if self.twin_stamp == 0 {
            self.twin_placed.iter_mut().for_each(|t| t.stamp = 0);
            self.twin_stamp = 1;
        }
    }

    /// The object triangle at leaf-order position `pos` placed by the world pose of
    /// [`QueryState::twin_begin`], once per such pose.
    #[inline]
    fn twin_placed(&mut self, obj: &FlyingObject<K>, pos: usize) -> &PlacedTri {
        let rec = &mut self.twin_placed[pos];
        if rec.stamp != self.twin_stamp {
            let pose = self.twin_pose.unwrap_or(Pose::IDENTITY);
            rec.place(self.twin_stamp, obj, &pose, pos);
        }
        rec
    }

    /// Records a contact: environment leaf position `epos` of `part` (hierarchy `bvh`)
    /// with object leaf position `fpos`; it is also the next detect query's witness.
    #[inline]
    fn record(&mut self, part: u32, bvh: &Bvh<K>, epos: usize, obj: &FlyingObject<K>, fpos: usize) {
        self.raw
            .push([part, bvh.id_at(epos), obj.part.bvh.id_at(fpos)]);
        self.witness = Some([part, epos as u32, fpos as u32]);
    }

    /// The object-against-object contact list to fill, and the raw contacts to fill it from.
    pub(crate) fn pair_lists(&mut self) -> (&mut Vec<crate::pair::ObjectContact>, &[[u32; 3]]) {
        (&mut self.pair_contacts, &self.raw)
    }

    /// The contacts of the last query.
    #[must_use]
    pub fn contacts(&self) -> &[Contact] {
        &self.contacts
    }
}

impl<const K: usize> Environment<K> {
    /// Checks `object` placed by `pose` against the environment.
    ///
    /// Answers are exact for the environment's triangles as stored (world coordinates) and
    /// the object's placed by [`Pose::transform_point`]. When the environment is one part
    /// whose box is more than four times smaller than the object's (both in their own
    /// frames, as [`crate::Reference::of`] compares objects), the descent runs in the
    /// object's frame with the part re-bounded, not the large object; the answer is the same.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite epsilon.
    ///
    /// # Performance
    /// No allocation once `state` has warmed up (its buffers grow to the largest report).
    /// Nodes of the flying hierarchy are re-bounded at most once per pose; repeating a
    /// query with the same pose reuses them.
    pub fn collide<'s>(
        &self,
        object: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        state: &'s mut QueryState<K>,
    ) -> Result<Outcome<'s>> {
        zone!("Environment::collide");
        self.query(object, pose, options, state, Wide::detect())
    }

    /// [`Environment::collide`] with the k-DOP tests of the descent in AVX form when
    /// `wide` is given and k is 18 or 26 (tests run both forms and compare).
    fn query<'s>(
        &self,
        object: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        state: &'s mut QueryState<K>,
        wide: Option<Wide>,
    ) -> Result<Outcome<'s>> {
        if let Some(part) = self.flying_for(object) {
            // The object is the static side and the part flies in its frame; answers stay
            // exact in world coordinates. Without a usable inverse of `pose` the object
            // cannot be seen from, and the environment stays the static side.
            if let Some((twin, inverse)) = Twin::new(pose, &Pose::IDENTITY, object.magnitude, part)
            {
                let stats =
                    object
                        .statics()
                        .run(part, &inverse, options, state, wide, Some(&twin))?;
                // [0, object triangle, part triangle] as the environment's contacts are.
                state.raw.iter_mut().for_each(|r| r.swap(1, 2));
                return Ok(self.finish(state, stats));
            }
        }
        let stats = self
            .statics()
            .run(object, pose, options, state, wide, None)?;
        Ok(self.finish(state, stats))
    }

    /// The environment as the static side of a descent.
    pub(crate) fn statics(&self) -> Statics<'_, K> {
        Statics {
            top: &self.top,
            parts: &self.parts,
        }
    }

    /// Sorts the raw contacts of a query into the state's contact list and answers.
    fn finish<'s>(&self, state: &'s mut QueryState<K>, mut stats: QueryStats) -> Outcome<'s> {
        state.raw.sort_unstable();
        state.contacts.clear();
        state
            .contacts
            .extend(state.raw.iter().map(|&[p, e, o]| Contact {
                part: self.ids[p as usize],
                env_triangle: e,
                object_triangle: o,
            }));
        stats.contacts = state.contacts.len() as u64;
        Outcome {
            collides: !state.contacts.is_empty(),
            contacts: &state.contacts,
            stats,
        }
    }
}

impl<const K: usize> FlyingObject<K> {
    /// The object as the static side of a descent: its hierarchy in its own frame under a
    /// part tree of one leaf.
    pub(crate) fn statics(&self) -> Statics<'_, K> {
        Statics {
            top: &self.top,
            parts: std::slice::from_ref(&self.part),
        }
    }
}

/// The static side of a descent: a tree over parts whose leaves name parts, and the parts,
/// each a hierarchy in the frame where queries compare bounds (an environment's parts in
/// world coordinates, or one object's hierarchy in its own frame).
#[derive(Clone, Copy)]
pub(crate) struct Statics<'a, const K: usize> {
    pub(crate) top: &'a [Node<K>],
    pub(crate) parts: &'a [Part<K>],
}

impl<const K: usize> Statics<'_, K> {
    /// One query of `object` placed by `pose` (in the static side's frame): the witness
    /// re-test, then the descent, with its k-DOP tests in AVX form when `wide` is given and
    /// k is 18 or 26. Leaves the contacts in `state.raw` as `[part, static triangle,
    /// object triangle]`.
    pub(crate) fn run(
        &self,
        object: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        state: &mut QueryState<K>,
        wide: Option<Wide>,
        twin: Option<&Twin>,
    ) -> Result<QueryStats> {
        let eps = options.epsilon;
        if eps.is_nan() || eps < 0.0 || !eps.is_finite() {
            return Err(Error::InvalidParameter {
                name: "epsilon",
                reason: format!("{eps} is not a finite non-negative number"),
            });
        }
        state.bind(object);
        if let Some(twin) = twin {
            state.twin_begin(&twin.flying);
        }
        let mut stats = QueryStats::default();
        let detect = options.mode == Mode::Detect;
        let walk = Walk {
            object,
            pose,
            eps,
            prune: eps + twin.map_or(0.0, |t| t.margin),
            twin,
            detect,
            larger_first: options.descent == Descent::Larger,
        };
        if detect && options.witness {
            if let Some(w) = state.witness {
                state.place_only(pose, walk.prune, options.rebound);
                if self.retest(&walk, w, state, &mut stats) {
                    stats.witness_hits = 1;
                    state.raw.clear();
                    state.raw.push([
                        w[0],
                        self.parts[w[0] as usize].bvh.id_at(w[1] as usize),
                        object.part.bvh.id_at(w[2] as usize),
                    ]);
                    return Ok(stats);
                }
                state.witness = None;
            }
        }
        if let Some(steps) = state.set_pose(object, pose, walk.prune, options.rebound) {
            // The root, re-bounded exactly.
            stats.climb_steps = steps;
            stats.nu += 1;
        }
        state.raw.clear();
        state.stack.clear();
        state.tri_dops.clear();
        state.start_query(self.parts.len());
        match wide {
            // SAFETY: `wide` exists, so the CPU supports AVX.
            #[cfg(target_arch = "x86_64")]
            Some(wide) if K >= 16 => unsafe { self.descend_avx(wide, &walk, state, &mut stats) },
            _ => self.descend(Narrow, &walk, state, &mut stats),
        }
        Ok(stats)
    }

    /// [`Statics::descend`] compiled with AVX: the k-DOP tests inlined into it take
    /// eight intervals per comparison (k = 18 and 26). `wide` proves AVX is there, but a
    /// function compiled for a CPU feature is still `unsafe` to call from code that is not.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    fn descend_avx(
        &self,
        wide: Wide,
        walk: &Walk<'_, K>,
        state: &mut QueryState<K>,
        stats: &mut QueryStats,
    ) {
        self.descend(wide, walk, state, stats);
    }

    /// The descent of a query whose pose is set, from the roots (Algorithm 1, or the Larger
    /// rule), until the stack empties or (`detect`) a contact is found, with k-DOP tests of
    /// the given `form`.
    #[inline(always)]
    fn descend(
        &self,
        form: impl OverlapForm,
        walk: &Walk<'_, K>,
        state: &mut QueryState<K>,
        stats: &mut QueryStats,
    ) {
        let &Walk {
            object,
            pose,
            prune,
            larger_first,
            ..
        } = walk;
        // Pairs on the stack are known to overlap: children are tested before they are
        // pushed, so a disjoint pair costs one test and no stack traffic.
        stats.nv += 1;
        let roots = form.overlaps(&state.fly[0].dop, &self.top[0].dop);
        state.stack.push_if([0, TOP, 0], roots);
        while let Some([f, p, e]) = state.stack.pop() {
            if f & FTRI != 0 {
                if self.one_flying_triangle(walk, (f & !FTRI) as usize, p, e, state, stats) {
                    break;
                }
                continue;
            }
            // Borrowed, not copied: a copy moves 80 bytes per popped pair.
            let fd = &state.fly[f as usize].dop;
            let fnode = FlyLink(state.fly[f as usize].link);
            let fsize = state.fly[f as usize].size;
            if e & TRI != 0 {
                // One triangle of a refined environment leaf.
                // Only the branch that needs the triangle's bound copies it (104 bytes
                // at k = 26); the common one reads the position alone.
                let slot = (e & !TRI) as usize;
                if fnode.is_leaf() {
                    let (dop, pos) = state.tri_dops[slot];
                    if self.misses_leaf(p, pos as usize, &dop, fd, fsize, stats) {
                        continue;
                    }
                    if self.test_pairs(
                        walk,
                        p,
                        state.tri_dops[slot].1 as usize,
                        fnode.first_triangle() as usize,
                        state,
                        stats,
                    ) {
                        break;
                    }
                } else {
                    let (dop, pos) = state.tri_dops[slot];
                    let c = fnode.first_child();
                    if size(&dop) > LARGE_ENV * fsize {
                        // A triangle much larger than the flying node: its plane and edges
                        // prune what its k-DOP cannot.
                        let et = self.parts[p as usize].bvh.tri_at(pos as usize);
                        let eb = TriBox::new(&et);
                        let screen = Some((&et, &eb));
                        state.descend_fly(form, object, c, p, e, &dop, screen, prune, stats);
                    } else {
                        state.descend_fly(form, object, c, p, e, &dop, None, prune, stats);
                    }
                }
                continue;
            }
            let (p, e, env) = self.entry(p, e);
            if !env.is_leaf() {
                if fnode.is_leaf() && fsize > LARGE * size(&env.dop) {
                    // A flying leaf larger than the environment node goes on as its
                    // triangles, each kept only where it may meet the node (`tri::node`):
                    // large triangles at an angle have k-DOPs far larger than themselves.
                    let mut pos = fnode.first_triangle() as usize;
                    loop {
                        let ft = state.placed(object, pose, pos);
                        stats.nv += 1;
                        let keep = triangle_meets_dop(&ft.corners, &ft.bbox, &env.dop, prune);
                        state.stack.push_if([FTRI | pos as u32, p, e], keep);
                        if object.part.bvh.ids[pos] & END != 0 {
                            break;
                        }
                        pos += 1;
                    }
                    continue;
                }
                // The environment node splits unless the Larger rule splits the flying one
                // (which the shared branch below does).
                if !(larger_first && !fnode.is_leaf() && fsize > size(&env.dop)) {
                    let c = env.first_child();
                    let kids = self.children(p, c);
                    stats.nv += 2;
                    // Right first, so the left child is processed first.
                    let right = form.overlaps(fd, &kids[1].dop);
                    let left = form.overlaps(fd, &kids[0].dop);
                    state.stack.push_two([f, p, c + 1], right, [f, p, c], left);
                    continue;
                }
            } else {
                let part = &self.parts[p as usize];
                let bvh = &part.bvh;
                let first = env.first_triangle() as usize;
                if bvh.ids[first] & END == 0 {
                    // Refine a leaf of several triangles into one bound per triangle, so
                    // that the flying hierarchy descends against the triangles, not their
                    // union: the pruning of single-triangle leaves for a fraction of their
                    // memory. The bounds are decoded from the part's leaf codes.
                    let memo = memo_entry(&mut state.refined, p, e, bvh.nodes.len());
                    let mut slot = if (*memo >> 32) as u32 == state.query {
                        *memo as u32 as usize
                    } else {
                        let start = state.tri_dops.len();
                        *memo = (u64::from(state.query) << 32) | start as u64;
                        let mut pos = first;
                        loop {
                            let dop = codes::decode(&env.dop, &part.codes[pos]);
                            state.tri_dops.push((dop, pos as u32));
                            if bvh.ids[pos] & END != 0 {
                                break;
                            }
                            pos += 1;
                        }
                        start
                    };
                    loop {
                        let (dop, pos) = &state.tri_dops[slot];
                        stats.nv += 1;
                        let hit = form.overlaps(fd, dop);
                        state.stack.push_if([f, p, TRI | slot as u32], hit);
                        if bvh.ids[*pos as usize] & END != 0 {
                            break;
                        }
                        slot += 1;
                    }
                    continue;
                }
            }
            // The flying node splits: it is the larger against an internal environment
            // node, or the environment side is one triangle.
            if !fnode.is_leaf() {
                state.descend_fly(
                    form,
                    object,
                    fnode.first_child(),
                    p,
                    e,
                    &env.dop,
                    None,
                    prune,
                    stats,
                );
                continue;
            }
            // A flying leaf against a one-triangle environment leaf: the triangle pairs.
            let first = env.first_triangle() as usize;
            if self.misses_leaf(p, first, &env.dop, fd, fsize, stats) {
                continue;
            }
            if self.test_pairs(
                walk,
                p,
                first,
                fnode.first_triangle() as usize,
                state,
                stats,
            ) {
                break;
            }
        }
    }

    /// One triangle of a flying leaf (leaf position `fpos`) against environment entry
    /// `(p, e)`: the triangle pairs at environment leaves, else the environment node splits
    /// and each child is kept where the triangle may meet it. Returns true when a detect
    /// query can stop.
    #[inline(never)]
    fn one_flying_triangle(
        &self,
        walk: &Walk<'_, K>,
        fpos: usize,
        p: u32,
        e: u32,
        state: &mut QueryState<K>,
        stats: &mut QueryStats,
    ) -> bool {
        let &Walk {
            object,
            pose,
            prune,
            ..
        } = walk;
        // Flying triangles are only ever paired with nodes, never with refined leaves.
        let (p, _, env) = self.entry(p, e);
        if env.is_leaf() {
            let bvh = &self.parts[p as usize].bvh;
            let mut epos = env.first_triangle() as usize;
            loop {
                if self.test_pair(walk, p, epos, fpos, state, stats) {
                    return true;
                }
                if bvh.ids[epos] & END != 0 {
                    return false;
                }
                epos += 1;
            }
        }
        let c = env.first_child();
        let kids = self.children(p, c);
        let ft = state.placed(object, pose, fpos);
        let (corners, bbox) = (ft.corners, ft.bbox);
        stats.nv += 2;
        let right = triangle_meets_dop(&corners, &bbox, &kids[1].dop, prune);
        let left = triangle_meets_dop(&corners, &bbox, &kids[0].dop, prune);
        let f = FTRI | fpos as u32;
        state.stack.push_two([f, p, c + 1], right, [f, p, c], left);
        false
    }

    /// The environment node of stack entry `(p, e)` (not a refined triangle), as
    /// `(part, node, node record)`. A part-tree leaf has the part root's bound: it is
    /// entered as that root, without a test of its own.
    #[inline(always)]
    fn entry(&self, p: u32, e: u32) -> (u32, u32, &Node<K>) {
        match p {
            TOP if self.top[e as usize].is_leaf() => {
                let part = self.top[e as usize].first_triangle();
                (part, 0, &self.parts[part as usize].bvh.nodes[0])
            }
            TOP => (p, e, &self.top[e as usize]),
            _ => (p, e, &self.parts[p as usize].bvh.nodes[e as usize]),
        }
    }

    /// The children `c`, `c + 1` of an internal node of part `p` (or of the part tree).
    #[inline(always)]
    fn children(&self, p: u32, c: u32) -> [&Node<K>; 2] {
        let nodes = if p == TOP {
            self.top
        } else {
            &self.parts[p as usize].bvh.nodes
        };
        [&nodes[c as usize], &nodes[c as usize + 1]]
    }

    /// Whether environment triangle `pos` of part `p` (bound `dop`), when larger than the
    /// flying leaf (bound `fd`, size `fsize`), misses that leaf by a separating axis: one
    /// test instead of one per flying triangle, whose boxes a large triangle at an angle
    /// mostly overlaps. Flying k-DOPs are enlarged by epsilon already.
    #[inline]
    fn misses_leaf(
        &self,
        p: u32,
        pos: usize,
        dop: &Dop<K>,
        fd: &Dop<K>,
        fsize: f32,
        stats: &mut QueryStats,
    ) -> bool {
        if size(dop) <= LARGE_ENV * fsize {
            return false;
        }
        let et = self.parts[p as usize].bvh.tri_at(pos);
        stats.nv += 1;
        !triangle_meets_dop(&et, &TriBox::new(&et), fd, 0.0)
    }

    /// One triangle pair: environment leaf position `epos` of `part`, object leaf position
    /// `fpos`. Returns true when a detect query can stop.
    #[inline]
    fn test_pair(
        &self,
        walk: &Walk<'_, K>,
        part: u32,
        epos: usize,
        fpos: usize,
        state: &mut QueryState<K>,
        stats: &mut QueryStats,
    ) -> bool {
        let at = [part, epos as u32, fpos as u32];
        if self.retest(walk, at, state, stats) {
            let bvh = &self.parts[part as usize].bvh;
            state.record(part, bvh, epos, walk.object, fpos);
            return walk.detect;
        }
        false
    }

    /// Whether `[part, environment position, object position]` is a contact under `pose`
    /// (one triangle test, counted in `stats.np`): the witness re-test, and the single
    /// pairs of a flying triangle's descent. Out-of-range positions (a witness from
    /// another environment) are not, and cost no test.
    fn retest(
        &self,
        walk: &Walk<'_, K>,
        [part, epos, fpos]: [u32; 3],
        state: &mut QueryState<K>,
        stats: &mut QueryStats,
    ) -> bool {
        let &Walk { object, eps, .. } = walk;
        let Some(p) = self.parts.get(part as usize) else {
            return false;
        };
        let (epos, fpos) = (epos as usize, fpos as usize);
        if epos >= p.bvh.triangle_count() || fpos >= object.part.bvh.triangle_count() {
            return false;
        }
        stats.np += 1;
        let et = walk.static_triangle(&p.bvh, epos);
        pair_hit(
            &et,
            &TriBox::new(&et),
            state.flying_triangle(walk, fpos),
            eps,
        )
    }

    /// Tests the environment triangle at leaf position `epos` against the flying leaf
    /// starting at `fpos`. Returns true when a detect query can stop.
    #[inline]
    fn test_pairs(
        &self,
        walk: &Walk<'_, K>,
        part: u32,
        epos: usize,
        fpos0: usize,
        state: &mut QueryState<K>,
        stats: &mut QueryStats,
    ) -> bool {
        let &Walk {
            object,
            pose,
            eps,
            detect,
            ..
        } = walk;
        let bvh = &self.parts[part as usize].bvh;
        // The static triangle and its box serve every flying triangle of the leaf.
        let et = walk.static_triangle(bvh, epos);
        let ebox = TriBox::new(&et);
        let mut fpos = fpos0;
        if walk.twin.is_some() || eps != 0.0 || !object.wide_leaves {
            loop {
                stats.np += 1;
                if pair_hit(&et, &ebox, state.flying_triangle(walk, fpos), eps) {
                    state.record(part, bvh, epos, object, fpos);
                    if detect {
                        return true;
                    }
                }
                if object.part.bvh.ids[fpos] & END != 0 {
                    return false;
                }
                fpos += 1;
            }
        }
        // Exact contacts against wide leaves: the leaf's triangles whose boxes meet the
        // environment triangle's are listed (no branch per pair) and decided together, up
        // to `BATCH` at a time (`tri::intersect_batch`). In detect mode the whole batch is
        // tested and its first contact in leaf order kept, so `np` counts every pair of
        // the batch.
        loop {
            let start = fpos;
            let mut listed = [0u8; BATCH];
            let mut n = 0;
            let last = loop {
                stats.np += 1;
                let ft = state.placed(object, pose, fpos);
                listed[n % BATCH] = (fpos - start) as u8;
                n += usize::from(ebox.overlaps_box(&ft.bbox));
                let end = object.part.bvh.ids[fpos] & END != 0;
                fpos += 1;
                if end || fpos - start == BATCH {
                    break end;
                }
            };
            if n != 0 {
                let placed = &state.placed[start..fpos];
                let found = intersect_batch(n, |j| (&placed[usize::from(listed[j])].corners, &et));
                for j in set_bits(found) {
                    let hit = start + usize::from(listed[j]);
                    state.record(part, bvh, epos, object, hit);
                    if detect {
                        return true;
                    }
                }
            }
            if last {
                return false;
            }
        }
    }
}

/// The refinement memo's entry for node `e` of part `p` (which has `nodes` nodes), grown
/// on first use: only parts that queries reach cost memory, and the check is one
/// comparison at a leaf, not a pass over every part per query.
#[inline]
fn memo_entry(refined: &mut [Vec<u64>], p: u32, e: u32, nodes: usize) -> &mut u64 {
    let part = &mut refined[p as usize];
    if part.len() < nodes {
        part.resize(nodes, 0);
    }
    &mut part[e as usize]
}

/// What a descent needs besides the state: the object, its pose and the query's options.
struct Walk<'a, const K: usize> {
    object: &'a FlyingObject<K>,
    /// The object's pose in the static side's frame, where bounds are compared.
    pose: &'a Pose,
    /// The user's epsilon: triangle pairs closer than this are contacts.
    eps: f64,
    /// What bounds are enlarged by: `eps`, plus the twin frames' margin.
    prune: f64,
    twin: Option<&'a Twin>,
    detect: bool,
    larger_first: bool,
}

impl<const K: usize> Walk<'_, K> {
    /// Static triangle `epos` of `bvh` where its pairs are decided: placed into the world
    /// frame for object pairs ([`Twin`]), else as stored.
    #[inline]
    fn static_triangle(&self, bvh: &Bvh<K>, epos: usize) -> [DVec3; 3] {
        match self.twin {
            Some(twin) => bvh.tri_at(epos).map(|v| twin.fixed.transform_point(v)),
            None => bvh.tri_at(epos),
        }
    }
}

/// Where answers are exact when that is not the frame bounds are compared in: the static
/// side's triangles placed by `fixed`, the flying object's by `flying` (each by
/// [`Pose::transform_point`]). `margin` bounds how far a point shared by two triangles
/// there can lie, seen in the static side's frame, from both triangles as the descent
/// bounds them ([`Pose::twin_margin`]); bounds are enlarged by it so that no contact is
/// pruned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Twin {
    fixed: Pose,
    flying: Pose,
    margin: f64,
}

impl Twin {
    /// The frames of a static side posed by `fixed` and a flying object posed by `flying`,
    /// with the flying object's pose in the static side's frame; `None` where `fixed` has
    /// no inverse that can be trusted.
    pub(crate) fn new<const K: usize>(
        fixed: &Pose,
        flying: &Pose,
        fixed_magnitude: f64,
        object: &FlyingObject<K>,
    ) -> Option<(Twin, Pose)> {
        let relative = fixed.relative(flying).ok()?;
        let margin = fixed.twin_margin(flying, &relative, fixed_magnitude, object.magnitude)?;
        let twin = Twin {
            fixed: *fixed,
            flying: *flying,
            margin,
        };
        Some((twin, relative))
    }
}

/// The traversal stack of `(flying node, part, environment entry)` triples. Pushes do not
/// branch on whether they keep their entry: in close proximity the k-DOP tests that decide
/// are close to coin flips (callgrind's branch model: about one mispredicted branch per
/// k-DOP test on the nested spheres), so each entry is written to the next free slot
/// and the top moves by 0 or 1. The slots stay allocated between queries.
#[derive(Clone, Debug, Default)]
struct PairStack {
    slots: Vec<[u32; 3]>,
    top: usize,
}

impl PairStack {
    fn clear(&mut self) {
        self.top = 0;
    }

    fn reserve(&mut self, slots: usize) {
        if self.slots.len() < slots {
            self.slots.resize(slots, [0; 3]);
        }
    }

    /// Room for two more entries (a branch that is taken only while the stack grows).
    #[inline(always)]
    fn room(&mut self) {
        if self.top + 2 > self.slots.len() {
            self.slots.resize((2 * self.slots.len()).max(64), [0; 3]);
        }
    }

    /// Pushes `a` if `keep`.
    #[inline(always)]
    fn push_if(&mut self, a: [u32; 3], keep: bool) {
        self.room();
        self.slots[self.top] = a;
        self.top += usize::from(keep);
    }

    /// Pushes `a` if `keep_a`, then `b` if `keep_b` (so `b` is popped first when both are
    /// kept): `a` goes to the free slot and `b` to the one after it, or over `a` when `a`
    /// is not kept.
    #[inline(always)]
    fn push_two(&mut self, a: [u32; 3], keep_a: bool, b: [u32; 3], keep_b: bool) {
        self.room();
        self.slots[self.top] = a;
        self.slots[self.top + usize::from(keep_a)] = b;
        self.top += usize::from(keep_a) + usize::from(keep_b);
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<[u32; 3]> {
        if self.top == 0 {
            return None;
        }
        self.top -= 1;
        Some(self.slots[self.top])
    }
}

/// Query-time record of one flying node.
#[derive(Clone, Copy, Debug)]
struct FlyNode<const K: usize> {
    dop: Dop<K>,
    stamp: u32,
    link: u32,
    /// [`size`] of `dop`, for the descent rule.
    size: f32,
}

/// Query-time record of one object triangle: its placed corners and their box, for the
/// pose of `stamp`.
#[derive(Clone, Copy, Debug)]
struct PlacedTri {
    stamp: u32,
    corners: [DVec3; 3],
    bbox: TriBox,
}

impl PlacedTri {
    /// Object triangle `pos` placed by `pose`, stamped `stamp`.
    #[inline]
    fn place<const K: usize>(
        &mut self,
        stamp: u32,
        obj: &FlyingObject<K>,
        pose: &Pose,
        pos: usize,
    ) {
        self.stamp = stamp;
        // Explicit indexing: `[T; 3]::map` costs dozens of instructions per call here.
        let [a, b, c] = obj.part.bvh.tris[pos];
        let v = &obj.part.bvh.vertices;
        self.corners = [
            pose.transform_point(v[a as usize]),
            pose.transform_point(v[b as usize]),
            pose.transform_point(v[c as usize]),
        ];
        self.bbox = TriBox::new(&self.corners);
    }
}

/// A flying node's link.
#[derive(Clone, Copy)]
struct FlyLink(u32);

impl FlyLink {
    #[inline]
    fn is_leaf(self) -> bool {
        self.0 & crate::hierarchy::LEAF != 0
    }
    #[inline]
    fn first_child(self) -> u32 {
        self.0
    }
    #[inline]
    fn first_triangle(self) -> u32 {
        self.0 & !crate::hierarchy::LEAF
    }
}

/// Size of a k-DOP for the descent rule: the sum of its box extents.
#[inline]
pub(crate) fn size<const K: usize>(d: &Dop<K>) -> f32 {
    (d.hi(0) - d.lo(0)) + (d.hi(1) - d.lo(1)) + (d.hi(2) - d.lo(2))
}

/// Whether an environment triangle `et` (with its box `ebox`) and a placed object triangle
/// `ft` are a contact: they intersect (`eps == 0`), or are closer than `eps`.
#[inline(always)]
fn pair_hit(et: &[DVec3; 3], ebox: &TriBox, ft: &PlacedTri, eps: f64) -> bool {
    if eps == 0.0 {
        ebox.overlaps_box(&ft.bbox) && intersect_filtered(&ft.corners, et)
    } else {
        within(et, &ft.corners, eps)
    }
}

/// Triangles closer than `eps` (or intersecting).
#[inline]
fn within(a: &[DVec3; 3], b: &[DVec3; 3], eps: f64) -> bool {
    let lo_a = a[0].min(a[1]).min(a[2]) - DVec3::splat(eps);
    let hi_a = a[0].max(a[1]).max(a[2]) + DVec3::splat(eps);
    let lo_b = b[0].min(b[1]).min(b[2]);
    let hi_b = b[0].max(b[1]).max(b[2]);
    if !(lo_a.cmple(hi_b).all() && lo_b.cmple(hi_a).all()) {
        return false;
    }
    triangle_distance(a, b) <= eps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BuildOptions;
    use crate::mesh::Mesh;
    use crate::testing::lcg;
    use glam::DMat3;

    /// A soup of `n` triangles of size about `size` in the cube `[0, 10]^3`.
    fn soup(n: usize, size: f64, s: &mut u64) -> Mesh {
        let p = |s: &mut u64| DVec3::new(lcg(s), lcg(s), lcg(s));
        let tris: Vec<[DVec3; 3]> = (0..n)
            .map(|_| {
                let c = p(s) * 10.0;
                [c, c + (p(s) - 0.5) * size, c + (p(s) - 0.5) * size]
            })
            .collect();
        Mesh::from_triangles(&tris).unwrap()
    }

    /// The descent's two forms (SSE and, where the CPU has it, AVX k-DOP tests) give the
    /// same contacts in the same order with the same statistics, on seeded soups and poses,
    /// in both modes and for both re-bounding methods: the form a CPU takes is not
    /// observable. (The oracle tests check the answers themselves, in the form this CPU takes.)
    fn forms_agree<const K: usize>() {
        let Some(wide) = Wide::detect() else {
            eprintln!("no AVX on this CPU: only the SSE form runs");
            return;
        };
        let mut s = 7u64 ^ K as u64;
        let env = Environment::<K>::from_mesh(soup(3000, 0.8, &mut s), &BuildOptions::ENVIRONMENT)
            .unwrap();
        let obj = FlyingObject::<K>::new(soup(300, 0.6, &mut s), &BuildOptions::FLYING).unwrap();
        let (mut a, mut b) = (QueryState::new(), QueryState::new());
        let mut contacts = 0;
        for i in 0..60 {
            let q = glam::DQuat::from_axis_angle(
                DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s) + 0.1).normalize(),
                lcg(&mut s) * 6.0,
            );
            let linear = if i % 3 == 0 {
                DMat3::IDENTITY
            } else {
                DMat3::from_quat(q)
            };
            let pose = Pose::new(
                linear,
                DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 4.0,
            )
            .unwrap();
            for base in [QueryOptions::DETECT, QueryOptions::REPORT] {
                for rebound in [Rebound::Slabs, Rebound::Corners] {
                    let o = QueryOptions {
                        rebound,
                        witness: false,
                        ..base
                    };
                    let x = env.query(&obj, &pose, &o, &mut a, None).unwrap();
                    let y = env.query(&obj, &pose, &o, &mut b, Some(wide)).unwrap();
                    assert_eq!(x.contacts, y.contacts, "pose {i}");
                    assert_eq!(x.stats, y.stats, "pose {i}");
                    contacts += x.contacts.len();
                }
            }
        }
        assert!(contacts > 100, "the poses should make contacts: {contacts}");
    }

    /// k = 18 and 26 only: below k = 16 both forms run the same SSE test, and comparing
    /// them could not fail.
    #[test]
    fn sse_and_avx_descents_agree() {
        forms_agree::<18>();
        forms_agree::<26>();
    }
}
