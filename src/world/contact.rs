//! Contact geometry of a colliding pair on request: for each of its triangle pairs, where
//! the two placed triangles meet ([`crate::contact_shape`]), in world coordinates.

use super::{Body, World};
use crate::error::{Error, Result};
use crate::pose::Pose;
use crate::tri::{ContactShape, Triangle, contact_shape};
use crate::tumble::FlyingObject;
use crate::world::ContactPair;

impl<const K: usize> World<K> {
    /// Where the triangles of each contact of `pair` meet, in world coordinates, in the
    /// order of [`World::contacts`]: a point, a segment, or a polygon for coplanar
    /// triangles. The triangles are placed as the step placed them
    /// ([`Pose::transform_point`]), so a contact reported by the step has a shape.
    ///
    /// For the pairs of the last step; one pass over each body's triangles per call, so
    /// ask for the pairs you show, not for every pair of every frame.
    ///
    /// # Errors
    /// A pair of an earlier step or another world (as [`World::contacts`]), a body of the
    /// pair removed since the step ([`Error::StaleHandle`]), or an object of
    /// it moved since ([`Error::InvalidParameter`]: its contacts are those of its old
    /// pose, which the world no longer has; step again).
    pub fn contact_shapes(&self, pair: &ContactPair) -> Result<Vec<ContactShape>> {
        let contacts = self.contacts(pair)?;
        let a = self.placed_triangles(pair.a, contacts.iter().map(|c| c[0]))?;
        let b = self.placed_triangles(pair.b, contacts.iter().map(|c| c[1]))?;
        a.iter()
            .zip(&b)
            .map(|(ta, tb)| {
                contact_shape(ta, tb).ok_or(Error::InvalidParameter {
                    name: "pair",
                    reason: "its triangles do not meet: it is not a pair of the last step".into(),
                })
            })
            .collect()
    }

    /// The triangles `ids` of `body`'s shape, placed as the body is now.
    fn placed_triangles(
        &self,
        body: Body,
        ids: impl ExactSizeIterator<Item = u32>,
    ) -> Result<Vec<Triangle>> {
        let (object, pose): (&FlyingObject<K>, Pose) = match body {
            Body::Object(id) => {
                let o = self.object(id)?;
                if o.moved {
                    return Err(Error::InvalidParameter {
                        name: "pair",
                        reason: "an object of the pair moved since the step".into(),
                    });
                }
                (&self.shapes[o.shape].object, o.pose)
            }
            Body::Part(id) => {
                self.check(id.world, "part")?;
                let p = self
                    .parts
                    .get(id.key)
                    .ok_or(Error::StaleHandle { what: "part" })?;
                (&self.shapes[p.shape].object, p.placement)
            }
        };
        // One pass over the hierarchy's triangle order finds every wanted one.
        let mut wanted: Vec<(u32, usize)> = ids.enumerate().map(|(i, id)| (id, i)).collect();
        wanted.sort_unstable();
        let mut out = vec![[glam::DVec3::ZERO; 3]; wanted.len()];
        let bvh = object.bvh();
        for pos in 0..bvh.triangle_count() {
            let id = bvh.id_at(pos);
            let first = wanted.partition_point(|w| w.0 < id);
            for &(_, i) in wanted[first..].iter().take_while(|w| w.0 == id) {
                out[i] = bvh.tri_at(pos).map(|v| pose.transform_point(v));
            }
        }
        Ok(out)
    }
}
