//! Queries against brute force on seeded random scenes: every k, axis rule, split point and
//! several leaf sizes; report must equal the oracle's set, detect must agree with it.

mod common;

use common::{Rng, cluster, random_pose};
use glam::{DMat3, DVec3};
use kdop::oracle::brute_force_contacts;
use kdop::{
    AxisRule, BuildOptions, Environment, FlyingObject, Mesh, Pose, QueryOptions, QueryState,
    SplitPoint,
};

struct Scene {
    parts: Vec<(Mesh, Pose)>,
    object: Mesh,
    poses: Vec<Pose>,
}

fn scene(seed: u64) -> Scene {
    let mut rng = Rng::new(seed);
    let mut parts = Vec::new();
    for _ in 0..5 {
        let m = cluster(&mut rng, 150, 2.0, 0.8);
        parts.push((m, random_pose(&mut rng, 3.0, false)));
    }
    let object = cluster(&mut rng, 60, 1.0, 0.6);
    let mut poses: Vec<Pose> = (0..24)
        .map(|i| random_pose(&mut rng, 4.0, i % 5 == 4))
        .collect();
    poses.push(Pose::IDENTITY);
    Scene {
        parts,
        object,
        poses,
    }
}

/// Closed meshes with shared corners (welded), placed to interpenetrate.
fn welded_scene(seed: u64) -> Scene {
    let mut rng = Rng::new(seed);
    let mut parts = Vec::new();
    for i in 0..4 {
        let m = match i % 3 {
            0 => kdop::scene::icosphere(1.5, 2).unwrap(),
            1 => kdop::scene::torus(1.5, 0.4, 24, 10).unwrap(),
            _ => kdop::scene::cylinder(0.8, 3.0, 20, 3).unwrap(),
        };
        parts.push((m, random_pose(&mut rng, 2.5, false)));
    }
    let object = kdop::scene::torus_knot(2, 3, 1.2, 0.4, 0.25, 96, 8).unwrap();
    let poses = (0..24)
        .map(|i| random_pose(&mut rng, 3.5, i % 5 == 4))
        .collect();
    Scene {
        parts,
        object,
        poses,
    }
}

fn key(env_parts: &[kdop::PartId], c: &kdop::Contact) -> (usize, u32, u32) {
    let p = env_parts.iter().position(|&q| q == c.part).unwrap();
    (p, c.env_triangle, c.object_triangle)
}

fn check_k<const K: usize>(
    sc: &Scene,
    oracle: &[Vec<(usize, u32, u32)>],
    opts: &BuildOptions,
) -> usize {
    let env = Environment::<K>::build(sc.parts.clone(), opts).unwrap();
    assert_eq!(env.validate(), Ok(()));
    let obj = FlyingObject::<K>::new(sc.object.clone(), opts).unwrap();
    let mut st = QueryState::new();
    let mut contacts = 0;
    for config in common::CONFIGS {
        let (report, detect) = common::report_and_detect(config);
        for (i, pose) in sc.poses.iter().enumerate() {
            let expect = &oracle[i];
            let r = env.collide(&obj, pose, &report, &mut st).unwrap();
            let got: Vec<_> = r.contacts.iter().map(|c| key(env.part_ids(), c)).collect();
            assert_eq!(
                &got, expect,
                "k={K} {opts:?} {config:?} pose {i}: report differs from brute force"
            );
            assert_eq!(r.stats.contacts as usize, expect.len());
            contacts += expect.len();
            let d = env.collide(&obj, pose, &detect, &mut st).unwrap();
            assert_eq!(
                d.collides,
                !expect.is_empty(),
                "k={K} {opts:?} {config:?} pose {i}: detect disagrees"
            );
            if let Some(c) = d.contacts.first() {
                assert!(
                    expect.contains(&key(env.part_ids(), c)),
                    "detect witness is not a contact"
                );
                assert_eq!(d.contacts.len(), 1);
            }
        }
    }
    contacts
}

fn oracle_for(sc: &Scene) -> Vec<Vec<(usize, u32, u32)>> {
    let env = Environment::<6>::build(sc.parts.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<6>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap();
    sc.poses
        .iter()
        .map(|p| {
            brute_force_contacts(&env, &obj, p, 0.0)
                .iter()
                .map(|c| key(env.part_ids(), c))
                .collect()
        })
        .collect()
}

/// A coordinate on a small integer grid, a zero of random sign half the time it is zero.
fn grid_coord(rng: &mut Rng) -> f64 {
    let c = rng.below(5) as f64 - 2.0;
    if c == 0.0 && rng.below(2) == 0 {
        -0.0
    } else {
        c
    }
}

/// Flat and grid-aligned geometry: an object whose corners are all coplanar (its convex hull
/// is flat), parts on integer grids with duplicated points of both zero signs, and poses
/// that are exact quarter turns, integer shifts and singular maps. Coplanar, touching and
/// degenerate contacts are the rule here, not the exception.
fn flat_scene(seed: u64) -> Scene {
    let mut rng = Rng::new(seed);
    let grid_tri = |rng: &mut Rng, flat: bool| {
        [0; 3].map(|_| {
            let z = if flat {
                0.0 * grid_coord(rng)
            } else {
                grid_coord(rng)
            };
            DVec3::new(grid_coord(rng), grid_coord(rng), z)
        })
    };
    let mut parts = Vec::new();
    for i in 0..3 {
        let tris: Vec<[DVec3; 3]> = (0..40).map(|_| grid_tri(&mut rng, i == 0)).collect();
        let shift = DVec3::new(i as f64 - 1.0, 0.0, 0.5 * i as f64);
        parts.push((
            Mesh::from_triangles(&tris).unwrap(),
            Pose::from_translation(shift).unwrap(),
        ));
    }
    // Few triangles, so that few points make the hull and each of them matters.
    let tris: Vec<[DVec3; 3]> = (0..6).map(|_| grid_tri(&mut rng, true)).collect();
    let object = Mesh::from_triangles(&tris).unwrap();
    let quarter = |axis: usize| {
        let mut m = DMat3::IDENTITY;
        let (a, b) = ((axis + 1) % 3, (axis + 2) % 3);
        m.col_mut(a)[a] = 0.0;
        m.col_mut(b)[b] = 0.0;
        m.col_mut(a)[b] = 1.0;
        m.col_mut(b)[a] = -1.0;
        m
    };
    let mut poses = Vec::new();
    for i in 0..24 {
        let linear = match i % 6 {
            0 => DMat3::IDENTITY,
            1 => quarter(0),
            2 => quarter(1) * quarter(2),
            3 => DMat3::from_diagonal(DVec3::new(1.0, 1.0, 0.0)), // flattening
            4 => DMat3::from_cols(DVec3::splat(-2.0), DVec3::splat(-2.0), DVec3::splat(-2.0)),
            _ => quarter(2),
        };
        let t = DVec3::new(
            grid_coord(&mut rng),
            grid_coord(&mut rng),
            grid_coord(&mut rng),
        ) * 0.5;
        // Every fourth pose far from the parts (they span x in [-3, 3]), so that misses
        // occur too.
        let t = if i % 4 == 3 {
            t + DVec3::new(40.0, 0.0, 0.0)
        } else {
            t
        };
        poses.push(Pose::new(linear, t).unwrap());
    }
    Scene {
        parts,
        object,
        poses,
    }
}

#[test]
fn every_k_rule_split_and_leaf_size_matches_brute_force() {
    for sc in [scene(11), scene(12), welded_scene(21), flat_scene(31)] {
        let oracle = oracle_for(&sc);
        let total: usize = oracle.iter().map(Vec::len).sum();
        let touching = oracle.iter().filter(|o| !o.is_empty()).count();
        assert!(
            total > 50 && touching > 5 && touching < sc.poses.len(),
            "scene must mix hits and misses: {total} contacts, {touching} poses"
        );
        for rule in AxisRule::ALL {
            for split in SplitPoint::ALL {
                for leaf_size in [1, 2, 5, 70] {
                    let o = BuildOptions {
                        rule,
                        split,
                        leaf_size,
                    };
                    check_k::<6>(&sc, &oracle, &o);
                    check_k::<14>(&sc, &oracle, &o);
                    check_k::<18>(&sc, &oracle, &o);
                    check_k::<26>(&sc, &oracle, &o);
                }
            }
        }
    }
}

/// With epsilon > 0 the query must return exactly the pairs the brute force finds within
/// epsilon: this checks that k-DOPs are enlarged enough.
#[test]
fn epsilon_queries_match_brute_force() {
    let sc = scene(13);
    let eps = 0.05;
    for leaf in [1, 4] {
        let o = BuildOptions {
            leaf_size: leaf,
            ..BuildOptions::ENVIRONMENT
        };
        let env = Environment::<18>::build(sc.parts.clone(), &o).unwrap();
        let obj = FlyingObject::<18>::new(sc.object.clone(), &o).unwrap();
        let mut st = QueryState::new();
        let q = QueryOptions {
            epsilon: eps,
            ..QueryOptions::REPORT
        };
        let mut extra = 0;
        for pose in &sc.poses {
            let expect = brute_force_contacts(&env, &obj, pose, eps);
            let exact = brute_force_contacts(&env, &obj, pose, 0.0);
            extra += expect.len() - exact.len();
            let r = env.collide(&obj, pose, &q, &mut st).unwrap();
            assert_eq!(r.contacts, &expect[..]);
        }
        assert!(
            extra > 0,
            "epsilon must add near pairs for the test to mean anything"
        );
    }
}

/// One pose queried at one epsilon after another on one state (as the world queries an
/// object against parts whose sizes give other margins): each epsilon gets exactly the
/// brute force's pairs, so nodes grown for one epsilon never serve another.
#[test]
fn one_pose_at_several_epsilons_answers_each() {
    let sc = scene(13);
    let env = Environment::<18>::build(sc.parts.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<18>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap();
    let mut st = QueryState::new();
    let mut widened = 0;
    for pose in &sc.poses {
        let exact = brute_force_contacts(&env, &obj, pose, 0.0).len();
        for eps in [0.0, 0.05, 0.0, 0.2, 0.05] {
            let q = QueryOptions {
                epsilon: eps,
                ..QueryOptions::REPORT
            };
            let expect = brute_force_contacts(&env, &obj, pose, eps);
            let r = env.collide(&obj, pose, &q, &mut st).unwrap();
            assert_eq!(r.contacts, &expect[..], "epsilon {eps}");
            widened += expect.len() - exact;
        }
    }
    assert!(widened > 0, "the epsilons must add near pairs");
}

/// Same pose twice reuses the tumbled nodes; the answers stay the same.
#[test]
fn repeated_pose_reuses_tumbling() {
    let sc = scene(14);
    let env = Environment::<18>::build(sc.parts.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<18>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap();
    let mut st = QueryState::new();
    for pose in &sc.poses {
        let a = env
            .collide(&obj, pose, &QueryOptions::REPORT, &mut st)
            .unwrap();
        let (ca, sa) = (a.contacts.to_vec(), a.stats);
        let b = env
            .collide(&obj, pose, &QueryOptions::REPORT, &mut st)
            .unwrap();
        assert_eq!(b.contacts, &ca[..]);
        assert_eq!(
            b.stats.nu, 0,
            "second query with the same pose re-bounds nothing"
        );
        assert_eq!(b.stats.nv, sa.nv);
    }
}

/// One query state serving several environments and objects in turn (its per-query
/// scratch, sized for the largest environment seen, must never carry one query's
/// refinements into the next) answers as brute force does.
#[test]
fn one_state_serves_many_environments() {
    let scenes = [scene(16), welded_scene(22), flat_scene(32)];
    let opts = BuildOptions {
        leaf_size: 3,
        ..BuildOptions::ENVIRONMENT
    };
    let built: Vec<_> = scenes
        .iter()
        .map(|sc| {
            (
                Environment::<18>::build(sc.parts.clone(), &opts).unwrap(),
                FlyingObject::<18>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap(),
                oracle_for(sc),
            )
        })
        .collect();
    let mut st = QueryState::new();
    let rounds = scenes.iter().map(|sc| sc.poses.len()).max().unwrap();
    for i in 0..rounds {
        for (sc, (env, obj, oracle)) in scenes.iter().zip(&built) {
            let Some(pose) = sc.poses.get(i) else {
                continue;
            };
            let r = env
                .collide(obj, pose, &QueryOptions::REPORT, &mut st)
                .unwrap();
            let got: Vec<_> = r.contacts.iter().map(|c| key(env.part_ids(), c)).collect();
            assert_eq!(got, oracle[i], "pose {i}: shared state answers differently");
        }
    }
}

#[test]
fn bad_epsilon_is_an_error() {
    let sc = scene(15);
    let env = Environment::<14>::build(sc.parts.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<14>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap();
    let mut st = QueryState::new();
    let with = |epsilon| QueryOptions {
        epsilon,
        ..QueryOptions::DETECT
    };
    let bad = [
        -1.0,
        -f64::MIN_POSITIVE,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    for eps in bad {
        assert!(
            env.collide(&obj, &Pose::IDENTITY, &with(eps), &mut st)
                .is_err(),
            "{eps}"
        );
    }
    // Zero of either sign and the largest finite epsilon are valid.
    for eps in [0.0, -0.0, f64::MAX] {
        assert!(
            env.collide(&obj, &Pose::IDENTITY, &with(eps), &mut st)
                .is_ok(),
            "{eps}"
        );
    }
}

/// Detect with the witness (the last contact re-tested first) against brute force on a
/// coherent flight, beside detect without it; one state shared by two environments of the
/// same object, so that witnesses from one meet the other (out of range or not).
#[test]
fn detect_witness_is_exact_and_survives_other_environments() {
    let sc = scene(40);
    let big = Environment::<18>::build(sc.parts.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let small =
        Environment::<18>::build(sc.parts[..1].to_vec(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<18>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap();
    let cold = QueryOptions {
        witness: false,
        ..QueryOptions::DETECT
    };
    let (mut own, mut shared, mut plain) =
        (QueryState::new(), QueryState::new(), QueryState::new());
    let (mut hits, mut plain_hits, mut contact_steps) = (0, 0, 0);
    let mut rng = Rng::new(41);
    let axis = rng.vec(-1.0, 1.0).normalize();
    for step in 0..240 {
        // A slow straight flight through the parts, turning a little each step.
        let t = step as f64;
        let pose = Pose::new(
            DMat3::from_axis_angle(axis, 0.01 * t),
            DVec3::new(-5.0 + 0.04 * t, 1.0 - 0.01 * t, 0.5),
        )
        .unwrap();
        for env in [&big, &small] {
            let expect: Vec<_> = brute_force_contacts(env, &obj, &pose, 0.0)
                .iter()
                .map(|c| key(env.part_ids(), c))
                .collect();
            contact_steps += usize::from(!expect.is_empty());
            for (state, options) in [(&mut shared, &QueryOptions::DETECT), (&mut plain, &cold)] {
                let r = env.collide(&obj, &pose, options, state).unwrap();
                assert_eq!(r.collides, !expect.is_empty(), "step {step}");
                if let Some(c) = r.contacts.first() {
                    assert!(expect.contains(&key(env.part_ids(), c)), "step {step}");
                }
                if options.witness {
                    hits += r.stats.witness_hits;
                } else {
                    plain_hits += r.stats.witness_hits;
                }
            }
            if std::ptr::eq(env, &big) {
                let r = env
                    .collide(&obj, &pose, &QueryOptions::DETECT, &mut own)
                    .unwrap();
                assert_eq!(r.collides, !expect.is_empty(), "step {step}");
                if r.stats.witness_hits == 1 {
                    assert_eq!(r.stats.nu, 0, "a witness hit re-bounds nothing");
                    assert_eq!(r.stats.np, 1);
                }
                hits += r.stats.witness_hits;
            }
        }
    }
    assert!(contact_steps > 40, "only {contact_steps} contact steps");
    assert!(hits > 20, "witness never used ({hits})");
    assert_eq!(plain_hits, 0, "witness used though switched off");
}

/// An environment of no parts is valid: it meets nothing in either mode, it saves and
/// loads back as itself, and a state moves between it and a full environment without harm.
#[test]
fn an_empty_environment_meets_nothing() {
    fn one<const K: usize>() {
        let empty = Environment::<K>::build(vec![], &BuildOptions::ENVIRONMENT).unwrap();
        assert_eq!((empty.part_count(), empty.triangle_count()), (0, 0));
        assert!(empty.bounds().is_empty());
        empty.validate().unwrap();
        let sc = scene(3);
        let full = Environment::<K>::build(sc.parts.clone(), &BuildOptions::ENVIRONMENT).unwrap();
        let obj = FlyingObject::<K>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap();
        let loaded = Environment::<K>::from_bytes(&empty.to_bytes()).unwrap();
        assert_eq!(loaded.part_count(), 0);
        let mut state = QueryState::new();
        state.prepare(&empty, &obj);
        let mut hits = 0;
        for pose in &sc.poses {
            for options in [QueryOptions::DETECT, QueryOptions::REPORT] {
                for env in [&empty, &loaded] {
                    let out = env.collide(&obj, pose, &options, &mut state).unwrap();
                    assert!(!out.collides && out.contacts.is_empty());
                    assert_eq!(out.stats.np, 0);
                }
                let out = full.collide(&obj, pose, &options, &mut state).unwrap();
                hits += usize::from(out.collides);
            }
        }
        assert!(hits > 0, "the full environment should be met");
    }
    one::<6>();
    one::<18>();
}

/// An object's first queries arrive from many threads at once, each with a state of its
/// own: what a query makes on first need, once per object or environment (a large node's
/// k-DOP corners for re-bounding by corners; a one-part environment's copy as a flying
/// object, when the object is the larger), is made once while the others wait, and every
/// answer equals brute force.
#[test]
fn first_queries_from_many_threads_answer_as_brute_force() {
    use rayon::prelude::*;
    let (report, _) = common::report_and_detect((kdop::Descent::Larger, kdop::Rebound::Corners));
    let check = |sc: &Scene| {
        let env = Environment::<18>::build(sc.parts.clone(), &BuildOptions::ENVIRONMENT).unwrap();
        let obj = FlyingObject::<18>::new(sc.object.clone(), &BuildOptions::FLYING).unwrap();
        let answers = common::on_threads(4, || {
            sc.poses
                .par_iter()
                .map(|pose| {
                    let mut state = QueryState::new();
                    let out = env.collide(&obj, pose, &report, &mut state).unwrap();
                    out.contacts
                        .iter()
                        .map(|c| key(env.part_ids(), c))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        });
        let oracle = oracle_for(sc);
        assert_eq!(answers, oracle);
        assert!(
            oracle.iter().any(|c| !c.is_empty()),
            "no contacts to compare"
        );
    };
    // Many parts, a fresh object: the corners are made by whichever query needs them first.
    let sc = welded_scene(11);
    check(&sc);
    // One small part, an object many times larger: the part flies in the object's frame
    // (the environment's flying copy is made for objects over 4 times its size).
    let mut rng = Rng::new(12);
    let big = Pose::new(DMat3::from_diagonal(DVec3::splat(8.0)), DVec3::ZERO).unwrap();
    let large = Scene {
        parts: vec![(kdop::scene::icosphere(0.5, 4).unwrap(), Pose::IDENTITY)],
        object: sc.object.transformed(&big).unwrap(),
        poses: (0..32).map(|_| random_pose(&mut rng, 6.0, false)).collect(),
    };
    let extent = |m: &Mesh| {
        let (lo, hi) = m.bounds();
        (hi - lo).max_element()
    };
    assert!(extent(&large.object) > 8.0 * extent(&large.parts[0].0));
    check(&large);
}
