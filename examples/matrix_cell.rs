//! One cell of `kdop bench matrix`, pose by pose, for profiling: the environment and
//! flying object as mesh files, the matrix's seeded near poses, and each pose's time and
//! work (Nv / Np / Nu) in detect or report mode over several passes.
//! `cargo run --release --example matrix_cell -- ENV_FILE OBJECT_FILE [poses] [passes]`
//!
//! Environment variables: `MODE` (`detect`, default, or `report`), `K` (6, 14, 18
//! default, 26), `SEED` (the matrix's `--seed`, default 1), `POSE` (only that pose, e.g.
//! to profile it over many passes; the witness is then off, so every pass is cold),
//! `PAIR=objects` (the environment's mesh as a second flying object at the identity pose,
//! queried by `FlyingObject::collide_with` with the flying object first, as the matrix's
//! object-against-object row), `DEFORMED=1` (the flying object grown by a deformation
//! and brought back, `SHRINK`, `MARGIN` and `REBUILT` as commented where they are read),
//! `LEAF` (the flying object's leaf size, default `BuildOptions::FLYING`'s 4; 16 is
//! `BuildOptions::DEFORMING`'s).
use kdop::{BuildOptions, Environment, FlyingObject, Pose, QueryOptions, QueryState, QueryStats};
use std::time::Instant;

fn file_name(p: &str) -> String {
    std::path::Path::new(p)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn run<const K: usize>(env_file: &str, obj_file: &str, poses: usize, passes: usize) {
    let env_mesh = kdop::io::formats::load_mesh(env_file).expect("environment mesh");
    let obj_mesh = kdop::io::formats::load_mesh(obj_file).expect("object mesh");
    let seed: u64 = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let seed = kdop::scene::cell_seed(&file_name(env_file), &file_name(obj_file), seed);
    let mut poses = kdop::scene::near_poses(&env_mesh, &obj_mesh, poses, seed).expect("poses");
    if let Some(i) = std::env::var("POSE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        poses = vec![poses[i]];
    }
    let pair = std::env::var("PAIR").as_deref() == Ok("objects");
    let still = pair.then(|| FlyingObject::<K>::new(env_mesh.clone(), &BuildOptions::FLYING));
    let still = still.transpose().expect("still object");
    let env = Environment::<K>::from_mesh(env_mesh, &BuildOptions::ENVIRONMENT).expect("env");
    let leaf_size = std::env::var("LEAF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(BuildOptions::FLYING.leaf_size);
    let fly = BuildOptions {
        leaf_size,
        ..BuildOptions::FLYING
    };
    let mut obj = FlyingObject::<K>::new(obj_mesh, &fly).expect("object");
    if std::env::var("DEFORMED").as_deref() == Ok("1") {
        // What a deformable object's hierarchy keeps (bounds enlarged by the margin, re-made
        // only when the geometry leaves them) queried instead of a fresh build: the object
        // grown 10 % about its centre, then scaled by `SHRINK` (1, its rest shape, by
        // default), or `TWIST` (below); `REBUILT` then builds it afresh from that shape,
        // the reference.
        let rest = obj.mesh().vertices().to_vec();
        let c = rest.iter().copied().sum::<glam::DVec3>() / rest.len() as f64;
        let scaled =
            |s: f64| -> Vec<glam::DVec3> { rest.iter().map(|&v| c + (v - c) * s).collect() };
        let var = |name: &str, default: f64| {
            std::env::var(name)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(default)
        };
        let (margin, shrink) = (var("MARGIN", 0.05), var("SHRINK", 1.0));
        let twist = var("TWIST", 0.0) as usize;
        if twist > 0 {
            // `TWIST` frames wound about z through the centre, a fifth of a turn more per
            // frame over the object's height, each renewed as the world renews
            // (`renew(2, 2^18)`), and the shape then queried as it ends.
            let (lo, hi) = rest.iter().fold((c, c), |(l, h), &v| (l.min(v), h.max(v)));
            let height = (hi.z - lo.z).max(f64::MIN_POSITIVE);
            for frame in 1..=twist {
                let turns = frame as f64 * 0.2;
                let verts: Vec<glam::DVec3> = rest
                    .iter()
                    .map(|&p| {
                        let q = p - c;
                        let a = turns * std::f64::consts::TAU * q.z / height;
                        c + glam::DVec3::new(
                            q.x * a.cos() - q.y * a.sin(),
                            q.x * a.sin() + q.y * a.cos(),
                            q.z,
                        )
                    })
                    .collect();
                obj.deform(&verts, margin).expect("twist");
                obj.renew(2.0, 1 << 18);
            }
            eprintln!("twisted over {twist} frames");
        } else {
            let a = obj.deform(&scaled(1.1), margin).expect("deform");
            let b = obj.deform(&scaled(shrink), margin).expect("deform back");
            eprintln!(
                "grown to 1.1, then {shrink}: {} then {} of {} nodes refit",
                a.refit, b.refit, b.nodes
            );
        }
        if std::env::var("REBUILT").is_ok() {
            obj = FlyingObject::<K>::new(obj.mesh(), &fly).expect("rebuilt");
        }
    }
    let mut options = match std::env::var("MODE").as_deref() {
        Ok("report") => QueryOptions::REPORT,
        _ => QueryOptions::DETECT,
    };
    // One pose again and again would meet its own witness; each pass is cold instead.
    options.witness = poses.len() > 1;
    if let Some(i) = std::env::var("FRESH")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        // One pose again and again, each on a freshly prepared state: the first query's cost.
        let (mut prep, mut query) = (0.0, 0.0);
        for _ in 0..passes {
            let t0 = Instant::now();
            let mut state = QueryState::new();
            state.prepare(&env, &obj);
            let t1 = Instant::now();
            env.collide(&obj, &poses[i], &options, &mut state)
                .expect("query");
            prep += (t1 - t0).as_secs_f64();
            query += t1.elapsed().as_secs_f64();
        }
        let each = |t: f64| t * 1e6 / passes as f64;
        println!(
            "fresh state, pose {i}: prepare {:.1} us, query {:.1} us",
            each(prep),
            each(query)
        );
        return;
    }
    let mut state = QueryState::new();
    match &still {
        Some(still) => state.prepare_objects(&obj, still),
        None => state.prepare(&env, &obj),
    }
    for pass in 0..passes {
        let mut total = 0.0;
        for (i, pose) in poses.iter().enumerate() {
            let t0 = Instant::now();
            let (collides, stats): (bool, QueryStats) = match &still {
                Some(still) => {
                    let r = obj
                        .collide_with(pose, still, &Pose::IDENTITY, &options, &mut state)
                        .expect("query");
                    (r.collides, r.stats)
                }
                None => {
                    let r = env
                        .collide(&obj, pose, &options, &mut state)
                        .expect("query");
                    (r.collides, r.stats)
                }
            };
            let us = t0.elapsed().as_secs_f64() * 1e6;
            total += us;
            if pass == 0 || pass + 1 == passes {
                println!(
                    "pass {pass} pose {i:3}: {us:9.1} us  collides {:5}  Nv {:7} Np {:7} Nu {:7} contacts {}",
                    collides, stats.nv, stats.np, stats.nu, stats.contacts
                );
            }
        }
        println!("pass {pass}: mean {:.1} us", total / poses.len() as f64);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: matrix_cell ENV_FILE OBJECT_FILE [poses] [passes]");
        std::process::exit(2);
    }
    let poses = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let passes = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    match std::env::var("K")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(18)
    {
        6 => run::<6>(&args[0], &args[1], poses, passes),
        14 => run::<14>(&args[0], &args[1], poses, passes),
        26 => run::<26>(&args[0], &args[1], poses, passes),
        _ => run::<18>(&args[0], &args[1], poses, passes),
    }
}
