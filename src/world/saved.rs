//! Saved worlds: the shapes' meshes, the parts with their placements and filters, the
//! objects with their poses and settings, and the world's options, so that a CAD session's
//! edited assembly can be written out and read back (Klosowski et al. 1998, §5 saves the
//! environment hierarchy; issue 20 asks that a saved edited environment answer alike).
//!
//! # Format (version 3, little-endian, in the envelope of every kdop file)
//! ```text
//! magic        8 bytes  "KDOPWLD\0"
//! version      u32      3 (1 and 2 are read too: 1 has no renew_budget, neither has
//!                       a shape's own build options, which are then shape_build)
//! k            u32
//! length       u64      of the whole file, checksum included
//! shape_build  8 bytes  rule u8, split u8, reserved u16, leaf size u32
//! part_build   8 bytes  the same
//! margins      4 × f64  fat, deform, part; rebuild_at
//! tree_budget  u32, rebuild_frames u32
//! renew        u32      renew_budget (version 2 on)
//! shapes       u64; per shape: build 8 bytes (as shape_build; version 3 on),
//!                     vertices u64, triangles u64,
//!                     vertices × 3 f64, triangles × 3 u32 (the mesh's own order)
//! parts        u64; per part: shape u32 (its index above), placement 12 × f64,
//!                     group u32, mask u32, user u64
//! objects      u64; per object: shape u32, pose 12 × f64, mode u8 (0 detect, 1 report),
//!                     reserved 3 bytes, group u32, mask u32, user u64
//! crc32        u32      of every byte before it
//! ```
//! Hierarchies are not stored: each shape is built again on load from its mesh as it
//! stands (a deformed shape from its current vertices) with its own build options, and
//! builds are deterministic, so a loaded world finds the same pairs and reports the same
//! contacts as the saved one did. A detect pair names one contact, the first its
//! hierarchy meets: for a deformed shape, whose hierarchy was refit where the loaded one
//! is built afresh, it may name another. Shapes, parts and objects are
//! added in their saved order, which is the order of their handles, so pairs come out in
//! the same order too. Events start afresh: the loaded world's first step reports every
//! colliding pair as begun.

use super::{ObjectDesc, ObjectId, PartDesc, PartHandle, ShapeId, World, WorldOptions};
use crate::error::{Error, FormatError, Result};
use crate::hierarchy::BuildOptions;
use crate::io::envelope::{self, Cursor};
use crate::mesh::Mesh;
use crate::query::Mode;
use glam::DVec3;
use rayon::prelude::*;
use std::io::{Read, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"KDOPWLD\0";
const VERSION: u32 = 3;
/// Bytes of a part's record, and of an object's.
const PART_BYTES: usize = 4 + 96 + 16;
const OBJECT_BYTES: usize = 4 + 96 + 4 + 16;

/// A world read back by [`World::load`], with the handles of what it holds in saved order
/// (the order of the saved world's [`World::shape_ids`], [`World::part_ids`] and
/// [`World::object_ids`]).
pub struct LoadedWorld<const K: usize> {
    /// The world.
    pub world: World<K>,
    /// Its shapes.
    pub shapes: Vec<ShapeId>,
    /// Its parts.
    pub parts: Vec<PartHandle>,
    /// Its objects.
    pub objects: Vec<ObjectId>,
}

impl<const K: usize> World<K> {
    /// Writes the world's options, shapes (meshes as they stand), parts and objects in the
    /// versioned, checksummed format of this module; a world read back answers alike.
    ///
    /// # Errors
    /// [`Error::Io`] if writing fails.
    pub fn save(&self, w: &mut impl Write) -> Result<()> {
        w.write_all(&self.to_bytes())?;
        Ok(())
    }

    /// [`World::save`] to a file, through a temporary file beside it that then replaces
    /// it, so a failed write leaves whatever was there whole.
    ///
    /// # Errors
    /// [`Error::Context`] naming the file around [`Error::Io`].
    pub fn save_to_file(&self, path: impl AsRef<Path>) -> Result<()> {
        envelope::write_atomically(path.as_ref(), &self.to_bytes(), "world file")
    }

    /// The saved form as bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let o = &self.options;
        let (mut b, length_at) = envelope::begin(MAGIC, VERSION, K, 0);
        envelope::put_build_options(&mut b, &o.shape_build);
        envelope::put_build_options(&mut b, &o.part_build);
        for v in [o.fat_margin, o.deform_margin, o.part_margin, o.rebuild_at] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&o.tree_budget.to_le_bytes());
        b.extend_from_slice(&o.rebuild_frames.to_le_bytes());
        b.extend_from_slice(&o.renew_budget.to_le_bytes());
        // A shape's index in the file, by its slot.
        let mut index = std::collections::HashMap::new();
        b.extend_from_slice(&(self.shapes.len() as u64).to_le_bytes());
        for (i, (key, shape)) in self.shapes.iter().enumerate() {
            index.insert(key, i as u32);
            envelope::put_build_options(&mut b, &shape.build);
            let mesh = shape.object.mesh();
            b.extend_from_slice(&(mesh.vertices().len() as u64).to_le_bytes());
            b.extend_from_slice(&(mesh.triangles().len() as u64).to_le_bytes());
            for v in mesh.vertices() {
                for c in v.to_array() {
                    b.extend_from_slice(&c.to_le_bytes());
                }
            }
            for t in mesh.triangles() {
                for i in t {
                    b.extend_from_slice(&i.to_le_bytes());
                }
            }
        }
        let put_body = |b: &mut Vec<u8>, shape, rows: [f64; 12]| {
            b.extend_from_slice(&index[&shape].to_le_bytes());
            for v in rows {
                b.extend_from_slice(&v.to_le_bytes());
            }
        };
        b.extend_from_slice(&(self.parts.len() as u64).to_le_bytes());
        for p in self.parts.values() {
            put_body(&mut b, p.shape, p.placement.to_rows());
            b.extend_from_slice(&p.desc.group.to_le_bytes());
            b.extend_from_slice(&p.desc.mask.to_le_bytes());
            b.extend_from_slice(&p.desc.user.to_le_bytes());
        }
        b.extend_from_slice(&(self.objects.len() as u64).to_le_bytes());
        for o in self.objects.values() {
            put_body(&mut b, o.shape, o.pose.to_rows());
            b.push(u8::from(o.desc.mode == Mode::Report));
            b.extend_from_slice(&[0; 3]);
            b.extend_from_slice(&o.desc.group.to_le_bytes());
            b.extend_from_slice(&o.desc.mask.to_le_bytes());
            b.extend_from_slice(&o.desc.user.to_le_bytes());
        }
        envelope::seal(b, length_at)
    }

    /// Reads a world written by [`World::save`].
    ///
    /// # Errors
    /// [`Error::Format`] for anything but an intact world file of this k (a shape, part
    /// or object the world refuses is named in an [`Error::Context`]); [`Error::Io`] if
    /// reading fails.
    pub fn load(r: &mut impl Read) -> Result<LoadedWorld<K>> {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes)?;
        Self::from_bytes(&bytes)
    }

    /// [`World::load`] from a file.
    ///
    /// # Errors
    /// As [`World::load`], inside an [`Error::Context`] that names the file.
    pub fn load_from_file(path: impl AsRef<Path>) -> Result<LoadedWorld<K>> {
        let path = path.as_ref();
        std::fs::read(path)
            .map_err(Error::from)
            .and_then(|b| Self::from_bytes(&b))
            .map_err(|e| e.context(format!("world file {}", path.display())))
    }

    /// Decodes the saved form; the shapes' hierarchies are built in parallel.
    ///
    /// # Errors
    /// As [`World::load`].
    pub fn from_bytes(bytes: &[u8]) -> Result<LoadedWorld<K>> {
        let (version, mut c) = envelope::open(bytes, MAGIC, 1..=VERSION, 1, K)?;
        let options = WorldOptions {
            shape_build: c.build_options()?,
            part_build: c.build_options()?,
            fat_margin: c.f64()?,
            deform_margin: c.f64()?,
            part_margin: c.f64()?,
            rebuild_at: c.f64()?,
            tree_budget: c.u32()?,
            rebuild_frames: c.u32()?,
            renew_budget: if version >= 2 { c.u32()? } else { 0 },
        };
        options
            .check()
            .map_err(|e| e.context("the world file's options"))?;
        let shape_count = c.count(if version >= 3 { 24 } else { 16 })?;
        let mut raw = Vec::with_capacity(shape_count);
        for _ in 0..shape_count {
            let build = if version >= 3 {
                c.build_options()?
            } else {
                options.shape_build
            };
            let nv = c.u64()?;
            let nt = c.u64()?;
            let need = nv
                .checked_mul(24)
                .and_then(|a| nt.checked_mul(12).and_then(|b| a.checked_add(b)))
                .ok_or(FormatError::Truncated)?;
            if need > c.remaining() as u64 {
                return Err(FormatError::Truncated.into());
            }
            raw.push((
                build,
                c.bytes(nv as usize * 24)?,
                c.bytes(nt as usize * 12)?,
            ));
        }
        let meshes: Vec<(BuildOptions, Result<Mesh>)> = raw
            .par_iter()
            .enumerate()
            .map(|(i, &(build, v, t))| {
                let mesh = decode_mesh(v, t).map_err(|e| e.context(format!("shape {i}")));
                (build, mesh)
            })
            .collect();
        let mut world = World::with_options(options)?;
        let mut shapes = Vec::with_capacity(shape_count);
        // Built one after another: each build is parallel inside.
        for (build, mesh) in meshes {
            let i = shapes.len();
            shapes.push(
                world
                    .add_shape_with(mesh?, &build)
                    .map_err(|e| e.context(format!("shape {i}")))?,
            );
        }
        let shape_at = |c: &mut Cursor<'_>| -> Result<ShapeId> {
            let i = c.u32()? as usize;
            shapes
                .get(i)
                .copied()
                .ok_or_else(|| FormatError::Corrupt("a shape index past the shapes").into())
        };
        let part_count = c.count(PART_BYTES)?;
        let mut parts = Vec::with_capacity(part_count);
        for i in 0..part_count {
            let shape = shape_at(&mut c)?;
            let placement = c.pose()?;
            let desc = PartDesc {
                group: c.u32()?,
                mask: c.u32()?,
                user: c.u64()?,
            };
            parts.push(
                world
                    .add_part(shape, placement, desc)
                    .map_err(|e| e.context(format!("part {i}")))?,
            );
        }
        let object_count = c.count(OBJECT_BYTES)?;
        let mut objects = Vec::with_capacity(object_count);
        for i in 0..object_count {
            let shape = shape_at(&mut c)?;
            let pose = c.pose()?;
            let mode = match c.u8()? {
                0 => Mode::Detect,
                1 => Mode::Report,
                _ => return Err(FormatError::Corrupt("unknown object mode").into()),
            };
            let _reserved = [c.u8()?, c.u8()?, c.u8()?];
            let desc = ObjectDesc {
                mode,
                group: c.u32()?,
                mask: c.u32()?,
                user: c.u64()?,
            };
            objects.push(
                world
                    .add_object(shape, pose, desc)
                    .map_err(|e| e.context(format!("object {i}")))?,
            );
        }
        if c.remaining() != 0 {
            return Err(FormatError::Corrupt("trailing bytes").into());
        }
        Ok(LoadedWorld {
            world,
            shapes,
            parts,
            objects,
        })
    }
}

/// A shape's mesh from its saved arrays (lengths checked), validated as any mesh is.
fn decode_mesh(vertices: &[u8], triangles: &[u8]) -> Result<Mesh> {
    use crate::io::envelope::{le_f64, le_u32};
    let v: Vec<DVec3> = vertices
        .chunks_exact(24)
        .map(|b| DVec3::new(le_f64(&b[0..8]), le_f64(&b[8..16]), le_f64(&b[16..24])))
        .collect();
    let t: Vec<[u32; 3]> = triangles
        .chunks_exact(12)
        .map(|b| [le_u32(&b[0..4]), le_u32(&b[4..8]), le_u32(&b[8..12])])
        .collect();
    Mesh::new(v, t)
}
