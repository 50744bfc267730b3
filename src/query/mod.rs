//! Queries of a flying hierarchy against a static side (Klosowski et al. 1998, §4.2,
//! Algorithm 1), in two modes: *detect* (stop at the first intersecting triangle pair) and
//! *report* (every intersecting pair, sorted). Every query returns its statistics, the terms
//! of the paper's cost model `T = Nv·Cv + Np·Cp + Nu·Cu` (§3.1, equation 2).
//!
//! The state of a query has three owners, kept apart so that each can live where it
//! belongs:
//! - [`PlacedObject`], per flying object and pose: re-bounded nodes, placed triangles, the
//!   root's hill-climbing state (`placed.rs`);
//! - [`Workspace`], per thread: the stack and per-query scratch, nothing proportional to
//!   an environment (`workspace.rs`);
//! - [`PairCache`], per pair of bodies: the last contact (`pair_cache.rs`).
//!
//! [`QueryState`] bundles one of each for callers with one object per state. The descent
//! is one loop with a control point (`control.rs`) that the k-DOP back-end (`descent.rs`,
//! `leaves.rs`) and the OBB trees (`crate::obb`) both run.

mod control;
mod descent;
mod leaves;
mod pair_cache;
mod placed;
mod steer;
mod workspace;

#[cfg(test)]
pub(crate) use control::Limit;
pub(crate) use control::{Control, Ended, Full};
pub(crate) use control::{Expand, descend};
pub(crate) use descent::{Parts, Statics, Twin};
pub(crate) use pair_cache::PairCache;
pub(crate) use placed::PlacedObject;
pub(crate) use steer::{Side, Steer};
pub(crate) use workspace::PairStack;
pub(crate) use workspace::Workspace;

use crate::dop::Dop;
use crate::env::{Environment, PartId};
use crate::tumble::{FlyingObject, Rebound};

/// Refined-triangle bounds (and memo entries) [`QueryState::prepare`] makes room for.
const PREPARED_SCRATCH: usize = 1024;

/// A pair of nodes in a descent: `[flying, part, static]`. The flying entry is a node of the
/// flying hierarchy, or with its top bit set one of its triangles (leaf position); the part
/// is a part index, or `u32::MAX` for the part tree; the static entry is a node of that
/// tree.
pub(crate) type NodePair = [u32; 3];

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

impl QueryStats {
    /// The weight of one node visit (`Nv`) in [`QueryStats::work`].
    pub const NV_WEIGHT: u64 = 4;
    /// The weight of one triangle pair test (`Np`) in [`QueryStats::work`].
    pub const NP_WEIGHT: u64 = 12;
    /// The weight of one re-bound node (`Nu`) in [`QueryStats::work`].
    pub const NU_WEIGHT: u64 = 7;

    /// The work in the paper's cost terms (`T = Nv·Cv + Np·Cp + Nu·Cu`, §3.1), weighted as
    /// they cost at k = 18 on this code: `4 Nv + 12 Np + 7 Nu` (a re-bound about 1.75
    /// overlap tests, a triangle test about 3, fitted to per-pose times of the matrix's
    /// soccer ball × mountain cell). Deterministic, unlike a time: what the side-choosing
    /// trials compare, and a measure to compare two builds by.
    #[must_use]
    pub fn work(&self) -> u64 {
        Self::NV_WEIGHT * self.nv + Self::NP_WEIGHT * self.np + Self::NU_WEIGHT * self.nu
    }
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

/// Query scratch for one flying object: its pose cache, a workspace and a pair cache (see
/// the module page). Nothing allocates per query once it has warmed up. Use one per thread;
/// queries of several objects through one state re-bind its pose cache each time the
/// object changes.
#[derive(Clone, Debug, Default)]
pub struct QueryState<const K: usize> {
    pub(crate) object: PlacedObject<K>,
    pub(crate) work: Workspace<K>,
    pub(crate) pair: PairCache,
    /// Which side of its last pair flies (`steer.rs`).
    pub(crate) steer: Steer,
}

impl<const K: usize> QueryState<K> {
    /// An empty state; it binds to an object on first use.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sizes what a query of `object` against `env` uses: the per-node and per-triangle
    /// records of the object, the pose frame and a traversal stack, and has the system
    /// back them with memory. Queries size them themselves as they first need it (their
    /// pages then come at first touch, one fault each); calling this up front (as `kdop
    /// check` does before its timer starts) makes the first query cost what the next ones
    /// do. Only the stack, the refined-leaf scratch and the contact lists grow later, to
    /// the largest query.
    /// Queries by [`Rebound::Corners`](crate::Rebound::Corners) also need the object's
    /// [`FlyingObject::prepare_corners`].
    pub fn prepare(&mut self, env: &Environment<K>, object: &FlyingObject<K>) {
        match env.flying_for(object) {
            // Either side may fly (`steer.rs`): both are made room for, the rule's last.
            Some(part) => {
                self.prepare_for(env.statics(), object);
                self.prepare_for(object.statics(), part);
            }
            None => self.prepare_for(env.statics(), object),
        }
        self.fault_in();
    }

    /// [`QueryState::prepare`] for object-against-object queries between `a` and `b`
    /// ([`FlyingObject::collide_with`]), in either order.
    pub fn prepare_objects(&mut self, a: &FlyingObject<K>, b: &FlyingObject<K>) {
        self.size_objects(a, b);
        self.fault_in();
    }

    /// The sizing of [`QueryState::prepare_objects`] without backing the pages, for a
    /// caller that sizes for many pairs and then backs the largest once
    /// ([`QueryState::fault_in`]).
    pub(crate) fn size_objects(&mut self, a: &FlyingObject<K>, b: &FlyingObject<K>) {
        // Either frame may be used (`steer.rs`): both are made room for, the rule's last.
        if crate::pair::Reference::of(a, b) == crate::pair::Reference::A {
            self.prepare_for(b.statics(), a);
            self.prepare_for(a.statics(), b);
        } else {
            self.prepare_for(a.statics(), b);
            self.prepare_for(b.statics(), a);
        }
    }

    fn prepare_for(&mut self, statics: Statics<'_, K>, object: &FlyingObject<K>) {
        if self.object.bind(object) {
            self.pair.clear();
        }
        // Deep enough for both hierarchies' depths several times over.
        let depth = statics
            .parts
            .iter()
            .map(|p| p.bvh.depth())
            .max()
            .unwrap_or(0)
            + statics.top.len().max(1).ilog2() as usize
            + object.part.bvh.depth();
        self.work.stack.reserve(16 * (depth + 8));
        // A first share of the scratch that grows with what a query touches, so that a
        // typical query calls no allocator at all (one that does may pay for a whole
        // heap's consolidation).
        self.work.reserve(&[
            0,
            PREPARED_SCRATCH,
            2 * PREPARED_SCRATCH,
            PREPARED_SCRATCH,
            64,
            64,
            0,
        ]);
    }

    /// The three parts, each borrowed on its own.
    pub(crate) fn parts(&mut self) -> Parts<'_, K> {
        Parts {
            object: &mut self.object,
            work: &mut self.work,
            pair: &mut self.pair,
        }
    }

    /// Whether this state's next query of its last pair re-bounds the other side than the
    /// size rule's ([`Environment::collide`], [`FlyingObject::collide_with`]), because its
    /// earlier queries found that side cheaper. For profiling; answers do not depend on it.
    #[must_use]
    pub fn flies_other_side(&self) -> bool {
        self.steer.is_flipped()
    }

    /// The contacts of the last query.
    #[must_use]
    pub fn contacts(&self) -> &[Contact] {
        &self.work.contacts
    }

    /// Capacities of its buffers, for [`QueryState::reserve`].
    pub(crate) fn sizes(&self) -> [usize; 14] {
        let (a, b) = (self.object.sizes(), self.work.sizes());
        std::array::from_fn(|i| if i < 7 { a[i] } else { b[i - 7] })
    }

    /// Grows its buffers to at least `sizes` (another state's), so that the queries that
    /// state has run allocate nothing here either.
    pub(crate) fn reserve(&mut self, sizes: &[usize; 14]) {
        self.object.reserve(&sizes[..7]);
        self.work.reserve(&sizes[7..]);
    }

    /// Backs the pose cache's records with memory now (see [`QueryState::prepare`]).
    pub(crate) fn fault_in(&mut self) {
        self.object.fault_in();
    }

    /// Bytes held: the pose cache (which follows the object's size) and the workspace.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.object.memory_bytes() + self.work.memory_bytes()
    }
}

/// Size of a k-DOP for the descent rule: the sum of its box extents.
#[inline]
pub(crate) fn size<const K: usize>(d: &Dop<K>) -> f32 {
    (d.hi(0) - d.lo(0)) + (d.hi(1) - d.lo(1)) + (d.hi(2) - d.lo(2))
}

/// A static side (an environment's one part, the second object of a pair) is re-bounded
/// in the flying side's frame, instead of the flying side in its, only when the flying
/// side's box is this many times larger: near in size, re-bounding a thin part at an angle
/// can cost more than re-bounding the object (measured over the real-mesh matrix:
/// `docs/benchmarks.md`, "Design choices").
const SWAP: f32 = 4.0;

/// Whether a flying side whose own-frame root is `flying` should rather be the static
/// side against one whose root is `fixed` (its box more than [`SWAP`] times larger).
#[inline]
pub(crate) fn swaps<const K: usize>(flying: &Dop<K>, fixed: &Dop<K>) -> bool {
    size(flying) > swap_above(fixed)
}

/// The size a flying side's box must pass to swap with a static side whose root is
/// `fixed` ([`swaps`]).
#[inline]
pub(crate) fn swap_above<const K: usize>(fixed: &Dop<K>) -> f32 {
    SWAP * size(fixed)
}
