use kdop::{BuildOptions, Environment, FlyingObject, Pose, QueryOptions, QueryState};
fn main() {
    let outer = kdop::scene::uv_sphere(1.0, 200, 101).unwrap();
    let inner = kdop::scene::uv_sphere(1.0 - 0.016, 200, 101).unwrap();
    let env = Environment::<18>::from_mesh(outer, &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<18>::new(inner, &BuildOptions::FLYING).unwrap();
    let mut st = QueryState::new();
    let t = std::time::Instant::now();
    let mut s = None;
    for i in 0..300 {
        let pose =
            Pose::from_translation(glam::DVec3::new(1e-9 * (i % 2) as f64, 0.0, 0.0)).unwrap();
        let r = env
            .collide(&obj, &pose, &QueryOptions::DETECT, &mut st)
            .unwrap();
        assert!(!r.collides);
        s = Some(r.stats);
    }
    println!(
        "{:.2} ms per query (identity) {:?}",
        t.elapsed().as_secs_f64() * 1e3 / 300.0,
        s.unwrap()
    );
}
