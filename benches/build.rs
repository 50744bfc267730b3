//! Hierarchy construction (Klosowski et al. 1998, Table 3 and §5 "Memory Requirements").
//!
//! `cargo bench --bench build`
//!
//! - build throughput, one thread, 18-DOP, splatter at the mean (the mark) and the
//!   default surface-area rule;
//! - the four axis rules on one mesh, one thread;
//! - bytes per environment triangle for each k at the default settings (printed);
//! - loading a saved hierarchy against building it.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kdop::scene::demo_environment;
use kdop::{AxisRule, BuildOptions, Environment, Mesh, Pose, SplitPoint};
use std::hint::black_box;

fn one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(f)
}

fn real(name: &str) -> Option<Mesh> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/meshes")
        .join(name);
    match kdop::io::formats::load_mesh(&p) {
        Ok(m) => Some(m),
        Err(_) => {
            eprintln!("SKIPPED {name}: ../shared/data/meshes is absent");
            None
        }
    }
}

fn memory_table() {
    fn bytes<const K: usize>(parts: &[(Mesh, Pose)]) -> f64 {
        let e = Environment::<K>::build(parts.to_vec(), &BuildOptions::ENVIRONMENT).unwrap();
        e.memory_bytes() as f64 / e.triangle_count() as f64
    }
    let row = |name: &str, parts: &[(Mesh, Pose)]| {
        eprintln!(
            "memory, {name}: k=6 {:.1}, k=14 {:.1}, k=18 {:.1}, k=26 {:.1} bytes per triangle",
            bytes::<6>(parts),
            bytes::<14>(parts),
            bytes::<18>(parts),
            bytes::<26>(parts)
        );
    };
    let demo = demo_environment(1).unwrap();
    let tris: usize = demo.iter().map(|(m, _)| m.triangle_count()).sum();
    row(
        &format!("demo environment ({tris} triangles, default options)"),
        &demo,
    );
    for name in ["stanford_bunny.obj", "icecream_dispenser.obj"] {
        if let Some(m) = real(name) {
            row(name, &[(m, Pose::IDENTITY)]);
        }
    }
}

fn bench(c: &mut Criterion) {
    memory_table();
    let mut g = c.benchmark_group("build_one_thread");
    g.sample_size(10);
    let demo = demo_environment(1).unwrap();
    let demo_tris: usize = demo.iter().map(|(m, _)| m.triangle_count()).sum();
    g.throughput(Throughput::Elements(demo_tris as u64));
    // The mark is for splatter at the mean; the default (surface-area) rule is
    // timed beside it.
    for (name, rule) in [
        ("k18_splatter_mean", AxisRule::Splatter),
        ("k18_default_surface_area", AxisRule::SurfaceArea),
    ] {
        let opts = BuildOptions {
            rule,
            split: SplitPoint::Mean,
            ..BuildOptions::ENVIRONMENT
        };
        g.throughput(Throughput::Elements(demo_tris as u64));
        g.bench_function(BenchmarkId::new(name, "demo_environment"), |b| {
            b.iter(|| {
                one_thread(|| Environment::<18>::build(black_box(demo.clone()), &opts).unwrap())
            })
        });
        if let Some(m) = real("icecream_dispenser.obj") {
            g.throughput(Throughput::Elements(m.triangle_count() as u64));
            g.bench_function(BenchmarkId::new(name, "icecream_dispenser"), |b| {
                b.iter(|| {
                    one_thread(|| {
                        Environment::<18>::from_mesh(black_box(m.clone()), &opts).unwrap()
                    })
                })
            });
        }
    }
    g.finish();

    // Table 3: the four axis rules (one thread, 18-DOP, mean) on a 6,400-triangle knot.
    if let Some(m) = real("trefoil_knot.obj") {
        let mut g = c.benchmark_group("build_rules_one_thread_trefoil");
        g.sample_size(10);
        g.throughput(Throughput::Elements(m.triangle_count() as u64));
        for rule in AxisRule::ALL {
            let o = BuildOptions {
                rule,
                split: SplitPoint::Mean,
                ..BuildOptions::ENVIRONMENT
            };
            g.bench_function(BenchmarkId::new("k18", format!("{rule:?}")), |b| {
                b.iter(|| {
                    one_thread(|| Environment::<18>::from_mesh(black_box(m.clone()), &o).unwrap())
                })
            });
        }
        g.finish();
    }

    // §5: "our software has the option to store the environment hierarchy to a binary file".
    let mut g = c.benchmark_group("save_load");
    g.sample_size(10);
    let env = Environment::<18>::build(demo.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let bytes = env.to_bytes();
    eprintln!("saved demo environment: {} bytes", bytes.len());
    g.bench_function("k18_load_demo_environment", |b| {
        b.iter(|| Environment::<18>::from_bytes(black_box(&bytes)).unwrap())
    });
    g.bench_function("k18_build_demo_environment", |b| {
        b.iter(|| {
            Environment::<18>::build(black_box(demo.clone()), &BuildOptions::ENVIRONMENT).unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
