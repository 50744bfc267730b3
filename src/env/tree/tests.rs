//! The dynamic tree against a model of its leaves: seeded random inserts, removals and
//! moves, each followed by a full check of the invariants, and queries compared with a
//! brute-force scan of the model's fat bounds.

use super::*;
use crate::testing::lcg;
use glam::DVec3;

/// A box of size up to `size` near `c`, as a k-DOP of its corners.
fn cube<const K: usize>(c: DVec3, size: f64, s: &mut u64) -> Dop<K> {
    let h = DVec3::new(lcg(s), lcg(s), lcg(s)) * size + DVec3::splat(0.01);
    Dop::from_points(&[c - h, c + h])
}

fn point(s: &mut u64, side: f64) -> DVec3 {
    DVec3::new(lcg(s), lcg(s), lcg(s)) * side
}

/// What the tree should hold: per live item, its handle and its fat bound, kept by the
/// documented rule (a move inside the fat bound keeps it; otherwise the new bound is
/// padded by the margin times its largest extent).
struct Model<const K: usize> {
    live: Vec<(u32, TreeLeaf, Dop<K>)>,
    margin: f64,
}

impl<const K: usize> Model<K> {
    /// The rule's fat bound, checked independently of the helper that makes it: it holds
    /// `d`, and no bound moved further than the margin rounded outward (`enlarged`, with
    /// rounding control) and widened by a thousandth.
    fn fat(&self, d: &Dop<K>) -> Dop<K> {
        let f = d.padded_by_extent(self.margin);
        let most = d.enlarged(self.margin * d.box_extent().max_element() * 1.001);
        assert!(f.contains(d) && most.contains(&f), "{f:?} for {d:?}");
        f
    }
}

fn random_edits<const K: usize>(margin: f64, seed: u64) {
    let mut s = seed;
    let side = 20.0;
    let mut tree = DynamicTree::<K>::new(margin).unwrap();
    let mut model = Model::<K> {
        live: Vec::new(),
        margin,
    };
    let mut next_item = 0u32;
    let (mut queries, mut hits, mut moves_kept) = (0, 0, 0);
    let (mut optimized, mut rebuilds, mut bulk) = (0, 0, 0);
    for step in 0..3000 {
        let r = lcg(&mut s);
        if model.live.is_empty() || r < 0.45 {
            let d = cube::<K>(point(&mut s, side), 1.5, &mut s);
            let leaf = tree.insert(&d, next_item).unwrap();
            model.live.push((next_item, leaf, model.fat(&d)));
            next_item += 1;
        } else if r < 0.68 {
            let j = (lcg(&mut s) * model.live.len() as f64) as usize;
            let (item, leaf, _) = model.live.swap_remove(j);
            assert_eq!(tree.remove(leaf).unwrap(), item);
        } else if r < 0.72 {
            // Leaves re-inserted or the tree rebuilt: bounds and handles as they were.
            let budget = (lcg(&mut s) * 40.0) as u32;
            let moved = tree.optimize(budget);
            assert!(moved <= budget && moved as usize <= model.live.len());
            optimized += moved;
        } else if r < 0.73 {
            tree.rebuild();
            rebuilds += 1;
        } else if r < 0.74 {
            // A bulk load among the leaves already there; a bad bound in it changes nothing.
            let batch: Vec<(Dop<K>, u32)> = (0..(lcg(&mut s) * 30.0) as u32)
                .map(|j| (cube::<K>(point(&mut s, side), 1.5, &mut s), next_item + j))
                .collect();
            let mut bad = batch.clone();
            bad.push((Dop::EMPTY, 0));
            assert!(tree.insert_bulk(&bad).is_err());
            tree.validate().unwrap();
            assert_eq!(
                tree.len(),
                model.live.len(),
                "step {step}: a refused bulk load"
            );
            let leaves = tree.insert_bulk(&batch).unwrap();
            for ((d, item), leaf) in batch.iter().zip(leaves) {
                model.live.push((*item, leaf, model.fat(d)));
            }
            next_item += batch.len() as u32;
            bulk += batch.len();
        } else {
            let j = (lcg(&mut s) * model.live.len() as f64) as usize;
            let (item, leaf, fat) = model.live[j];
            // Half of the moves are small (often inside the fat bound), half far.
            let inside = fat.box_extent() * 0.5;
            let centre = DVec3::new(
                f64::from(fat.lo(0)) + inside.x,
                f64::from(fat.lo(1)) + inside.y,
                f64::from(fat.lo(2)) + inside.z,
            );
            let c = if lcg(&mut s) < 0.5 {
                centre + (point(&mut s, 1.0) - 0.5) * 0.2
            } else {
                point(&mut s, side)
            };
            let d = cube::<K>(c, 0.3, &mut s);
            let moved = tree.move_leaf(leaf, &d).unwrap();
            assert_eq!(moved, !fat.contains(&d), "step {step}");
            if moved {
                model.live[j].2 = model.fat(&d);
            } else {
                moves_kept += 1;
            }
            assert_eq!(tree.item(leaf).unwrap(), item);
        }
        tree.validate()
            .unwrap_or_else(|e| panic!("step {step}: {e}"));
        assert_eq!(tree.len(), model.live.len());
        if step % 20 == 0 {
            let q = cube::<K>(point(&mut s, side), 6.0, &mut s);
            let mut got = Vec::new();
            tree.query(&q, |item| got.push(item));
            got.sort_unstable();
            let mut want: Vec<u32> = model
                .live
                .iter()
                .filter(|(_, _, fat)| fat.overlaps(&q))
                .map(|&(item, _, _)| item)
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "step {step}");
            queries += 1;
            hits += want.len();
        }
    }
    for &(item, leaf, fat) in &model.live {
        assert_eq!(tree.fat(leaf).unwrap(), fat, "item {item}");
    }
    assert!(
        queries > 100 && hits > 100,
        "{queries} queries, {hits} hits"
    );
    assert!(margin == 0.0 || moves_kept > 50, "{moves_kept} moves kept");
    assert!(
        optimized > 500 && rebuilds > 10 && bulk > 100,
        "{optimized} {rebuilds} {bulk}"
    );
}

/// A rebuild is the fresh build `cost_ratio` compares with (ratio 1, handles kept), and
/// re-inserting every leaf a few times brings a worn tree closer to it.
#[test]
fn optimising_and_rebuilding_bring_the_cost_down() {
    let mut s = 11u64;
    let mut tree = DynamicTree::<18>::new(0.1).unwrap();
    // Boxes inserted in sweep order along x: each insertion sees only its neighbours.
    let mut leaves: Vec<(TreeLeaf, u32)> = (0..3000)
        .map(|i| {
            let c = DVec3::new(f64::from(i) * 0.05, lcg(&mut s) * 30.0, lcg(&mut s) * 30.0);
            (tree.insert(&cube(c, 1.0, &mut s), i).unwrap(), i)
        })
        .collect();
    for k in 0..3000 {
        let j = (lcg(&mut s) * leaves.len() as f64) as usize;
        tree.remove(leaves[j].0).unwrap();
        let c = point(&mut s, 30.0) + DVec3::X * (f64::from(k) * 0.05);
        leaves[j].0 = tree.insert(&cube(c, 1.0, &mut s), leaves[j].1).unwrap();
    }
    let worn = tree.cost_ratio();
    let mut copy = tree.clone();
    for _ in 0..3 {
        assert_eq!(tree.optimize(3000), 3000);
    }
    tree.validate().unwrap();
    let optimized = tree.cost_ratio();
    assert!(optimized < worn, "optimize: {worn} -> {optimized}");
    copy.rebuild();
    copy.validate().unwrap();
    let rebuilt = copy.cost_ratio();
    assert!(
        (rebuilt - 1.0).abs() < 1e-12,
        "a rebuild is the fresh build: {rebuilt}"
    );
    for &(leaf, item) in &leaves {
        assert_eq!(
            (tree.item(leaf).unwrap(), copy.item(leaf).unwrap()),
            (item, item)
        );
    }
    eprintln!("cost ratio: worn {worn:.3}, optimised {optimized:.3}, rebuilt {rebuilt:.3}");
}

#[test]
fn random_edits_keep_the_invariants_and_the_answers() {
    random_edits::<18>(0.2, 1);
    random_edits::<6>(0.0, 2);
    random_edits::<26>(0.1, 3);
}

/// Handles of removed leaves are errors, also after their node is reused by a new leaf;
/// bad bounds are refused and leave the tree as it was.
#[test]
fn stale_handles_and_bad_bounds_are_typed_errors() {
    let mut s = 4u64;
    let mut tree = DynamicTree::<18>::new(0.1).unwrap();
    let a = tree.insert(&cube(DVec3::ZERO, 1.0, &mut s), 1).unwrap();
    let b = tree
        .insert(&cube(DVec3::splat(3.0), 1.0, &mut s), 2)
        .unwrap();
    assert_eq!(tree.remove(a).unwrap(), 1);
    for _ in 0..3 {
        tree.insert(&cube(DVec3::splat(6.0), 1.0, &mut s), 3)
            .unwrap();
    }
    assert!(matches!(tree.remove(a), Err(Error::StaleHandle { .. })));
    assert!(matches!(tree.item(a), Err(Error::StaleHandle { .. })));
    let d = cube(DVec3::ONE, 1.0, &mut s);
    assert!(matches!(
        tree.move_leaf(a, &d),
        Err(Error::StaleHandle { .. })
    ));
    let nan = Dop::<18>::from_points(&[DVec3::new(f64::NAN, 0.0, 0.0)]);
    for bad in [Dop::<18>::EMPTY, nan] {
        assert!(matches!(
            tree.insert(&bad, 9),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            tree.move_leaf(b, &bad),
            Err(Error::InvalidParameter { .. })
        ));
    }
    assert_eq!(tree.len(), 4);
    tree.validate().unwrap();
    assert!(DynamicTree::<18>::new(f64::NAN).is_err());
    assert!(DynamicTree::<18>::new(-1.0).is_err());
}

/// A tree grown by insertions of scattered boxes stays within a small factor of a fresh
/// top-down build's cost, and removing every leaf empties it. (Inserting every leaf as the
/// root's sibling, without the sibling search, gives a chain whose cost grows with the
/// leaf count.)
#[test]
fn insertions_stay_near_a_fresh_build() {
    let mut s = 8u64;
    let mut tree = DynamicTree::<18>::new(0.1).unwrap();
    let leaves: Vec<TreeLeaf> = (0..4000)
        .map(|i| {
            tree.insert(&cube(point(&mut s, 60.0), 1.0, &mut s), i)
                .unwrap()
        })
        .collect();
    tree.validate().unwrap();
    let ratio = tree.cost_ratio();
    assert!(ratio < 1.6, "cost ratio {ratio}");
    assert!(tree.height() < 40, "height {}", tree.height());
    for leaf in leaves {
        tree.remove(leaf).unwrap();
    }
    assert!(tree.is_empty());
    tree.validate().unwrap();
}

/// A bulk load of a single leaf (into an empty tree) makes that leaf the root: found by
/// fuzzing (`tree_edits`), where the one-leaf rebuild left it unlinked.
#[test]
fn a_bulk_load_of_one_leaf_is_the_root() {
    let mut tree = DynamicTree::<18>::new(0.1).unwrap();
    let d = Dop::<18>::from_points(&[glam::DVec3::ZERO, glam::DVec3::ONE]);
    let leaves = tree.insert_bulk(&[(d, 7)]).unwrap();
    tree.validate().unwrap();
    let mut hits = Vec::new();
    tree.query(&d, |i| hits.push(i));
    assert_eq!(hits, [7]);
    tree.optimize(10);
    tree.rebuild();
    tree.validate().unwrap();
    assert_eq!(tree.remove(leaves[0]).unwrap(), 7);
    tree.validate().unwrap();
}

/// What inserting `dop` as node `i`'s sibling adds to the tree, reckoned from the root
/// for every node (no pruning): the union's area plus what each ancestor grows by.
fn every_cost<const K: usize>(tree: &DynamicTree<K>, dop: &Dop<K>) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    let mut todo = vec![(tree.root, 0.0f64)];
    while let Some((i, inherited)) = todo.pop() {
        let node = &tree.nodes[i as usize];
        let direct = f64::from(search_union_area(&node.dop, dop));
        out.push((i, direct + inherited));
        if !node.is_leaf() {
            let below = inherited + (direct - f64::from(search_area(&node.dop)));
            for c in node.child {
                todo.push((c, below));
            }
        }
    }
    out
}

/// The sibling search's branch and bound finds the least cost of all nodes, checked
/// against every node's cost on trees grown by insertions and edited by removals (only
/// rounding may separate the two: the search sums its `f32` areas in `f32`, the check in
/// `f64`; 1e-5 relative).
#[test]
fn the_sibling_search_finds_the_least_cost() {
    let mut s = 31u64;
    for round in 0..6 {
        let mut tree = DynamicTree::<18>::new(0.1).unwrap();
        let side = [5.0, 40.0, 200.0][round % 3];
        let mut leaves = Vec::new();
        for i in 0..600u32 {
            let size = if i % 50 == 0 { 30.0 } else { 1.0 };
            leaves.push(
                tree.insert(&cube(point(&mut s, side), size, &mut s), i)
                    .unwrap(),
            );
            if i % 7 == 3 {
                let j = (lcg(&mut s) * leaves.len() as f64) as usize % leaves.len();
                tree.remove(leaves.swap_remove(j)).unwrap();
            }
        }
        for _ in 0..200 {
            let probe = tree.fattened(&cube(point(&mut s, side * 1.2), 2.0, &mut s));
            let found = tree.best_sibling(&probe);
            let costs = every_cost(&tree, &probe);
            let least = costs.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
            let at = costs.iter().find(|c| c.0 == found).unwrap().1;
            assert!(
                at <= least * (1.0 + 1e-5),
                "round {round}: the search chose cost {at}, the least is {least}"
            );
        }
    }
}

/// The box areas by SSE are the one-coordinate-at-a-time forms', bit for bit, for every k
/// whose bounds leave room for four-lane loads: the cost's `f64` area of one k-DOP, and the
/// search's `f32` areas of one and of a union.
#[test]
fn the_sse_areas_are_the_portable_ones() {
    fn check<const K: usize>(s: &mut u64) {
        for _ in 0..5000 {
            let scale = 10f64.powi((lcg(s) * 16.0) as i32 - 8);
            let a: Dop<K> = cube(point(s, scale) - DVec3::splat(scale / 2.0), scale, s);
            let b: Dop<K> = cube(point(s, scale) - DVec3::splat(scale / 2.0), scale, s);
            let (fast, slow) = (
                search_union_area(&a, &b),
                search_union_area_portable(&a, &b),
            );
            assert_eq!(fast.to_bits(), slow.to_bits(), "{a:?} {b:?}");
            let own = search_union_area_portable(&a, &a);
            assert_eq!(search_area(&a).to_bits(), own.to_bits(), "{a:?}");
            let e = a.box_extent();
            let own = 2.0 * (e.x * e.y + e.y * e.z + e.z * e.x);
            assert_eq!(area(&a).to_bits(), own.to_bits(), "{a:?}");
        }
    }
    let mut s = 5u64;
    check::<6>(&mut s);
    check::<14>(&mut s);
    check::<18>(&mut s);
    check::<26>(&mut s);
}
