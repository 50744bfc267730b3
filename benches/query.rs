//! Whole queries: the nested spheres of Tables 6–7 (parallel close proximity), the
//! single-object billiard flight (§5.2.2), and one object against another as the world
//! checks a pair, beside the same object against the same mesh as an environment.
//!
//! `cargo bench --bench query`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use glam::{DMat3, DVec3};
use kdop::scene::{Billiard, Rng, demo_environment, demo_object, uv_sphere};
use kdop::{BuildOptions, Descent, Environment, FlyingObject, Pose, QueryOptions, QueryState};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Two spheres of 40,000 triangles (200 x 101), the inner 0.016 smaller: no contact.
fn nested<const K: usize>(c: &mut Criterion) {
    let outer = uv_sphere(1.0, 200, 101).unwrap();
    let inner = uv_sphere(1.0 - 0.016, 200, 101).unwrap();
    let env = Environment::<K>::from_mesh(outer, &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<K>::new(inner, &BuildOptions::FLYING).unwrap();
    let mut g = c.benchmark_group(format!("nested_spheres_40k_k{K}"));
    g.sample_size(10);
    for descent in [Descent::Larger, Descent::EnvironmentFirst] {
        for (name, angle) in [("identity", 0.0), ("rotated_1mrad", 1e-3)] {
            let q = QueryOptions {
                descent,
                ..QueryOptions::DETECT
            };
            let mut st = QueryState::new();
            // Two poses alternate so that every query re-bounds its nodes.
            let poses = [
                Pose::new(DMat3::from_rotation_z(angle), DVec3::ZERO).unwrap(),
                Pose::new(DMat3::from_rotation_z(angle), DVec3::new(1e-9, 0.0, 0.0)).unwrap(),
            ];
            let r = env.collide(&obj, &poses[0], &q, &mut st).unwrap();
            assert!(!r.collides);
            eprintln!("k={K} {descent:?} {name}: {:?}", r.stats);
            let mut i = 0;
            g.bench_function(BenchmarkId::new(format!("{descent:?}"), name), |b| {
                b.iter(|| {
                    i += 1;
                    env.collide(&obj, black_box(&poses[i % 2]), &q, &mut st)
                        .unwrap()
                        .collides
                })
            });
        }
    }
    g.finish();
}

/// Mean time of one check along 2,000 steps of the demo flight.
fn flight<const K: usize>(c: &mut Criterion) {
    let env =
        Environment::<K>::build(demo_environment(1).unwrap(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<K>::new(demo_object().unwrap(), &BuildOptions::FLYING).unwrap();
    let mut st = QueryState::new();
    let mut rng = Rng::new(5);
    let start = loop {
        let p = Pose::new(
            DMat3::from_quat(rng.rotation()),
            rng.in_box(DVec3::splat(-40.0), DVec3::splat(40.0)),
        )
        .unwrap();
        if !env
            .collide(&obj, &p, &QueryOptions::DETECT, &mut st)
            .unwrap()
            .collides
        {
            break p;
        }
    };
    let (p0, q0) = (start.translation(), glam::DQuat::from_mat3(&start.linear()));
    let mut g = c.benchmark_group(format!("demo_flight_k{K}"));
    g.sample_size(10);
    for (name, opts) in [
        ("report", QueryOptions::REPORT),
        ("detect", QueryOptions::DETECT),
    ] {
        g.bench_function(BenchmarkId::new("per_check", name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut fl = Billiard::new(
                        3,
                        p0,
                        q0,
                        0.3,
                        0.03,
                        (DVec3::splat(-42.0), DVec3::splat(42.0)),
                    );
                    let t = Instant::now();
                    for _ in 0..2000 {
                        let pose = fl.step();
                        if env.collide(&obj, &pose, &opts, &mut st).unwrap().collides {
                            fl.bounce();
                        }
                    }
                    total += t.elapsed() / 2000;
                }
                total
            })
        });
    }
    g.finish();
}

/// The flight's knot (6,720 triangles) at 64 near poses against a 5,120-triangle
/// wrinkled torus: as an environment (`Environment::collide`), and as another object
/// (`FlyingObject::collide_with`) at the identity and at a turned, moved placement (both
/// posed, as the world checks a pair); report mode, mean time per query over the poses.
fn object_pairs<const K: usize>(c: &mut Criterion) {
    let knot = demo_object().unwrap();
    let ball = kdop::scene::wrinkled_torus(6.0, 2.5, 80, 32, 0.3, 7, 5).unwrap();
    let poses = kdop::scene::near_poses(&ball, &knot, 64, 9).unwrap();
    let env = Environment::<K>::from_mesh(ball.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let a = FlyingObject::<K>::new(knot, &BuildOptions::FLYING).unwrap();
    let b = FlyingObject::<K>::new(ball, &BuildOptions::FLYING).unwrap();
    let placed = Pose::new(DMat3::from_rotation_y(0.7), DVec3::new(30.0, -5.0, 2.0)).unwrap();
    let mut st = QueryState::new();
    let q = QueryOptions::REPORT;
    // The same contacts every way, and some of them.
    let mut total = 0;
    for p in &poses {
        let e = env.collide(&a, p, &q, &mut st).unwrap().contacts.len();
        let o = a
            .collide_with(p, &b, &Pose::IDENTITY, &q, &mut st)
            .unwrap()
            .contacts
            .len();
        assert_eq!(e, o);
        total += e;
    }
    assert!(total > 0);
    let world_poses: Vec<Pose> = poses.iter().map(|p| placed.after(p).unwrap()).collect();
    let mut g = c.benchmark_group(format!("object_pairs_k{K}"));
    g.sample_size(10);
    let mut time = |name: &str, query: &mut dyn FnMut(usize)| {
        g.bench_function(name, |bench| {
            bench.iter_custom(|iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    for i in 0..poses.len() {
                        query(i);
                    }
                }
                t.elapsed() / poses.len() as u32
            })
        });
    };
    time("environment", &mut |i| {
        black_box(env.collide(&a, &poses[i], &q, &mut st).unwrap().collides);
    });
    let mut st2 = QueryState::new();
    time("object_identity", &mut |i| {
        let r = a.collide_with(&poses[i], &b, &Pose::IDENTITY, &q, &mut st2);
        black_box(r.unwrap().collides);
    });
    let mut st3 = QueryState::new();
    time("object_placed", &mut |i| {
        let r = a.collide_with(&world_poses[i], &b, &placed, &q, &mut st3);
        black_box(r.unwrap().collides);
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    object_pairs::<18>(c);
    nested::<6>(c);
    nested::<14>(c);
    nested::<18>(c);
    nested::<26>(c);
    flight::<6>(c);
    flight::<14>(c);
    flight::<18>(c);
    flight::<26>(c);
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
