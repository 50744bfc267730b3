//! Table 1 of Klosowski et al. 1998: Cv, the cost of one k-DOP overlap test, and Cu, the
//! cost of re-bounding ("tumbling") one flying node, for k = 6, 14, 18, 26; and §4.4's
//! question of the order in which to test the intervals.
//!
//! `cargo bench --bench dop`
//!
//! The pairs are the ones that matter: k-DOPs of the demo environment's nodes (every level)
//! against k-DOPs of the flying object's nodes placed among them, half of them kept because
//! their bounding boxes overlap (so the diagonal directions decide), half with disjoint
//! boxes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{DMat3, DVec3};
use kdop::scene::{Rng, demo_environment, demo_object};
use kdop::{BuildOptions, Dop, Environment, FlyingObject, OverlapOrder, Pose, Rebound};
use std::hint::black_box;

fn pairs<const K: usize>(n: usize) -> (Vec<(Dop<K>, Dop<K>)>, FlyingObject<K>) {
    let env =
        Environment::<K>::build(demo_environment(1).unwrap(), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<K>::new(demo_object().unwrap(), &BuildOptions::FLYING).unwrap();
    let env_bounds: Vec<Dop<K>> = env
        .part_ids()
        .iter()
        .filter_map(|&id| env.part(id))
        .flat_map(|p| p.bvh().bounds().copied().collect::<Vec<_>>())
        .collect();
    let mut rng = Rng::new(11);
    let mut placed = Vec::new();
    let (mut boxed, mut apart) = (Vec::new(), Vec::new());
    let boxes = |a: &Dop<K>, b: &Dop<K>| (0..3).all(|i| a.lo(i) <= b.hi(i) && b.lo(i) <= a.hi(i));
    while boxed.len() < n / 2 || apart.len() < n / 2 {
        let pose = Pose::new(
            DMat3::from_quat(rng.rotation()),
            rng.in_box(DVec3::splat(-45.0), DVec3::splat(45.0)),
        )
        .unwrap();
        obj.placed_bounds(&pose, Rebound::Corners, &mut placed);
        for _ in 0..2000 {
            let a = env_bounds[(rng.next_u64() % env_bounds.len() as u64) as usize];
            let b = placed[(rng.next_u64() % placed.len() as u64) as usize];
            if boxes(&a, &b) {
                if boxed.len() < n / 2 {
                    boxed.push((a, b));
                }
            } else if apart.len() < n / 2 {
                apart.push((a, b));
            }
        }
    }
    boxed.extend(apart);
    // Interleave so that branch prediction cannot learn the mix.
    let mut v = boxed;
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    (v, obj)
}

fn cv<const K: usize>(c: &mut Criterion) {
    let (pairs, obj) = pairs::<K>(100_000);
    let overlapping = pairs.iter().filter(|(a, b)| a.overlaps(b)).count();
    // §4.4: how many interval tests an early exit needs on average, per order.
    for (name, order) in [
        ("natural", OverlapOrder::natural(K)),
        ("diagonals_first", OverlapOrder::diagonals_first(K)),
    ] {
        let tests: usize = pairs
            .iter()
            .map(|(a, b)| {
                order
                    .indices()
                    .iter()
                    .position(|&i| a.lo(i) > b.hi(i) || b.lo(i) > a.hi(i))
                    .map_or(K / 2, |p| p + 1)
            })
            .sum();
        eprintln!(
            "k={K}: {overlapping} of {} pairs overlap; {name} order {:?}: {:.2} interval tests per pair",
            pairs.len(),
            order.indices(),
            tests as f64 / pairs.len() as f64
        );
    }
    // Two working sets: 100,000 pairs streamed from memory (bandwidth-bound: 14 MB for
    // k = 18), and 1,500 pairs resident in L2 (the test's own cost). Repeated 1,500 pairs
    // may let the branch predictor learn part of the early-exit variants' outcomes (it
    // learns 2,000 triangle-test pairs, see examples/triangle_sweep.rs), so their
    // in-cache figures are a lower bound.
    for (set, data) in [("streamed", &pairs[..]), ("in_cache", &pairs[..1500])] {
        let mut g = c.benchmark_group(format!("overlap_k{K}_{set}"));
        g.throughput(Throughput::Elements(data.len() as u64));
        g.bench_with_input(BenchmarkId::new("simd_branchless", K), data, |b, p| {
            b.iter(|| {
                p.iter()
                    .filter(|(x, y)| black_box(x).overlaps(black_box(y)))
                    .count()
            })
        });
        g.bench_with_input(BenchmarkId::new("scalar_branchless", K), data, |b, p| {
            b.iter(|| {
                p.iter()
                    .filter(|(x, y)| black_box(x).overlaps_scalar(black_box(y)))
                    .count()
            })
        });
        for (name, order) in [
            ("natural", OverlapOrder::natural(K)),
            ("diagonals_first", OverlapOrder::diagonals_first(K)),
        ] {
            g.bench_with_input(
                BenchmarkId::new(format!("early_exit_{name}"), K),
                data,
                |b, p| {
                    b.iter(|| {
                        p.iter()
                            .filter(|(x, y)| black_box(x).overlaps_ordered(black_box(y), &order))
                            .count()
                    })
                },
            );
        }
        g.finish();
    }

    // Cu: re-bound every node of the flying object under a rotation.
    let mut g = c.benchmark_group(format!("rebound_k{K}"));
    let nodes = obj.bvh().node_count();
    g.throughput(Throughput::Elements(nodes as u64));
    let pose = Pose::new(
        DMat3::from_rotation_x(0.3) * DMat3::from_rotation_y(0.2),
        DVec3::new(1.0, 2.0, 3.0),
    )
    .unwrap();
    let mut out = Vec::with_capacity(nodes);
    for (name, method) in [("corners", Rebound::Corners), ("slabs", Rebound::Slabs)] {
        g.bench_function(BenchmarkId::new(name, K), |b| {
            b.iter(|| obj.placed_bounds(black_box(&pose), method, &mut out))
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    cv::<6>(c);
    cv::<14>(c);
    cv::<18>(c);
    cv::<26>(c);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
