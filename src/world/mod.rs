//! The world: many moving objects among static parts (Klosowski et al. 1998, §6.1,
//! "Multiple flying objects" and "Dynamic environments"): shapes shared by any number of
//! objects and parts, one sweep-and-prune broad phase ([`crate::BroadPhase`]) over the
//! objects' fat root k-DOPs, the parts under an editable part tree ([`DynamicTree`]: parts
//! inserted, removed and moved with local rebalancing, improved a little each step), the
//! exact narrow phase on every candidate pair in parallel (a pair neither of whose sides
//! changed since the last step keeps that step's answer), and begin / persist / end events.
//!
//! An object's candidate parts are found in the part tree when its fat k-DOP is re-made, and
//! a part's candidate objects in the broad phase when its fat k-DOP in the tree is; both are
//! kept from step to step otherwise, so neither resting objects nor parts cost per step.
//!
//! Every hierarchy stays in its shape's own frame: an object meets a part or another object
//! through [`FlyingObject::collide_with`], which compares bounds in the part's frame (or the
//! later object's) and re-bounds the object, unless the object is more than four times
//! larger ([`crate::Reference::of`]), so a small part under a large object costs what a
//! small object over a large part does.
//!
//! `step.rs` runs a frame; this file holds the world's records and its handles.
//!
//! # Handles
//! Shapes, objects and parts are named by handles that carry the world they came from: a
//! handle of a removed item is [`Error::StaleHandle`], one of another world is
//! [`Error::ForeignHandle`] — never another item.
//!
//! # What is exact
//! A pair's contacts are exactly the intersecting triangle pairs of the two meshes placed
//! in world coordinates by [`Pose::transform_point`] of their poses (a part's by its
//! placement), as [`FlyingObject::collide_with`] promises; the broad phase and the frame in
//! which bounds are compared only decide the work.

mod contact;
mod jobs;
mod prepared;
mod probe;
mod saved;
mod step;

pub use prepared::{PartEdit, PreparedEdits, PreparedShape};
pub use probe::{ProbeHit, ProbeScratch};
pub use saved::LoadedWorld;
pub use step::{ContactPair, EndedPair, PairEvent, StepStats};

use crate::broad::{Aabb, BroadPhase};
use crate::dop::Dop;
use crate::env::{DynamicTree, TreeLeaf};
use crate::error::{Error, Result};
use crate::hierarchy::BuildOptions;
use crate::mesh::Mesh;
use crate::pose::Pose;
use crate::query::{Mode, QueryState};
use crate::tumble::{DeformStats, FlyingObject};
use glam::DVec3;
use parking_lot::Mutex;
use slotmap::SlotMap;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT_WORLD: AtomicU32 = AtomicU32::new(1);

slotmap::new_key_type! {
    struct ShapeKey;
    struct ObjectKey;
    struct PartKey;
}

macro_rules! handle {
    ($name:ident, $key:ident, $what:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name {
            key: $key,
            world: u32,
        }
    };
}

handle!(
    ShapeId,
    ShapeKey,
    "shape",
    "A shape of a [`World`]: a mesh and its hierarchy."
);
handle!(
    ObjectId,
    ObjectKey,
    "object",
    "A moving object of a [`World`]."
);
handle!(PartHandle, PartKey, "part", "A static part of a [`World`].");

/// One of the two sides of a contact pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Body {
    /// A moving object.
    Object(ObjectId),
    /// A static part.
    Part(PartHandle),
}

/// How an object takes part in the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectDesc {
    /// Detect (one contact per pair) or report (all contacts). A pair of objects is
    /// reported in full when either asks for it.
    pub mode: Mode,
    /// The groups the object belongs to (bits).
    pub group: u32,
    /// The groups it collides with: a pair is checked only when each one's group meets
    /// the other's mask.
    pub mask: u32,
    /// The caller's value (an id, an index into its names), carried into pairs and events.
    pub user: u64,
}

impl Default for ObjectDesc {
    fn default() -> Self {
        ObjectDesc {
            mode: Mode::Report,
            group: 1,
            mask: u32::MAX,
            user: 0,
        }
    }
}

/// How a part takes part in the world: its filter and the caller's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartDesc {
    /// The groups the part belongs to (bits).
    pub group: u32,
    /// The groups it collides with.
    pub mask: u32,
    /// The caller's value, carried into pairs and events.
    pub user: u64,
}

impl Default for PartDesc {
    fn default() -> Self {
        PartDesc {
            group: 1,
            mask: u32::MAX,
            user: 0,
        }
    }
}

/// Settings of a [`World`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldOptions {
    /// How shapes' hierarchies are built (as flying objects).
    pub shape_build: BuildOptions,
    /// How the static parts' hierarchies are built.
    pub part_build: BuildOptions,
    /// Fat root k-DOPs grow by this share of the object's largest box extent, so that
    /// small motions leave the broad phase untouched.
    pub fat_margin: f64,
    /// A deformed shape's refit node grows by this share of its largest box extent
    /// ([`FlyingObject::deform`]), so that small deformations refit nothing.
    pub deform_margin: f64,
    /// A deformed shape's subtree whose surface-area cost has grown past this many times
    /// its cost as built is rebuilt in place, and the whole hierarchy once its subtrees
    /// have grown into each other so far ([`DeformStats::top_cost_ratio`]), within
    /// [`WorldOptions::renew_budget`] per deformation ([`FlyingObject::renew`]). With no
    /// budget, a shape whose whole tree has worn so far ([`DeformStats::cost_ratio`]) is
    /// rebuilt from its current mesh, on a thread of its own over
    /// [`WorldOptions::rebuild_frames`] deformations. `f64::INFINITY`: never.
    pub rebuild_at: f64,
    /// The work a deformation may spend renewing its shape's hierarchy
    /// ([`Renewal::work`](crate::Renewal::work): triangles passed through one split; one
    /// subtree or one split may pass it): the bounded slice of renewal per frame. 0:
    /// none; worn shapes are then rebuilt whole ([`WorldOptions::rebuild_frames`]).
    pub renew_budget: u32,
    /// Without a [`WorldOptions::renew_budget`], a worn deformable shape's rebuild runs on
    /// a thread of its own while the shape goes on being refit, and takes over at this
    /// many deformations after it started (then refit to the vertices of that call): that
    /// call waits only for what remains of the build. A fixed count, not the build's finishing time, so answers do not depend on
    /// timing (`docs/benchmarks.md`, "Deformable refit"). 0: rebuilt within the call.
    pub rebuild_frames: u32,
    /// A part's leaf in the part tree is its placed k-DOP grown by this share of its
    /// largest box extent, so that small moves of a part leave the tree as it is.
    pub part_margin: f64,
    /// Leaves of the part tree re-inserted per step after edits wore it
    /// ([`DynamicTree::optimize`]): the most tree work a step does beyond the edits.
    pub tree_budget: u32,
}

impl WorldOptions {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the first bad one: build options as
    /// [`BuildOptions`] checks them, a margin negative or not finite, a `rebuild_at` NaN or
    /// below 1.
    pub fn check(&self) -> Result<()> {
        self.shape_build.check()?;
        self.part_build.check()?;
        for (name, m) in [
            ("fat_margin", self.fat_margin),
            ("deform_margin", self.deform_margin),
            ("part_margin", self.part_margin),
        ] {
            if !(m.is_finite() && m >= 0.0) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: format!("must be finite and not negative, got {m}"),
                });
            }
        }
        if self.rebuild_at.is_nan() || self.rebuild_at < 1.0 {
            return Err(Error::InvalidParameter {
                name: "rebuild_at",
                reason: format!(
                    "must be at least 1 (infinity: never), got {}",
                    self.rebuild_at
                ),
            });
        }
        Ok(())
    }
}

impl Default for WorldOptions {
    fn default() -> Self {
        WorldOptions {
            shape_build: BuildOptions::FLYING,
            part_build: BuildOptions::ENVIRONMENT,
            fat_margin: 0.1,
            deform_margin: 0.05,
            rebuild_at: 2.0,
            renew_budget: 1 << 18,
            rebuild_frames: 30,
            part_margin: 0.05,
            tree_budget: 32,
        }
    }
}

struct Shape<const K: usize> {
    object: FlyingObject<K>,
    /// The options it was built with, which its rebuilds keep.
    build: BuildOptions,
    users: u32,
    /// Once the shape has been deformed, its objects and parts (kept as they come and go),
    /// so that each deformation marks them without a pass over the world's objects. Made
    /// at the first deformation: shapes that never deform keep no list.
    deformed: Option<Box<Users>>,
    /// A rebuild under way ([`WorldOptions::rebuild_frames`]).
    rebuild: Option<Rebuild<K>>,
}

/// The objects and parts of one shape, in no particular order.
#[derive(Default)]
struct Users {
    objects: Vec<ObjectKey>,
    parts: Vec<PartKey>,
}

impl<const K: usize> Shape<K> {
    /// Counts `key` among its users, in the list `of` picks if it keeps lists.
    fn gain<T>(&mut self, key: T, of: fn(&mut Users) -> &mut Vec<T>) {
        self.users += 1;
        if let Some(u) = &mut self.deformed {
            of(u).push(key);
        }
    }

    /// Counts `key` out of its users, and out of the list `of` picks if it keeps lists.
    fn lose<T: PartialEq>(&mut self, key: T, of: fn(&mut Users) -> &mut Vec<T>) {
        self.users -= 1;
        if let Some(u) = &mut self.deformed {
            drop_key(of(u), key);
        }
    }
}

/// The list of objects of [`Users`], for [`Shape::gain`] and [`Shape::lose`].
fn objects_of(u: &mut Users) -> &mut Vec<ObjectKey> {
    &mut u.objects
}

/// The list of parts of [`Users`], for [`Shape::gain`] and [`Shape::lose`].
fn parts_of(u: &mut Users) -> &mut Vec<PartKey> {
    &mut u.parts
}

/// Takes `key` out of `keys` (a deforming shape's users: a search as long as the list
/// its every deformation walks).
fn drop_key<T: PartialEq>(keys: &mut Vec<T>, key: T) {
    if let Some(i) = keys.iter().position(|k| *k == key) {
        keys.swap_remove(i);
    }
}

/// A shape's hierarchy being built again on a thread of its own.
struct Rebuild<const K: usize> {
    /// The building thread; `None` when no thread could be had (built when due).
    built: Option<std::thread::JoinHandle<Result<FlyingObject<K>>>>,
    /// Deformations left before it takes over.
    due: u32,
}

struct Object<const K: usize> {
    shape: ShapeKey,
    pose: Pose,
    desc: ObjectDesc,
    /// The root k-DOP at the pose, grown by the fat margin; re-made when the root leaves it.
    fat: Dop<K>,
    /// Whether the pose changed since the last step.
    moved: bool,
    /// Where this step's root bound at `pose` is in the step's scratch, if it was made.
    root: Option<u32>,
    /// Whether `fat` changed since the last step: its candidate parts are looked for again.
    requery: bool,
    /// Its candidate parts: those whose leaf's fat k-DOP met `fat` when either was last
    /// looked for, sorted. Kept with the object so that an edit costs the objects near it,
    /// not a pass over every object's pairs.
    parts: SmallVec<[PartKey; 2]>,
    /// Whether its fat k-DOP or its filter changed since the last step that succeeded: its
    /// candidate objects are looked for in the broad phase, not taken from its jobs.
    relist: bool,
}

struct PartRec<const K: usize> {
    shape: ShapeKey,
    placement: Pose,
    desc: PartDesc,
    /// The placed shape's k-DOP.
    bound: Dop<K>,
    /// Its leaf in the part tree (whose fat k-DOP holds `bound`).
    leaf: TreeLeaf,
    /// Whether its leaf's fat k-DOP changed since the last step: its candidate objects are
    /// looked for again.
    requery: bool,
}

/// Many moving objects among static parts; see the module page.
///
/// # Example
/// ```
/// use glam::DVec3;
/// use kdop::{Body, Mesh, ObjectDesc, PairEvent, Pose, World};
///
/// let tri = Mesh::new(
///     vec![DVec3::new(-1.0, -1.0, 0.0), DVec3::new(1.0, -1.0, 0.0), DVec3::new(0.0, 1.0, 0.0)],
///     vec![[0, 1, 2]],
/// )?;
/// let pin = Mesh::new(vec![DVec3::ZERO, DVec3::Z, DVec3::new(0.0, 0.1, 1.0)], vec![[0, 1, 2]])?;
/// let mut world = World::<18>::new();
/// let plate = world.add_shape(tri)?;
/// let pin = world.add_shape(pin)?;
/// world.add_part(plate, Pose::IDENTITY, Default::default())?;
/// let a = world.add_object(pin, Pose::from_translation(DVec3::new(0.2, 0.0, 2.0))?, ObjectDesc::default())?;
/// world.step()?;
/// assert!(world.pairs().is_empty());
/// world.set_pose(a, Pose::from_translation(DVec3::new(0.2, 0.0, -0.5))?)?;
/// world.step()?;
/// let pair = &world.pairs()[0];
/// assert_eq!((pair.a, pair.event), (Body::Object(a), PairEvent::Begin));
/// assert_eq!(world.contacts(pair)?, &[[0, 0]]);
/// # Ok::<(), kdop::Error>(())
/// ```
pub struct World<const K: usize> {
    id: u32,
    options: WorldOptions,
    shapes: SlotMap<ShapeKey, Shape<K>>,
    objects: SlotMap<ObjectKey, Object<K>>,
    parts: SlotMap<PartKey, PartRec<K>>,
    /// The objects' fat boxes; a proxy is its object's slot index ([`proxy_of`]).
    broad: BroadPhase,
    /// Per broad-phase proxy, its object.
    proxy_object: Vec<ObjectKey>,
    /// The parts' fat k-DOPs; a leaf's item is its part's slot index.
    part_tree: DynamicTree<K>,
    /// Per part slot index, its part.
    item_part: Vec<PartKey>,
    /// Object–part pairs whose fat k-DOPs (the object's, the part's leaf's) overlap, kept
    /// across steps in each object's `parts` (`step.rs`, `update_part_pairs`): how many.
    part_pairs: usize,
    /// Parts whose leaf changed since the last step, each with the box of its leaf's fat
    /// k-DOP as the objects' lists last met it (none for a part inserted since): the
    /// objects that list it are found there. A removed part is listed too.
    requery_parts: Vec<(PartKey, Option<Aabb>)>,
    /// Bumped by every change of the parts or of a shape's geometry: what a batch of
    /// prepared edits was checked against ([`World::finalize_edits`]).
    generation: u64,
    /// Objects whose pose changed since the last step.
    moved: Vec<ObjectKey>,
    /// Per thread: query scratch (the pose cache, the stack); never per object.
    workspaces: Vec<Mutex<QueryState<K>>>,
    frame: step::Frame<K>,
}

impl<const K: usize> Default for World<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const K: usize> World<K> {
    /// An empty world with default options.
    #[must_use]
    pub fn new() -> Self {
        Self::build(WorldOptions::default())
    }

    /// An empty world.
    ///
    /// # Errors
    /// As [`WorldOptions::check`].
    pub fn with_options(options: WorldOptions) -> Result<Self> {
        options.check()?;
        Ok(Self::build(options))
    }

    fn build(options: WorldOptions) -> Self {
        World {
            id: NEXT_WORLD.fetch_add(1, Ordering::Relaxed),
            options,
            shapes: SlotMap::with_key(),
            objects: SlotMap::with_key(),
            parts: SlotMap::with_key(),
            broad: BroadPhase::new(),
            proxy_object: Vec::new(),
            // Checked by `WorldOptions::check`, or the default.
            part_tree: DynamicTree::new(options.part_margin)
                .unwrap_or_else(|_| DynamicTree::new(0.0).expect("a zero margin is valid")),
            item_part: Vec::new(),
            part_pairs: 0,
            requery_parts: Vec::new(),
            generation: 0,
            moved: Vec::new(),
            workspaces: Vec::new(),
            frame: step::Frame::default(),
        }
    }

    /// The options the world was made with.
    #[must_use]
    pub fn options(&self) -> &WorldOptions {
        &self.options
    }

    /// Builds a shape's hierarchy (in the mesh's own frame) for objects and parts to use,
    /// with [`WorldOptions::shape_build`].
    ///
    /// # Errors
    /// As [`FlyingObject::new`].
    pub fn add_shape(&mut self, mesh: Mesh) -> Result<ShapeId> {
        let build = self.options.shape_build;
        self.add_shape_with(mesh, &build)
    }

    /// [`World::add_shape`] with build options of its own, kept for the shape's
    /// rebuilds and saved with it: [`BuildOptions::DEFORMING`] for a shape that
    /// deforms frame after frame ([`World::deform_shape`]).
    ///
    /// # Errors
    /// As [`FlyingObject::new`] (the options checked as [`BuildOptions`] checks them).
    pub fn add_shape_with(&mut self, mesh: Mesh, build: &BuildOptions) -> Result<ShapeId> {
        let object = FlyingObject::new(mesh, build)?;
        Ok(self.insert_shape(object, *build))
    }

    fn insert_shape(&mut self, object: FlyingObject<K>, build: BuildOptions) -> ShapeId {
        let key = self.shapes.insert(Shape {
            object,
            build,
            users: 0,
            deformed: None,
            rebuild: None,
        });
        ShapeId {
            key,
            world: self.id,
        }
    }

    /// Removes a shape that no object or part uses.
    ///
    /// # Errors
    /// A stale or foreign handle; [`Error::ShapeInUse`].
    pub fn remove_shape(&mut self, id: ShapeId) -> Result<()> {
        let users = self.shape(id)?.users;
        if users > 0 {
            return Err(Error::ShapeInUse { users });
        }
        self.shapes.remove(id.key);
        self.generation += 1;
        Ok(())
    }

    /// The hierarchy of a shape, as a flying object in its own frame.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn shape_object(&self, id: ShapeId) -> Result<&FlyingObject<K>> {
        Ok(&self.shape(id)?.object)
    }

    /// The options a shape was built with ([`World::add_shape_with`]), which its
    /// rebuilds keep.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn shape_build(&self, id: ShapeId) -> Result<BuildOptions> {
        Ok(self.shape(id)?.build)
    }

    fn shape(&self, id: ShapeId) -> Result<&Shape<K>> {
        self.check(id.world, "shape")?;
        self.shapes
            .get(id.key)
            .ok_or(Error::StaleHandle { what: "shape" })
    }

    fn check(&self, world: u32, what: &'static str) -> Result<()> {
        if world == self.id {
            Ok(())
        } else {
            Err(Error::ForeignHandle { what })
        }
    }

    /// Adds a moving object of `shape` at `pose`.
    ///
    /// # Errors
    /// A stale or foreign shape handle; [`Error::InvalidPose`] for a pose without an
    /// inverse (a flattening pose: the object could not be seen from its own frame).
    pub fn add_object(&mut self, shape: ShapeId, pose: Pose, desc: ObjectDesc) -> Result<ObjectId> {
        self.shape(shape)?;
        invertible(&pose)?;
        let key = self.objects.insert(Object {
            shape: shape.key,
            pose,
            desc,
            fat: Dop::EMPTY,
            parts: SmallVec::new(),
            moved: true,
            root: None,
            requery: false,
            relist: true,
        });
        self.shapes[shape.key].gain(key, objects_of);
        self.frame.changes.objects.added(key);
        let proxy = proxy_of(key) as usize;
        if self.proxy_object.len() <= proxy {
            self.proxy_object.resize(proxy + 1, ObjectKey::default());
        }
        self.proxy_object[proxy] = key;
        self.moved.push(key);
        Ok(ObjectId {
            key,
            world: self.id,
        })
    }

    fn object(&self, id: ObjectId) -> Result<&Object<K>> {
        self.check(id.world, "object")?;
        self.objects
            .get(id.key)
            .ok_or(Error::StaleHandle { what: "object" })
    }

    fn object_mut(&mut self, id: ObjectId) -> Result<&mut Object<K>> {
        self.check(id.world, "object")?;
        self.objects
            .get_mut(id.key)
            .ok_or(Error::StaleHandle { what: "object" })
    }

    /// Moves an object (a teleport is a move like any other). The same pose again, bit for
    /// bit, is no move: the object stays resting.
    ///
    /// # Errors
    /// A stale or foreign handle; a pose without an inverse. Nothing changes then.
    pub fn set_pose(&mut self, id: ObjectId, pose: Pose) -> Result<()> {
        invertible(&pose)?;
        let o = self.object_mut(id)?;
        // The same pose again (an engine setting every body each frame) changes nothing:
        // the object stays resting, its pairs' answers kept.
        if o.pose.same_bits(&pose) {
            return Ok(());
        }
        o.pose = pose;
        self.mark_moved(id.key);
        Ok(())
    }

    /// An object's pose.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn pose(&self, id: ObjectId) -> Result<Pose> {
        Ok(self.object(id)?.pose)
    }

    /// An object's settings.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn object_desc(&self, id: ObjectId) -> Result<ObjectDesc> {
        Ok(self.object(id)?.desc)
    }

    /// Changes an object's mode, filter or user value; pairs that the new filter separates
    /// end at the next step.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn set_object_desc(&mut self, id: ObjectId, desc: ObjectDesc) -> Result<()> {
        let o = self.object_mut(id)?;
        // Another mode asks its pairs for other contacts, another filter for other pairs; a
        // user value changes neither.
        let old = o.desc;
        o.desc = desc;
        o.relist |= (old.group, old.mask) != (desc.group, desc.mask);
        if (old.mode, old.group, old.mask) != (desc.mode, desc.group, desc.mask) {
            self.frame.changes.objects.mark(id.key);
        }
        self.frame.relabelled |= old.user != desc.user;
        Ok(())
    }

    /// Removes an object; its pairs end at the next step.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn remove_object(&mut self, id: ObjectId) -> Result<()> {
        self.object(id)?;
        let o = self.objects.remove(id.key).expect("checked above");
        self.shapes[o.shape].lose(id.key, objects_of);
        self.broad.remove(proxy_of(id.key));
        // Its part pairs go with it.
        self.part_pairs -= o.parts.len();
        self.frame.changes.objects.mark(id.key);
        Ok(())
    }

    /// Adds a static part: `shape` placed by `placement` (any pose, flattening ones too),
    /// inserted into the part tree. It costs nothing per step until an object comes near.
    ///
    /// # Errors
    /// A stale or foreign shape handle; a placement whose placed part has no finite
    /// bounds. Nothing changes then.
    ///
    /// # Complexity
    /// A placement of the shape's root bound and an insertion into the part tree
    /// (`docs/benchmarks.md`, "Editable part tree").
    pub fn add_part(
        &mut self,
        shape: ShapeId,
        placement: Pose,
        desc: PartDesc,
    ) -> Result<PartHandle> {
        let bound = self.part_bound(shape, &placement)?;
        self.insert_part(shape.key, placement, desc, bound)
    }

    /// Adds a part whose shape is live and whose bound is `shape` placed by `placement`.
    fn insert_part(
        &mut self,
        shape: ShapeKey,
        placement: Pose,
        desc: PartDesc,
        bound: Dop<K>,
    ) -> Result<PartHandle> {
        // The item is the part's slot, known once the part is stored; the leaf first, so
        // that a refused bound leaves nothing behind.
        let leaf = self.part_tree.insert(&bound, u32::MAX)?;
        let key = self.parts.insert(PartRec {
            shape,
            placement,
            desc,
            bound,
            leaf,
            requery: true,
        });
        self.frame.changes.parts.added(key);
        let item = part_item(key);
        self.part_tree.set_item(leaf, item);
        if self.item_part.len() <= item as usize {
            self.item_part.resize(item as usize + 1, PartKey::default());
        }
        self.item_part[item as usize] = key;
        // New: no object lists it yet.
        self.requery_parts.push((key, None));
        self.shapes[shape].gain(key, parts_of);
        self.generation += 1;
        Ok(PartHandle {
            key,
            world: self.id,
        })
    }

    /// The k-DOP of `shape` placed by `placement`.
    fn part_bound(&self, shape: ShapeId, placement: &Pose) -> Result<Dop<K>> {
        placed_bound(&self.shape(shape)?.object, placement)
    }

    fn part(&self, id: PartHandle) -> Result<&PartRec<K>> {
        self.check(id.world, "part")?;
        self.parts
            .get(id.key)
            .ok_or(Error::StaleHandle { what: "part" })
    }

    /// Moves a static part (a CAD edit): its bound is re-placed, and re-inserted into the
    /// part tree only when it leaves its leaf's fat k-DOP; its pairs are checked again at
    /// the next step, beginning, persisting or ending as they now stand. The part's
    /// hierarchy stays in its shape's frame: a move costs a re-placement, never a rebuild.
    ///
    /// # Errors
    /// A stale or foreign handle; a placement whose placed part has no finite bounds.
    /// Nothing changes then.
    pub fn set_part_placement(&mut self, id: PartHandle, placement: Pose) -> Result<()> {
        let shape = ShapeId {
            key: self.part(id)?.shape,
            world: self.id,
        };
        self.replace_part(id, shape, placement)
    }

    /// A part's placement.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn part_placement(&self, id: PartHandle) -> Result<Pose> {
        Ok(self.part(id)?.placement)
    }

    /// Gives a part another shape (a re-tessellated part) where it stands. Its pairs are
    /// checked again at the next step; a pair that still collides persists, with contacts
    /// numbered in the new mesh.
    ///
    /// # Errors
    /// A stale or foreign handle (part or shape). Nothing changes then.
    pub fn set_part_shape(&mut self, id: PartHandle, shape: ShapeId) -> Result<()> {
        let placement = self.part(id)?.placement;
        self.replace_part(id, shape, placement)
    }

    fn replace_part(&mut self, id: PartHandle, shape: ShapeId, placement: Pose) -> Result<()> {
        self.part(id)?;
        let bound = self.part_bound(shape, &placement)?;
        self.place_part_at(id.key, shape.key, placement, bound)
    }

    /// Gives live part `key` the live `shape` at `placement`, whose placed bound is `bound`.
    fn place_part_at(
        &mut self,
        key: PartKey,
        shape: ShapeKey,
        placement: Pose,
        bound: Dop<K>,
    ) -> Result<()> {
        let old = self.parts[key].shape;
        self.place_part(key, bound)?;
        if old != shape {
            self.shapes[old].lose(key, parts_of);
            self.shapes[shape].gain(key, parts_of);
        }
        let p = &mut self.parts[key];
        p.shape = shape;
        p.placement = placement;
        self.frame.changes.parts.mark(key);
        self.generation += 1;
        Ok(())
    }

    /// Gives part `key` the bound `bound`, in the part tree too (re-inserted when it leaves
    /// its fat k-DOP, and then its pairs are looked for again).
    fn place_part(&mut self, key: PartKey, bound: Dop<K>) -> Result<()> {
        let p = &mut self.parts[key];
        relink(&mut self.part_tree, &mut self.requery_parts, key, p, bound)
    }

    /// Changes a part's filter or user value; pairs that the new filter separates end at
    /// the next step.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn set_part_desc(&mut self, id: PartHandle, desc: PartDesc) -> Result<()> {
        self.part(id)?;
        let old = std::mem::replace(&mut self.parts[id.key].desc, desc);
        if (old.group, old.mask) != (desc.group, desc.mask) {
            self.frame.changes.parts.mark(id.key);
        }
        self.frame.relabelled |= old.user != desc.user;
        Ok(())
    }

    /// Gives an object another shape at its pose (a swapped tool, a re-tessellated body).
    /// Its pairs are checked again at the next step.
    ///
    /// # Errors
    /// A stale or foreign handle (object or shape). Nothing changes then.
    pub fn set_object_shape(&mut self, id: ObjectId, shape: ShapeId) -> Result<()> {
        self.shape(shape)?;
        let old = self.object(id)?.shape;
        if old != shape.key {
            self.shapes[old].lose(id.key, objects_of);
            self.shapes[shape.key].gain(id.key, objects_of);
        }
        self.objects[id.key].shape = shape.key;
        self.touch(id.key);
        Ok(())
    }

    /// Replaces a shape's vertex positions (same count, same triangles): a deformable
    /// body. Its hierarchy is refit where the vertices left their nodes' enlarged bounds
    /// ([`FlyingObject::deform`], margin [`WorldOptions::deform_margin`]), then renewed
    /// where the refits have worn it past [`WorldOptions::rebuild_at`], a bounded slice per
    /// call ([`FlyingObject::renew`], [`WorldOptions::renew_budget`]); every object of
    /// the shape gets a new root bound at the next step, and every part of it a new box.
    /// Every pair is checked at the next step against the new geometry, exactly.
    ///
    /// # Errors
    /// A stale or foreign handle; as [`FlyingObject::deform`] for bad vertices. Nothing
    /// changes then.
    ///
    /// # Complexity
    /// The refit, and the shape's objects and parts marked: found by one pass over the
    /// world's at the shape's first deformation, then kept in a list of its own.
    /// A worn shape's rebuild runs beside the frames that follow
    /// ([`WorldOptions::rebuild_frames`]); the call where it takes over waits for it if it
    /// has not finished, and refits it to the call's vertices.
    pub fn deform_shape(&mut self, id: ShapeId, vertices: &[DVec3]) -> Result<DeformStats> {
        self.deform_shape_by(id, |object, margin| object.deform(vertices, margin))
    }

    /// Moves some of a shape's vertices, vertex `indices[i]` to `positions[i]`, the
    /// others kept ([`FlyingObject::deform_some`]); otherwise as
    /// [`World::deform_shape`]. For local deformations: the call costs what the listed
    /// vertices and their leaves do, not a pass over every vertex.
    ///
    /// # Errors
    /// A stale or foreign handle; as [`FlyingObject::deform_some`] for bad indices or
    /// positions. Nothing changes then.
    pub fn deform_shape_some(
        &mut self,
        id: ShapeId,
        indices: &[u32],
        positions: &[DVec3],
    ) -> Result<DeformStats> {
        self.deform_shape_by(id, |object, margin| {
            object.deform_some(indices, positions, margin)
        })
    }

    /// The work of [`World::deform_shape`] and [`World::deform_shape_some`] around the
    /// shape's own deformation, `deform` (given the margin).
    fn deform_shape_by(
        &mut self,
        id: ShapeId,
        deform: impl FnOnce(&mut FlyingObject<K>, f64) -> Result<DeformStats>,
    ) -> Result<DeformStats> {
        self.shape(id)?;
        let margin = self.options.deform_margin;
        let mut stats = deform(&mut self.shapes[id.key].object, margin)?;
        let (at, frames) = (self.options.rebuild_at, self.options.rebuild_frames);
        let shape = &mut self.shapes[id.key];
        let build = shape.build;
        match &mut shape.rebuild {
            Some(r) if r.due > 1 => r.due -= 1,
            Some(_) => {
                let r = shape.rebuild.take().expect("matched above");
                // A build without a thread, or whose thread died, is done here.
                let fresh = r
                    .built
                    .and_then(|t| t.join().ok())
                    .unwrap_or_else(|| FlyingObject::new_deforming(shape.object.mesh(), &build));
                // Built from the vertices of some frames ago: refit to the shape's (which
                // it has just taken, so they pass; were they refused, the refit shape
                // stays).
                let vertices = &shape.object.part.bvh.vertices;
                if let Some((fresh, now)) = fresh
                    .ok()
                    .and_then(|mut f| f.deform(vertices, margin).ok().map(|now| (f, now)))
                {
                    shape.object = fresh;
                    stats = DeformStats {
                        rebuilt: true,
                        ..now
                    };
                }
            }
            // With a budget, renewal in slices; without, a whole rebuild once worn.
            None if self.options.renew_budget > 0 => {
                let budget = u64::from(self.options.renew_budget);
                let r = shape.object.renew(at, budget);
                (stats.renewed, stats.rebuilding) = (r.work, r.rebuilding);
                (stats.cost_ratio, stats.top_cost_ratio) = shape.object.cost_ratios();
            }
            None if stats.cost_ratio > at && frames == 0 => {
                // The vertices passed the checks of a mesh, and the options built it before.
                shape.object = FlyingObject::new_deforming(shape.object.mesh(), &build)?;
                stats.rebuilt = true;
            }
            None if stats.cost_ratio > at => {
                let mesh = shape.object.mesh();
                let built = std::thread::Builder::new()
                    .name("kdop rebuild".into())
                    .spawn(move || {
                        // The lists its first deformation needs are made here too, so that
                        // the call taking it over only refits it.
                        FlyingObject::new_deforming(mesh, &build).map(|mut f| {
                            f.prepare_deform();
                            f
                        })
                    })
                    .ok();
                shape.rebuild = Some(Rebuild { built, due: frames });
            }
            None => {}
        }
        stats.rebuilding |= shape.rebuild.is_some();
        // Its objects and parts: listed by one pass over the world's at the first
        // deformation, then kept as they come and go.
        if shape.deformed.is_none() {
            shape.deformed = Some(Box::new(Users {
                objects: (self.objects.iter())
                    .filter(|(_, o)| o.shape == id.key)
                    .map(|(k, _)| k)
                    .collect(),
                parts: (self.parts.iter())
                    .filter(|(_, p)| p.shape == id.key)
                    .map(|(k, _)| k)
                    .collect(),
            }));
        }
        let changes = &mut self.frame.changes;
        let shape = &self.shapes[id.key];
        let users = shape.deformed.as_deref().expect("listed above");
        for &k in &users.objects {
            changes.objects.mark(k);
            let o = &mut self.objects[k];
            if !o.moved {
                o.moved = true;
                self.moved.push(k);
            }
        }
        let object = &shape.object;
        for &k in &users.parts {
            let p = &mut self.parts[k];
            changes.parts.mark(k);
            // The vertices were checked and the placement was accepted before, so the
            // placed part has finite bounds again.
            let bound = placed_bound(object, &p.placement)?;
            relink(&mut self.part_tree, &mut self.requery_parts, k, p, bound)?;
        }
        self.generation += 1;
        Ok(stats)
    }

    /// Marks an object for a new root bound at the next step, as if it had moved.
    fn mark_moved(&mut self, key: ObjectKey) {
        self.frame.changes.objects.mark(key);
        let o = &mut self.objects[key];
        if !o.moved {
            o.moved = true;
            self.moved.push(key);
        }
    }

    /// Marks an object of a new shape for a new root and fat bound at the next step.
    fn touch(&mut self, key: ObjectKey) {
        // A fat bound of another geometry is no evidence: the new root must be placed.
        self.objects[key].fat = Dop::EMPTY;
        self.mark_moved(key);
    }

    /// Removes a static part; its pairs end at the next step.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn remove_part(&mut self, id: PartHandle) -> Result<()> {
        self.part(id)?;
        self.remove_part_key(id.key)
    }

    /// Removes live part `key`.
    fn remove_part_key(&mut self, key: PartKey) -> Result<()> {
        let leaf = self.parts[key].leaf;
        let listed = self.part_tree.fat(leaf)?;
        self.part_tree.remove(leaf)?;
        let p = self
            .parts
            .remove(key)
            .ok_or(Error::StaleHandle { what: "part" })?;
        self.shapes[p.shape].lose(key, parts_of);
        // Its pairs go at the next step, as a moved part's do; listed once, with the leaf
        // the objects met (if it moved since the last step, it is listed with that one).
        if !p.requery {
            self.requery_parts.push((key, aabb_of(&listed)));
        }
        self.frame.changes.parts.mark(key);
        self.generation += 1;
        Ok(())
    }

    /// A part's settings.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn part_desc(&self, id: PartHandle) -> Result<PartDesc> {
        Ok(self.part(id)?.desc)
    }

    /// The part tree: its cost against a fresh build's ([`DynamicTree::cost_ratio`]), its
    /// height, [`DynamicTree::validate`].
    #[must_use]
    pub fn part_tree(&self) -> &DynamicTree<K> {
        &self.part_tree
    }

    /// Number of moving objects.
    #[must_use]
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// Number of static parts.
    #[must_use]
    pub fn part_count(&self) -> usize {
        self.parts.len()
    }

    /// Handles of all shapes, in a fixed order (that of a saved world's shapes).
    pub fn shape_ids(&self) -> impl Iterator<Item = ShapeId> + '_ {
        self.shapes.keys().map(|key| ShapeId {
            key,
            world: self.id,
        })
    }

    /// Handles of all parts, in a fixed order (that of a saved world's parts).
    pub fn part_ids(&self) -> impl Iterator<Item = PartHandle> + '_ {
        self.parts.keys().map(|key| PartHandle {
            key,
            world: self.id,
        })
    }

    /// Handles of all objects, in a fixed order.
    pub fn object_ids(&self) -> impl Iterator<Item = ObjectId> + '_ {
        self.objects.keys().map(|key| ObjectId {
            key,
            world: self.id,
        })
    }

    /// Bytes the world holds per object beyond shapes and parts: its record, its broad-phase
    /// share and its share of the step's buffers (the per-thread workspaces excluded); the
    /// sum of [`World::memory_per_object`].
    #[must_use]
    pub fn bytes_per_object(&self) -> usize {
        self.memory_per_object().total()
    }

    /// [`World::bytes_per_object`] split by what holds it (capacities, over the objects).
    #[must_use]
    pub fn memory_per_object(&self) -> ObjectMemory {
        let n = self.objects.len().max(1);
        ObjectMemory {
            record: (self.objects.capacity() * (std::mem::size_of::<Object<K>>() + 8)
                + self.proxy_object.capacity() * std::mem::size_of::<ObjectKey>()
                + self.moved.capacity() * 8)
                / n,
            broad_phase: (self.broad.memory_bytes()
                + self
                    .objects
                    .values()
                    .filter(|o| o.parts.spilled())
                    .map(|o| o.parts.capacity() * std::mem::size_of::<PartKey>())
                    .sum::<usize>())
                / n,
            step: self.frame.memory_bytes() / n,
        }
    }
}

/// Bytes a world holds per object, by what holds them ([`World::memory_per_object`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectMemory {
    /// The object's record, its slot of the broad-phase proxy map and of the moved list.
    pub record: usize,
    /// Its share of the broad phase: the sweep's proxies, row entries, kept pairs and
    /// scratch, and the kept object–part pairs of the part tree.
    pub broad_phase: usize,
    /// Its share of the step's buffers: root bounds, jobs, contact pairs, contacts and
    /// events (what its queries touch in a frame).
    pub step: usize,
}

impl ObjectMemory {
    /// The sum of the three.
    #[must_use]
    pub fn total(&self) -> usize {
        self.record + self.broad_phase + self.step
    }
}

/// Gives part `key` (record `p`) the bound `bound` and its leaf in `tree` too; a leaf
/// re-inserted (it left its fat k-DOP) lists the part in `requery` for its pairs, with the
/// box of the leaf the objects' lists met (the first re-insertion since the last step's).
fn relink<const K: usize>(
    tree: &mut DynamicTree<K>,
    requery: &mut Vec<(PartKey, Option<Aabb>)>,
    key: PartKey,
    p: &mut PartRec<K>,
    bound: Dop<K>,
) -> Result<()> {
    let listed = tree.fat(p.leaf)?;
    if tree.move_leaf(p.leaf, &bound)? && !p.requery {
        p.requery = true;
        requery.push((key, aabb_of(&listed)));
    }
    p.bound = bound;
    Ok(())
}

/// The broad-phase proxy of an object: its key's slot index (a slot is reused only after
/// its object was removed, and its proxy with it).
fn proxy_of(key: ObjectKey) -> u32 {
    use slotmap::Key;
    key.data().as_ffi() as u32
}

/// The part tree's item of a part: its key's slot index.
fn part_item(key: PartKey) -> u32 {
    use slotmap::Key;
    key.data().as_ffi() as u32
}

/// The k-DOP of `object` placed by `placement`, checked to be finite.
fn placed_bound<const K: usize>(object: &FlyingObject<K>, placement: &Pose) -> Result<Dop<K>> {
    let bound = crate::query::PlacedObject::new().root_bound_unkept(object, placement);
    let finite = (0..K / 2).all(|i| bound.lo(i).is_finite() && bound.hi(i).is_finite());
    if bound.is_empty() || !finite {
        return Err(Error::InvalidPose {
            reason: "the placed part has no finite bounds",
        });
    }
    Ok(bound)
}

/// The box of a k-DOP (its first three slabs); `None` when empty.
fn aabb_of<const K: usize>(d: &Dop<K>) -> Option<Aabb> {
    (!d.is_empty()).then(|| Aabb::new([d.lo(0), d.lo(1), d.lo(2)], [d.hi(0), d.hi(1), d.hi(2)]))
}

fn invertible(pose: &Pose) -> Result<()> {
    pose.inverse().map(|_| ())
}
