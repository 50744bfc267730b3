use kdop::{BuildOptions, Environment, FlyingObject, Pose, QueryOptions, QueryState};
fn main() {
    let outer = kdop::scene::uv_sphere(1.0, 200, 101).unwrap();
    let inner = kdop::scene::uv_sphere(1.0 - 0.016, 200, 101).unwrap();
    let env = Environment::<18>::from_mesh(outer, &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<18>::new(inner, &BuildOptions::FLYING).unwrap();
    let mut st = QueryState::new();
    let t = std::time::Instant::now();
    for i in 0..300 {
        let q = glam::DQuat::from_rotation_z(0.001 * i as f64);
        let pose = Pose::new(glam::DMat3::from_quat(q), glam::DVec3::ZERO).unwrap();
        let r = env
            .collide(&obj, &pose, &QueryOptions::DETECT, &mut st)
            .unwrap();
        assert!(!r.collides);
    }
    println!(
        "{:.2} ms per query (rotating)",
        t.elapsed().as_secs_f64() * 1e3 / 300.0
    );
}
