//! A flying object placed by one pose (Klosowski et al. 1998, §4.1, "tumbling" the flying
//! hierarchy): its root k-DOP re-bounded exactly by hill-climbing once per pose, every other
//! node re-bounded lazily the first time a descent reaches it, and its triangles placed once
//! per pose. Records are stamped with the pose they are for, so a new pose clears nothing.

use super::{QueryStats, size};
use crate::dop::{Dop, Growth, OverlapForm};
use crate::pose::Pose;
use crate::tri::TriBox;
use crate::tumble::{Climber, FlyingObject, PoseFrame, Rebound, root_dop, root_dop_unkept};
use glam::DVec3;

use super::workspace::PairStack;

/// The pose cache of one flying object: re-bounded nodes, placed triangles, the root's
/// hill-climbing state. Its size follows the largest object it has been bound to (about
/// 128 bytes per triangle), not the environment's; it binds to another object on first
/// use.
#[derive(Clone, Debug, Default)]
pub struct PlacedObject<const K: usize> {
    object: u64,
    stamp: u32,
    /// The current pose, epsilon (bits) and re-bounding method: the key of the stamped
    /// re-bounded nodes.
    last: Option<(Pose, u64, Rebound)>,
    /// The margins of that epsilon, per direction.
    growth: Growth,
    frame: Option<PoseFrame<K>>,
    /// Per flying node: its re-bounded k-DOP, the stamp of the pose it is for, its link
    /// (all three valid only while the stamp is current). One record, so a node costs one
    /// cache miss, not three.
    pub(crate) fly: Vec<FlyNode<K>>,
    /// Per object triangle (leaf order): its placed corners, their box, and the stamp of
    /// the pose they are for. One record per triangle rather than per vertex: a pair's test
    /// reads one record with one stamp check.
    pub(crate) placed: Vec<PlacedTri>,
    /// The same for object-against-object queries, whose triangles are tested placed into
    /// the world frame (`Twin`): keyed by `twin_stamp`, which changes with the flying
    /// object's world pose (`twin_pose`), not with the relative pose.
    twin_placed: Vec<PlacedTri>,
    twin_stamp: u32,
    twin_pose: Option<Pose>,
    climber: Climber,
    /// A root bound computed elsewhere for (object id, pose): the next
    /// [`PlacedObject::set_pose`] takes it instead of bounding the root again if it is for
    /// that object and pose.
    offered: Option<(u64, Pose, Dop<K>)>,
}

impl<const K: usize> PlacedObject<K> {
    /// An empty cache; it binds to an object on first use.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds to `obj`: its records are sized and every cached node, triangle and pose is
    /// forgotten. Returns whether it was bound to another object before. Inlined: nearly
    /// every query finds the object bound already.
    #[inline]
    pub(crate) fn bind(&mut self, obj: &FlyingObject<K>) -> bool {
        if self.object == obj.id {
            return false;
        }
        self.rebind(obj);
        true
    }

    /// [`PlacedObject::bind`] to an object other than the bound one.
    #[cold]
    #[inline(never)]
    fn rebind(&mut self, obj: &FlyingObject<K>) {
        self.object = obj.id;
        self.last = None;
        // Node and triangle records are not rewritten, only grown: new stamps make every
        // record of the object before stale, and a node's link is written when it is
        // re-bounded (many objects of several shapes share a thread's cache in the world,
        // and rewriting them cost a pass over the nodes per change of object). Grown
        // records start blank rather than copied: none of the old ones is current now.
        grow_stale(&mut self.fly, obj.links.len());
        self.next_stamp();
        self.twin_pose = None;
        let n = obj.part.bvh.tris.len();
        grow_stale(&mut self.placed, n);
        grow_stale(&mut self.twin_placed, n);
        self.climber.reset(obj.hull_pts.len(), K);
        if self.frame.is_none() {
            self.frame = Some(PoseFrame::new(&Pose::IDENTITY, obj.magnitude));
        }
    }

    /// Starts a new pose (new stamp, root re-bounded exactly) unless it is the last one;
    /// the climbing steps when it started one.
    pub(crate) fn set_pose(
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
        let root = match self.offered.take() {
            Some((id, at, root)) if id == obj.id && at == *pose => root,
            _ => root_dop(obj, frame, &mut self.climber),
        };
        self.fly[0].dop = if eps > 0.0 {
            root.grown(&self.growth)
        } else {
            root
        };
        self.fly[0].size = size(&self.fly[0].dop);
        self.fly[0].stamp = self.stamp;
        self.fly[0].link = obj.links[0];
        Some(self.climber.steps - before)
    }

    /// A bound of `obj` placed by `pose` (exact where the hull is scanned or the pose only
    /// moves, else from the root k-DOP's corners) for an object that keeps no cache here: the
    /// world's objects and parts use a thread's cache as scratch, without re-binding it (a
    /// pass over the object's nodes and triangles each time the shape changes).
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

    /// Offers a bound of `obj`'s root under `pose` (any bound that contains the placed
    /// object, ungrown) for the next query, which uses it if it places `obj` by exactly
    /// `pose`: the world's objects are bounded once per step for the broad phase, and their
    /// pairs against parts that stand at the identity see them by the same pose.
    pub(crate) fn offer_root(&mut self, obj: &FlyingObject<K>, pose: &Pose, root: Dop<K>) {
        self.offered = Some((obj.id, *pose, root));
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
    /// witness test needs one placed triangle, not the hierarchy). Unless `pose` is the
    /// current one, the cache is invalidated and the pose is forgotten, so that the next
    /// descent starts with [`PlacedObject::set_pose`] in full.
    #[inline(always)]
    pub(crate) fn place_only(&mut self, pose: &Pose, eps: f64, method: Rebound) {
        if self.last != Some((*pose, eps.to_bits(), method)) {
            self.last = None;
            self.next_stamp();
        }
    }

    /// The tumbled k-DOP of flying node `f`, re-bounded now if not yet for this pose.
    /// Inlined: most calls find the node current (a stamp comparison).
    #[inline(always)]
    pub(crate) fn fly_dop(
        &mut self,
        obj: &FlyingObject<K>,
        f: u32,
        stats: &mut QueryStats,
    ) -> &Dop<K> {
        let fi = f as usize;
        if self.fly[fi].stamp != self.stamp {
            self.rebound(obj, fi, stats);
        }
        &self.fly[fi].dop
    }

    /// Re-bounds flying node `fi` for the current pose.
    #[inline(never)]
    fn rebound(&mut self, obj: &FlyingObject<K>, fi: usize, stats: &mut QueryStats) {
        self.fly[fi].link = obj.links[fi];
        // Queries reach nodes only after `set_pose`, which sets both.
        if let (Some((_, eps, method)), Some(frame)) = (self.last, self.frame.as_mut()) {
            let mut dop = crate::tumble::tumble_node(obj, fi, frame, method);
            if f64::from_bits(eps) > 0.0 {
                dop = dop.grown(&self.growth);
            }
            let parent = &self.fly[obj.parent[fi] as usize];
            // Both the node's and its parent's bounds contain the node's geometry, and so
            // does their intersection, when the parent's is for this pose: a descent reaches
            // the parent first, one started from saved pairs need not. (A shifted node lies
            // inside its shifted parent already; a node bounded from its own corners gains
            // too little to pay for the intersection.)
            if !frame.translation_only
                && matches!(
                    obj.stored.corners[fi],
                    crate::tumble::CornerSet::Dop | crate::tumble::CornerSet::Slabs
                )
                && parent.stamp == self.stamp
            {
                dop = dop.intersect(&parent.dop);
            }
            self.fly[fi].dop = dop;
            self.fly[fi].size = size(&dop);
            self.fly[fi].stamp = self.stamp;
            stats.nu += 1;
        }
    }

    /// Pushes the children `c`, `c + 1` of a flying node paired with static entry `(p, e)`
    /// whose bound is `env`, each if its (re-bounded) k-DOP overlaps `env` and `meets` it:
    /// `|_| true`, or where the entry is one large triangle, whether the child may meet
    /// that triangle (`tri::node`; flying k-DOPs are enlarged by eps already). With
    /// `deep_first` (a detect query on a pair not known to be apart) the child that
    /// overlaps deeper is popped first. Generic, so that the plain split inlines to the
    /// two overlap tests alone.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn descend_fly(
        &mut self,
        stack: &mut PairStack,
        form: impl OverlapForm,
        obj: &FlyingObject<K>,
        c: u32,
        [p, e]: [u32; 2],
        env: &Dop<K>,
        mut meets: impl FnMut(&Dop<K>) -> bool,
        deep_first: bool,
        stats: &mut QueryStats,
    ) {
        stats.nv += 2;
        let fd = self.fly_dop(obj, c + 1, stats);
        let right = form.overlaps(fd, env) && meets(fd);
        let fd = self.fly_dop(obj, c, stats);
        let left = form.overlaps(fd, env) && meets(fd);
        if deep_first {
            // Its own branch on the mode: written as one condition (mode, right, left), the
            // compiler tested the two overlap results first, and report queries branched on
            // what are often coin flips.
            let fly = &self.fly;
            let (r, l) = (c as usize + 1, c as usize);
            stack.push_two_deeper_first([c + 1, p, e], right, [c, p, e], left, || {
                fly[r].dop.depth(env) > fly[l].dop.depth(env)
            });
        } else {
            stack.push_two([c + 1, p, e], right, [c, p, e], left);
        }
    }

    /// The object triangle at leaf-order position `pos`, placed (corners and box) once
    /// per pose.
    #[inline(always)]
    pub(crate) fn placed(&mut self, obj: &FlyingObject<K>, pose: &Pose, pos: usize) -> &PlacedTri {
        let rec = &mut self.placed[pos];
        if rec.stamp != self.stamp {
            rec.place(self.stamp, obj, pose, pos);
        }
        rec
    }

    /// Starts an object-against-object query whose flying object is placed by `flying` in
    /// the world frame: its cached world-placed triangles stay valid if that pose did not
    /// change since the last such query.
    pub(crate) fn twin_begin(&mut self, flying: &Pose) {
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
    /// [`PlacedObject::twin_begin`], once per such pose.
    #[inline]
    pub(crate) fn twin_placed(&mut self, obj: &FlyingObject<K>, pos: usize) -> &PlacedTri {
        let rec = &mut self.twin_placed[pos];
        if rec.stamp != self.twin_stamp {
            let pose = self.twin_pose.unwrap_or(Pose::IDENTITY);
            rec.place(self.twin_stamp, obj, &pose, pos);
        }
        rec
    }

    /// Capacities of its buffers (for [`PlacedObject::reserve`]).
    pub(crate) fn sizes(&self) -> [usize; 7] {
        let c = self.climber.sizes();
        [
            self.fly.capacity(),
            self.placed.capacity(),
            self.twin_placed.capacity(),
            c[0],
            c[1],
            c[2],
            c[3],
        ]
    }

    /// Grows its buffers to at least `sizes` (as [`PlacedObject::sizes`] gives them), so
    /// that binding an object no larger than one they came from allocates nothing. Exact,
    /// not doubled: states evened out to each other's sizes must not outgrow each other.
    pub(crate) fn reserve(&mut self, s: &[usize]) {
        grow_zeroed(&mut self.fly, s[0]);
        grow_zeroed(&mut self.placed, s[1]);
        grow_zeroed(&mut self.twin_placed, s[2]);
        self.climber.reserve(&s[3..]);
    }

    /// Backs every record with memory now: the zeroed records of a new allocation get
    /// their pages at first touch, a page fault each, which a first query against a large
    /// object otherwise pays by the hundred (`QueryState::prepare`).
    pub(crate) fn fault_in(&mut self) {
        fault_in(&mut self.fly);
        fault_in(&mut self.placed);
        fault_in(&mut self.twin_placed);
    }

    /// Bytes held.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.fly.capacity() * size_of::<FlyNode<K>>()
            + (self.placed.capacity() + self.twin_placed.capacity()) * size_of::<PlacedTri>()
            + self.frame.as_ref().map_or(0, |_| size_of::<PoseFrame<K>>())
    }
}

/// Records for which all-zero bytes are a valid value, and a stale one (stamp 0; a cache's
/// stamp is never 0), so that a cache can grow by a zeroed allocation.
///
/// # Safety
/// Every field of the type must accept all-zero bytes.
unsafe trait ZeroIsStale: Copy {}

// SAFETY: `f32` and `u32` fields, and an array of `f32`.
unsafe impl<const K: usize> ZeroIsStale for FlyNode<K> {}
// SAFETY: a `u32` and arrays of `f64` (`DVec3` is three `f64`).
unsafe impl ZeroIsStale for PlacedTri {}

/// Grows `v` to `n` records if it holds fewer, the new ones stale, keeping the old ones.
/// A zeroed allocation: the system backs a large one with pages only as they are first
/// touched, so sizing a cache for a large object costs little until queries read it,
/// where a pass writing blank records cost each thread a stall at its first query.
fn grow_zeroed<T: ZeroIsStale>(v: &mut Vec<T>, n: usize) {
    if v.len() >= n {
        return;
    }
    let layout = std::alloc::Layout::array::<T>(n).expect("a cache larger than memory");
    // SAFETY: the layout has a non-zero size (n > 0 records of a type with fields).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: allocated by the global allocator with `Vec`'s layout for capacity n, all n
    // records initialised (all-zero bytes are a valid `T`: `ZeroIsStale`).
    let mut grown = unsafe { Vec::from_raw_parts(ptr, n, n) };
    grown[..v.len()].copy_from_slice(v);
    *v = grown;
}

/// Grows `v` to `n` blank (stale) records if it holds fewer, dropping the old ones: for a
/// cache none of whose records is current, so that a thread meeting a larger object for the
/// first time neither copies the records it had nor touches the pages they would fill.
fn grow_stale<T: ZeroIsStale>(v: &mut Vec<T>, n: usize) {
    if v.len() < n {
        *v = Vec::new();
        grow_zeroed(v, n);
    }
}

/// Writes one byte of each page of `v` back unchanged, so that the system backs the
/// whole buffer now; records keep their values, stale or current.
fn fault_in<T: ZeroIsStale>(v: &mut [T]) {
    const PAGE: usize = 4096;
    let bytes = std::mem::size_of_val(v);
    let base = v.as_mut_ptr().cast::<u8>();
    for off in (0..bytes).step_by(PAGE) {
        // SAFETY: `off` is within the slice's bytes, and the byte written is the one read
        // (volatile, so that neither access is elided: the write is what claims the page).
        unsafe {
            let p = base.add(off);
            std::ptr::write_volatile(p, std::ptr::read_volatile(p));
        }
    }
}

/// Query-time record of one flying node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlyNode<const K: usize> {
    pub(crate) dop: Dop<K>,
    stamp: u32,
    /// The node's link in the object's hierarchy, copied when the node is re-bounded.
    pub(crate) link: u32,
    /// [`size`] of `dop`, for the descent rule.
    pub(crate) size: f32,
}

/// Query-time record of one object triangle: its placed corners and their box, for the
/// pose of `stamp`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlacedTri {
    stamp: u32,
    pub(crate) corners: [DVec3; 3],
    pub(crate) bbox: TriBox,
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
        self.corners = pose.transform_three([v[a as usize], v[b as usize], v[c as usize]]);
        self.bbox = TriBox::new(&self.corners);
    }
}

/// A flying node's link: its first child, or with the leaf bit its first triangle.
#[derive(Clone, Copy)]
pub(crate) struct FlyLink(pub(crate) u32);

impl FlyLink {
    #[inline]
    pub(crate) fn is_leaf(self) -> bool {
        self.0 & crate::hierarchy::LEAF != 0
    }
    #[inline]
    pub(crate) fn first_child(self) -> u32 {
        self.0
    }
    #[inline]
    pub(crate) fn first_triangle(self) -> u32 {
        self.0 & !crate::hierarchy::LEAF
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Faulting a cache in leaves every record as it was, on every page (records of
    /// several values, so that a byte written as zero or as another record's shows).
    #[test]
    fn faulting_in_keeps_every_record() {
        let mut v: Vec<PlacedTri> = Vec::new();
        grow_zeroed(&mut v, 3000);
        for (i, t) in v.iter_mut().enumerate().filter(|(i, _)| i % 3 != 0) {
            let c = [
                DVec3::splat(i as f64 + 0.5),
                DVec3::X * -(i as f64),
                DVec3::Y,
            ];
            *t = PlacedTri {
                stamp: i as u32,
                corners: c,
                bbox: TriBox::new(&c),
            };
        }
        let before: Vec<(u32, [DVec3; 3])> = v.iter().map(|t| (t.stamp, t.corners)).collect();
        fault_in(&mut v);
        let after: Vec<(u32, [DVec3; 3])> = v.iter().map(|t| (t.stamp, t.corners)).collect();
        assert_eq!(before, after);
        assert!(
            std::mem::size_of_val(&v[..]) > 16 * 4096,
            "spans many pages"
        );
        fault_in::<PlacedTri>(&mut []);
    }

    /// Growing keeps the records there are, adds stale blank ones, and never shrinks;
    /// growing stale blanks them all.
    #[test]
    fn grown_caches_keep_their_records_and_add_stale_ones() {
        let tri = [DVec3::new(1.0, 2.0, 3.0), DVec3::X, DVec3::Y];
        let kept = PlacedTri {
            stamp: 7,
            corners: tri,
            bbox: TriBox::new(&tri),
        };
        let mut v = vec![kept; 3];
        grow_zeroed(&mut v, 1000);
        assert_eq!(v.len(), 1000);
        assert!(v[..3].iter().all(|t| t.stamp == 7 && t.corners == tri));
        assert!(
            v[3..]
                .iter()
                .all(|t| t.stamp == 0 && t.corners == [DVec3::ZERO; 3])
        );
        grow_zeroed(&mut v, 10);
        assert_eq!(v.len(), 1000);
        // Grown stale: every record blank; not grown: every record kept.
        grow_stale(&mut v, 2000);
        assert_eq!(v.len(), 2000);
        assert!(
            v.iter()
                .all(|t| t.stamp == 0 && t.corners == [DVec3::ZERO; 3])
        );
        v[5] = kept;
        grow_stale(&mut v, 1500);
        assert!(v.len() == 2000 && v[5].stamp == 7);
        let mut nodes: Vec<FlyNode<18>> = Vec::new();
        grow_zeroed(&mut nodes, 5);
        assert!(nodes.iter().all(|n| n.stamp == 0 && n.link == 0));
    }
}
