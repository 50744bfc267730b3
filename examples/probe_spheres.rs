use kdop::{BuildOptions, Descent, Environment, FlyingObject, Pose, QueryOptions, QueryState};
use std::time::Instant;
fn run<const K: usize>(leaf: u32, descent: Descent) {
    let outer = kdop::scene::uv_sphere(1.0, 200, 101).unwrap();
    let inner = kdop::scene::uv_sphere(1.0 - 0.016, 200, 101).unwrap();
    let o = BuildOptions {
        leaf_size: leaf,
        ..BuildOptions::ENVIRONMENT
    };
    let env = Environment::<K>::from_mesh(outer, &o).unwrap();
    let obj = FlyingObject::<K>::new(inner, &BuildOptions::FLYING).unwrap();
    let mut st = QueryState::new();
    let mut best = f64::MAX;
    let mut stats = None;
    let q = QueryOptions {
        descent,
        ..QueryOptions::DETECT
    };
    for i in 0..20 {
        let pose = if i % 2 == 0 {
            Pose::IDENTITY
        } else {
            Pose::from_translation(glam::DVec3::new(1e-9, 0.0, 0.0)).unwrap()
        };
        let t = Instant::now();
        let r = env.collide(&obj, &pose, &q, &mut st).unwrap();
        let el = t.elapsed().as_secs_f64() * 1e3;
        assert!(!r.collides);
        best = best.min(el);
        stats = Some(r.stats);
    }
    println!(
        "k={K} leaf {leaf} {descent:?}: detect {best:.2} ms  {:?}",
        stats.unwrap()
    );
}
fn main() {
    for d in [Descent::EnvironmentFirst, Descent::Larger] {
        run::<18>(4, d);
    }
    run::<6>(4, Descent::Larger);
    run::<14>(4, Descent::Larger);
    run::<26>(4, Descent::Larger);
}
