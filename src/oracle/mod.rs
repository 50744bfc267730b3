//! Brute-force oracles that the fast structures are tested against.
//!
//! - [`brute_force_contacts`]: every environment triangle against every object triangle,
//!   with no hierarchy, no tumbling, no k-DOPs — the answer a query must equal.
//! - [`brute_force_pairs`]: every pair of broad-phase boxes compared, the answer of a
//!   [`crate::BroadPhase`] update.
//! - [`reference_triangles_intersect`]: exact linear feasibility in big integers, the
//!   reference for the fast triangle test itself.

mod reference;

use crate::env::Environment;
use crate::pair::ObjectContact;
use crate::pose::Pose;
use crate::query::Contact;
use crate::tri::{triangle_distance, triangles_intersect};
use crate::tumble::FlyingObject;
use glam::DVec3;
use rayon::prelude::*;

pub use crate::broad::{brute_force_pairs, single_sweep_pairs};
pub use reference::reference_triangles_intersect;

/// Every contact between the environment and the placed object, by testing all triangle
/// pairs (pruned only by exact bounding-box comparisons). Sorted as query reports are.
///
/// With `epsilon > 0`, pairs at distance at most `epsilon` count, as in queries.
///
/// # Complexity
/// O(n·m) for n environment and m object triangles: for tests, on modest sizes.
#[must_use]
pub fn brute_force_contacts<const K: usize>(
    env: &Environment<K>,
    object: &FlyingObject<K>,
    pose: &Pose,
    epsilon: f64,
) -> Vec<Contact> {
    let placed = placed_triangles(object.bvh(), pose);
    let mut out: Vec<(usize, u32, u32)> = env
        .parts
        .par_iter()
        .enumerate()
        .flat_map_iter(|(pi, part)| {
            let stored = placed_triangles(&part.bvh, &Pose::IDENTITY);
            all_pairs(&stored, &placed, epsilon)
                .into_iter()
                .map(move |(e, o)| (pi, e, o))
        })
        .collect();
    out.sort_unstable();
    out.into_iter()
        .map(|(p, e, o)| Contact {
            part: env.ids[p],
            env_triangle: e,
            object_triangle: o,
        })
        .collect()
}

/// Every contact between object `a` posed by `pose_a` and `b` posed by `pose_b`: both
/// placed into world coordinates by [`Pose::transform_point`], every triangle pair tested.
/// Sorted as [`FlyingObject::collide_with`] reports them.
#[must_use]
pub fn brute_force_object_contacts<const K: usize>(
    a: &FlyingObject<K>,
    pose_a: &Pose,
    b: &FlyingObject<K>,
    pose_b: &Pose,
    epsilon: f64,
) -> Vec<ObjectContact> {
    let first = placed_triangles(a.bvh(), pose_a);
    let second = placed_triangles(b.bvh(), pose_b);
    let mut out: Vec<ObjectContact> = all_pairs(&first, &second, epsilon)
        .into_iter()
        .map(|(a_triangle, b_triangle)| ObjectContact {
            a_triangle,
            b_triangle,
        })
        .collect();
    out.sort_unstable();
    out
}

/// A triangle of [`placed_triangles`]: original index, corners, box.
type Placed = (u32, [DVec3; 3], DVec3, DVec3);

/// Every triangle of `bvh` placed by `pose` (by [`Pose::transform_point`]) with its box.
fn placed_triangles<const K: usize>(bvh: &crate::Bvh<K>, pose: &Pose) -> Vec<Placed> {
    (0..bvh.triangle_count())
        .map(|pos| {
            let t = bvh.tri_at(pos).map(|v| pose.transform_point(v));
            let lo = t[0].min(t[1]).min(t[2]);
            let hi = t[0].max(t[1]).max(t[2]);
            (bvh.id_at(pos), t, lo, hi)
        })
        .collect()
}

/// Every pair `(first index, second index)` of triangles that intersect (or, with
/// `epsilon > 0`, are at most `epsilon` apart), in parallel; unsorted.
fn all_pairs(first: &[Placed], second: &[Placed], epsilon: f64) -> Vec<(u32, u32)> {
    let grow = DVec3::splat(epsilon);
    first
        .par_iter()
        .flat_map_iter(|(fid, ft, flo, fhi)| {
            let (lo, hi) = (*flo - grow, *fhi + grow);
            second.iter().filter_map(move |(sid, st, slo, shi)| {
                if !(lo.cmple(*shi).all() && slo.cmple(hi).all()) {
                    return None;
                }
                let hit = if epsilon == 0.0 {
                    triangles_intersect(ft, st)
                } else {
                    triangle_distance(ft, st) <= epsilon
                };
                hit.then_some((*fid, *sid))
            })
        })
        .collect()
}
