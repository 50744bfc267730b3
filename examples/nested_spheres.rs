//! Two nested spheres (Klosowski et al. 1998, Tables 6-7), timing detect queries:
//! `cargo run --release --example nested_spheres -- [segments] [rings] [gap]`
//!
//! Environment variables: `RUNS` (queries, default 200), `ANGLE` (a rotation of the inner
//! sphere about z in radians, default 0: a pure translation), `ENV_LEAF`, `OBJ_LEAF`,
//! `ENV_RULE`, `OBJ_RULE` (axis rules by name: `splatter`, `sah`, ...).
use kdop::{BuildOptions, Environment, FlyingObject, Pose, QueryOptions, QueryState};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let seg: usize = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let rings: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(101);
    let gap: f64 = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(0.016);
    let outer = kdop::scene::uv_sphere(1.0, seg, rings).expect("sphere");
    let inner = kdop::scene::uv_sphere(1.0 - gap, seg, rings).expect("sphere");
    let n = outer.triangle_count();
    let leaf = |var: &str, default: u32| {
        std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let rule = |var: &str, default| match std::env::var(var) {
        Ok(name) => name.parse().unwrap_or_else(|e| panic!("{var}: {e}")),
        Err(_) => default,
    };
    let env_opts = BuildOptions {
        leaf_size: leaf("ENV_LEAF", BuildOptions::ENVIRONMENT.leaf_size),
        rule: rule("ENV_RULE", BuildOptions::ENVIRONMENT.rule),
        ..BuildOptions::ENVIRONMENT
    };
    let obj_opts = BuildOptions {
        leaf_size: leaf("OBJ_LEAF", BuildOptions::FLYING.leaf_size),
        rule: rule("OBJ_RULE", BuildOptions::FLYING.rule),
        ..BuildOptions::FLYING
    };
    let env = Environment::<18>::from_mesh(outer, &env_opts).expect("build");
    let obj = FlyingObject::<18>::new(inner, &obj_opts).expect("build");
    let mut st = QueryState::new();
    let t = std::time::Instant::now();
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let angle: f64 = std::env::var("ANGLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let mut stats = None;
    for i in 0..runs {
        // Two poses alternate so that every query re-bounds its nodes.
        let pose = Pose::new(
            glam::DMat3::from_rotation_z(angle),
            glam::DVec3::new(1e-9 * (i % 2) as f64, 0.0, 0.0),
        )
        .expect("pose");
        let r = env
            .collide(&obj, &pose, &QueryOptions::DETECT, &mut st)
            .expect("query");
        stats = Some(r.stats);
    }
    println!(
        "{n} + {n} triangles, gap {gap}: {:.2} ms per detect; {:?}",
        t.elapsed().as_secs_f64() * 1e3 / runs as f64,
        stats
    );
}
