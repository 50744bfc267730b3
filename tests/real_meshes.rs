//! Queries on the real meshes of `../shared/data/meshes` against brute force.
//! Skipped, with a message, when that folder is absent.

mod common;

use common::meshes_dir;
use glam::DVec3;
use kdop::oracle::{brute_force_contacts, reference_triangles_intersect};
use kdop::{AxisRule, BuildOptions, Environment, FlyingObject, Mesh, Pose, QueryState, SplitPoint};

fn load(name: &str) -> Option<Mesh> {
    let dir = meshes_dir()?;
    Some(kdop::io::formats::load_mesh(dir.join(name)).unwrap())
}

/// Triangle counts as listed in the meshes' README (fan triangulation of polygons).
#[test]
fn loaders_match_the_readme_counts() {
    let expect = [
        ("fcl_rob.obj", 216),
        ("fcl_env.obj", 2180),
        ("boeing_part.obj", 2564),
        ("kuka_iiwa_link0.obj", 3038),
        ("trefoil_knot.obj", 6400),
        ("soccerball.obj", 9048),
        ("mountain.obj", 50562),
        ("diff_ring_gear.stl", 57640),
        ("stanford_bunny.obj", 69451),
        ("samtec_fmc_connector.obj", 73312),
        ("samurai_monastry.obj", 124789),
    ];
    for (name, n) in expect {
        let Some(m) = load(name) else { return };
        assert_eq!(m.triangle_count(), n, "{name}");
    }
}

type Key = (u32, u32);

fn keys(cs: &[kdop::Contact]) -> Vec<Key> {
    cs.iter()
        .map(|c| (c.env_triangle, c.object_triangle))
        .collect()
}

fn run_all_configs(env_mesh: &Mesh, obj_mesh: &Mesh, poses: &[Pose], oracle: &[Vec<Key>]) {
    for rule in AxisRule::ALL {
        for split in SplitPoint::ALL {
            check::<6>(env_mesh, obj_mesh, poses, oracle, rule, split);
            check::<14>(env_mesh, obj_mesh, poses, oracle, rule, split);
            check::<18>(env_mesh, obj_mesh, poses, oracle, rule, split);
            check::<26>(env_mesh, obj_mesh, poses, oracle, rule, split);
        }
    }
}

fn check<const K: usize>(
    env_mesh: &Mesh,
    obj_mesh: &Mesh,
    poses: &[Pose],
    oracle: &[Vec<Key>],
    rule: AxisRule,
    split: SplitPoint,
) {
    let env = Environment::<K>::from_mesh(
        env_mesh.clone(),
        &BuildOptions {
            rule,
            split,
            ..BuildOptions::ENVIRONMENT
        },
    )
    .unwrap();
    let obj = FlyingObject::<K>::new(
        obj_mesh.clone(),
        &BuildOptions {
            rule,
            split,
            ..BuildOptions::FLYING
        },
    )
    .unwrap();
    let mut st = QueryState::new();
    for config in common::CONFIGS {
        let (report, detect) = common::report_and_detect(config);
        for (i, pose) in poses.iter().enumerate() {
            let r = env.collide(&obj, pose, &report, &mut st).unwrap();
            assert_eq!(
                keys(r.contacts),
                oracle[i],
                "k={K} {rule:?} {split:?} {config:?} pose {i}"
            );
            let d = env.collide(&obj, pose, &detect, &mut st).unwrap();
            assert_eq!(
                d.collides,
                !oracle[i].is_empty(),
                "k={K} {rule:?} {split:?} {config:?} pose {i} detect"
            );
        }
    }
}

fn oracle(env_mesh: &Mesh, obj_mesh: &Mesh, poses: &[Pose]) -> Vec<Vec<Key>> {
    let env = Environment::<6>::from_mesh(env_mesh.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<6>::new(obj_mesh.clone(), &BuildOptions::FLYING).unwrap();
    poses
        .iter()
        .map(|p| keys(&brute_force_contacts(&env, &obj, p, 0.0)))
        .collect()
}

/// FCL's own benchmark pair: the piano (216 triangles) in the house (2,180) at 40 poses,
/// for every k, axis rule and split point.
#[test]
fn fcl_env_and_rob_match_brute_force_for_every_configuration() {
    let (Some(env), Some(rob)) = (load("fcl_env.obj"), load("fcl_rob.obj")) else {
        return;
    };
    let (lo, hi) = env.bounds();
    let poses = common::poses_in_box(2024, 40, lo, hi, 1.0);
    let truth = oracle(&env, &rob, &poses);
    let hits = truth.iter().filter(|o| !o.is_empty()).count();
    let total: usize = truth.iter().map(Vec::len).sum();
    eprintln!("fcl: {hits}/40 poses in contact, {total} contacts");
    assert!(
        (8..=36).contains(&hits),
        "poses must mix contact and free space ({hits})"
    );
    run_all_configs(&env, &rob, &poses, &truth);

    // The oracle's own triangle decisions, against the exact LP reference: every reported
    // pair, and every pair whose boxes overlap but that was not reported, at a few poses.
    for (i, pose) in poses.iter().enumerate().take(10) {
        let placed: Vec<[DVec3; 3]> = (0..rob.triangle_count())
            .map(|t| rob.triangle(t).unwrap().map(|v| pose.transform_point(v)))
            .collect();
        for e in 0..env.triangle_count() {
            let et = env.triangle(e).unwrap();
            for (o, ot) in placed.iter().enumerate() {
                let bl = et[0].min(et[1]).min(et[2]);
                let bh = et[0].max(et[1]).max(et[2]);
                let ol = ot[0].min(ot[1]).min(ot[2]);
                let oh = ot[0].max(ot[1]).max(ot[2]);
                if !(bl.cmple(oh).all() && ol.cmple(bh).all()) {
                    continue;
                }
                let reported = truth[i].binary_search(&(e as u32, o as u32)).is_ok();
                assert_eq!(
                    reported,
                    reference_triangles_intersect(&et, ot),
                    "pose {i} pair ({e}, {o})"
                );
            }
        }
    }
}

/// A terrain of 50,562 triangles, with a robot link scaled ten times (an affine pose) at
/// 8 poses, for every k, axis rule and split point.
#[test]
fn terrain_over_50k_triangles_matches_brute_force_for_every_configuration() {
    let (Some(env), Some(link)) = (load("mountain.obj"), load("kuka_iiwa_link0.obj")) else {
        return;
    };
    assert!(env.triangle_count() > 50_000);
    let (lo, hi) = env.bounds();
    let poses = common::poses_in_box(7, 8, lo, hi, 10.0);
    let truth = oracle(&env, &link, &poses);
    let hits = truth.iter().filter(|o| !o.is_empty()).count();
    eprintln!(
        "terrain: {hits}/8 poses in contact, {} contacts",
        truth.iter().map(Vec::len).sum::<usize>()
    );
    assert!(
        (2..=7).contains(&hits),
        "poses must mix contact and free space ({hits})"
    );
    run_all_configs(&env, &link, &poses, &truth);
}
