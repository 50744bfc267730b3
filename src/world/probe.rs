//! A probe: a shape at a pose checked against the world's parts and objects as they stand,
//! through `&self` and without adding an object (a CAD tool's "what would this touch here",
//! an engine's overlap query), so that many threads can probe a world behind a read lock
//! while edits are prepared ([`World::prepare_edits`]).
//!
//! Parts come from the part tree; objects from the broad phase as of the last step, and
//! those moved since (whose fat bounds may not hold them) one by one, each kept when the
//! box of its root bound placed by its pose meets the probe's (a few dozen operations,
//! where answering it costs a query). Each candidate is answered exactly, as a step
//! answers its pairs.

use super::step::{accepts, options, pair_mode};
use super::{Body, ObjectDesc, ObjectId, ObjectKey, PartHandle, ShapeId, World, aabb_of};
use crate::broad::Aabb;
use crate::error::Result;
use crate::pose::Pose;
use crate::query::QueryState;
use crate::tumble::FlyingObject;
use glam::DVec3;

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
    /// The hits found (body, user value, and their contacts' range in `flat`).
    found: Vec<(Body, u64, u32, u32)>,
    flat: Vec<[u32; 2]>,
    /// The contact lists of the last probe's hits, emptied, for the next probe's hits.
    spare: Vec<Vec<[u32; 2]>>,
    /// The hits in the order their lists are handed out (the longest first).
    order: Vec<u32>,
}

impl<const K: usize> ProbeScratch<K> {
    /// Empty scratch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes the hits found to `hits`, each with a contact list from the spare ones: the
    /// longest lists to the hits with the most contacts, so that the spare lists, which
    /// only grow, soon hold every probe's hits without growing again.
    fn hand_out(&mut self, hits: &mut Vec<ProbeHit>) {
        let (found, flat) = (&self.found, &self.flat);
        self.order.clear();
        self.order.extend(0..found.len() as u32);
        let need = |i: u32| {
            let (.., from, to) = found[i as usize];
            std::cmp::Reverse(to - from)
        };
        self.order.sort_unstable_by_key(|&i| (need(i), i));
        self.spare
            .sort_unstable_by_key(|v| std::cmp::Reverse(v.capacity()));
        hits.extend(found.iter().map(|&(body, user, ..)| ProbeHit {
            body,
            user,
            contacts: Vec::new(),
        }));
        let handed = self.order.len().min(self.spare.len());
        for (k, &i) in self.order.iter().enumerate() {
            let mut list = if k < handed {
                std::mem::take(&mut self.spare[k])
            } else {
                Vec::new()
            };
            let (.., from, to) = found[i as usize];
            list.extend_from_slice(&flat[from as usize..to as usize]);
            hits[i as usize].contacts = list;
        }
        self.spare.drain(..handed);
    }
}

impl<const K: usize> World<K> {
    /// Checks `shape` placed at `pose`, with `desc`'s mode and filter, against every part
    /// and object; fills `hits`, sorted by body (parts and objects in handle order).
    /// Passed the same `hits` and `scratch` each time, a warm probe allocates nothing: the
    /// last probe's contact lists are kept in `scratch` for the next one's.
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
        scratch.spare.extend(hits.drain(..).map(|mut h| {
            h.contacts.clear();
            h.contacts
        }));
        scratch.found.clear();
        scratch.flat.clear();
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
        if let Some(reach) = aabb_of(&root) {
            let (objects, proxies) = (&self.objects, &self.proxy_object);
            self.broad.query(&reach, |proxy| {
                let key = proxies[proxy as usize];
                if objects.get(key).is_some_and(|o| o.fat.overlaps(&root)) {
                    candidates.push(object(key));
                }
            });
            candidates.extend(
                self.moved
                    .iter()
                    .filter(|&&k| {
                        self.objects
                            .get(k)
                            .is_some_and(|o| reaches(&self.shapes[o.shape].object, &o.pose, &reach))
                    })
                    .map(|&k| object(k)),
            );
        }
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
                let from = scratch.flat.len() as u32;
                let pairs = hit.contacts.iter().map(|c| [c.a_triangle, c.b_triangle]);
                scratch.flat.extend(pairs);
                let to = scratch.flat.len() as u32;
                scratch.found.push((body, user, from, to));
            }
        }
        scratch.hand_out(hits);
        Ok(())
    }
}

/// Whether the box of `shape`'s root bound placed by `pose` (any invertible affine map),
/// grown by a rounding allowance so that it holds every triangle as the contract places
/// it, meets `reach`; false for a shape without triangles.
#[inline]
fn reaches<const K: usize>(shape: &FlyingObject<K>, pose: &Pose, reach: &Aabb) -> bool {
    let Some(root) = shape.bvh().bounds().next().and_then(aabb_of) else {
        return false;
    };
    let lo = DVec3::from(root.lo.map(f64::from));
    let hi = DVec3::from(root.hi.map(f64::from));
    // The image of a box under an affine map is a parallelepiped whose box has the image
    // of the centre as its centre and the absolute linear part times the half extent as
    // its half extent.
    let (centre, half) = ((lo + hi) / 2.0, (hi - lo) / 2.0);
    let c = pose.transform_point(centre);
    let m = pose.linear().abs();
    // The placed points and these sums round differently, each by a few units in the last
    // place of the terms summed: an allowance far above that.
    let terms = m * (centre.abs() + half) + pose.translation().abs();
    let h = m * half + terms * 1e-9;
    let (rlo, rhi) = (
        DVec3::from(reach.lo.map(f64::from)),
        DVec3::from(reach.hi.map(f64::from)),
    );
    // A NaN (a pose too large for its shape) fails both tests: the exact test decides.
    !((c + h).cmplt(rlo).any() || (c - h).cmpgt(rhi).any())
}
