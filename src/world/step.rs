//! One frame of the world: fat root k-DOPs of the moved objects, the broad phase, the exact
//! narrow phase on every candidate pair in parallel (Klosowski et al. 1998, §6.1, with the
//! simultaneous descent of §4.2 per pair), and the pairs' events.
//!
//! Determinism: candidate pairs come out of the broad phase in an order fixed by the
//! sequence of calls; each pair's answer goes to its own slot, whichever thread computes it;
//! the colliding pairs are then sorted by their handles. Detect-mode answers do not depend
//! on a thread's history because the world's queries never start from a witness.
//!
//! Resting pairs (temporal coherence, §6.1): a candidate pair neither of whose sides changed
//! since the last step (pose, shape, geometry, mode or filter) has the same answer as then,
//! so it keeps it: its contacts stay where the step that found them put them, in one list
//! that steps append to (compacted in place when what no pair holds passes half the rest,
//! by a walk of that list: each answer's head names its job and length, so a compaction
//! costs the contacts, not the resting pairs).
//! The candidate pairs live in a table kept from step to step (`jobs.rs`), each in its two
//! sides' lists: a step drops the jobs of the changed objects and parts found through
//! their lists, and adds the changed ones' candidates found by broad-phase queries (an
//! object moved inside its fat k-DOP, its filter as it was, has the candidate objects of
//! its jobs; where many changed, one pass over the table and the broad phase's pairs does
//! both); the sorted list of colliding pairs is edited the same way (the dropped ones out,
//! the computed ones in), so resting objects cost no query, copy or sort per step.

use super::jobs::{Job, JobOut, JobTable, Keyed, Side, slot};
use super::{Body, Object, ObjectId, ObjectKey, PartHandle, PartKey, PartRec, World, aabb_of};
use crate::broad::{bit, clear_bit, set_bit};
use crate::dop::Dop;
use crate::error::{Error, Result};
use crate::query::{Mode, QueryOptions, QueryState};
use crate::trim::{Burst, shrink_share};
use parking_lot::Mutex;
use rayon::prelude::*;
use slotmap::SlotMap;
use std::time::Instant;

/// Whether a colliding pair began colliding this step or went on from the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PairEvent {
    /// Not colliding at the step before (or new).
    Begin,
    /// Colliding at the step before too.
    Persist,
}

/// A colliding pair of one step: an object and an object or part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactPair {
    /// The first side: always an object.
    pub a: Body,
    /// The second side: an object after `a` in handle order, or a part.
    pub b: Body,
    /// `a`'s user value.
    pub a_user: u64,
    /// `b`'s user value.
    pub b_user: u64,
    /// Begin or persist.
    pub event: PairEvent,
    /// The world, and the answer that found its contacts: a stamp unique in the world,
    /// written before the contacts in the world's list of them (`Frame::arena`), and the
    /// list's epoch (which compaction advances).
    world: u32,
    epoch: u32,
    stamp: u64,
    /// Where its contacts are in that list.
    start: u32,
    len: u32,
}
/// A pair that collided at the step before and no longer does (separated, filtered out,
/// or one side removed); handles may be stale, the user values are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndedPair {
    /// The first side.
    pub a: Body,
    /// The second side.
    pub b: Body,
    /// `a`'s user value.
    pub a_user: u64,
    /// `b`'s user value.
    pub b_user: u64,
}

/// What a step did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepStats {
    /// Objects whose pose changed since the step before.
    pub moved: u64,
    /// Of those, objects whose root left its fat k-DOP (the broad phase saw them move).
    pub refattened: u64,
    /// Pairs the broad phase found.
    pub broad_pairs: u64,
    /// Pairs left after the filters and the fat k-DOP test: the narrow phase's work.
    pub narrow_pairs: u64,
    /// Of those, pairs whose sides did not change since the step before: they kept its
    /// answer, not computed again.
    pub resting_pairs: u64,
    /// Pairs colliding.
    pub colliding: u64,
    /// Triangle contacts over all pairs.
    pub contacts: u64,
    /// Pairs that began.
    pub begins: u64,
    /// Pairs that ended.
    pub ends: u64,
    /// Time in the bounds and the broad phase, microseconds.
    pub broad_us: f64,
    /// Time in the narrow phase and the events, microseconds.
    pub narrow_us: f64,
}

/// The job of two objects, if their filters accept each other and their fat k-DOPs meet.
fn object_job<const K: usize>(
    (a, oa): (ObjectKey, &Object<K>),
    (b, ob): (ObjectKey, &Object<K>),
) -> Option<Keyed> {
    let meet = accepts(oa.desc.group, oa.desc.mask, ob.desc.group, ob.desc.mask)
        && oa.fat.overlaps(&ob.fat);
    let first = if a < b { oa } else { ob };
    meet.then(|| Keyed::new(first.shape, Job::Objects(a.min(b), a.max(b))))
}

/// The job of an object and a part, if their filters accept each other and the object's
/// fat k-DOP meets the part's bound.
fn part_job<const K: usize>(
    (a, o): (ObjectKey, &Object<K>),
    (p, part): (PartKey, &PartRec<K>),
) -> Option<Keyed> {
    let meet = accepts(o.desc.group, o.desc.mask, part.desc.group, part.desc.mask)
        && o.fat.overlaps(&part.bound);
    meet.then(|| Keyed::new(o.shape, Job::Part(a, p)))
}

/// The two sides of `job` in world `world`.
fn bodies(world: u32, job: Job) -> (Body, Body) {
    let object = |key| Body::Object(ObjectId { key, world });
    match job {
        Job::Objects(a, b) => (object(a), object(b)),
        Job::Part(a, p) => (object(a), Body::Part(PartHandle { key: p, world })),
    }
}

/// A live body's user value.
fn user_of<const K: usize>(
    objects: &SlotMap<ObjectKey, Object<K>>,
    parts: &SlotMap<PartKey, PartRec<K>>,
    b: Body,
) -> u64 {
    match b {
        Body::Object(id) => objects[id.key].desc.user,
        Body::Part(id) => parts[id.key].desc.user,
    }
}

/// The end of a pair.
fn ended(p: &ContactPair) -> EndedPair {
    EndedPair {
        a: p.a,
        b: p.b,
        a_user: p.a_user,
        b_user: p.b_user,
    }
}

/// Items of one kind changed since the last step that succeeded: a bit per slot index,
/// and their handles.
#[derive(Debug)]
pub(super) struct Changed<T> {
    bits: Vec<u64>,
    keys: Vec<T>,
}

impl<T> Default for Changed<T> {
    fn default() -> Self {
        Changed {
            bits: Vec::new(),
            keys: Vec::new(),
        }
    }
}

impl<T: slotmap::Key> Changed<T> {
    /// Item `k` changed.
    pub(super) fn mark(&mut self, k: T) {
        if self.set(slot(k)) {
            self.keys.push(k);
        }
    }

    /// Item `k` was added: listed even where its slot's bit is set (by an item removed from
    /// that slot since the last step, which is listed too).
    pub(super) fn added(&mut self, k: T) {
        self.set(slot(k));
        self.keys.push(k);
    }

    /// Sets slot `i`'s bit; whether it was clear.
    fn set(&mut self, i: u32) -> bool {
        let w = (i >> 6) as usize;
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        let clear = !bit(&self.bits, i);
        set_bit(&mut self.bits, i);
        clear
    }

    /// Whether the item in slot `i` changed.
    fn has(&self, i: u32) -> bool {
        ((i >> 6) as usize) < self.bits.len() && bit(&self.bits, i)
    }

    /// Forgets them.
    fn clear(&mut self) {
        for k in self.keys.drain(..) {
            clear_bit(&mut self.bits, slot(k));
        }
    }

    fn bytes(&self) -> usize {
        self.bits.capacity() * 8 + self.keys.capacity() * size_of::<T>()
    }
}

/// The objects and parts changed since the last step that succeeded (moved, re-shaped,
/// deformed, given another mode or filter, added or removed), so that whether a job's
/// sides are unchanged is read off its key.
#[derive(Debug, Default)]
pub(super) struct Changes {
    pub(super) objects: Changed<ObjectKey>,
    pub(super) parts: Changed<PartKey>,
}

impl Changes {
    /// Whether a side of the job with sort key `key` ([`Keyed::key`]) changed.
    fn touches(&self, key: u128) -> bool {
        let (a, b) = ((key >> 64) as u32, key as u32);
        let b_changed = if key >> 63 & 1 == 0 {
            self.objects.has(b)
        } else {
            self.parts.has(b)
        };
        b_changed || self.objects.has(a)
    }

    /// Whether few enough changed for their jobs to be found item by item rather than in
    /// a pass over every pair: an item costs a broad-phase query and a walk of its jobs.
    /// Tests and fuzzing take both ways (by the parity of the count), each checked against
    /// the jobs listed anew.
    fn few(&self, objects: usize) -> bool {
        let n = self.objects.keys.len() + self.parts.keys.len();
        if cfg!(any(test, fuzzing)) {
            return n % 2 == 0;
        }
        n * 8 <= objects
    }

    /// Forgets them: the step succeeded.
    fn clear(&mut self) {
        self.objects.clear();
        self.parts.clear();
    }

    fn bytes(&self) -> usize {
        self.objects.bytes() + self.parts.bytes()
    }
}

/// The jobs computed in a step run in this many batches of consecutive jobs (fewer when
/// there are fewer jobs), each on one thread: a number fixed apart from the threads, so
/// that where a contact is stored does not depend on them, and large enough for rayon to
/// balance.
const BATCHES: usize = 256;

/// Jobs per batch for `jobs` jobs.
fn batch_len(jobs: usize) -> usize {
    jobs.div_ceil(BATCHES).max(1)
}

/// The header of a colliding job's contacts in [`Frame::arena`]: its stamp, which a
/// [`ContactPair`] names to show it is still that answer.
fn header(stamp: u64) -> [u32; 2] {
    [stamp as u32, (stamp >> 32) as u32]
}

/// Entries before an answer's contacts in [`Frame::arena`]: the [`header`], then the
/// job's slot in the table and the number of contacts, so that a compaction walks the
/// list itself and not the table (which holds every resting pair).
const HEAD: usize = 2;

/// The header of an answer no job holds any more (stamps start at 1 and never reach it).
const DROPPED: [u32; 2] = [u32::MAX; 2];

/// Entries of [`Frame::arena`] no longer held that a compaction waits for at least: a small
/// list is not compacted every step. Tests, fuzzing and debug builds (the integration
/// tests) compact small lists too, so that their scenes do.
#[cfg(not(any(test, fuzzing, debug_assertions)))]
const GARBAGE_FLOOR: usize = 4096;
#[cfg(any(test, fuzzing, debug_assertions))]
const GARBAGE_FLOOR: usize = 8;

/// The buffers of a step, kept from step to step so that a steady state allocates nothing.
pub(super) struct Frame<const K: usize> {
    /// The root bounds of the objects moved this step, in the order of `rooted`.
    roots: Vec<Dop<K>>,
    /// The objects whose `root` names an entry of `roots`.
    rooted: Vec<ObjectKey>,
    /// The jobs of the last step that succeeded, with where their answers are in `arena`.
    table: JobTable,
    /// Re-insertions of part-tree leaves still owed after the last edit: one round of the
    /// tree's leaves, [`super::WorldOptions::tree_budget`] per step.
    owed: u32,
    /// This step's jobs with a changed side (by key): the ones computed; and where each
    /// one's contacts are, in its batch's list of `batches` until merged, then in `arena`.
    fresh_jobs: Vec<Keyed>,
    computed_outs: Vec<JobOut>,
    /// The table's jobs with a changed side (slots, ascending): taken out when the step
    /// succeeds.
    dropped: Vec<u32>,
    /// Per batch of computed jobs ([`BATCHES`]), their contacts in job order (scratch,
    /// copied into `arena` when the step succeeds).
    batches: Vec<Vec<[u32; 2]>>,
    /// The contacts of the colliding jobs, each job's after a [`header`] and its slot and
    /// length ([`HEAD`] entries), appended as steps answer them: a resting job keeps its
    /// answer where it is, so a step costs the contacts it computes, not all of them.
    /// Answers no job holds are marked [`DROPPED`] and left until they are more than half
    /// the held ones (so the list is at most one and a half times what it holds); then the
    /// held ones are moved together in place (`epoch` advances, and the kept pairs are
    /// pointed at their answers' new places).
    arena: Vec<[u32; 2]>,
    /// The held answers' old and new places in `arena` (where their contacts start), in
    /// that order, while it is compacted (scratch: one integer each).
    order: Vec<u64>,
    epoch: u32,
    /// The last stamp given.
    stamps: u64,
    /// Entries of `arena` held by the table's jobs, heads included ([`HEAD`] per colliding
    /// pair, so the contacts are the rest).
    held: usize,
    /// What changed since the last step.
    pub(super) changes: Changes,
    /// Whether an object's or part's user value changed since the last step (the kept
    /// pairs then take the new ones).
    pub(super) relabelled: bool,
    /// The colliding pairs, sorted by `(a, b)`: a step edits them where few changed.
    pairs: Vec<ContactPair>,
    /// The next list while it is made, and the pairs of this step's computed jobs and the
    /// sides of the dropped ones (scratch).
    next_pairs: Vec<ContactPair>,
    added: Vec<ContactPair>,
    removed: Vec<(Body, Body)>,
    ended: Vec<EndedPair>,
    /// Pairs of `pairs` that began, and their keys (made to persist by the next edit).
    begins: u64,
    began: Vec<(Body, Body)>,
    /// The most objects re-bounded and jobs computed in a step lately ([`crate::trim`]).
    rooted_burst: Burst,
    jobs_burst: Burst,
}

impl<const K: usize> Default for Frame<K> {
    fn default() -> Self {
        Frame {
            roots: Vec::new(),
            rooted: Vec::new(),
            table: JobTable::default(),
            owed: 0,
            fresh_jobs: Vec::new(),
            computed_outs: Vec::new(),
            dropped: Vec::new(),
            batches: Vec::new(),
            arena: Vec::new(),
            order: Vec::new(),
            epoch: 0,
            stamps: 0,
            held: 0,
            changes: Changes::default(),
            relabelled: false,
            pairs: Vec::new(),
            next_pairs: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
            ended: Vec::new(),
            begins: 0,
            began: Vec::new(),
            rooted_burst: Burst::default(),
            jobs_burst: Burst::default(),
        }
    }
}

impl<const K: usize> Frame<K> {
    /// Cuts the lists a step fills per moved object (with the world's list of them,
    /// `moved`) or per computed job down to what recent steps used, once a burst long past
    /// (every object placed in the first step) left them far larger ([`crate::trim`]).
    fn trim_scratch(&mut self, moved: &mut Vec<ObjectKey>) {
        let jobs = self.fresh_jobs.len();
        if let Some((keep, of)) = self.jobs_burst.note(jobs, self.fresh_jobs.capacity()) {
            shrink_share(&mut self.fresh_jobs, keep, of);
            shrink_share(&mut self.computed_outs, keep, of);
            shrink_share(&mut self.dropped, keep, of);
            shrink_share(&mut self.added, keep, of);
            shrink_share(&mut self.removed, keep, of);
            shrink_share(&mut self.ended, keep, of);
            shrink_share(&mut self.began, keep, of);
            for b in &mut self.batches {
                shrink_share(b, keep, of);
            }
        }
        let rooted = self.rooted.len();
        if let Some((keep, of)) = self.rooted_burst.note(rooted, self.rooted.capacity()) {
            shrink_share(&mut self.roots, keep, of);
            shrink_share(&mut self.rooted, keep, of);
            shrink_share(moved, keep, of);
        }
    }

    pub(super) fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        let pairs = self.pairs.capacity() + self.next_pairs.capacity() + self.added.capacity();
        self.roots.capacity() * size_of::<Dop<K>>()
            + self.rooted.capacity() * size_of::<ObjectKey>()
            + self.table.bytes()
            + self.fresh_jobs.capacity() * size_of::<Keyed>()
            + self.computed_outs.capacity() * size_of::<JobOut>()
            + self
                .batches
                .iter()
                .map(|b| size_of::<Vec<[u32; 2]>>() + b.capacity() * 8)
                .sum::<usize>()
            + (self.arena.capacity() + self.order.capacity()) * 8
            + self.dropped.capacity() * 4
            + self.changes.bytes()
            + pairs * size_of::<ContactPair>()
            + (self.removed.capacity() + self.began.capacity()) * size_of::<(Body, Body)>()
            + self.ended.capacity() * size_of::<EndedPair>()
    }

    /// Contacts `s..s + n` of `arena` if they are still the answer of stamp `stamp` in
    /// epoch `epoch`.
    fn held_contacts(&self, epoch: u32, stamp: u64, s: usize, n: usize) -> Option<&[[u32; 2]]> {
        let live = epoch == self.epoch
            && s >= HEAD
            && s + n <= self.arena.len()
            && self.arena[s - HEAD] == header(stamp);
        live.then(|| &self.arena[s..s + n])
    }
}

/// Query options of a pair in the world: no witness (answers must not depend on which
/// thread's state ran the query before).
pub(super) fn options(mode: Mode) -> QueryOptions {
    QueryOptions {
        mode,
        witness: false,
        ..QueryOptions::REPORT
    }
}

/// A pair of objects is reported in full when either side asks for it.
pub(super) fn pair_mode(a: Mode, b: Mode) -> Mode {
    if a == Mode::Report || b == Mode::Report {
        Mode::Report
    } else {
        Mode::Detect
    }
}

pub(super) fn accepts(group_a: u32, mask_a: u32, group_b: u32, mask_b: u32) -> bool {
    group_a & mask_b != 0 && group_b & mask_a != 0
}

impl<const K: usize> World<K> {
    /// Runs one frame: every object against every other and every part.
    ///
    /// Afterwards [`World::pairs`] lists the colliding pairs sorted by `(a, b)` with their
    /// events, [`World::contacts`] a pair's triangle pairs (sorted), and [`World::ended`] the
    /// pairs that stopped colliding.
    ///
    /// # Errors
    /// Poses are checked when set, and a pair neither of whose poses has an inverse good
    /// enough to compare the two in is compared in the world frame
    /// ([`crate::Reference::World`]), its second side's triangles placed there as a mesh.
    /// Where such a placed vertex lies beyond [`crate::MAX_COORDINATE`] (a part placed far
    /// out by a flattening placement, say), [`Error::CoordinateOutOfRange`] in an
    /// [`Error::Context`] naming the pair: its handles and user values. The step then
    /// leaves [`World::pairs`], their contacts and [`World::ended`] as the last step left
    /// them, and the next step compares every candidate pair again.
    ///
    /// # Performance
    /// Objects that did not move cost nothing in the broad phase, and a pair neither of
    /// whose sides changed (pose, shape, geometry, mode, filter) keeps its last answer in
    /// place; the others run in parallel (rayon), each object's root bound once per step.
    /// Buffers are kept, so a steady state allocates nothing.
    ///
    /// In a frame loop whose workers idle between steps, pin each of the pool's workers to
    /// a core of its own (in the pool's start handler): on Linux a worker woken for a step
    /// otherwise runs on its waker's core until the idle one pulls it over, a millisecond
    /// or more, which a step of that length then spends on one core (`docs/benchmarks.md`,
    /// "World step").
    pub fn step(&mut self) -> Result<StepStats> {
        zone!("World::step");
        let start = Instant::now();
        self.ensure_workspaces();
        let mut stats = StepStats::default();
        self.update_bounds(&mut stats)?;
        self.broad.update();
        self.update_part_pairs();
        if self.frame.owed > 0 {
            let budget = self.options.tree_budget.min(self.frame.owed);
            self.frame.owed -= budget;
            self.part_tree.optimize(budget);
        }
        stats.broad_pairs = (self.broad.pair_count() + self.part_pairs) as u64;
        self.collect_jobs();
        let f = &self.frame;
        stats.resting_pairs = (f.table.len() - f.dropped.len()) as u64;
        stats.narrow_pairs = stats.resting_pairs + f.fresh_jobs.len() as u64;
        let broad_done = Instant::now();
        self.run_jobs()?;
        self.even_out_workspaces();
        self.merge(&mut stats);
        self.frame.trim_scratch(&mut self.moved);
        stats.broad_us = (broad_done - start).as_secs_f64() * 1e6;
        stats.narrow_us = broad_done.elapsed().as_secs_f64() * 1e6;
        Ok(stats)
    }

    /// Sizes a workspace for each thread of rayon's pool for every shape of the world, so
    /// that the first [`World::step`] a shape takes part in costs what the next do: the
    /// pose caches are grown and their memory written here, not inside a step by the
    /// first thread to meet a large shape. Memory is what the steps would grow to anyway
    /// once each shape has met something: about 128 bytes per triangle of the largest
    /// shape, per thread. Optional; call it after adding shapes, before stepping.
    ///
    /// # Example
    /// ```
    /// use glam::DVec3;
    /// use kdop::{Mesh, World};
    ///
    /// let tri = Mesh::new(
    ///     vec![DVec3::new(-1.0, -1.0, 0.0), DVec3::new(1.0, -1.0, 0.0), DVec3::new(0.0, 1.0, 0.0)],
    ///     vec![[0, 1, 2]],
    /// )?;
    /// let mut world = World::<18>::new();
    /// world.add_shape(tri)?;
    /// world.prepare();
    /// world.step()?;
    /// # Ok::<(), kdop::Error>(())
    /// ```
    pub fn prepare(&mut self) {
        zone!("World::prepare");
        self.ensure_workspaces();
        let ws = self.workspaces[0].get_mut();
        for shape in self.shapes.values() {
            ws.size_objects(&shape.object, &shape.object);
        }
        self.even_out_workspaces();
        // Once per workspace, at its final size: not once per shape.
        for ws in &mut self.workspaces {
            ws.get_mut().fault_in();
        }
    }

    /// One workspace per thread of rayon's pool.
    fn ensure_workspaces(&mut self) {
        let threads = rayon::current_num_threads().max(1);
        if self.workspaces.len() < threads {
            self.workspaces
                .resize_with(threads, || Mutex::new(QueryState::new()));
        }
    }

    /// Grows every thread's workspace to the largest any of them needed: which thread
    /// runs which job varies from run to run, and must not decide whether a later step
    /// allocates (once each size has been reached by some thread, no step does).
    fn even_out_workspaces(&mut self) {
        let mut largest = [0usize; 14];
        for ws in &mut self.workspaces {
            let sizes = ws.get_mut().sizes();
            for (l, s) in largest.iter_mut().zip(sizes) {
                *l = (*l).max(s);
            }
        }
        for ws in &mut self.workspaces {
            ws.get_mut().reserve(&largest);
        }
    }

    /// The thread's workspace.
    fn workspace(&self) -> parking_lot::MutexGuard<'_, QueryState<K>> {
        let i = rayon::current_thread_index().unwrap_or(0) % self.workspaces.len();
        self.workspaces[i].lock()
    }

    /// Root k-DOPs of the moved objects (in parallel); those that left their fat k-DOP get
    /// a new one and tell the broad phase.
    fn update_bounds(&mut self, stats: &mut StepStats) -> Result<()> {
        // Removed objects (and keys listed before a removal) drop out here.
        let mut moved = std::mem::take(&mut self.moved);
        moved.retain(|&k| self.objects.get(k).is_some_and(|o| o.moved));
        stats.moved = moved.len() as u64;
        // The last step's roots are about to be overwritten: no object may name them.
        for &k in &self.frame.rooted {
            if let Some(o) = self.objects.get_mut(k) {
                o.root = None;
            }
        }
        let mut roots = std::mem::take(&mut self.frame.roots);
        {
            let world = &*self;
            moved
                .par_iter()
                .map(|&k| {
                    let o = &world.objects[k];
                    let shape = &world.shapes[o.shape].object;
                    world.workspace().object.root_bound_unkept(shape, &o.pose)
                })
                .collect_into_vec(&mut roots);
        }
        for (i, (&k, root)) in moved.iter().zip(&roots).enumerate() {
            let o = &mut self.objects[k];
            o.moved = false;
            o.root = Some(i as u32);
            if o.fat.is_empty() || !o.fat.contains(root) {
                let e = root.box_extent();
                o.fat = root.enlarged(self.options.fat_margin * e.max_element());
                o.requery = true;
                o.relist = true;
                stats.refattened += 1;
                let aabb = aabb_of(&o.fat).ok_or(Error::InvalidPose {
                    reason: "the placed object has no finite bounds",
                })?;
                self.broad.set(super::proxy_of(k), aabb, true)?;
            }
        }
        // The moved list becomes the rooted one, and the last rooted list the next moved.
        let rooted = std::mem::replace(&mut self.frame.rooted, moved);
        self.moved = rooted;
        self.moved.clear();
        self.frame.roots = roots;
        Ok(())
    }

    /// Brings the kept object–part pairs up to date: a part whose leaf changed (moved out
    /// of its fat k-DOP, inserted, removed) leaves the lists of the objects found near the
    /// leaf they met, in the broad phase; objects with a new fat k-DOP list their parts
    /// anew from the part tree, and parts with a new leaf join the lists of the objects
    /// near it (skipping objects that look themselves, so each pair is found once). Each
    /// edit costs the objects near it: the lists are the objects' own.
    fn update_part_pairs(&mut self) {
        let mut requery_parts = std::mem::take(&mut self.requery_parts);
        let (objects, proxies) = (&mut self.objects, &self.proxy_object);
        let mut count = self.part_pairs;
        for &(p, listed) in &requery_parts {
            // An object with p in its list met the leaf `listed`, its fat bound then what
            // it is now unless it looks again below (then its list is made anew): its box
            // in the broad phase meets `listed`.
            let Some(listed) = listed else { continue };
            self.broad.query(&listed, |proxy| {
                let o = &mut objects[proxies[proxy as usize]];
                if let Ok(i) = o.parts.binary_search(&p) {
                    o.parts.remove(i);
                    count -= 1;
                }
            });
        }
        for &k in &self.frame.rooted {
            let Some(o) = objects.get_mut(k).filter(|o| o.requery) else {
                continue;
            };
            count -= o.parts.len();
            o.parts.clear();
            let item_part = &self.item_part;
            self.part_tree
                .query(&o.fat, |item| o.parts.push(item_part[item as usize]));
            o.parts.sort_unstable();
            count += o.parts.len();
        }
        for &(p, _) in &requery_parts {
            let Some(part) = self.parts.get(p).filter(|part| part.requery) else {
                continue;
            };
            // The leaf is live: its part is.
            let Ok(fat) = self.part_tree.fat(part.leaf) else {
                continue;
            };
            let Some(aabb) = aabb_of(&fat) else {
                continue;
            };
            self.broad.query(&aabb, |proxy| {
                let o = &mut objects[proxies[proxy as usize]];
                if o.requery || !o.fat.overlaps(&fat) {
                    return;
                }
                if let Err(i) = o.parts.binary_search(&p) {
                    o.parts.insert(i, p);
                    count += 1;
                }
            });
        }
        self.part_pairs = count;
        for &k in &self.frame.rooted {
            if let Some(o) = self.objects.get_mut(k) {
                o.requery = false;
            }
        }
        for &(p, _) in &requery_parts {
            if let Some(part) = self.parts.get_mut(p) {
                part.requery = false;
            }
        }
        // Parts inserted, removed or re-inserted wore the tree; objects did not.
        if !requery_parts.is_empty() {
            self.frame.owed = self.part_tree.len() as u32;
        }
        requery_parts.clear();
        self.requery_parts = requery_parts;
    }

    /// What changes in the table of jobs: the jobs with a changed side go (`dropped`), and
    /// the candidate pairs with a changed side that pass the filters and the fat k-DOP
    /// test come in (`fresh_jobs`, sorted by key: jobs of one shape side by side, so a
    /// thread's state re-binds, a pass over the object's nodes and triangles, only where
    /// the shape changes; results are sorted by handles in `merge`, so this order is not
    /// seen). A job of two unchanged sides stays with its answer: its fat bounds, filters
    /// and shapes are as they were, so it is still a job, and no other pair of unchanged
    /// sides became one. Found item by item where few objects and parts changed, else in a
    /// pass over the table and the broad phase's pairs; the table is edited once the step
    /// succeeds.
    fn collect_jobs(&mut self) {
        let few = self.frame.changes.few(self.objects.len());
        if few {
            self.find_changed_jobs();
        } else {
            self.list_changed_jobs();
        }
        #[cfg(any(test, fuzzing))]
        self.check_jobs(few);
    }

    /// The jobs of each changed object and part: those in its list in the table, and the
    /// candidate pairs from a broad-phase query (objects) and the kept object–part pairs.
    fn find_changed_jobs(&mut self) {
        let f = &mut self.frame;
        let mut fresh = std::mem::take(&mut f.fresh_jobs);
        fresh.clear();
        f.dropped.clear();
        let (objects, parts, changes, table) = (&self.objects, &self.parts, &f.changes, &f.table);
        let dropped = &mut f.dropped;
        for &a in &changes.objects.keys {
            let oa = objects.get(a);
            // Moved inside its fat k-DOP, its filter as it was: its candidate objects are
            // those of its jobs (a pair of it and an object that looks again is found from
            // that object's side too; duplicates go below).
            let reuse = oa.filter(|o| !o.relist);
            table.each_of(Side::Object(slot(a)), |n| {
                dropped.push(n);
                let (Some(oa), Job::Objects(x, y)) = (reuse, table.keyed(n).job()) else {
                    return;
                };
                let b = if slot(x) == slot(a) { y } else { x };
                if let Some(ob) = objects.get(b) {
                    fresh.extend(object_job((a, oa), (b, ob)));
                }
            });
            let Some(oa) = oa else { continue };
            if oa.relist {
                let Some(aabb) = aabb_of(&oa.fat) else {
                    continue;
                };
                self.broad.query(&aabb, |proxy| {
                    let b = self.proxy_object[proxy as usize];
                    // A pair of two objects that look again is listed from the first's side.
                    if b == a || (b < a && changes.objects.has(slot(b)) && objects[b].relist) {
                        return;
                    }
                    fresh.extend(object_job((a, oa), (b, &objects[b])));
                });
            }
            for &p in &oa.parts {
                fresh.extend(part_job((a, oa), (p, &parts[p])));
            }
        }
        for &p in &changes.parts.keys {
            table.each_of(Side::Part(slot(p)), |n| dropped.push(n));
            let Some(part) = parts.get(p) else { continue };
            let Some(aabb) = aabb_of(&part.bound) else {
                continue;
            };
            self.broad.query(&aabb, |proxy| {
                let a = self.proxy_object[proxy as usize];
                // A changed object's part pairs are listed above.
                if changes.objects.has(slot(a)) {
                    return;
                }
                fresh.extend(part_job((a, &objects[a]), (p, part)));
            });
        }
        // A job of two changed sides is in both their lists (and a slot listed twice when
        // an item was removed and another added in it).
        dropped.sort_unstable();
        dropped.dedup();
        fresh.sort_unstable_by_key(|k| k.key());
        fresh.dedup();
        f.fresh_jobs = fresh;
    }

    /// The jobs with a changed side in one pass over the table, and the candidate pairs
    /// with a changed side in one over the broad phase's pairs and the object–part pairs.
    fn list_changed_jobs(&mut self) {
        let mut fresh = std::mem::take(&mut self.frame.fresh_jobs);
        fresh.clear();
        self.candidates(true, &mut fresh);
        fresh.sort_unstable_by_key(|k| k.key());
        let f = &mut self.frame;
        f.fresh_jobs = fresh;
        let changes = &f.changes;
        f.dropped.clear();
        f.dropped.extend(
            f.table
                .iter()
                .filter(|(_, k, _)| changes.touches(k.key()))
                .map(|(n, _, _)| n),
        );
    }

    /// The candidate pairs that pass the filters and the fat k-DOP test, from the broad
    /// phase's pairs and the kept object–part pairs, into `out`; with `changed_only`, those
    /// with a changed side alone (looked at before their job is made).
    fn candidates(&self, changed_only: bool, out: &mut Vec<Keyed>) {
        let (objects, parts, changes) = (&self.objects, &self.parts, &self.frame.changes);
        for (p, q) in self.broad.pairs() {
            let (a, b) = (self.proxy_object[p as usize], self.proxy_object[q as usize]);
            if !changed_only || changes.objects.has(slot(a)) || changes.objects.has(slot(b)) {
                out.extend(object_job((a, &objects[a]), (b, &objects[b])));
            }
        }
        for (a, oa) in objects {
            for &p in &oa.parts {
                if !changed_only || changes.objects.has(slot(a)) || changes.parts.has(slot(p)) {
                    out.extend(part_job((a, oa), (p, &parts[p])));
                }
            }
        }
    }

    /// Tests and fuzzing: every shape counts its objects and parts, and a shape that was
    /// deformed lists exactly those.
    #[cfg(any(test, fuzzing))]
    fn check_shape_users(&self) {
        for (key, shape) in &self.shapes {
            let mut objects: Vec<ObjectKey> = (self.objects.iter())
                .filter(|(_, o)| o.shape == key)
                .map(|(k, _)| k)
                .collect();
            let mut parts: Vec<PartKey> = (self.parts.iter())
                .filter(|(_, p)| p.shape == key)
                .map(|(k, _)| k)
                .collect();
            assert_eq!(
                shape.users as usize,
                objects.len() + parts.len(),
                "{key:?}'s users"
            );
            if let Some(users) = shape.deformed.as_deref() {
                let mut listed = (users.objects.clone(), users.parts.clone());
                listed.0.sort_unstable();
                listed.1.sort_unstable();
                objects.sort_unstable();
                parts.sort_unstable();
                assert_eq!(listed, (objects, parts), "{key:?}'s listed users");
            }
        }
    }

    /// Tests and fuzzing: every object lists exactly the parts whose leaf's fat k-DOP meets
    /// its own fat k-DOP (as a fresh query of the part tree finds them), sorted, and the
    /// count is their sum.
    #[cfg(any(test, fuzzing))]
    fn check_part_lists(&self) {
        let mut stack = Vec::new();
        let mut count = 0;
        for (k, o) in &self.objects {
            let mut want: Vec<PartKey> = Vec::new();
            if !o.fat.is_empty() {
                self.part_tree.query_with(&o.fat, &mut stack, |item| {
                    want.push(self.item_part[item as usize]);
                });
            }
            want.sort_unstable();
            assert_eq!(o.parts.as_slice(), want.as_slice(), "object {k:?}'s parts");
            count += want.len();
        }
        assert_eq!(count, self.part_pairs, "object-part pairs counted");
    }

    /// Tests and fuzzing: with every candidate pair listed anew, the step computes exactly
    /// those with a changed side, drops exactly the table's jobs with one, and keeps the
    /// rest, which are the other candidates; the table's lists are whole.
    #[cfg(any(test, fuzzing))]
    fn check_jobs(&self, few: bool) {
        self.check_part_lists();
        self.check_shape_users();
        let f = &self.frame;
        let mut all = Vec::new();
        self.candidates(false, &mut all);
        all.sort_unstable_by_key(|k| k.key());
        let changed = |k: &Keyed| f.changes.touches(k.key());
        let fresh: Vec<Keyed> = all.iter().copied().filter(changed).collect();
        let dropped: Vec<u32> = f
            .table
            .iter()
            .filter(|(_, k, _)| changed(k))
            .map(|(n, _, _)| n)
            .collect();
        let mut kept: Vec<Keyed> = f
            .table
            .iter()
            .map(|(_, k, _)| *k)
            .filter(|k| !changed(k))
            .collect();
        kept.sort_unstable_by_key(|k| k.key());
        let rest: Vec<Keyed> = all.iter().copied().filter(|k| !changed(k)).collect();
        assert!(
            fresh == f.fresh_jobs && dropped == f.dropped && kept == rest,
            "jobs found {}: {} fresh of {}, {} dropped of {}, {} kept of {} candidates, after {:?}",
            if few { "item by item" } else { "in a pass" },
            f.fresh_jobs.len(),
            fresh.len(),
            f.dropped.len(),
            dropped.len(),
            kept.len(),
            rest.len(),
            f.changes
        );
        f.table.validate();
        #[cfg(test)]
        if few {
            tests::EDITED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            tests::LISTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The narrow phase: the jobs to compute in batches, in parallel, each job's exact
    /// contacts appended to its batch's list in job order.
    fn run_jobs(&mut self) -> Result<()> {
        let n = self.frame.fresh_jobs.len();
        let mut outs = std::mem::take(&mut self.frame.computed_outs);
        outs.clear();
        outs.resize(n, JobOut::default());
        let mut batches = std::mem::take(&mut self.frame.batches);
        batches.resize_with(BATCHES, Vec::new);
        let per = batch_len(n);
        let first_error: Mutex<Option<(usize, Error)>> = Mutex::new(None);
        {
            let world = &*self;
            world
                .frame
                .fresh_jobs
                .par_chunks(per)
                .zip(outs.par_chunks_mut(per))
                .zip(batches.par_iter_mut())
                .enumerate()
                // Each batch a task of its own: rayon's adaptive splitting stops dividing a
                // range that was never stolen, so a few costly pairs sorted side by side
                // would otherwise run on one thread while the others idle.
                .with_max_len(1)
                .for_each(|(b, ((jobs, outs), contacts))| {
                    contacts.clear();
                    let mut ws = world.workspace();
                    for (i, (keyed, out)) in jobs.iter().zip(outs).enumerate() {
                        let start = contacts.len();
                        let job = keyed.job();
                        if let Err(e) = world.run_job(job, &mut ws, contacts) {
                            let i = b * per + i;
                            let mut slot = first_error.lock();
                            if slot.as_ref().is_none_or(|(j, _)| i < *j) {
                                *slot = Some((i, e));
                            }
                            contacts.truncate(start);
                        }
                        *out = JobOut {
                            start: start as u32,
                            len: (contacts.len() - start) as u32,
                        };
                    }
                });
        }
        self.frame.computed_outs = outs;
        self.frame.batches = batches;
        match first_error.into_inner() {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    fn run_job(&self, job: Job, ws: &mut QueryState<K>, out: &mut Vec<[u32; 2]>) -> Result<()> {
        let (a, b_obj, b_pose, mode, what) = match job {
            Job::Objects(a, b) => {
                let (oa, ob) = (&self.objects[a], &self.objects[b]);
                (
                    a,
                    &self.shapes[ob.shape].object,
                    &ob.pose,
                    pair_mode(oa.desc.mode, ob.desc.mode),
                    "object pair",
                )
            }
            Job::Part(a, p) => {
                let part = &self.parts[p];
                let mode = self.objects[a].desc.mode;
                (
                    a,
                    &self.shapes[part.shape].object,
                    &part.placement,
                    mode,
                    "object-part pair",
                )
            }
        };
        let oa = &self.objects[a];
        if let Some(i) = oa.root {
            // Bounded for the broad phase this step; used if the pair sees `a` by its pose.
            let shape = &self.shapes[oa.shape].object;
            ws.object
                .offer_root(shape, &oa.pose, self.frame.roots[i as usize]);
        }
        let hit = self.shapes[oa.shape]
            .object
            .collide_with(&oa.pose, b_obj, b_pose, &options(mode), ws)
            .map_err(|e| e.context(self.pair_name(job, what)))?;
        out.extend(hit.contacts.iter().map(|c| [c.a_triangle, c.b_triangle]));
        Ok(())
    }

    /// A failed pair's handles and user values, for its error (made only on failure).
    fn pair_name(&self, job: Job, what: &str) -> String {
        use slotmap::Key;
        let object = |k: ObjectKey| {
            let o = &self.objects[k];
            format!("object {:?} (user value {})", k.data(), o.desc.user)
        };
        match job {
            Job::Objects(a, b) => format!("{what}: {} and {}", object(a), object(b)),
            Job::Part(a, p) => format!(
                "{what}: {} and part {:?} (user value {})",
                object(a),
                p.data(),
                self.parts[p].desc.user
            ),
        }
    }

    /// The step's answers into the world's list of contacts and its table of jobs, its
    /// colliding pairs sorted by handles, and the events against the step before: the
    /// pairs edited (and pointed at their contacts' new places where those were compacted).
    fn merge(&mut self, stats: &mut StepStats) {
        self.drop_answers();
        let compacted = self.compact_if_worn();
        self.append_answers();
        #[cfg(any(test, fuzzing))]
        let old = self.frame.pairs.clone();
        self.edit_pairs();
        if compacted {
            self.moved_answers();
        }
        #[cfg(any(test, fuzzing))]
        self.check_edited_pairs(old, compacted);
        let f = &mut self.frame;
        if std::mem::take(&mut f.relabelled) {
            for p in &mut f.pairs {
                p.a_user = user_of(&self.objects, &self.parts, p.a);
                p.b_user = user_of(&self.objects, &self.parts, p.b);
            }
        }
        // The jobs found now hold every changed object's candidates.
        for &k in &f.changes.objects.keys {
            if let Some(o) = self.objects.get_mut(k) {
                o.relist = false;
            }
        }
        f.changes.clear();
        stats.colliding = f.pairs.len() as u64;
        stats.contacts = (f.held - HEAD * f.pairs.len()) as u64;
        stats.begins = f.begins;
        stats.ends = f.ended.len() as u64;
    }

    /// Takes the dropped jobs out of the table, marks their answers as dropped, and lists
    /// the pairs among them (`removed`).
    fn drop_answers(&mut self) {
        let f = &mut self.frame;
        f.removed.clear();
        // Every job dropped (every object moved): the table is emptied, not unlinked.
        let all = f.dropped.len() == f.table.len();
        for &n in &f.dropped {
            let out = f.table.out(n);
            if out.len > 0 {
                f.arena[out.start as usize - HEAD] = DROPPED;
                f.held -= out.len as usize + HEAD;
                f.removed.push(bodies(self.id, f.table.keyed(n).job()));
            }
            if !all {
                f.table.remove(n);
            }
        }
        if all {
            f.table.clear();
        }
    }

    /// When the dropped answers are more than half the held ones, moves the held ones
    /// together, in place and in their order in the list, noting where each went in
    /// `order`; whether it did. A walk of the list, each answer's head naming its length and
    /// its job: not of the table, where every resting pair has a job.
    fn compact_if_worn(&mut self) -> bool {
        let f = &mut self.frame;
        if f.arena.len() - f.held <= (f.held / 2).max(GARBAGE_FLOOR) {
            return false;
        }
        f.order.clear();
        let (mut at, mut to) = (0, 0);
        while at < f.arena.len() {
            let [n, len] = f.arena[at + 1];
            let end = at + HEAD + len as usize;
            if f.arena[at] != DROPPED {
                debug_assert_eq!(
                    f.table.out(n).start as usize,
                    at + HEAD,
                    "an answer's head names its job"
                );
                f.arena.copy_within(at..end, to);
                f.table.set_out(
                    n,
                    JobOut {
                        start: (to + HEAD) as u32,
                        len,
                    },
                );
                f.order
                    .push(((at + HEAD) as u64) << 32 | (to + HEAD) as u64);
                to += end - at;
            }
            at = end;
        }
        f.arena.truncate(to);
        f.epoch = f.epoch.wrapping_add(1);
        true
    }

    /// After a compaction, points the kept pairs (those not computed this step) at their
    /// answers' new places, found in `order`, and into the new epoch.
    fn moved_answers(&mut self) {
        let f = &mut self.frame;
        for p in f.pairs.iter_mut().filter(|p| p.epoch != f.epoch) {
            let old = u64::from(p.start);
            let i = f.order.partition_point(|&x| x >> 32 < old);
            debug_assert!(
                f.order.get(i).is_some_and(|&x| x >> 32 == old),
                "a kept pair's answer was moved"
            );
            if let Some(&x) = f.order.get(i) {
                p.start = x as u32;
                p.epoch = f.epoch;
            }
        }
    }

    /// Appends the computed jobs' contacts to the world's list, each colliding job's after
    /// a new stamp, and the computed jobs to the table (each computed job's out then names
    /// its place in the list).
    fn append_answers(&mut self) {
        let f = &mut self.frame;
        let per = batch_len(f.fresh_jobs.len());
        let add: usize = f
            .computed_outs
            .iter()
            .filter(|o| o.len > 0)
            .map(|o| o.len as usize + HEAD)
            .sum();
        if f.arena.len() + add > f.arena.capacity() {
            // Room for the list to grow to where it is compacted, not doubled past it.
            let held = f.held + add;
            let room = (f.arena.len() + add).max(held + held / 2 + GARBAGE_FLOOR);
            f.arena.reserve_exact(room - f.arena.len());
        }
        for (c, (keyed, out)) in f.fresh_jobs.iter().zip(&mut f.computed_outs).enumerate() {
            let head = f.arena.len();
            if out.len > 0 {
                f.stamps += 1;
                f.arena.push(header(f.stamps));
                f.arena.push([u32::MAX, out.len]);
                let start = f.arena.len();
                let (s, n) = (out.start as usize, out.len as usize);
                f.arena.extend_from_slice(&f.batches[c / per][s..s + n]);
                out.start = start as u32;
                f.held += n + HEAD;
            }
            let n = f.table.insert(*keyed, *out);
            if out.len > 0 {
                f.arena[head + 1][0] = n;
            }
        }
    }

    /// The pair of `job` (which collides, its contacts at `out`), with the event `event`.
    fn pair_of(&self, job: Job, out: JobOut, event: PairEvent) -> ContactPair {
        let f = &self.frame;
        let h = f.arena[out.start as usize - HEAD];
        let (a, b) = bodies(self.id, job);
        ContactPair {
            a,
            b,
            a_user: user_of(&self.objects, &self.parts, a),
            b_user: user_of(&self.objects, &self.parts, b),
            event,
            world: self.id,
            epoch: f.epoch,
            stamp: u64::from(h[0]) | u64::from(h[1]) << 32,
            start: out.start,
            len: out.len,
        }
    }

    /// Tests and fuzzing: the edited pairs, events and ends equal those listed anew from the
    /// last list `old` (`compacted`: with their answers moved since).
    #[cfg(any(test, fuzzing))]
    fn check_edited_pairs(&mut self, old: Vec<ContactPair>, compacted: bool) {
        let f = &mut self.frame;
        let edited = (
            std::mem::replace(&mut f.pairs, old),
            f.ended.clone(),
            f.begins,
        );
        self.list_pairs();
        let f = &self.frame;
        assert!(
            (&f.pairs, &f.ended, f.begins) == (&edited.0, &edited.1, edited.2),
            "edited pairs differ from those listed anew: {} and {} pairs, {} and {} ended",
            edited.0.len(),
            f.pairs.len(),
            edited.1.len(),
            f.ended.len()
        );
        #[cfg(test)]
        {
            tests::EDITED_PAIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if compacted {
                tests::COMPACTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        #[cfg(not(test))]
        let _ = compacted;
    }

    /// Tests and fuzzing, the oracle of [`World::edit_pairs`]: lists the colliding pairs
    /// anew from every job, sorted, with their events against the last list (one merge
    /// of two sorted lists, after a pass over the whole table).
    #[cfg(any(test, fuzzing))]
    fn list_pairs(&mut self) {
        let mut next = std::mem::take(&mut self.frame.next_pairs);
        next.clear();
        next.extend(
            self.frame
                .table
                .iter()
                .filter(|(_, _, out)| out.len > 0)
                .map(|(_, k, out)| self.pair_of(k.job(), out, PairEvent::Begin)),
        );
        next.sort_unstable_by_key(|p| (p.a, p.b));
        let f = &mut self.frame;
        f.ended.clear();
        let mut old = f.pairs.iter().peekable();
        for pair in &mut next {
            let key = (pair.a, pair.b);
            while let Some(o) = old.next_if(|o| (o.a, o.b) < key) {
                f.ended.push(ended(o));
            }
            if old.next_if(|o| (o.a, o.b) == key).is_some() {
                pair.event = PairEvent::Persist;
            }
        }
        f.ended.extend(old.map(ended));
        f.begins = next.iter().filter(|p| p.event == PairEvent::Begin).count() as u64;
        f.next_pairs = std::mem::replace(&mut f.pairs, next);
    }

    /// Edits the colliding pairs: the last step's pairs whose answers were dropped go (and
    /// end, unless their job found contacts again), the computed jobs' colliding pairs
    /// come in, and every pair kept persists. The pairs that began at the last step are
    /// found by key and made to persist, and the list is copied in runs between the
    /// changes (or not at all where nothing changed): a step costs its changes and one
    /// copy of the list, not a pass that weighs every resting pair.
    fn edit_pairs(&mut self) {
        let mut added = std::mem::take(&mut self.frame.added);
        added.clear();
        let f = &self.frame;
        for (k, &out) in f.fresh_jobs.iter().zip(&f.computed_outs) {
            if out.len > 0 {
                added.push(self.pair_of(k.job(), out, PairEvent::Begin));
            }
        }
        added.sort_unstable_by_key(|p| (p.a, p.b));
        let f = &mut self.frame;
        f.removed.sort_unstable();
        f.ended.clear();
        let key = |p: &ContactPair| (p.a, p.b);
        for k in f.began.drain(..) {
            let i = f.pairs.partition_point(|p| key(p) < k);
            if let Some(p) = f.pairs.get_mut(i).filter(|p| key(p) == k) {
                p.event = PairEvent::Persist;
            }
        }
        if added.is_empty() && f.removed.is_empty() {
            f.begins = 0;
            f.added = added;
            return;
        }
        let mut next = std::mem::take(&mut f.next_pairs);
        next.clear();
        next.reserve(f.pairs.len() + added.len());
        let (mut new, mut gone) = (added.iter().peekable(), f.removed.iter().peekable());
        // The first of the old pairs not yet copied.
        let mut at = 0;
        loop {
            // The next change in key order: a pair dropped, a pair computed, or both.
            let change = match (gone.peek(), new.peek()) {
                (None, None) => break,
                (Some(&&g), Some(&n)) => g.min(key(n)),
                (Some(&&g), None) => g,
                (None, Some(&n)) => key(n),
            };
            let to = at + f.pairs[at..].partition_point(|p| key(p) < change);
            next.extend_from_slice(&f.pairs[at..to]);
            at = to;
            let was = f.pairs.get(at).filter(|p| key(p) == change);
            let dropped = gone.next_if(|&&g| g == change).is_some();
            match (new.next_if(|p| key(p) == change), was) {
                // Colliding before and found again.
                (Some(&p), Some(_)) => next.push(ContactPair {
                    event: PairEvent::Persist,
                    ..p
                }),
                (Some(&p), None) => {
                    next.push(p);
                    f.began.push(change);
                }
                (None, Some(old)) => f.ended.push(ended(old)),
                (None, None) => {}
            }
            if was.is_some() {
                debug_assert!(dropped, "a pair computed again had its answer dropped");
                at += 1;
            }
        }
        next.extend_from_slice(&f.pairs[at..]);
        f.begins = f.began.len() as u64;
        f.next_pairs = std::mem::replace(&mut f.pairs, next);
        f.added = added;
    }

    /// The colliding pairs of the last step, sorted by `(a, b)`.
    #[must_use]
    pub fn pairs(&self) -> &[ContactPair] {
        &self.frame.pairs
    }

    /// A pair's contacts: `[a's triangle, b's triangle]`, as indices in the shapes' meshes,
    /// sorted. A detect-mode pair lists the one contact it found.
    ///
    /// # Errors
    /// A pair that has ended since, or whose contacts a later step computed again
    /// ([`Error::StaleHandle`]: what it found is gone; a pair of an earlier step whose
    /// sides have rested since reads its contacts until the world's list of them is
    /// compacted), or of another world ([`Error::ForeignHandle`]).
    pub fn contacts(&self, pair: &ContactPair) -> Result<&[[u32; 2]]> {
        if pair.world != self.id {
            return Err(Error::ForeignHandle {
                what: "contact pair",
            });
        }
        let (s, n) = (pair.start as usize, pair.len as usize);
        self.frame
            .held_contacts(pair.epoch, pair.stamp, s, n)
            .ok_or(Error::StaleHandle {
                what: "contact pair",
            })
    }

    /// The pairs that collided at the step before the last and not at the last.
    #[must_use]
    pub fn ended(&self) -> &[EndedPair] {
        &self.frame.ended
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ObjectDesc, PartDesc};
    use super::*;
    use crate::pose::Pose;
    use crate::testing::lcg;
    use glam::DVec3;
    use std::sync::atomic::AtomicUsize;

    /// Steps whose jobs were found item by item, and in a pass (each checked against a
    /// new list).
    pub(super) static EDITED: AtomicUsize = AtomicUsize::new(0);
    pub(super) static LISTED: AtomicUsize = AtomicUsize::new(0);
    /// Steps whose pairs were edited (and checked against a new list), and of those, steps
    /// that compacted the contacts first.
    pub(super) static EDITED_PAIRS: AtomicUsize = AtomicUsize::new(0);
    pub(super) static COMPACTED: AtomicUsize = AtomicUsize::new(0);

    /// A deformed shape marks exactly its objects and parts, listed at its first
    /// deformation and kept as objects and parts join and leave it (added, removed, given
    /// another shape): every step checks the lists against a pass over the world
    /// (`check_shape_users`) and the pairs against ones listed anew.
    #[test]
    fn a_deformed_shape_keeps_its_users() {
        let mut s = 29u64;
        let mut w = World::<18>::new();
        let torus = crate::scene::torus(1.0, 0.3, 12, 6).unwrap();
        let rest = torus.vertices().to_vec();
        let shapes = [
            w.add_shape(torus).unwrap(),
            w.add_shape(crate::scene::icosphere(0.7, 1).unwrap())
                .unwrap(),
        ];
        let at =
            |s: &mut u64| Pose::from_translation(DVec3::new(lcg(s), lcg(s), lcg(s)) * 5.0).unwrap();
        let mut parts: Vec<_> = (0..6)
            .map(|i| w.add_part(shapes[i % 2], at(&mut s), PartDesc::default()))
            .collect::<Result<_>>()
            .unwrap();
        let mut objects: Vec<_> = (0..40)
            .map(|i| w.add_object(shapes[i % 2], at(&mut s), ObjectDesc::default()))
            .collect::<Result<_>>()
            .unwrap();
        w.step().unwrap();
        for frame in 0..40 {
            let i = (lcg(&mut s) * objects.len() as f64) as usize;
            let j = (lcg(&mut s) * parts.len() as f64) as usize;
            let shape = shapes[(lcg(&mut s) * 2.0) as usize];
            match frame % 5 {
                0 => {
                    w.remove_object(objects[i]).unwrap();
                    objects[i] = w
                        .add_object(shape, at(&mut s), ObjectDesc::default())
                        .unwrap();
                }
                1 => w.set_object_shape(objects[i], shape).unwrap(),
                2 => w.set_part_shape(parts[j], shape).unwrap(),
                3 => {
                    w.remove_part(parts[j]).unwrap();
                    parts[j] = w.add_part(shape, at(&mut s), PartDesc::default()).unwrap();
                }
                _ => w.set_pose(objects[i], at(&mut s)).unwrap(),
            }
            // Breathing: every vertex scaled about the origin.
            let k = 1.0 + 0.2 * (f64::from(frame) * 0.7).sin();
            let v: Vec<DVec3> = rest.iter().map(|&p| p * k).collect();
            w.deform_shape(shapes[0], &v).unwrap();
            w.step().unwrap();
        }
        let listed = w.shapes[shapes[0].key].deformed.as_deref().unwrap();
        assert!(!listed.objects.is_empty() && !listed.parts.is_empty());
        assert!(w.shapes[shapes[1].key].deformed.is_none());
    }

    /// An object moved inside its fat k-DOP takes its candidate objects from its jobs; one
    /// that arrives beside it with a new fat k-DOP must find it from its own side, whichever
    /// handle comes first (the pair is new to both).
    #[test]
    fn an_arrival_meets_an_object_that_moved_inside_its_fat_bound() {
        for arrival_first in [false, true] {
            let mut w = World::<18>::new();
            let ball = w
                .add_shape(crate::scene::icosphere(1.0, 1).unwrap())
                .unwrap();
            let at = |x: f64| Pose::from_translation(DVec3::new(x, 0.0, 0.0)).unwrap();
            let first = w.add_object(ball, at(0.0), ObjectDesc::default()).unwrap();
            let second = w.add_object(ball, at(50.0), ObjectDesc::default()).unwrap();
            let (stays, arrives) = if arrival_first {
                (second, first)
            } else {
                (first, second)
            };
            w.set_pose(stays, at(0.0)).unwrap();
            w.set_pose(arrives, at(50.0)).unwrap();
            w.step().unwrap();
            assert!(w.pairs().is_empty());
            w.set_pose(stays, at(0.001)).unwrap();
            w.set_pose(arrives, at(1.5)).unwrap();
            let s = w.step().unwrap();
            assert_eq!(s.refattened, 1, "only the arrival leaves its fat k-DOP");
            assert_eq!(w.pairs().len(), 1, "arrival first: {arrival_first}");
        }
    }

    /// A crowd where a few objects change each step (moved, teleported, given another mode
    /// or filter, removed, added) and parts are moved, given another filter, added and
    /// removed: at every step the jobs to compute, to drop and to keep are checked against
    /// a list made anew and the table's lists validated (`check_jobs`), found item by
    /// item at some steps and in a pass at others, and so are the edited pairs.
    #[test]
    fn edited_jobs_equal_listed_ones() {
        let mut s = 11u64;
        let mut w = World::<18>::new();
        let shapes = [
            w.add_shape(crate::scene::torus(1.0, 0.3, 12, 6).unwrap())
                .unwrap(),
            w.add_shape(crate::scene::icosphere(0.7, 1).unwrap())
                .unwrap(),
        ];
        let at =
            |s: &mut u64| Pose::from_translation(DVec3::new(lcg(s), lcg(s), lcg(s)) * 6.0).unwrap();
        let mut parts = Vec::new();
        for i in 0..6 {
            let p = w.add_part(shapes[i % 2], at(&mut s), PartDesc::default());
            parts.push(p.unwrap());
        }
        let mut objects = Vec::new();
        for i in 0..64 {
            let desc = ObjectDesc {
                user: i,
                ..ObjectDesc::default()
            };
            objects.push(
                w.add_object(shapes[i as usize % 2], at(&mut s), desc)
                    .unwrap(),
            );
        }
        let before = EDITED.load(std::sync::atomic::Ordering::Relaxed);
        let listed_before = LISTED.load(std::sync::atomic::Ordering::Relaxed);
        let pairs_before = EDITED_PAIRS.load(std::sync::atomic::Ordering::Relaxed);
        let compacted_before = COMPACTED.load(std::sync::atomic::Ordering::Relaxed);
        let mut resting = 0;
        for _ in 0..60 {
            for _ in 0..2 {
                let i = (lcg(&mut s) * objects.len() as f64) as usize;
                let id = objects[i];
                match (lcg(&mut s) * 8.0) as u32 {
                    0 => w.set_pose(id, at(&mut s)).unwrap(),
                    1 => {
                        let mut d = w.object_desc(id).unwrap();
                        d.mode = match d.mode {
                            Mode::Detect => Mode::Report,
                            Mode::Report => Mode::Detect,
                        };
                        w.set_object_desc(id, d).unwrap();
                    }
                    2 => {
                        let mut d = w.object_desc(id).unwrap();
                        d.mask ^= 1;
                        w.set_object_desc(id, d).unwrap();
                    }
                    3 => {
                        w.remove_object(id).unwrap();
                        let desc = ObjectDesc::default();
                        objects[i] = w.add_object(shapes[i % 2], at(&mut s), desc).unwrap();
                    }
                    4 => {
                        let j = (lcg(&mut s) * parts.len() as f64) as usize;
                        w.set_part_placement(parts[j], at(&mut s)).unwrap();
                    }
                    5 if lcg(&mut s) < 0.5 => {
                        let j = (lcg(&mut s) * parts.len() as f64) as usize;
                        let mut d = w.part_desc(parts[j]).unwrap();
                        d.mask ^= 1;
                        w.set_part_desc(parts[j], d).unwrap();
                    }
                    5 => {
                        let j = (lcg(&mut s) * parts.len() as f64) as usize;
                        w.remove_part(parts[j]).unwrap();
                        parts[j] = w
                            .add_part(shapes[j % 2], at(&mut s), PartDesc::default())
                            .unwrap();
                    }
                    _ => {
                        let step = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 0.3;
                        let pose = Pose::from_translation(step)
                            .unwrap()
                            .after(&w.pose(id).unwrap())
                            .unwrap();
                        w.set_pose(id, pose).unwrap();
                    }
                }
            }
            resting += w.step().unwrap().resting_pairs;
        }
        let edited = EDITED.load(std::sync::atomic::Ordering::Relaxed) - before;
        let listed = LISTED.load(std::sync::atomic::Ordering::Relaxed) - listed_before;
        assert!(
            edited > 20 && listed > 10,
            "jobs found item by item at {edited} steps, in a pass at {listed}"
        );
        let pairs = EDITED_PAIRS.load(std::sync::atomic::Ordering::Relaxed) - pairs_before;
        assert!(pairs > 30, "only {pairs} steps edited their pairs");
        let compacted = COMPACTED.load(std::sync::atomic::Ordering::Relaxed) - compacted_before;
        assert!(
            compacted > 3,
            "only {compacted} steps compacted the contacts"
        );
        assert!(resting > 1000, "too few resting pairs: {resting}");
    }
}
