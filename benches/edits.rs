//! The editable part tree (Klosowski et al. 1998, §6.1, "Dynamic environments"; issue 20):
//! one edit (a leaf removed and inserted again elsewhere) in a tree of 100,000 and of
//! 1,000,000 leaves, and the tree's cost against a fresh build (printed) after building by
//! insertion and after 10,000 random edits.
//!
//! `cargo bench --bench edits`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use glam::DVec3;
use kdop::scene::Rng;
use kdop::{Dop, DynamicTree, TreeLeaf};

/// A random box of extent 0.5 to 1.5 in a cube holding `n` of them at about one overlap
/// each (the broad phase bench's density).
fn random_box(rng: &mut Rng, side: f64) -> Dop<18> {
    let c = DVec3::new(rng.f64(), rng.f64(), rng.f64()) * side;
    let h = DVec3::new(rng.f64(), rng.f64(), rng.f64()) * 0.5 + DVec3::splat(0.25);
    Dop::from_points(&[c - h, c + h])
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("dynamic_tree_k18");
    for n in [100_000usize, 1_000_000] {
        let side = (n as f64 * 5.0).cbrt();
        let mut rng = Rng::new(1);
        let mut tree = DynamicTree::<18>::new(0.1).unwrap();
        let mut leaves: Vec<TreeLeaf> = (0..n)
            .map(|i| tree.insert(&random_box(&mut rng, side), i as u32).unwrap())
            .collect();
        eprintln!(
            "{n} leaves inserted: cost ratio {:.3}, height {}",
            tree.cost_ratio(),
            tree.height()
        );
        for _ in 0..10_000 {
            let j = (rng.f64() * n as f64) as usize;
            let item = tree.remove(leaves[j]).unwrap();
            leaves[j] = tree.insert(&random_box(&mut rng, side), item).unwrap();
        }
        eprintln!(
            "after 10,000 random edits: cost ratio {:.3}, height {}",
            tree.cost_ratio(),
            tree.height()
        );
        g.bench_function(BenchmarkId::new("remove_and_insert", n), |b| {
            b.iter(|| {
                let j = (rng.f64() * n as f64) as usize;
                let item = tree.remove(leaves[j]).unwrap();
                leaves[j] = tree.insert(&random_box(&mut rng, side), item).unwrap();
            });
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
