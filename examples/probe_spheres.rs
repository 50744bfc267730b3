use kdop::{BuildOptions, Descent, Environment, FlyingObject, Pose, QueryOptions, QueryState};
use std::time::Instant;
fn run<const K: usize>(leaf: u32, fleaf: u32, descent: Descent) {
    let outer = kdop::scene::uv_sphere(1.0, 200, 101).unwrap();
    let inner = kdop::scene::uv_sphere(1.0 - 0.016, 200, 101).unwrap();
    let env = Environment::<K>::from_mesh(
        outer,
        &BuildOptions {
            leaf_size: leaf,
            ..BuildOptions::ENVIRONMENT
        },
    )
    .unwrap();
    let obj = FlyingObject::<K>::new(
        inner,
        &BuildOptions {
            leaf_size: fleaf,
            ..BuildOptions::FLYING
        },
    )
    .unwrap();
    let mut st = QueryState::new();
    let q = QueryOptions {
        descent,
        ..QueryOptions::DETECT
    };
    for (name, rot) in [("identity", 0.0), ("rotated", 1e-3)] {
        let mut best = f64::MAX;
        let mut stats = None;
        for i in 0..16 {
            let r = glam::DMat3::from_rotation_z(rot * (1 + i % 2) as f64);
            let pose = Pose::new(r, glam::DVec3::new(1e-9 * (i % 2) as f64, 0.0, 0.0)).unwrap();
            let t = Instant::now();
            let res = env.collide(&obj, &pose, &q, &mut st).unwrap();
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
            assert!(!res.collides);
            stats = Some(res.stats);
        }
        let s = stats.unwrap();
        println!(
            "k={K} env leaf {leaf} obj leaf {fleaf} {descent:?} {name}: {best:.2} ms  nv {} np {} nu {}  env {} B/tri",
            s.nv,
            s.np,
            s.nu,
            env.memory_bytes() / env.triangle_count()
        );
    }
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let leaves: Vec<(u32, u32)> = if args.len() > 2 {
        vec![(args[1].parse().unwrap(), args[2].parse().unwrap())]
    } else {
        vec![(2, 4), (4, 4), (8, 4), (8, 8), (16, 8)]
    };
    for (l, f) in leaves {
        run::<18>(l, f, Descent::Larger);
    }
}
