//! parry3d, the Rust peer, on the same meshes and poses as kdop (feature `peers`): its
//! mesh-against-mesh `intersection_test` for detect mode, and for report mode an all-pairs
//! query built from its public pieces (its BVHs' simultaneous descent, `Bvh::leaf_pairs`,
//! and its triangle-triangle `intersection_test`), in f32 (`parry3d`) and f64
//! (`parry3d-f64`). parry takes rigid poses only; the quaternion of our rotation is used.

use kdop::{Mesh, Pose};

/// One parry build: detect and all-pairs report of an object against an environment.
pub trait Peer {
    /// The precision, for tables.
    fn name(&self) -> &'static str;
    /// parry's mesh-against-mesh intersection test at `pose`.
    fn detect(&self, pose: &Pose) -> bool;
    /// Every triangle pair parry calls intersecting at `pose`, `[env, object]`, sorted.
    fn report(&self, pose: &Pose, out: &mut Vec<[u32; 2]>);
}

macro_rules! peer {
    ($module:ident, $parry:ident, $real:ty, $label:expr) => {
        pub mod $module {
            use super::Peer;
            use $parry::bounding_volume::BoundingVolume;
            use $parry::math::{Pose as PPose, Rotation, Vector};
            use $parry::query::intersection_test;
            use $parry::shape::TriMesh;

            /// parry's meshes of one scene.
            pub struct Parry {
                env: TriMesh,
                obj: TriMesh,
            }

            fn mesh(m: &kdop::Mesh) -> kdop::Result<TriMesh> {
                let v = m
                    .vertices()
                    .iter()
                    .map(|p| Vector::new(p.x as $real, p.y as $real, p.z as $real))
                    .collect();
                TriMesh::new(v, m.triangles().to_vec()).map_err(|e| kdop::Error::InvalidParameter {
                    name: "parry mesh",
                    reason: format!("{e:?}"),
                })
            }

            fn pose(p: &kdop::Pose) -> PPose {
                let q = glam::DQuat::from_mat3(&p.linear());
                let t = p.translation();
                PPose::from_parts(
                    Vector::new(t.x as $real, t.y as $real, t.z as $real),
                    Rotation::from_xyzw(q.x as $real, q.y as $real, q.z as $real, q.w as $real)
                        .normalize(),
                )
            }

            impl Parry {
                /// parry's meshes (and their BVHs) of an environment and an object.
                pub fn new(env: &kdop::Mesh, obj: &kdop::Mesh) -> kdop::Result<Parry> {
                    Ok(Parry {
                        env: mesh(env)?,
                        obj: mesh(obj)?,
                    })
                }
            }

            impl Peer for Parry {
                fn name(&self) -> &'static str {
                    $label
                }

                fn detect(&self, p: &kdop::Pose) -> bool {
                    intersection_test(&PPose::IDENTITY, &self.env, &pose(p), &self.obj)
                        .map(|r| r.intersecting)
                        .unwrap_or(false)
                }

                fn report(&self, p: &kdop::Pose, out: &mut Vec<[u32; 2]>) {
                    out.clear();
                    let pp = pose(p);
                    let pairs = self.env.bvh().leaf_pairs(self.obj.bvh(), |a, b| {
                        a.aabb().intersects(&b.aabb().transform_by(&pp))
                    });
                    for (e, o) in pairs {
                        let (te, to) = (self.env.triangle(e), self.obj.triangle(o));
                        let hit = intersection_test(&PPose::IDENTITY, &te, &pp, &to)
                            .map(|r| r.intersecting)
                            .unwrap_or(false);
                        if hit {
                            out.push([e, o]);
                        }
                    }
                    out.sort_unstable();
                }
            }
        }
    };
}

peer!(f32, parry3d, f32, "parry3d (f32)");
peer!(f64, parry3d_f64, f64, "parry3d-f64");

/// Both precisions on one scene.
pub fn both(env: &Mesh, obj: &Mesh) -> kdop::Result<Vec<Box<dyn Peer>>> {
    Ok(vec![
        Box::new(f32::Parry::new(env, obj)?),
        Box::new(f64::Parry::new(env, obj)?),
    ])
}
