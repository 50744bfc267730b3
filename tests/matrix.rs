//! The reduced cross-matrix of `kdop bench matrix`: the smaller real meshes, each as the
//! environment against each as the flying object, at a few near poses
//! ([`kdop::scene::near_poses`]), every k and the OBB back-end, in both modes, against the
//! brute-force oracle. Skipped, with a message, when `../shared/data/meshes` is absent.

mod common;

use common::meshes_dir;
use kdop::oracle::brute_force_contacts;
use kdop::{
    BuildOptions, Environment, FlyingObject, Mesh, ObbQueryState, ObbTree, Pose, QueryOptions,
    QueryState,
};

/// Every mesh of the folder up to 10,000 triangles: FCL's pair, the CAD and robot parts,
/// the knot and the ball (as listed in the folder's README).
const SMALL: [&str; 6] = [
    "fcl_rob.obj",
    "fcl_env.obj",
    "boeing_part.obj",
    "kuka_iiwa_link0.obj",
    "trefoil_knot.obj",
    "soccerball.obj",
];
const POSES: usize = 3;

type Pairs = Vec<[u32; 2]>;

/// Reports at every pose from `query(pose, options) -> (collides, pairs)`, checking that a
/// detect query collides exactly when the report is not empty.
fn reports(
    name: &str,
    poses: &[Pose],
    mut query: impl FnMut(&Pose, &QueryOptions) -> (bool, Pairs),
) -> Vec<Pairs> {
    poses
        .iter()
        .map(|pose| {
            let (collides, _) = query(pose, &QueryOptions::DETECT);
            let (reported, pairs) = query(pose, &QueryOptions::REPORT);
            assert_eq!(collides, reported, "{name}: detect and report disagree");
            pairs
        })
        .collect()
}

fn dop_reports<const K: usize>(env: &Mesh, obj: &Mesh, poses: &[Pose]) -> Vec<Pairs> {
    let env = Environment::<K>::from_mesh(env.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<K>::new(obj.clone(), &BuildOptions::FLYING).unwrap();
    let mut state = QueryState::new();
    state.prepare(&env, &obj);
    reports(&format!("{K}-DOP"), poses, |pose, o| {
        let r = env.collide(&obj, pose, o, &mut state).unwrap();
        let pairs = r
            .contacts
            .iter()
            .map(|c| [c.env_triangle, c.object_triangle]);
        (r.collides, pairs.collect())
    })
}

fn obb_reports(env: &Mesh, obj: &Mesh, poses: &[Pose]) -> Vec<Pairs> {
    let env = ObbTree::from_mesh(env, 1).unwrap();
    let obj = ObbTree::from_mesh(obj, 1).unwrap();
    let mut state = ObbQueryState::new();
    state.prepare(&obj);
    reports("OBB", poses, |pose, o| {
        let r = env.collide(&obj, pose, o, &mut state).unwrap();
        (r.collides, r.contacts.to_vec())
    })
}

#[test]
fn reduced_matrix_equals_brute_force() {
    let Some(dir) = meshes_dir() else { return };
    let meshes: Vec<(&str, Mesh)> = SMALL
        .iter()
        .map(|n| (*n, kdop::io::formats::load_mesh(dir.join(n)).unwrap()))
        .collect();
    let (mut contacts, mut touching) = (0, 0);
    for (ei, (en, env)) in meshes.iter().enumerate() {
        // The oracle needs a built environment; its answer does not depend on k.
        let oracle_env =
            Environment::<6>::from_mesh(env.clone(), &BuildOptions::ENVIRONMENT).unwrap();
        for (oi, (on, obj)) in meshes.iter().enumerate() {
            let poses = kdop::scene::near_poses(env, obj, POSES, (ei * 16 + oi) as u64).unwrap();
            let oracle_obj = FlyingObject::<6>::new(obj.clone(), &BuildOptions::FLYING).unwrap();
            let want: Vec<Pairs> = poses
                .iter()
                .map(|p| {
                    brute_force_contacts(&oracle_env, &oracle_obj, p, 0.0)
                        .iter()
                        .map(|c| [c.env_triangle, c.object_triangle])
                        .collect()
                })
                .collect();
            let got = [
                ("6-DOP", dop_reports::<6>(env, obj, &poses)),
                ("14-DOP", dop_reports::<14>(env, obj, &poses)),
                ("18-DOP", dop_reports::<18>(env, obj, &poses)),
                ("26-DOP", dop_reports::<26>(env, obj, &poses)),
                ("OBB", obb_reports(env, obj, &poses)),
            ];
            for (name, reports) in got {
                for (i, (g, w)) in reports.iter().zip(&want).enumerate() {
                    assert_eq!(g, w, "{name}: {en} x {on}, pose {i}");
                }
            }
            contacts += want.iter().map(Vec::len).sum::<usize>();
            touching += want.iter().filter(|w| !w.is_empty()).count();
        }
    }
    // Near poses should make contacts: a matrix of clear poses would prove little.
    let cells = SMALL.len() * SMALL.len();
    assert!(
        touching * 2 > cells * POSES && contacts > 1000,
        "only {touching} of {} poses touch, {contacts} pairs",
        cells * POSES
    );
}
