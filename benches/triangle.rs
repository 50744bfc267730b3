//! Cp: one exact triangle–triangle test (Klosowski et al. 1998, §5.2.1: "100,000
//! triangle-triangle intersection queries, all of which had their bounding boxes overlap").
//!
//! `cargo bench --bench triangle`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::DVec3;
use kdop::scene::Rng;
use kdop::{
    Triangle, intersecting_pairs, intersecting_pairs_screened, triangles_intersect,
    triangles_intersect_screened,
};
use std::hint::black_box;

fn overlapping_boxes(rng: &mut Rng, n: usize, near_parallel: bool) -> Vec<(Triangle, Triangle)> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let c = rng.in_box(DVec3::ZERO, DVec3::ONE);
        let t1 = [c, c + rng.unit() * 0.3, c + rng.unit() * 0.3];
        let t2 = if near_parallel {
            // The same triangle moved a little along its normal and sideways: the nested
            // spheres' case (boxes overlap, planes nearly parallel, no contact).
            let n = (t1[1] - t1[0]).cross(t1[2] - t1[0]).normalize();
            let off = n * 0.01 + rng.unit() * 0.002;
            t1.map(|p| p + off)
        } else {
            let d = rng.in_box(DVec3::ZERO, DVec3::ONE);
            [d, d + rng.unit() * 0.3, d + rng.unit() * 0.3]
        };
        let lo1 = t1[0].min(t1[1]).min(t1[2]);
        let hi1 = t1[0].max(t1[1]).max(t1[2]);
        let lo2 = t2[0].min(t2[1]).min(t2[2]);
        let hi2 = t2[0].max(t2[1]).max(t2[2]);
        if lo1.cmple(hi2).all() && lo2.cmple(hi1).all() {
            out.push((t1, t2));
        }
    }
    out
}

/// Every pair of FCL's env/rob benchmark meshes whose boxes overlap, over random poses of the
/// robot (the pairs a traversal hands to the test), up to `n`.
fn fcl_pairs(n: usize) -> Option<Vec<(Triangle, Triangle)>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/meshes");
    let env = kdop::io::formats::load_mesh(dir.join("fcl_env.obj")).ok()?;
    let rob = kdop::io::formats::load_mesh(dir.join("fcl_rob.obj")).ok()?;
    let (lo, hi) = env.bounds();
    let mut rng = Rng::new(3);
    let et: Vec<Triangle> = (0..env.triangle_count())
        .filter_map(|i| env.triangle(i))
        .collect();
    let mut out = Vec::new();
    while out.len() < n {
        let pose =
            kdop::Pose::new(glam::DMat3::from_quat(rng.rotation()), rng.in_box(lo, hi)).ok()?;
        for i in 0..rob.triangle_count() {
            let t = rob.triangle(i)?.map(|p| pose.transform_point(p));
            let (tl, th) = (t[0].min(t[1]).min(t[2]), t[0].max(t[1]).max(t[2]));
            for e in &et {
                let (el, eh) = (e[0].min(e[1]).min(e[2]), e[0].max(e[1]).max(e[2]));
                if tl.cmple(eh).all() && el.cmple(th).all() {
                    out.push((*e, t));
                }
            }
        }
    }
    out.truncate(n);
    Some(out)
}

fn bench(c: &mut Criterion) {
    let mut rng = Rng::new(7);
    let mut g = c.benchmark_group("triangle_test");
    let mut sets = vec![
        (
            "random_box_overlap",
            overlapping_boxes(&mut rng, 100_000, false),
        ),
        ("near_parallel", overlapping_boxes(&mut rng, 100_000, true)),
    ];
    match fcl_pairs(100_000) {
        Some(p) => sets.insert(0, ("fcl_env_rob_box_overlap", p)),
        None => eprintln!("SKIPPED fcl pairs: ../shared/data/meshes is absent"),
    }
    for (name, pairs) in sets {
        let hits = pairs
            .iter()
            .filter(|(a, b)| triangles_intersect(a, b))
            .count();
        eprintln!("{name}: {hits} of {} pairs intersect", pairs.len());
        // Each form streamed over all pairs (14 MB) and on a cache-resident slice (2,000
        // pairs, 288 KB), to separate the test's own cost from streaming pairs through
        // memory (and from a branch predictor that learns 2,000 repeated outcomes).
        let hot = &pairs[..2000];
        for (suffix, set) in [("", &pairs[..]), ("_in_cache", hot)] {
            g.throughput(Throughput::Elements(set.len() as u64));
            // One call per pair: `triangles_intersect` computes both boxes first;
            // `_screened` skips that, as queries do after their cached box test.
            per_pair(
                &mut g,
                &format!("exact{suffix}"),
                name,
                set,
                triangles_intersect,
            );
            let id = format!("screened{suffix}");
            per_pair(&mut g, &id, name, set, triangles_intersect_screened);
            // The batch forms: 64 pairs at a time without a branch on each outcome (the
            // form queries use on a wide flying leaf).
            batched(
                &mut g,
                &format!("batch{suffix}"),
                name,
                set,
                intersecting_pairs,
            );
            let id = format!("screened_batch{suffix}");
            batched(&mut g, &id, name, set, intersecting_pairs_screened);
        }
    }
    g.finish();
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Times `test` called once per pair of `set`.
fn per_pair(
    g: &mut Group,
    id: &str,
    name: &str,
    set: &[(Triangle, Triangle)],
    test: impl Fn(&Triangle, &Triangle) -> bool,
) {
    g.bench_with_input(BenchmarkId::new(id, name), set, |b, s| {
        b.iter(|| {
            s.iter()
                .filter(|(x, y)| test(black_box(x), black_box(y)))
                .count()
        })
    });
}

/// Times `batch` over all of `set` at once.
fn batched(
    g: &mut Group,
    id: &str,
    name: &str,
    set: &[(Triangle, Triangle)],
    batch: impl Fn(&[(Triangle, Triangle)], &mut Vec<usize>),
) {
    let mut found = Vec::with_capacity(set.len());
    g.bench_with_input(BenchmarkId::new(id, name), set, |b, s| {
        b.iter(|| {
            found.clear();
            batch(black_box(s), &mut found);
            found.len()
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
