//! The environment: a set of parts, each a mesh with its own hierarchy and placement, under a
//! tree over the parts (the CAD assembly of the mission; Klosowski et al. 1998, §6.1
//! "dynamic environments" builds on this layout).
//!
//! A part's mesh is placed into world coordinates once, when the environment is built, and
//! its hierarchy is built there: queries compare world-space k-DOPs directly and the exact
//! triangle test sees world coordinates computed by [`Pose::transform_point`]. Parts are
//! addressed by stable [`PartId`] handles; the part tree is a separate node array whose leaves
//! name parts, built once.
//!
//! An environment is built whole: moving or replacing a part means building it again. An
//! assembly that changes belongs in a [`crate::World`], whose parts keep their hierarchies
//! in their shapes' frames under an editable part tree ([`DynamicTree`]), so that a move is
//! a re-placement and an insertion or removal a tree edit.

mod collide;
pub(crate) mod tree;

pub use tree::{DynamicTree, TreeLeaf};

use crate::dop::Dop;
use crate::error::{Error, Result};
use crate::hierarchy::{BuildOptions, Bvh, Node, build_over_boxes, codes};
use crate::mesh::Mesh;
use crate::pose::Pose;
use crate::tumble::FlyingObject;
use glam::DVec3;
use rayon::prelude::*;
use slotmap::SlotMap;
use std::sync::OnceLock;

slotmap::new_key_type! {
    /// A stable handle to a part of an [`Environment`].
    pub struct PartId;
}

/// One part: its placed mesh (owned by the hierarchy) and its placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Part<const K: usize> {
    pub(crate) bvh: Bvh<K>,
    pub(crate) placement: Pose,
    /// Per triangle position, its k-DOP as byte codes inside its leaf's
    /// ([`crate::hierarchy::codes`]); empty when every leaf holds one triangle, and in a
    /// deformed object's hierarchy, whose refined triangles are bounded from their corners.
    pub(crate) codes: Vec<[u8; K]>,
}

impl<const K: usize> Part<K> {
    /// Builds the part of `mesh` (already placed) by `placement`, with its leaves' codes.
    pub(crate) fn build(mesh: Mesh, placement: Pose, options: &BuildOptions) -> Result<Self> {
        let (bvh, codes) = Bvh::build_with_codes(mesh, options)?;
        Ok(Part {
            bvh,
            placement,
            codes,
        })
    }

    /// The part's hierarchy, in world coordinates.
    #[must_use]
    pub fn bvh(&self) -> &Bvh<K> {
        &self.bvh
    }

    /// Where the part's mesh was placed.
    #[must_use]
    pub fn placement(&self) -> &Pose {
        &self.placement
    }

    /// The bound a query refines the triangle at position `pos`, in a leaf bounded by
    /// `leaf`, into: decoded from its code, or bounded from its corners where the part
    /// keeps no codes (a deformed object's hierarchy).
    #[inline(always)]
    pub(crate) fn refined_bound(&self, leaf: &Dop<K>, pos: usize) -> Dop<K> {
        match self.codes.get(pos) {
            Some(code) => codes::decode(leaf, code),
            None => self.corner_bound(pos),
        }
    }

    /// The bound of the triangle at position `pos` from its corners.
    #[inline(never)]
    fn corner_bound(&self, pos: usize) -> Dop<K> {
        Dop::from_points_quick(self.bvh.tri_at(pos))
    }
}

/// The static scene that flying objects are checked against.
///
/// # Example
/// ```
/// use glam::DVec3;
/// use kdop::{BuildOptions, Environment, FlyingObject, Mesh, Pose, QueryOptions, QueryState};
///
/// let floor = Mesh::new(
///     vec![DVec3::new(-5.0, -5.0, 0.0), DVec3::new(5.0, -5.0, 0.0), DVec3::new(0.0, 5.0, 0.0)],
///     vec![[0, 1, 2]],
/// )?;
/// let env = Environment::<18>::from_mesh(floor, &BuildOptions::ENVIRONMENT)?;
/// let stick = Mesh::new(vec![DVec3::ZERO, DVec3::Z, DVec3::new(0.0, 0.1, 1.0)], vec![[0, 1, 2]])?;
/// let obj = FlyingObject::<18>::new(stick, &BuildOptions::FLYING)?;
/// let mut state = QueryState::new();
/// let above = Pose::from_translation(DVec3::new(0.0, 0.0, 0.5))?;
/// let through = Pose::from_translation(DVec3::new(0.0, 0.0, -0.5))?;
/// assert!(!env.collide(&obj, &above, &QueryOptions::REPORT, &mut state)?.collides);
/// let hit = env.collide(&obj, &through, &QueryOptions::REPORT, &mut state)?;
/// assert_eq!(hit.contacts.len(), 1);
/// # Ok::<(), kdop::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Environment<const K: usize> {
    pub(crate) parts: Vec<Part<K>>,
    pub(crate) ids: Vec<PartId>,
    pub(crate) handles: SlotMap<PartId, u32>,
    /// Tree over the parts; a leaf's link is `LEAF | dense part index`.
    pub(crate) top: Vec<Node<K>>,
    pub(crate) options: BuildOptions,
    /// A one-part environment as a flying object, made on first need: queries of an
    /// object larger than the part descend the object and re-bound the part
    /// ([`Environment::collide`]'s reference frame).
    pub(crate) flying: OnceLock<FlyingObject<K>>,
    /// What an object's box size must pass for the one part to fly instead
    /// ([`crate::query::swaps`] against the part tree's root); infinite unless there is one
    /// part. Kept because nearly every query asks.
    swap_above: f32,
}

impl<const K: usize> Environment<K> {
    /// An environment of one part: `mesh` where it stands.
    ///
    /// # Errors
    /// As [`Environment::build`].
    pub fn from_mesh(mesh: Mesh, options: &BuildOptions) -> Result<Self> {
        Self::build(vec![(mesh, Pose::IDENTITY)], options)
    }

    /// Builds every part's hierarchy (in parallel, deterministically) and the part tree.
    /// No parts make an empty environment, which nothing touches.
    ///
    /// # Errors
    /// [`Error::EmptyMesh`] for a part's mesh without triangles;
    /// [`Error::CoordinateOutOfRange`] if a placement moves a vertex out of range;
    /// [`Error::InvalidParameter`] for bad options.
    pub fn build(parts: Vec<(Mesh, Pose)>, options: &BuildOptions) -> Result<Self> {
        zone!("Environment::build");
        options.check()?;
        if parts.len() > crate::mesh::MAX_ELEMENTS {
            return Err(Error::TooLarge {
                what: "parts",
                count: parts.len(),
            });
        }
        let built: Vec<Result<Part<K>>> = parts
            .into_par_iter()
            .map(|(mesh, placement)| {
                let placed = if placement == Pose::IDENTITY {
                    mesh
                } else {
                    mesh.transformed(&placement)?
                };
                Part::build(placed, placement, options)
            })
            .collect();
        let parts = built.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(Self::assemble(parts, *options))
    }

    /// Puts built parts under a new part tree and issues handles.
    pub(crate) fn assemble(parts: Vec<Part<K>>, options: BuildOptions) -> Self {
        let mut handles = SlotMap::with_key();
        let ids = (0..parts.len() as u32).map(|i| handles.insert(i)).collect();
        let top = build_top(&parts, options);
        let swap_above = match &top[..] {
            [root] if parts.len() == 1 => crate::query::swap_above(&root.dop),
            _ => f32::INFINITY,
        };
        Environment {
            parts,
            ids,
            handles,
            top,
            options,
            flying: OnceLock::new(),
            swap_above,
        }
    }

    /// The environment as a flying object when it is one part more than four times
    /// smaller than `object` (own-frame boxes, the rule of [`crate::Reference::of`]), else
    /// `None`. Inlined: the size test decides nearly every query.
    #[inline]
    pub(crate) fn flying_for(&self, object: &FlyingObject<K>) -> Option<&FlyingObject<K>> {
        let size = crate::query::size(&object.part.bvh.nodes[0].dop);
        (size > self.swap_above).then(|| self.part_as_flying())
    }

    /// The one part as a flying object, made on first need (a copy of the part's hierarchy
    /// with its corners and hull).
    #[cold]
    #[inline(never)]
    fn part_as_flying(&self) -> &FlyingObject<K> {
        let part = &self.parts[0];
        self.flying
            .get_or_init(|| FlyingObject::from_bvh(part.bvh.clone(), part.codes.clone()))
    }

    /// Handles of the parts, in the order they were given.
    #[must_use]
    pub fn part_ids(&self) -> &[PartId] {
        &self.ids
    }

    /// The part behind a handle; `None` for a handle of another environment or a stale one.
    #[must_use]
    pub fn part(&self, id: PartId) -> Option<&Part<K>> {
        self.handles.get(id).map(|&i| &self.parts[i as usize])
    }

    /// Number of parts.
    #[must_use]
    pub fn part_count(&self) -> usize {
        self.parts.len()
    }

    /// Total number of triangles over all parts.
    #[must_use]
    pub fn triangle_count(&self) -> usize {
        self.parts.iter().map(|p| p.bvh.triangle_count()).sum()
    }

    /// The options the parts were built with.
    #[must_use]
    pub fn build_options(&self) -> &BuildOptions {
        &self.options
    }

    /// Bytes of all meshes, hierarchies and the part tree, and of the one-part
    /// environment's flying copy once a query of a larger object has made it.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.bvh.memory_bytes() + p.codes.len() * K)
            .sum::<usize>()
            + self.top.len() * std::mem::size_of::<Node<K>>()
            + self.flying.get().map_or(0, FlyingObject::memory_bytes)
    }

    /// The k-DOP around the whole environment (empty for an environment of no parts).
    #[must_use]
    pub fn bounds(&self) -> Dop<K> {
        self.top.first().map_or(Dop::EMPTY, |n| n.dop)
    }

    /// Checks every part hierarchy with its leaf codes, and the part tree.
    ///
    /// # Errors
    /// A description of the first broken invariant.
    pub fn validate(&self) -> std::result::Result<(), &'static str> {
        for p in &self.parts {
            p.bvh.validate_with_codes(&p.codes)?;
        }
        let expect = build_top(&self.parts, self.options);
        if expect != self.top {
            return Err("part tree does not match the parts");
        }
        Ok(())
    }
}

fn build_top<const K: usize>(parts: &[Part<K>], options: BuildOptions) -> Vec<Node<K>> {
    if parts.is_empty() {
        return Vec::new();
    }
    let dops: Vec<Dop<K>> = parts.iter().map(|p| p.bvh.root_dop()).collect();
    let centroids: Vec<DVec3> = dops
        .iter()
        .map(|d| {
            DVec3::new(
                (f64::from(d.lo(0)) + f64::from(d.hi(0))) * 0.5,
                (f64::from(d.lo(1)) + f64::from(d.hi(1))) * 0.5,
                (f64::from(d.lo(2)) + f64::from(d.hi(2))) * 0.5,
            )
        })
        .collect();
    let (mut nodes, order) = build_over_boxes(&centroids, &dops, options.rule);
    for n in nodes.iter_mut() {
        if n.is_leaf() {
            n.link = crate::hierarchy::LEAF | order[n.first_triangle() as usize];
        }
    }
    nodes
}
