use kdop::{BuildOptions, Environment, FlyingObject, Pose, QueryOptions, QueryState};
use std::time::Instant;
fn main() {
    for (seg, rings) in [(64, 33), (200, 101), (400, 201)] {
        let outer = kdop::scene::uv_sphere(1.0, seg, rings).unwrap();
        let inner = kdop::scene::uv_sphere(1.0 - 0.016, seg, rings).unwrap();
        let n = outer.triangle_count();
        let env = Environment::<18>::from_mesh(outer, &BuildOptions::ENVIRONMENT).unwrap();
        let obj = FlyingObject::<18>::new(inner, &BuildOptions::FLYING).unwrap();
        let mut st = QueryState::new();
        let mut best = f64::MAX;
        let mut s = None;
        for i in 0..10 {
            let pose =
                Pose::from_translation(glam::DVec3::new(1e-9 * (i % 2) as f64, 0.0, 0.0)).unwrap();
            let t = Instant::now();
            let r = env
                .collide(&obj, &pose, &QueryOptions::DETECT, &mut st)
                .unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            s = Some(r.stats);
        }
        let s = s.unwrap();
        let ops = s.nv + s.np + s.nu;
        println!(
            "{n} tris: {:.2} ms, nv {} np {} nu {}: {:.1} ns per op",
            best * 1e3,
            s.nv,
            s.np,
            s.nu,
            best * 1e9 / ops as f64
        );
    }
}
