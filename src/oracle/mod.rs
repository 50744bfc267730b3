//! Brute-force oracles that the fast structures are tested against.
//!
//! - [`brute_force_contacts`]: every environment triangle against every object triangle,
//!   with no hierarchy, no tumbling, no k-DOPs — the answer a query must equal.
//! - [`reference_triangles_intersect`]: exact linear feasibility in big integers, the
//!   reference for the fast triangle test itself.

mod reference;

use crate::env::Environment;
use crate::pose::Pose;
use crate::traverse::Contact;
use crate::tri::{triangle_distance, triangles_intersect};
use crate::tumble::FlyingObject;
use glam::DVec3;
use rayon::prelude::*;

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
    let ob = object.bvh();
    let placed: Vec<(u32, [DVec3; 3], DVec3, DVec3)> = (0..ob.triangle_count())
        .map(|pos| {
            let t = ob.tri_at(pos).map(|v| pose.transform_point(v));
            let lo = t[0].min(t[1]).min(t[2]) - DVec3::splat(epsilon);
            let hi = t[0].max(t[1]).max(t[2]) + DVec3::splat(epsilon);
            (ob.id_at(pos), t, lo, hi)
        })
        .collect();
    let mut out: Vec<(usize, u32, u32)> = env
        .parts
        .par_iter()
        .enumerate()
        .flat_map_iter(|(pi, part)| {
            let b = &part.bvh;
            let placed = &placed;
            (0..b.triangle_count()).flat_map(move |pos| {
                let et = b.tri_at(pos);
                let lo = et[0].min(et[1]).min(et[2]);
                let hi = et[0].max(et[1]).max(et[2]);
                let eid = b.id_at(pos);
                placed.iter().filter_map(move |(oid, ot, olo, ohi)| {
                    if !(lo.cmple(*ohi).all() && olo.cmple(hi).all()) {
                        return None;
                    }
                    let hit = if epsilon == 0.0 {
                        triangles_intersect(&et, ot)
                    } else {
                        triangle_distance(&et, ot) <= epsilon
                    };
                    hit.then_some((pi, eid, *oid))
                })
            })
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
