//! The reduced cross-matrix of `kdop bench matrix`: the smaller real meshes, each as the
//! environment against each as the flying object, at a few near poses
//! ([`kdop::scene::near_poses`]), every k and the OBB back-end, in both modes, against the
//! brute-force oracle. Skipped, with a message, when `../shared/data/meshes` is absent.

mod common;

use common::meshes_dir;
use kdop::oracle::brute_force_contacts;
use kdop::{
    BuildOptions, Environment, FlyingObject, Mesh, ObbQueryState, ObbTree, Pose, QueryOptions,
    QueryState, Reference,
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

/// An environment query's contacts as `[environment triangle, object triangle]`.
fn env_pairs(o: &kdop::Outcome) -> Pairs {
    o.contacts
        .iter()
        .map(|c| [c.env_triangle, c.object_triangle])
        .collect()
}

/// A state that keeps querying one pair learns which side to re-bound: under the soccer ball,
/// the mountain re-bounded (the side the size rule does not take) costs less. Its answers
/// stay those of a fresh state's first query, which takes the size rule's side (and which
/// the oracle tests check against brute force): the same reports, detect colliding alike
/// and finding one of the reported contacts. Against the environment and as two objects.
#[test]
fn a_state_that_changes_sides_answers_as_a_fresh_one() {
    let Some(dir) = meshes_dir() else { return };
    let ball = kdop::io::formats::load_mesh(dir.join("soccerball.obj")).unwrap();
    let mountain = kdop::io::formats::load_mesh(dir.join("mountain.obj")).unwrap();
    // The matrix's own poses of this cell (`kdop bench matrix --seed 1`).
    let seed = kdop::scene::cell_seed("soccerball.obj", "mountain.obj", 1);
    let poses = kdop::scene::near_poses(&ball, &mountain, 10, seed).unwrap();
    let env = Environment::<18>::from_mesh(ball.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let still = FlyingObject::<18>::new(ball, &BuildOptions::FLYING).unwrap();
    let obj = FlyingObject::<18>::new(mountain, &BuildOptions::FLYING).unwrap();
    let (mut steered, mut pair) = (QueryState::new(), QueryState::new());
    steered.prepare(&env, &obj);
    pair.prepare_objects(&obj, &still);
    let rule = Reference::of(&obj, &still);
    let (mut env_flipped, mut pair_flipped, mut touching) = (0, 0, 0);
    for pass in 0..6 {
        for (i, pose) in poses.iter().enumerate() {
            let at = format!("pass {pass}, pose {i}");
            let mut fresh = QueryState::new();
            let want = env
                .collide(&obj, pose, &QueryOptions::REPORT, &mut fresh)
                .unwrap();
            let want = env_pairs(&want);
            touching += usize::from(!want.is_empty());
            for o in [QueryOptions::REPORT, QueryOptions::DETECT] {
                let got = env_pairs(&env.collide(&obj, pose, &o, &mut steered).unwrap());
                env_flipped += usize::from(steered.flies_other_side());
                let steered = pair.flies_other_side();
                let hit = obj
                    .collide_with(pose, &still, &Pose::IDENTITY, &o, &mut pair)
                    .unwrap();
                let mut as_env: Pairs = hit
                    .contacts
                    .iter()
                    .map(|c| [c.b_triangle, c.a_triangle])
                    .collect();
                as_env.sort_unstable();
                let other_frame = hit.reference != rule;
                pair_flipped += usize::from(other_frame);
                assert_eq!(
                    steered, other_frame,
                    "{at}: the frame the state said it would take"
                );
                if o == QueryOptions::REPORT {
                    assert_eq!(got, want, "environment, {at}");
                    assert_eq!(as_env, want, "objects, {at}");
                } else {
                    for (name, g) in [("environment", &got), ("objects", &as_env)] {
                        assert_eq!(g.len(), usize::from(!want.is_empty()), "{name}, {at}");
                        assert!(g.iter().all(|c| want.contains(c)), "{name}, {at}");
                    }
                }
            }
        }
    }
    assert!(
        touching > 0 && touching < 6 * poses.len(),
        "{touching} touching poses"
    );
    assert!(
        env_flipped > 0,
        "the environment query never re-bound the mountain"
    );
    assert!(
        pair_flipped > 0,
        "the object pair never took the ball's frame"
    );
}
