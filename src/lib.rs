#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

#[macro_use]
mod profile;
mod broad;
mod dop;
mod env;
mod error;
pub(crate) mod exact;
mod hierarchy;
mod hint;
mod hull;
pub mod io;
mod mesh;
mod obb;
pub mod oracle;
mod pair;
mod pose;
mod query;
pub mod scene;
#[cfg(test)]
mod testing;
mod tri;
mod trim;
mod tumble;
mod world;

pub use broad::{Aabb, BroadPhase, BroadStats};
pub use dop::{Dop, OverlapOrder, axes};
pub use env::{DynamicTree, Environment, Part, PartId, TreeLeaf};
pub use error::{Error, FormatError, Result};
pub use hierarchy::{AxisRule, BuildOptions, Bvh, SplitPoint};
pub use mesh::Mesh;
pub use obb::{ObbOutcome, ObbQueryState, ObbTree};
pub use pair::{ObjectContact, PairOutcome, Reference};
pub use pose::Pose;
pub use query::{Contact, Descent, Mode, Outcome, QueryOptions, QueryState, QueryStats};
pub use tri::{
    ContactShape, Triangle, contact_shape, intersecting_pairs, intersecting_pairs_screened,
    triangle_distance, triangles_intersect, triangles_intersect_screened,
};
pub use tumble::{DeformStats, FlyingObject, Rebound, Renewal};
pub use world::{
    Body, ContactPair, EndedPair, LoadedWorld, ObjectDesc, ObjectId, ObjectMemory, PairEvent,
    PartDesc, PartEdit, PartHandle, PreparedEdits, PreparedShape, ProbeHit, ProbeScratch, ShapeId,
    StepStats, World, WorldOptions,
};

/// Largest coordinate magnitude accepted in a mesh (2^40, about 1.1e12).
pub const MAX_COORDINATE: f64 = (1u64 << 40) as f64;
/// Largest magnitude of an entry of a pose's linear part (2^20).
pub const MAX_POSE_LINEAR: f64 = (1u64 << 20) as f64;
/// Largest magnitude of a pose's translation (2^42).
pub const MAX_POSE_TRANSLATION: f64 = (1u64 << 42) as f64;
