//! Builds one mesh file's environment hierarchy on one thread and prints the time:
//! `cargo run --release --example build_one -- ../shared/data/meshes/icecream_dispenser.obj`
fn main() {
    let path = std::env::args().nth(1).expect("usage: build_one MESH");
    let mesh = kdop::io::formats::load_mesh(&path).expect("readable mesh");
    let n = mesh.triangle_count();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("thread pool");
    // `RULE=splatter` (or another rule's name) instead of the default rule.
    let options = kdop::BuildOptions {
        rule: match std::env::var("RULE") {
            Ok(name) => name.parse().expect("RULE: an axis rule's name"),
            Err(_) => kdop::BuildOptions::ENVIRONMENT.rule,
        },
        ..kdop::BuildOptions::ENVIRONMENT
    };
    for _ in 0..5 {
        let m = mesh.clone();
        let t = std::time::Instant::now();
        let env = pool
            .install(|| kdop::Environment::<18>::from_mesh(m, &options))
            .expect("build");
        let s = t.elapsed().as_secs_f64();
        println!(
            "{n} triangles in {:.1} ms: {:.2} M triangles/s ({} nodes)",
            s * 1e3,
            n as f64 / s / 1e6,
            env.part(env.part_ids()[0])
                .map_or(0, |p| p.bvh().node_count())
        );
    }
}
