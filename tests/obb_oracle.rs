//! The OBBTree back-end against brute force: the same oracle, scenes and poses as the
//! k-DOP hierarchies (seeded soups, shears and flattening maps, degenerate and duplicate
//! triangles, FCL's env/rob pair), both modes, both descents, leaf sizes 1 and 4, and a
//! positive epsilon.

mod common;

use common::{Rng, meshes_dir, report_and_detect};
use glam::{DMat3, DVec3};
use kdop::oracle::brute_force_contacts;
use kdop::{
    BuildOptions, Descent, Environment, FlyingObject, Mesh, ObbQueryState, ObbTree, Pose,
    QueryOptions,
};

/// Every contact by brute force, as `(env triangle, object triangle)`.
fn truth(env: &Mesh, obj: &Mesh, poses: &[Pose], eps: f64) -> Vec<Vec<[u32; 2]>> {
    let e = Environment::<6>::from_mesh(env.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let o = FlyingObject::<6>::new(obj.clone(), &BuildOptions::FLYING).unwrap();
    poses
        .iter()
        .map(|p| {
            brute_force_contacts(&e, &o, p, eps)
                .iter()
                .map(|c| [c.env_triangle, c.object_triangle])
                .collect()
        })
        .collect()
}

/// Runs every configuration and compares with `truth`.
fn check(env: &Mesh, obj: &Mesh, poses: &[Pose], eps: f64, truth: &[Vec<[u32; 2]>]) {
    let mut state = ObbQueryState::new();
    for leaf in [1, 4] {
        let te = ObbTree::from_mesh(env, leaf).unwrap();
        let to = ObbTree::from_mesh(obj, leaf).unwrap();
        for descent in [Descent::Larger, Descent::EnvironmentFirst] {
            let (mut report, mut detect) = report_and_detect((descent, kdop::Rebound::Slabs));
            report.epsilon = eps;
            detect.epsilon = eps;
            for (i, (pose, want)) in poses.iter().zip(truth).enumerate() {
                let got = te.collide(&to, pose, &report, &mut state).unwrap();
                assert_eq!(
                    got.contacts,
                    &want[..],
                    "pose {i}, leaf {leaf}, {descent:?}"
                );
                let d = te.collide(&to, pose, &detect, &mut state).unwrap();
                assert_eq!(d.collides, !want.is_empty(), "detect, pose {i}");
                if let Some(c) = d.contacts.first() {
                    assert!(want.contains(c), "detect's contact {c:?} is not a contact");
                }
            }
        }
    }
}

/// A soup of small random triangles in a cube, with degenerate ones (a repeated corner, a
/// collinear triple) and a duplicate mixed in.
fn soup(rng: &mut Rng, n: usize, size: f64) -> Mesh {
    let mut tris = Vec::with_capacity(n);
    for i in 0..n {
        let c = rng.vec(0.0, 1.0);
        let t = [c, c + rng.unit() * size, c + rng.unit() * size];
        tris.push(match i % 17 {
            5 => [t[0], t[0], t[1]],
            11 => [t[0], t[1], t[0] * 2.0 - t[1]],
            _ => t,
        });
    }
    tris.push(tris[0]);
    Mesh::from_triangles(&tris).unwrap()
}

fn poses(rng: &mut Rng, n: usize) -> Vec<Pose> {
    (0..n)
        .map(|i| {
            let r = rng.rotation();
            let linear = match i % 5 {
                // A shear, a non-uniform scale, a flattening (singular) map.
                1 => r * DMat3::from_cols(DVec3::X, DVec3::new(0.4, 1.0, 0.0), DVec3::Z),
                2 => r * DMat3::from_diagonal(DVec3::new(1.5, 0.7, 1.0)),
                3 => r * DMat3::from_diagonal(DVec3::new(1.0, 1.0, 0.0)),
                _ => r,
            };
            Pose::new(linear, rng.vec(-0.3, 0.3)).unwrap()
        })
        .collect()
}

#[test]
fn random_soups_match_brute_force() {
    let mut rng = Rng::new(77);
    let mut contacts = 0;
    for round in 0..4 {
        let env = soup(&mut rng, 300, 0.15);
        let obj = soup(&mut rng, 120, 0.2);
        let ps = poses(&mut rng, 10);
        let t = truth(&env, &obj, &ps, 0.0);
        contacts += t.iter().map(Vec::len).sum::<usize>();
        check(&env, &obj, &ps, 0.0, &t);
        if round == 0 {
            // Pairs closer than epsilon count too.
            let te = truth(&env, &obj, &ps, 0.02);
            assert!(te.iter().map(Vec::len).sum::<usize>() > t.iter().map(Vec::len).sum());
            check(&env, &obj, &ps, 0.02, &te);
        }
    }
    // Both answers must be common for the comparison to mean anything.
    assert!(contacts > 100, "{contacts}");
}

/// Closed shapes in parallel close proximity (where boxes are tested hardest), and one
/// object whose triangles all share a centroid (the build must still end).
#[test]
fn close_shapes_and_equal_centroids_match_brute_force() {
    let outer = kdop::scene::uv_sphere(1.0, 24, 13).unwrap();
    let inner = kdop::scene::uv_sphere(0.99, 20, 11).unwrap();
    let mut rng = Rng::new(5);
    let mut ps = poses(&mut rng, 6);
    // Touching: the inner sphere moved by exactly the gap along x, plus one far away.
    ps.push(Pose::from_translation(DVec3::new(0.01, 0.0, 0.0)).unwrap());
    ps.push(Pose::from_translation(DVec3::new(5.0, 0.0, 0.0)).unwrap());
    let t = truth(&outer, &inner, &ps, 0.0);
    check(&outer, &inner, &ps, 0.0, &t);

    let star: Vec<[DVec3; 3]> = (0..40)
        .map(|i| {
            let d = DVec3::new((i as f64).cos(), (i as f64).sin(), 0.1 * i as f64 - 2.0);
            [d, -d, DVec3::ZERO]
        })
        .collect();
    let star = Mesh::from_triangles(&star).unwrap();
    let t = truth(&outer, &star, &ps, 0.0);
    check(&outer, &star, &ps, 0.0, &t);
}

/// FCL's benchmark pair at 30 poses.
#[test]
fn fcl_env_and_rob_match_brute_force() {
    let Some(dir) = meshes_dir() else { return };
    let load = |n: &str| kdop::io::formats::load_mesh(dir.join(n)).unwrap();
    let (env, rob) = (load("fcl_env.obj"), load("fcl_rob.obj"));
    let (lo, hi) = env.bounds();
    let ps = common::poses_in_box(2024, 30, lo, hi, 1.0);
    let t = truth(&env, &rob, &ps, 0.0);
    let hits = t.iter().filter(|c| !c.is_empty()).count();
    assert!(
        (5..=27).contains(&hits),
        "poses must mix contact and free space ({hits})"
    );
    check(&env, &rob, &ps, 0.0, &t);
}

#[test]
fn bad_parameters_are_typed_errors() {
    let m = kdop::scene::uv_sphere(1.0, 8, 5).unwrap();
    assert!(matches!(
        ObbTree::from_mesh(&m, 0),
        Err(kdop::Error::InvalidParameter { .. })
    ));
    let t = ObbTree::from_mesh(&m, 1).unwrap();
    let mut state = ObbQueryState::new();
    let p = Pose::from_translation(DVec3::ZERO).unwrap();
    for eps in [-1.0, f64::NAN, f64::INFINITY] {
        let o = QueryOptions {
            epsilon: eps,
            ..QueryOptions::REPORT
        };
        assert!(matches!(
            t.collide(&t, &p, &o, &mut state),
            Err(kdop::Error::InvalidParameter { .. })
        ));
    }
}

/// Found by `cargo fuzz run mesh_query` (OBB branch): degenerate triangles (segments and
/// points), a pose with a subnormal entry, leaf size 3. Object triangles 8-10 were missed.
#[test]
fn fuzz_find_degenerate_leaves_under_a_shearing_pose() {
    let v = |x: f64, y: f64, z: f64| DVec3::new(x, y, z);
    let env = Mesh::new(
        vec![
            v(0., 0., 0.),
            v(-2., -2., -2.),
            v(0., 0., -2.),
            v(-2., -2., 0.),
        ],
        vec![
            [2, 3, 3],
            [2, 0, 3],
            [0, 3, 0],
            [0, 3, 1],
            [1, 0, 0],
            [3, 0, 3],
            [0, 3, 0],
            [0, 0, 0],
            [0, 0, 0],
            [0, 0, 0],
            [0, 0, 3],
        ],
    )
    .unwrap();
    let obj = Mesh::new(
        vec![
            v(0., 0., 0.),
            v(-2., 0., 0.),
            v(0., 0., 0.),
            v(-2., -1., -2.),
        ],
        vec![
            [0, 3, 1],
            [0, 1, 1],
            [3, 1, 2],
            [2, 3, 1],
            [0, 3, 0],
            [2, 3, 1],
            [0, 1, 3],
            [1, 3, 3],
            [0, 3, 3],
            [0, 3, 3],
            [0, 3, 3],
        ],
    )
    .unwrap();
    let pose = Pose::from_rows([
        -2.0, -2.0, 0.0, -2.0, -2.0, 1.0, 1.0, -2.0, 1.26e-321, -2.0, -2.0, 0.0,
    ])
    .unwrap();
    let t = truth(&env, &obj, &[pose], 0.0);
    for leaf in [1, 3] {
        let te = ObbTree::from_mesh(&env, leaf).unwrap();
        let to = ObbTree::from_mesh(&obj, leaf).unwrap();
        let mut state = ObbQueryState::new();
        let got = te
            .collide(&to, &pose, &QueryOptions::REPORT, &mut state)
            .unwrap();
        assert_eq!(got.contacts, &t[0][..], "leaf {leaf}");
    }
}

/// A terrain of 50,562 triangles with a robot link scaled ten times (an affine pose) at 8
/// poses: the OBB trees on a mesh over 50,000 triangles, as the k-DOPs are checked.
#[test]
fn terrain_over_50k_triangles_matches_brute_force() {
    let Some(dir) = meshes_dir() else { return };
    let load = |n: &str| kdop::io::formats::load_mesh(dir.join(n)).unwrap();
    let (env, link) = (load("mountain.obj"), load("kuka_iiwa_link0.obj"));
    assert!(env.triangle_count() > 50_000);
    let (lo, hi) = env.bounds();
    let ps = common::poses_in_box(7, 8, lo, hi, 10.0);
    let t = truth(&env, &link, &ps, 0.0);
    assert!(t.iter().any(|c| !c.is_empty()), "some pose must touch");
    let te = ObbTree::from_mesh(&env, 1).unwrap();
    let to = ObbTree::from_mesh(&link, 1).unwrap();
    let mut state = ObbQueryState::new();
    for (i, (pose, want)) in ps.iter().zip(&t).enumerate() {
        let got = te
            .collide(&to, pose, &QueryOptions::REPORT, &mut state)
            .unwrap();
        assert_eq!(got.contacts, &want[..], "pose {i}");
    }
}
