//! The k-DOP back-end of the descent (Klosowski et al. 1998, §4.2, Algorithm 1): a flying
//! hierarchy re-bounded under its pose against a static side, which is either an
//! environment (the part tree, whose leaves lead into the parts' hierarchies) or one
//! object's hierarchy in that object's own frame. Algorithm 1 descends the static side
//! first and re-bounds flying nodes only where it is close; the `Larger` rule splits the
//! larger node. Environment leaves of several triangles are refined into one bound per
//! triangle from their leaf codes, and very unequal sizes go on as single triangles
//! screened by their planes (`tri::node`). Node pairs are expanded one at a time under a
//! [`Control`] (`control.rs`).

use super::control::{self, Control, Ended, Expand};
use super::placed::{FlyLink, PlacedObject};
use super::workspace::{PairStack, RefinedTri, ScreenCache, Workspace};
use super::{Descent, Mode, NodePair, PairCache, QueryOptions, QueryStats, size};
use crate::dop::{Dop, Narrow, OverlapForm, Wide};
use crate::env::Part;
use crate::error::{Error, Result};
use crate::hierarchy::{Bvh, END, Node, leaf_span};
use crate::pose::Pose;
use crate::tri::triangle_meets_dop;
use crate::tumble::FlyingObject;
use glam::DVec3;

/// Marks a part-tree entry in a node pair.
pub(crate) const TOP: u32 = u32::MAX;
/// Marks a static entry that is one triangle of a refined leaf: the other bits index the
/// workspace's `tri_dops`.
pub(crate) const TRI: u32 = 1 << 31;
/// Marks a flying entry that is one triangle of a flying leaf: the other bits are its leaf
/// position.
pub(crate) const FTRI: u32 = 1 << 31;
/// A flying leaf goes on as its triangles (`tri::node`) only when it is this many times
/// larger than the environment node (sum of box extents): nearer in size its k-DOP prunes
/// as well and the per-triangle tests cost more than they save.
const LARGE: f32 = 4.0;
/// An environment triangle screens a flying leaf before its triangle tests, and a
/// one-triangle leaf screens a flying node's children, by `tri::node` only when it is this
/// many times larger than the flying node: below this those tests cost more than they
/// prune. (A refined leaf's triangle screens flying children from [`WIDE_TRI`].) Both
/// factors were chosen by measurement (`docs/benchmarks.md`, "Design choices").
pub(crate) const LARGE_ENV: f32 = 64.0;
/// A refined leaf's triangle screens the children of a flying node it meets from this
/// many times the node's size (sum of box extents), when it is also wider than the node
/// (the middle of its box extents): a triangle wide in two directions leaves most of its
/// k-DOP to nodes its plane and edges separate, where a long thin one (the Pipes' tubes)
/// does not. Chosen with the cross-matrix's detect queries and the paper's flights
/// (`docs/benchmarks.md`, "Design choices").
const WIDE_TRI: f32 = 4.0;

/// The mutable state one query works with, each part from its owner: the flying object's
/// pose cache, the thread's workspace, the pair's cache.
pub(crate) struct Parts<'a, const K: usize> {
    pub(crate) object: &'a mut PlacedObject<K>,
    pub(crate) work: &'a mut Workspace<K>,
    pub(crate) pair: &'a mut PairCache,
}

/// The static side of a descent: a tree over parts whose leaves name parts, and the parts,
/// each a hierarchy in the frame where queries compare bounds (an environment's parts in
/// world coordinates, or one object's hierarchy in its own frame).
#[derive(Clone, Copy)]
pub(crate) struct Statics<'a, const K: usize> {
    pub(crate) top: &'a [Node<K>],
    pub(crate) parts: &'a [Part<K>],
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

/// What a descent needs besides the state: the object, its pose and the query's options.
pub(crate) struct Walk<'a, const K: usize> {
    pub(crate) object: &'a FlyingObject<K>,
    /// The object's pose in the static side's frame, where bounds are compared.
    pub(crate) pose: &'a Pose,
    /// The user's epsilon: triangle pairs closer than this are contacts.
    pub(crate) eps: f64,
    /// What bounds are enlarged by: `eps`, plus the twin frames' margin.
    pub(crate) prune: f64,
    pub(crate) twin: Option<&'a Twin>,
    pub(crate) detect: bool,
    /// Detect, and (with the witness on) the pair not known to be apart ([`PairCache`]'s
    /// `apart`): of two children that both overlap the other side's node, flying or
    /// static, the deeper is popped first: where two meshes overlap widely, the plain order
    /// can search a region of near misses long before the first contact
    /// (`docs/benchmarks.md`, "Design choices").
    deep_first: bool,
    larger_first: bool,
}

impl<'a, const K: usize> Walk<'a, K> {
    /// The walk of a query with epsilon `eps` and `twin`'s frames, its descent order the
    /// plain one (no deeper child first, Algorithm 1's rule).
    #[inline(always)]
    fn new(
        object: &'a FlyingObject<K>,
        pose: &'a Pose,
        eps: f64,
        twin: Option<&'a Twin>,
        detect: bool,
    ) -> Self {
        Walk {
            object,
            pose,
            eps,
            prune: eps + twin.map_or(0.0, |t| t.margin),
            twin,
            detect,
            deep_first: false,
            larger_first: false,
        }
    }

    /// Static triangle `epos` of `bvh` where its pairs are decided: placed into the world
    /// frame for object pairs ([`Twin`]), else as stored.
    #[inline(always)]
    pub(crate) fn static_triangle(&self, bvh: &Bvh<K>, epos: usize) -> [DVec3; 3] {
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
    pub(crate) flying: Pose,
    margin: f64,
}

impl Twin {
    /// Whether a static side placed by `fixed` needs a twin: its triangle tests then place
    /// both triangles, not only the flying one ([`Twin::new`]).
    #[inline]
    pub(crate) fn posed(fixed: &Pose) -> bool {
        *fixed != Pose::IDENTITY
    }

    /// The frames of a static side posed by `fixed` and a flying object posed by `flying`,
    /// with the flying object's pose in the static side's frame; `None` where `fixed` has
    /// no inverse that can be trusted. A static side at the identity pose is in the world
    /// frame already, as an environment is: no twin, and `flying` itself (its triangles
    /// as stored are those the identity places, up to the sign of a zero coordinate,
    /// which no triangle test reads).
    pub(crate) fn new<const K: usize>(
        fixed: &Pose,
        flying: &Pose,
        fixed_magnitude: f64,
        object: &FlyingObject<K>,
    ) -> Option<(Option<Twin>, Pose)> {
        if !Twin::posed(fixed) {
            return Some((None, *flying));
        }
        let relative = fixed.relative(flying).ok()?;
        let margin = fixed.twin_margin(flying, &relative, fixed_magnitude, object.magnitude)?;
        let twin = Twin {
            fixed: *fixed,
            flying: *flying,
            margin,
        };
        Some((Some(twin), relative))
    }
}

impl<const K: usize> Statics<'_, K> {
    /// One query of `object` placed by `pose` (in the static side's frame): the witness
    /// re-test, then the descent from the roots or `control`'s start pairs, with its k-DOP
    /// tests in AVX form when `wide` is given and k is 18 or 26. Leaves the contacts in the
    /// workspace's `raw` as `[part, static triangle, object triangle]`, and a stopped
    /// descent's unvisited pairs on its stack.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite epsilon, or a start pair
    /// that names no node pair of these hierarchies.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &self,
        object: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        mut q: Parts<'_, K>,
        wide: Option<Wide>,
        twin: Option<&Twin>,
        control: &mut impl Control,
    ) -> Result<(QueryStats, Ended)> {
        let eps = epsilon(options)?;
        if let Some(bad) = control.start().iter().find(|&&s| !self.names(object, s)) {
            return Err(bad_start(*bad));
        }
        let (found, stats) = self.witness(object, pose, options, &mut q, twin)?;
        if found {
            return Ok((stats, Ended::Found));
        }
        // The object is bound and the twin's pose begun (`witness`).
        let detect = options.mode == Mode::Detect;
        let walk = Walk {
            // The mark is history, read only where the witness (history) is wanted.
            deep_first: detect && !(options.witness && q.pair.apart),
            larger_first: options.descent == Descent::Larger,
            ..Walk::new(object, pose, eps, twin, detect)
        };
        let mut side = KdopSide {
            statics: self,
            walk: &walk,
            form: Narrow,
            object: q.object,
            work: q.work,
            pair: q.pair,
            stats,
        };
        if let Some(steps) = side
            .object
            .set_pose(object, pose, walk.prune, options.rebound)
        {
            // The root, re-bounded exactly.
            side.stats.climb_steps = steps;
            side.stats.nu += 1;
        }
        side.work.start_query();
        side.seed(control.start());
        let done = match wide {
            // SAFETY: `wide` exists, so the CPU supports AVX.
            #[cfg(target_arch = "x86_64")]
            Some(wide) if K >= 16 => {
                let mut side = side.with_form(wide);
                let ended = unsafe { descend_avx(&mut side, control) };
                side.ended(ended);
                (side.stats, ended)
            }
            _ => {
                let ended = control::descend(&mut side, control);
                side.ended(ended);
                (side.stats, ended)
            }
        };
        Ok(done)
    }

    /// The witness re-test that opens a query ([`Statics::run`]), after the epsilon check,
    /// binding the object and beginning the twin's pose, which every query needs: most
    /// detect queries of a moving object end here, so it runs before anything the descent
    /// needs is set up, and is inlined into the callers that answer most queries. Whether the
    /// pair's last contact still holds (the contact then in the workspace; else the
    /// witness is forgotten), and the work of the re-test.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite epsilon.
    #[inline(always)]
    pub(crate) fn witness(
        &self,
        object: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        q: &mut Parts<'_, K>,
        twin: Option<&Twin>,
    ) -> Result<(bool, QueryStats)> {
        let eps = epsilon(options)?;
        let mut stats = QueryStats::default();
        if q.object.bind(object) {
            q.pair.clear();
        }
        if let Some(twin) = twin {
            q.object.twin_begin(&twin.flying);
        }
        if !(options.mode == Mode::Detect && options.witness) {
            return Ok((false, stats));
        }
        let Some(w) = q.pair.witness else {
            return Ok((false, stats));
        };
        let walk = Walk::new(object, pose, eps, twin, true);
        q.object.place_only(pose, walk.prune, options.rebound);
        if walk.holds(self, q.object, w, &mut stats.np) {
            stats.witness_hits = 1;
            q.pair.apart = false;
            q.work.raw.clear();
            q.work
                .raw
                .push(walk.contact(&self.parts[w[0] as usize].bvh, w));
            return Ok((true, stats));
        }
        q.pair.witness = None;
        Ok((false, stats))
    }

    /// Whether `[f, p, e]` names a node pair of `object` and these hierarchies (a flying
    /// node or triangle; a part-tree node, or a node of a part).
    fn names(&self, object: &FlyingObject<K>, [f, p, e]: NodePair) -> bool {
        let flying = if f & FTRI != 0 {
            ((f & !FTRI) as usize) < object.part.bvh.triangle_count()
        } else {
            (f as usize) < object.links.len()
        };
        let fixed = match p {
            TOP => (e as usize) < self.top.len(),
            _ => self
                .parts
                .get(p as usize)
                .is_some_and(|part| (e as usize) < part.bvh.nodes.len()),
        };
        flying && fixed
    }

    /// The static node of entry `(p, e)` (not a refined triangle), as `(part, node, node
    /// record)`. A part-tree leaf has the part root's bound: it is entered as that root,
    /// without a test of its own.
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
        // One bounds check for both.
        let two = &nodes[c as usize..c as usize + 2];
        [&two[0], &two[1]]
    }

    /// Whether static triangle `pos` of part `p` (bound `dop`), when larger than the flying
    /// leaf (bound `fd`, size `fsize`), misses that leaf by a separating axis: one test
    /// instead of one per flying triangle, whose boxes a large triangle at an angle mostly
    /// overlaps. Flying k-DOPs are enlarged by epsilon already. The size test is inlined
    /// into the descent (most leaves are not larger); the screen is not.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn misses_leaf(
        &self,
        p: u32,
        pos: usize,
        dop: &Dop<K>,
        fd: &Dop<K>,
        fsize: f32,
        cache: &mut ScreenCache,
        stats: &mut QueryStats,
    ) -> bool {
        size(dop) > LARGE_ENV * fsize && self.screen_misses(p, pos, fd, cache, stats)
    }

    /// The screen of [`Statics::misses_leaf`].
    #[inline(never)]
    fn screen_misses(
        &self,
        p: u32,
        pos: usize,
        fd: &Dop<K>,
        cache: &mut ScreenCache,
        stats: &mut QueryStats,
    ) -> bool {
        stats.nv += 1;
        let bvh = &self.parts[p as usize].bvh;
        !cache.meets(p, pos as u32, || bvh.tri_at(pos), fd)
    }
}

/// The error of an epsilon that is negative, infinite or NaN (kept out of the query's path).
#[cold]
#[inline(never)]
fn bad_epsilon(eps: f64) -> Error {
    Error::InvalidParameter {
        name: "epsilon",
        reason: format!("{eps} is not a finite non-negative number"),
    }
}

/// The query's epsilon, checked: two comparisons, NaN and infinities being outside the
/// range.
#[inline(always)]
fn epsilon(options: &QueryOptions) -> Result<f64> {
    let eps = options.epsilon;
    if (0.0..=f64::MAX).contains(&eps) {
        Ok(eps)
    } else {
        Err(bad_epsilon(eps))
    }
}

/// The error of a start pair that names no node pair of the hierarchies.
#[cold]
#[inline(never)]
fn bad_start(bad: NodePair) -> Error {
    Error::InvalidParameter {
        name: "start",
        reason: format!("node pair {bad:?} is not in these hierarchies"),
    }
}

impl<const K: usize> RefinedTri<K> {
    /// The bound `dop` of the triangle at leaf position `pos`, with its size gates.
    fn new(dop: Dop<K>, pos: u32) -> Self {
        let size = size(&dop);
        // `size > WIDE_TRI * fsize && middle > fsize`, as one comparison with `fsize`.
        let screens_below = (size / WIDE_TRI).min(dop.middle_extent());
        RefinedTri {
            dop,
            pos,
            size,
            screens_below,
        }
    }
}

/// [`control::descend`] over the k-DOP side compiled with AVX: the k-DOP tests inlined into
/// it take eight intervals per comparison (k = 18 and 26). `Wide` proves AVX is there, but
/// a function compiled for a CPU feature is still `unsafe` to call from code that is not.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn descend_avx<const K: usize>(
    side: &mut KdopSide<'_, '_, K, Wide>,
    control: &mut impl Control,
) -> Ended {
    control::descend(side, control)
}

/// The k-DOP hierarchies' side of a descent.
pub(crate) struct KdopSide<'a, 'q, const K: usize, F> {
    pub(super) statics: &'a Statics<'a, K>,
    pub(super) walk: &'a Walk<'a, K>,
    form: F,
    pub(super) object: &'q mut PlacedObject<K>,
    pub(super) work: &'q mut Workspace<K>,
    pub(super) pair: &'q mut PairCache,
    pub(super) stats: QueryStats,
}

impl<'a, 'q, const K: usize, F: OverlapForm> KdopSide<'a, 'q, K, F> {
    /// The same side with its k-DOP tests in another form.
    fn with_form<G: OverlapForm>(self, form: G) -> KdopSide<'a, 'q, K, G> {
        KdopSide {
            statics: self.statics,
            walk: self.walk,
            form,
            object: self.object,
            work: self.work,
            pair: self.pair,
            stats: self.stats,
        }
    }

    /// Notes in the pair's cache whether a detect descent that ended `ended` found the
    /// pair apart (a stopped one tells nothing).
    fn ended(&mut self, ended: Ended) {
        if self.walk.detect && ended != Ended::Stopped {
            self.pair.apart = ended == Ended::Done;
        }
    }

    /// Pushes the start pairs that overlap, or the roots if they do and there are none.
    /// Pairs on the stack are known to overlap: children are tested before they are
    /// pushed, so a disjoint pair costs one test and no stack traffic.
    fn seed(&mut self, start: &[NodePair]) {
        if start.is_empty() {
            let Some(top) = self.statics.top.first() else {
                return; // No parts: nothing to meet.
            };
            self.stats.nv += 1;
            let roots = self.form.overlaps(&self.object.fly[0].dop, &top.dop);
            self.work.stack.push_if([0, TOP, 0], roots);
            return;
        }
        let (object, pose, prune) = (self.walk.object, self.walk.pose, self.walk.prune);
        for &[f, p, e] in start {
            let env = &self.statics.entry(p, e).2.dop;
            self.stats.nv += 1;
            let keep = if f & FTRI != 0 {
                let ft = self.object.placed(object, pose, (f & !FTRI) as usize);
                triangle_meets_dop(&ft.corners, &ft.bbox, env, prune)
            } else {
                let fd = self.object.fly_dop(object, f, &mut self.stats);
                self.form.overlaps(fd, env)
            };
            self.work.stack.push_if([f, p, e], keep);
        }
    }
}

impl<const K: usize, F: OverlapForm> Expand for KdopSide<'_, '_, K, F> {
    #[inline(always)]
    fn stack(&mut self) -> &mut PairStack {
        &mut self.work.stack
    }

    #[inline(always)]
    fn stats(&self) -> &QueryStats {
        &self.stats
    }

    /// Refined-leaf entries index this query's `tri_dops`; they are pushed only by the
    /// expansion of a leaf pair and popped before any pair pushed earlier.
    #[inline(always)]
    fn resumable(&self, [_, _, e]: NodePair) -> bool {
        e & TRI == 0
    }

    /// One node pair of the descent: the flying node splits, the static one does, or
    /// triangles are tested.
    #[inline(always)]
    fn expand(&mut self, [f, p, e]: NodePair) -> bool {
        // The walk's pose, margin and rule are read where they are used, not up front:
        // loaded at the top they stayed live across the expansion, spilled on every pair.
        let walk = self.walk;
        let object = walk.object;
        let form = self.form;
        let statics = self.statics;
        if f & FTRI != 0 {
            return self.one_flying_triangle((f & !FTRI) as usize, p, e);
        }
        // Borrowed, not copied: a copy moves 80 bytes per popped pair.
        let fly = &self.object.fly[f as usize];
        let fd = &fly.dop;
        let fnode = FlyLink(fly.link);
        let fsize = fly.size;
        if e & TRI != 0 {
            // One triangle of a refined environment leaf. Only the branch that needs the
            // triangle's bound copies it (104 bytes at k = 26); the common one reads the
            // position alone.
            let slot = (e & !TRI) as usize;
            let work = &mut *self.work;
            let tri = &work.tri_dops[slot];
            let (dop, pos) = (&tri.dop, tri.pos);
            if fnode.is_leaf() {
                let cache = &mut work.screen;
                if tri.size > LARGE_ENV * fsize
                    && statics.screen_misses(p, pos as usize, fd, cache, &mut self.stats)
                {
                    return false;
                }
                return self.test_pairs(p, pos as usize, fnode.first_triangle() as usize);
            }
            let c = fnode.first_child();
            if fsize < tri.screens_below {
                // A triangle much larger and wider than the flying node: its plane and
                // edges prune what its k-DOP cannot.
                self.fly_screened(c, p, e, None);
            } else {
                self.object.descend_fly(
                    &mut work.stack,
                    form,
                    object,
                    c,
                    [p, e],
                    dop,
                    |_| true,
                    self.walk.deep_first,
                    &mut self.stats,
                );
            }
            return false;
        }
        let (p, e, env) = statics.entry(p, e);
        if !env.is_leaf() {
            if fnode.is_leaf() && fsize > LARGE * size(&env.dop) {
                // A flying leaf larger than the environment node goes on as its triangles.
                self.flying_leaf_as_triangles(fnode.first_triangle() as usize, p, e, env);
                return false;
            }
            // The environment node splits unless the Larger rule splits the flying one
            // (which the shared branch below does).
            if !(walk.larger_first && !fnode.is_leaf() && fsize > size(&env.dop)) {
                let c = env.first_child();
                let kids = statics.children(p, c);
                self.stats.nv += 2;
                // Right first, so the left child is processed first.
                let right = form.overlaps(fd, &kids[1].dop);
                let left = form.overlaps(fd, &kids[0].dop);
                let stack = &mut self.work.stack;
                if walk.deep_first {
                    stack.push_two_deeper_first([f, p, c + 1], right, [f, p, c], left, || {
                        fd.depth(&kids[1].dop) > fd.depth(&kids[0].dop)
                    });
                } else {
                    stack.push_two([f, p, c + 1], right, [f, p, c], left);
                }
                return false;
            }
        } else {
            let part = &statics.parts[p as usize];
            let bvh = &part.bvh;
            let first = env.first_triangle() as usize;
            if bvh.ids[first] & END == 0 {
                // Refine a leaf of several triangles into one bound per triangle, so that
                // the flying hierarchy descends against the triangles, not their union: the
                // pruning of single-triangle leaves for a fraction of their memory. The
                // bounds are decoded from the part's leaf codes, once per query.
                let work = &mut *self.work;
                let fresh = work.tri_dops.len() as u32;
                let mut slot = match work.memo.get_or_insert(p, e, fresh) {
                    Some(slot) => slot as usize,
                    None => {
                        refine(part, &env.dop, first, &mut work.tri_dops);
                        fresh as usize
                    }
                };
                loop {
                    let RefinedTri { dop, pos, .. } = &work.tri_dops[slot];
                    self.stats.nv += 1;
                    let hit = form.overlaps(fd, dop);
                    work.stack.push_if([f, p, TRI | slot as u32], hit);
                    if bvh.ids[*pos as usize] & END != 0 {
                        break;
                    }
                    slot += 1;
                }
                return false;
            }
        }
        // The flying node splits: it is the larger against an internal environment node,
        // or the environment side is one triangle.
        if !fnode.is_leaf() {
            let c = fnode.first_child();
            // A one-triangle leaf much larger than the flying node screens its children by
            // the triangle's plane and edges, as a refined leaf's triangle does.
            // (Only then is the entry a part's leaf: the part tree's nodes name no triangle.)
            let work = &mut *self.work;
            if env.is_leaf() && size(&env.dop) > LARGE_ENV * fsize {
                self.fly_screened(c, p, e, Some(env));
            } else {
                self.object.descend_fly(
                    &mut work.stack,
                    form,
                    object,
                    c,
                    [p, e],
                    &env.dop,
                    |_| true,
                    self.walk.deep_first,
                    &mut self.stats,
                );
            }
            return false;
        }
        // A flying leaf against a one-triangle environment leaf: the triangle pairs.
        let first = env.first_triangle() as usize;
        let cache = &mut self.work.screen;
        if statics.misses_leaf(p, first, &env.dop, fd, fsize, cache, &mut self.stats) {
            return false;
        }
        self.test_pairs(p, first, fnode.first_triangle() as usize)
    }
}

impl<const K: usize, F: OverlapForm> KdopSide<'_, '_, K, F> {
    /// The children `c`, `c + 1` of a flying node against a static triangle much larger
    /// than they are, screened by its plane and edges: a one-triangle leaf `env` of entry
    /// `(p, e)`, or (`env` none) the refined triangle `e` names. Out of line, as are
    /// [`KdopSide::flying_leaf_as_triangles`] and [`refine`]: most pairs take none of
    /// them, and inlined they made the descent's loop larger and slower.
    #[inline(never)]
    fn fly_screened(&mut self, c: u32, p: u32, e: u32, env: Option<&Node<K>>) {
        let object = self.walk.object;
        let bvh = &self.statics.parts[p as usize].bvh;
        let work = &mut *self.work;
        let (dop, pos) = match env {
            Some(env) => (&env.dop, env.first_triangle()),
            None => {
                let tri = &work.tri_dops[(e & !TRI) as usize];
                (&tri.dop, tri.pos)
            }
        };
        let cache = &mut work.screen;
        let screen = |fd: &Dop<K>| cache.meets(p, pos, || bvh.tri_at(pos as usize), fd);
        self.object.descend_fly(
            &mut work.stack,
            self.form,
            object,
            c,
            [p, e],
            dop,
            screen,
            false,
            &mut self.stats,
        );
    }

    /// A flying leaf (first triangle at leaf position `first`) larger than static node `env`
    /// (entry `(p, e)`) goes on as its triangles, each kept only where it may meet the node
    /// (`tri::node`): large triangles at an angle have k-DOPs far larger than themselves.
    #[inline(never)]
    fn flying_leaf_as_triangles(&mut self, first: usize, p: u32, e: u32, env: &Node<K>) {
        let walk = self.walk;
        let object = walk.object;
        for pos in leaf_span(&object.part.bvh.ids, first) {
            let ft = self.object.placed(object, walk.pose, pos);
            self.stats.nv += 1;
            let keep = triangle_meets_dop(&ft.corners, &ft.bbox, &env.dop, walk.prune);
            self.work.stack.push_if([FTRI | pos as u32, p, e], keep);
        }
    }

    /// One triangle of a flying leaf (leaf position `fpos`) against static entry `(p, e)`:
    /// the triangle pairs at static leaves, else the static node splits and each child is
    /// kept where the triangle may meet it. Returns true when a detect query can stop.
    #[inline(never)]
    fn one_flying_triangle(&mut self, fpos: usize, p: u32, e: u32) -> bool {
        let &Walk {
            object,
            pose,
            prune,
            ..
        } = self.walk;
        let statics = self.statics;
        // Flying triangles are only ever paired with nodes, never with refined leaves.
        let (p, _, env) = statics.entry(p, e);
        if env.is_leaf() {
            let bvh = &statics.parts[p as usize].bvh;
            let mut epos = env.first_triangle() as usize;
            loop {
                if self.test_pair(p, epos, fpos) {
                    return true;
                }
                if bvh.ids[epos] & END != 0 {
                    return false;
                }
                epos += 1;
            }
        }
        let c = env.first_child();
        let kids = statics.children(p, c);
        let ft = self.object.placed(object, pose, fpos);
        let (corners, bbox) = (ft.corners, ft.bbox);
        self.stats.nv += 2;
        let right = triangle_meets_dop(&corners, &bbox, &kids[1].dop, prune);
        let left = triangle_meets_dop(&corners, &bbox, &kids[0].dop, prune);
        let f = FTRI | fpos as u32;
        self.work
            .stack
            .push_two([f, p, c + 1], right, [f, p, c], left);
        false
    }
}

/// Refines the static leaf with bound `leaf` whose triangles start at leaf position
/// `first` of `part` into one bound per triangle, appended to `out` (once per leaf and
/// query, so out of line).
#[inline(never)]
fn refine<const K: usize>(
    part: &Part<K>,
    leaf: &Dop<K>,
    first: usize,
    out: &mut Vec<RefinedTri<K>>,
) {
    for pos in leaf_span(&part.bvh.ids, first) {
        out.push(RefinedTri::new(part.refined_bound(leaf, pos), pos as u32));
    }
}

#[cfg(test)]
mod tests;
