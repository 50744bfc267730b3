//! A probe: a shape at a pose checked against the world's parts and objects as they stand,
//! through `&self` and without adding an object (a CAD tool's "what would this touch here",
//! an engine's overlap query), so that many threads can probe a world behind a read lock
//! while edits are prepared ([`World::prepare_edits`]).
//!
//! Parts come from the part tree; objects from the broad phase as of the last step, and
//! those moved since (whose fat bounds may not hold them) are checked one by one. Each
//! candidate is answered exactly, as a step answers its pairs.

use super::step::{accepts, options, pair_mode};
use super::{Body, ObjectDesc, ObjectId, ObjectKey, PartHandle, ShapeId, World, aabb_of};
use crate::error::Result;
use crate::pose::Pose;
use crate::query::QueryState;

/// What a probe touched: a part or an object, its user value, and the triangle pairs
/// `[the probe's, the body's]` (sorted; one in detect mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeHit {
    /// The part or object touched.
    pub body: Body,
    /// Its user value.
    pub user: u64,
    /// The intersecting triangle pairs.
    pub contacts: Vec<[u32; 2]>,
}

/// A probing thread's scratch: its query state and candidate lists, kept between probes
/// so that they do not allocate once warm.
#[derive(Default)]
pub struct ProbeScratch<const K: usize> {
    state: QueryState<K>,
    stack: Vec<u32>,
    candidates: Vec<Body>,
}

impl<const K: usize> ProbeScratch<K> {
    /// Empty scratch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl<const K: usize> World<K> {
    /// Checks `shape` placed at `pose`, with `desc`'s mode and filter, against every part
    /// and object; fills `hits`, sorted by body (parts and objects in handle order).
    ///
    /// # Errors
    /// A stale or foreign shape handle; a pose without an inverse.
    pub fn probe(
        &self,
        shape: ShapeId,
        pose: &Pose,
        desc: &ObjectDesc,
        scratch: &mut ProbeScratch<K>,
        hits: &mut Vec<ProbeHit>,
    ) -> Result<()> {
        hits.clear();
        let probe = &self.shape(shape)?.object;
        pose.inverse()?;
        let root = scratch.state.object.root_bound_unkept(probe, pose);
        let candidates = &mut scratch.candidates;
        candidates.clear();
        let (item_part, parts) = (&self.item_part, &self.parts);
        self.part_tree
            .query_with(&root, &mut scratch.stack, |item| {
                let key = item_part[item as usize];
                let p = &parts[key];
                if accepts(desc.group, desc.mask, p.desc.group, p.desc.mask)
                    && p.bound.overlaps(&root)
                {
                    candidates.push(Body::Part(PartHandle {
                        key,
                        world: self.id,
                    }));
                }
            });
        let object = |key: ObjectKey| {
            Body::Object(ObjectId {
                key,
                world: self.id,
            })
        };
        if let Some(aabb) = aabb_of(&root) {
            let (objects, proxies) = (&self.objects, &self.proxy_object);
            self.broad.query(&aabb, |proxy| {
                let key = proxies[proxy as usize];
                if objects.get(key).is_some_and(|o| o.fat.overlaps(&root)) {
                    candidates.push(object(key));
                }
            });
        }
        candidates.extend(
            self.moved
                .iter()
                .filter(|&&k| self.objects.contains_key(k))
                .map(|&k| object(k)),
        );
        candidates.sort_unstable();
        candidates.dedup();
        for &body in candidates.iter() {
            let (other, other_pose, mode, user) = match body {
                Body::Part(h) => {
                    let p = &self.parts[h.key];
                    (
                        &self.shapes[p.shape].object,
                        &p.placement,
                        desc.mode,
                        p.desc.user,
                    )
                }
                Body::Object(h) => {
                    let o = &self.objects[h.key];
                    if !accepts(desc.group, desc.mask, o.desc.group, o.desc.mask) {
                        continue;
                    }
                    let mode = pair_mode(desc.mode, o.desc.mode);
                    (&self.shapes[o.shape].object, &o.pose, mode, o.desc.user)
                }
            };
            let hit =
                probe.collide_with(pose, other, other_pose, &options(mode), &mut scratch.state)?;
            if hit.collides {
                hits.push(ProbeHit {
                    body,
                    user,
                    contacts: hit
                        .contacts
                        .iter()
                        .map(|c| [c.a_triangle, c.b_triangle])
                        .collect(),
                });
            }
        }
        Ok(())
    }
}
