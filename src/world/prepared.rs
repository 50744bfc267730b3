//! Edits prepared away from the world and applied in one short call: the pattern of Jolt's
//! broad phase (prepare, then finalize under the lock), so that queries from other threads
//! (a `parking_lot::RwLock<World>` read by [`World::probe`]) wait only for the tree edits,
//! never for a hierarchy build (Klosowski et al. 1998, §6.1, "Dynamic environments").
//!
//! [`World::prepare_shape`] builds a shape's hierarchy and [`World::prepare_edits`] checks a
//! batch of part edits and places their bounds, both through `&self`; then
//! [`World::add_prepared_shape`] and [`World::finalize_edits`] apply them through `&mut self`
//! in microseconds per edit. A batch prepared before another edit of the parts is refused
//! whole ([`Error::StaleHandle`]: its checks and bounds describe a world that is gone).

use super::{PartDesc, PartHandle, PartKey, ShapeId, ShapeKey, World};
use crate::dop::Dop;
use crate::error::{Error, Result};
use crate::hierarchy::BuildOptions;
use crate::mesh::Mesh;
use crate::pose::Pose;
use crate::tumble::FlyingObject;

/// One edit of the world's parts, for [`World::prepare_edits`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PartEdit {
    /// A new part: a shape placed by a placement (any pose), with its settings.
    Insert {
        /// Its shape.
        shape: ShapeId,
        /// Where it stands.
        placement: Pose,
        /// Its filter and user value.
        desc: PartDesc,
    },
    /// A part removed.
    Remove(PartHandle),
    /// A part moved.
    Move(PartHandle, Pose),
    /// A part given another shape where it stands.
    Reshape(PartHandle, ShapeId),
}

/// A shape whose hierarchy was built by [`World::prepare_shape`], for
/// [`World::add_prepared_shape`].
pub struct PreparedShape<const K: usize> {
    object: FlyingObject<K>,
    build: BuildOptions,
    world: u32,
}

/// A batch of part edits checked and placed by [`World::prepare_edits`], for
/// [`World::finalize_edits`].
pub struct PreparedEdits<const K: usize> {
    world: u32,
    generation: u64,
    ops: Vec<Op<K>>,
}

impl<const K: usize> PreparedEdits<K> {
    /// Number of edits in the batch.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// An edit with its checks done and its bound placed.
enum Op<const K: usize> {
    Insert {
        shape: ShapeKey,
        placement: Pose,
        desc: PartDesc,
        bound: Dop<K>,
    },
    Remove(PartKey),
    Place {
        part: PartKey,
        shape: ShapeKey,
        placement: Pose,
        bound: Dop<K>,
    },
}

impl<const K: usize> World<K> {
    /// Builds a shape's hierarchy as [`World::add_shape`] would, without changing the
    /// world (through `&self`: other threads may query meanwhile).
    ///
    /// # Errors
    /// As [`FlyingObject::new`].
    pub fn prepare_shape(&self, mesh: Mesh) -> Result<PreparedShape<K>> {
        self.prepare_shape_with(mesh, &self.options.shape_build)
    }

    /// [`World::prepare_shape`] with build options of its own, as
    /// [`World::add_shape_with`].
    ///
    /// # Errors
    /// As [`FlyingObject::new`].
    pub fn prepare_shape_with(&self, mesh: Mesh, build: &BuildOptions) -> Result<PreparedShape<K>> {
        Ok(PreparedShape {
            object: FlyingObject::new(mesh, build)?,
            build: *build,
            world: self.id,
        })
    }

    /// Adds a shape built by [`World::prepare_shape`]: no build here.
    ///
    /// # Errors
    /// [`Error::ForeignHandle`] for a shape prepared by another world.
    pub fn add_prepared_shape(&mut self, shape: PreparedShape<K>) -> Result<ShapeId> {
        self.check(shape.world, "prepared shape")?;
        Ok(self.insert_shape(shape.object, shape.build))
    }

    /// Checks a batch of part edits against the world as it stands and places their
    /// bounds, without changing the world. Edits apply in order: a part removed by one
    /// edit cannot be named by a later one.
    ///
    /// # Errors
    /// The first bad edit, in an [`Error::Context`] naming its index: a stale or foreign
    /// handle, a placement whose placed shape has no finite bounds.
    pub fn prepare_edits(&self, edits: &[PartEdit]) -> Result<PreparedEdits<K>> {
        // A set, not a list: a batch may remove many thousands of parts.
        let mut removed: std::collections::HashSet<PartKey> = Default::default();
        let mut ops = Vec::with_capacity(edits.len());
        for (i, edit) in edits.iter().enumerate() {
            let named = |e: Error| e.context(format!("part edit {i}"));
            let live = |h: PartHandle| -> Result<PartKey> {
                self.part(h)?;
                if removed.contains(&h.key) {
                    return Err(Error::StaleHandle { what: "part" });
                }
                Ok(h.key)
            };
            let op = match *edit {
                PartEdit::Insert {
                    shape,
                    placement,
                    desc,
                } => Op::Insert {
                    shape: shape.key,
                    placement,
                    desc,
                    bound: self.part_bound(shape, &placement).map_err(named)?,
                },
                PartEdit::Remove(h) => {
                    let key = live(h).map_err(named)?;
                    removed.insert(key);
                    Op::Remove(key)
                }
                PartEdit::Move(h, placement) => {
                    let part = live(h).map_err(named)?;
                    let shape = ShapeId {
                        key: self.parts[part].shape,
                        world: self.id,
                    };
                    Op::Place {
                        part,
                        shape: shape.key,
                        placement,
                        bound: self.part_bound(shape, &placement).map_err(named)?,
                    }
                }
                PartEdit::Reshape(h, shape) => {
                    let part = live(h).map_err(named)?;
                    let placement = self.parts[part].placement;
                    Op::Place {
                        part,
                        shape: shape.key,
                        placement,
                        bound: self.part_bound(shape, &placement).map_err(named)?,
                    }
                }
            };
            ops.push(op);
        }
        Ok(PreparedEdits {
            world: self.id,
            generation: self.generation,
            ops,
        })
    }

    /// Applies a batch prepared by [`World::prepare_edits`]: each edit a part-tree
    /// insertion, removal or move, nothing built. Returns the inserted parts' handles, in
    /// order. Pairs are checked again at the next step, as after the single edits.
    ///
    /// # Errors
    /// [`Error::ForeignHandle`] for a batch of another world; [`Error::StaleHandle`] (what:
    /// "prepared edits") when the parts or shapes were edited after the batch was prepared.
    /// Nothing changes then.
    pub fn finalize_edits(&mut self, prepared: PreparedEdits<K>) -> Result<Vec<PartHandle>> {
        self.check(prepared.world, "prepared edits")?;
        if prepared.generation != self.generation {
            return Err(Error::StaleHandle {
                what: "prepared edits",
            });
        }
        let mut inserted = Vec::new();
        for op in prepared.ops {
            // Checked against this very generation: the handles are live and the bounds
            // finite, so these calls do not fail.
            match op {
                Op::Insert {
                    shape,
                    placement,
                    desc,
                    bound,
                } => inserted.push(self.insert_part(shape, placement, desc, bound)?),
                Op::Remove(part) => self.remove_part_key(part)?,
                Op::Place {
                    part,
                    shape,
                    placement,
                    bound,
                } => self.place_part_at(part, shape, placement, bound)?,
            }
        }
        Ok(inserted)
    }
}
