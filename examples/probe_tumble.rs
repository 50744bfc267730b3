use kdop::{BuildOptions, Environment, FlyingObject, Pose, QueryOptions, QueryState};
use std::time::Instant;
fn main() {
    let obj = FlyingObject::<18>::new(kdop::scene::demo_object().unwrap(), &BuildOptions::FLYING)
        .unwrap();
    // Force tumbling of every node: an environment that overlaps everything (a big box around the object).
    let env = Environment::<18>::from_mesh(
        kdop::scene::box_mesh(glam::DVec3::splat(0.01), 1, false).unwrap(),
        &BuildOptions::ENVIRONMENT,
    )
    .unwrap();
    let _ = env;
    let nodes = obj.bvh().node_count();
    println!("object nodes {nodes}, mem {} bytes", obj.memory_bytes());
    let mut st = QueryState::new();
    let mut rng = kdop::scene::Rng::new(1);
    let t = Instant::now();
    let mut nu = 0;
    for _ in 0..2000 {
        let pose = Pose::new(glam::DMat3::from_quat(rng.rotation()), glam::DVec3::ZERO).unwrap();
        let r = env
            .collide(&obj, &pose, &QueryOptions::REPORT, &mut st)
            .unwrap();
        nu += r.stats.nu;
    }
    let el = t.elapsed().as_secs_f64();
    println!(
        "{nu} tumbles, {:.1} ns per query-with-tumbles: {:.1} ns per tumble (upper bound)",
        el * 1e9 / 2000.0,
        el * 1e9 / nu as f64
    );
}
