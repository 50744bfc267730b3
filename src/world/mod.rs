//! The world: many moving objects among static parts (Klosowski et al. 1998, §6.1,
//! "Multiple flying objects"): shapes shared by any number of objects and parts, one
//! sweep-and-prune broad phase ([`crate::BroadPhase`]) over the objects' fat root k-DOPs and
//! the parts' exact ones (static proxies, never swept among themselves), the exact narrow
//! phase on every candidate pair in parallel, and begin / persist / end events.
//!
//! Every hierarchy stays in its shape's own frame: an object meets a part or another object
//! through [`FlyingObject::collide_with`], which compares bounds in the frame of the larger
//! of the two and re-bounds the smaller, so a small part under a large object costs what a
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
mod step;

pub use step::{ContactPair, EndedPair, PairEvent, StepStats};

use crate::broad::{Aabb, BroadPhase};
use crate::dop::Dop;
use crate::error::{Error, Result};
use crate::hierarchy::BuildOptions;
use crate::mesh::Mesh;
use crate::pose::Pose;
use crate::query::{Mode, QueryState};
use crate::tumble::{DeformStats, FlyingObject};
use glam::DVec3;
use parking_lot::Mutex;
use slotmap::SlotMap;
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
    /// A deformed shape whose hierarchy's surface-area cost has grown past this many times
    /// its cost as built ([`DeformStats::cost_ratio`]) is rebuilt from its current mesh in
    /// the same call (a build's time in that frame; `f64::INFINITY`: never).
    pub rebuild_at: f64,
}

impl Default for WorldOptions {
    fn default() -> Self {
        WorldOptions {
            shape_build: BuildOptions::FLYING,
            part_build: BuildOptions::ENVIRONMENT,
            fat_margin: 0.1,
            deform_margin: 0.05,
            rebuild_at: 2.0,
        }
    }
}

struct Shape<const K: usize> {
    object: FlyingObject<K>,
    users: u32,
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
}

struct PartRec<const K: usize> {
    shape: ShapeKey,
    placement: Pose,
    desc: PartDesc,
    /// The placed shape's k-DOP.
    bound: Dop<K>,
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
    broad: BroadPhase,
    /// Per broad-phase proxy, its object or part ([`proxy_of`]).
    proxy_body: Vec<Slot>,
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
        Self::with_options(WorldOptions::default())
    }

    /// An empty world.
    #[must_use]
    pub fn with_options(options: WorldOptions) -> Self {
        World {
            id: NEXT_WORLD.fetch_add(1, Ordering::Relaxed),
            options,
            shapes: SlotMap::with_key(),
            objects: SlotMap::with_key(),
            parts: SlotMap::with_key(),
            broad: BroadPhase::new(),
            proxy_body: Vec::new(),
            moved: Vec::new(),
            workspaces: Vec::new(),
            frame: step::Frame::default(),
        }
    }

    /// Builds a shape's hierarchy (in the mesh's own frame) for objects and parts to use.
    ///
    /// # Errors
    /// As [`FlyingObject::new`].
    pub fn add_shape(&mut self, mesh: Mesh) -> Result<ShapeId> {
        let object = FlyingObject::new(mesh, &self.options.shape_build)?;
        let key = self.shapes.insert(Shape { object, users: 0 });
        Ok(ShapeId {
            key,
            world: self.id,
        })
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
        Ok(())
    }

    /// The hierarchy of a shape, as a flying object in its own frame.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn shape_object(&self, id: ShapeId) -> Result<&FlyingObject<K>> {
        Ok(&self.shape(id)?.object)
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
        self.shapes[shape.key].users += 1;
        let key = self.objects.insert(Object {
            shape: shape.key,
            pose,
            desc,
            fat: Dop::EMPTY,
            moved: true,
            root: None,
        });
        self.name_proxy(Slot::Object(key));
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

    /// Moves an object (a teleport is a move like any other).
    ///
    /// # Errors
    /// A stale or foreign handle; a pose without an inverse. Nothing changes then.
    pub fn set_pose(&mut self, id: ObjectId, pose: Pose) -> Result<()> {
        invertible(&pose)?;
        self.object_mut(id)?.pose = pose;
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
        self.object_mut(id)?.desc = desc;
        Ok(())
    }

    /// Removes an object; its pairs end at the next step.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn remove_object(&mut self, id: ObjectId) -> Result<()> {
        self.object(id)?;
        let o = self.objects.remove(id.key).expect("checked above");
        self.shapes[o.shape].users -= 1;
        self.broad.remove(proxy_of(Slot::Object(id.key)));
        Ok(())
    }

    fn name_proxy(&mut self, slot: Slot) {
        let proxy = proxy_of(slot) as usize;
        if self.proxy_body.len() <= proxy {
            self.proxy_body.resize(proxy + 1, Slot::None);
        }
        self.proxy_body[proxy] = slot;
    }

    /// Adds a static part: `shape` placed by `placement` (any pose, flattening ones too).
    /// It enters the broad phase as a static box: it costs nothing per step until an object
    /// comes near.
    ///
    /// # Errors
    /// A stale or foreign shape handle.
    pub fn add_part(
        &mut self,
        shape: ShapeId,
        placement: Pose,
        desc: PartDesc,
    ) -> Result<PartHandle> {
        let (bound, aabb) = self.part_bound(shape, &placement)?;
        self.shapes[shape.key].users += 1;
        let key = self.parts.insert(PartRec {
            shape: shape.key,
            placement,
            desc,
            bound,
        });
        self.name_proxy(Slot::Part(key));
        self.broad.set(proxy_of(Slot::Part(key)), aabb, false)?;
        Ok(PartHandle {
            key,
            world: self.id,
        })
    }

    /// The k-DOP and box of `shape` placed by `placement`.
    fn part_bound(&self, shape: ShapeId, placement: &Pose) -> Result<(Dop<K>, Aabb)> {
        placed_bound(&self.shape(shape)?.object, placement)
    }

    fn part(&self, id: PartHandle) -> Result<&PartRec<K>> {
        self.check(id.world, "part")?;
        self.parts
            .get(id.key)
            .ok_or(Error::StaleHandle { what: "part" })
    }

    /// Moves a static part (a CAD edit): its box is re-placed in the broad phase, and its
    /// pairs are found and checked again at the next step, beginning, persisting or ending
    /// as they now stand. The part's hierarchy stays in its shape's frame: a move costs a
    /// re-placement, never a rebuild.
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
        let (bound, aabb) = self.part_bound(shape, &placement)?;
        let old = self.parts[id.key].shape;
        self.broad.set(proxy_of(Slot::Part(id.key)), aabb, false)?;
        self.shapes[old].users -= 1;
        self.shapes[shape.key].users += 1;
        let p = &mut self.parts[id.key];
        p.shape = shape.key;
        p.placement = placement;
        p.bound = bound;
        Ok(())
    }

    /// Changes a part's filter or user value; pairs that the new filter separates end at
    /// the next step.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn set_part_desc(&mut self, id: PartHandle, desc: PartDesc) -> Result<()> {
        self.part(id)?;
        self.parts[id.key].desc = desc;
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
        self.shapes[old].users -= 1;
        self.shapes[shape.key].users += 1;
        self.objects[id.key].shape = shape.key;
        self.touch(id.key);
        Ok(())
    }

    /// Replaces a shape's vertex positions (same count, same triangles): a deformable
    /// body. Its hierarchy is refit where the vertices left their nodes' enlarged bounds
    /// ([`FlyingObject::deform`], margin [`WorldOptions::deform_margin`]), or rebuilt when
    /// the refits have worn it past [`WorldOptions::rebuild_at`]; every object of
    /// the shape gets a new root bound at the next step, and every part of it a new box.
    /// Every pair is checked at the next step against the new geometry, exactly.
    ///
    /// # Errors
    /// A stale or foreign handle; as [`FlyingObject::deform`] for bad vertices. Nothing
    /// changes then.
    ///
    /// # Complexity
    /// The refit, plus one pass over the world's objects and parts to find the shape's.
    pub fn deform_shape(&mut self, id: ShapeId, vertices: &[DVec3]) -> Result<DeformStats> {
        self.shape(id)?;
        let margin = self.options.deform_margin;
        let mut stats = self.shapes[id.key].object.deform(vertices, margin)?;
        if stats.cost_ratio > self.options.rebuild_at {
            let object = &mut self.shapes[id.key].object;
            // The vertices passed the checks of a mesh, and the options built it before.
            *object = FlyingObject::new(object.mesh(), &self.options.shape_build)?;
            stats.rebuilt = true;
        }
        // In place, without lists of keys: a deforming shape is edited every frame.
        for (k, o) in self.objects.iter_mut() {
            if o.shape == id.key && !o.moved {
                o.moved = true;
                self.moved.push(k);
            }
        }
        let object = &self.shapes[id.key].object;
        for (k, p) in self.parts.iter_mut().filter(|(_, p)| p.shape == id.key) {
            // The vertices were checked and the placement was accepted before, so the
            // placed part has finite bounds again.
            let (bound, aabb) = placed_bound(object, &p.placement)?;
            self.broad.set(proxy_of(Slot::Part(k)), aabb, false)?;
            p.bound = bound;
        }
        Ok(stats)
    }

    /// Marks an object for a new root bound at the next step, as if it had moved.
    fn mark_moved(&mut self, key: ObjectKey) {
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
        self.check(id.world, "part")?;
        let p = self
            .parts
            .remove(id.key)
            .ok_or(Error::StaleHandle { what: "part" })?;
        self.shapes[p.shape].users -= 1;
        self.broad.remove(proxy_of(Slot::Part(id.key)));
        Ok(())
    }

    /// A part's settings.
    ///
    /// # Errors
    /// A stale or foreign handle.
    pub fn part_desc(&self, id: PartHandle) -> Result<PartDesc> {
        Ok(self.part(id)?.desc)
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

    /// Handles of all objects, in a fixed order.
    pub fn object_ids(&self) -> impl Iterator<Item = ObjectId> + '_ {
        self.objects.keys().map(|key| ObjectId {
            key,
            world: self.id,
        })
    }

    /// Bytes the world holds per object beyond shapes and parts: its record, its broad-phase
    /// share and its share of the step's buffers (the per-thread workspaces excluded).
    #[must_use]
    pub fn bytes_per_object(&self) -> usize {
        let n = self.objects.len().max(1);
        (self.objects.capacity() * (std::mem::size_of::<Object<K>>() + 8)
            + self.broad.memory_bytes()
            + self.proxy_body.capacity() * std::mem::size_of::<Slot>()
            + self.moved.capacity() * 8
            + self.frame.memory_bytes())
            / n
    }
}

/// What a broad-phase proxy stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    None,
    Object(ObjectKey),
    Part(PartKey),
}

/// The broad-phase proxy of an object or part: its key's slot index, even for objects and
/// odd for parts (slots are reused only after removal, when the proxy is removed too).
fn proxy_of(slot: Slot) -> u32 {
    use slotmap::Key;
    match slot {
        Slot::Object(k) => 2 * (k.data().as_ffi() as u32),
        Slot::Part(k) => 2 * (k.data().as_ffi() as u32) + 1,
        Slot::None => u32::MAX,
    }
}

/// The k-DOP and box of `object` placed by `placement`.
fn placed_bound<const K: usize>(
    object: &FlyingObject<K>,
    placement: &Pose,
) -> Result<(Dop<K>, Aabb)> {
    let bound = crate::query::PlacedObject::new().root_bound_unkept(object, placement);
    let aabb = aabb_of(&bound).ok_or(Error::InvalidPose {
        reason: "the placed part has no finite bounds",
    })?;
    Ok((bound, aabb))
}

/// The box of a k-DOP (its first three slabs); `None` when empty.
fn aabb_of<const K: usize>(d: &Dop<K>) -> Option<Aabb> {
    (!d.is_empty()).then(|| Aabb::new([d.lo(0), d.lo(1), d.lo(2)], [d.hi(0), d.hi(1), d.hi(2)]))
}

fn invertible(pose: &Pose) -> Result<()> {
    pose.inverse().map(|_| ())
}
