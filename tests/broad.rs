//! The sweep-and-prune broad phase against its oracle (all pairs compared) over random
//! sequences of insertions, moves, removals and static/dynamic changes, with boxes of very
//! different sizes (points, ordinary, large enough to stay out of the cells, unbounded),
//! and over the triangles of real meshes as boxes.

mod common;

use common::Rng;
use kdop::oracle::{brute_force_pairs, single_sweep_pairs};
use kdop::{Aabb, BroadPhase, BroadStats};

/// A random box: mostly unit-sized, some tiny or points, some far larger than the rest.
fn random_box(rng: &mut Rng, spread: f64) -> Aabb {
    let c = rng.vec(-spread, spread);
    let size = match rng.below(20) {
        0 => 0.0,
        1 => rng.range(0.0, 0.01),
        2 => rng.range(5.0, 40.0),
        3 if rng.below(10) == 0 => f64::INFINITY,
        _ => rng.range(0.3, 1.5),
    };
    let h = [rng.f64(), rng.f64(), rng.f64()].map(|f| (size * (0.2 + f)) as f32);
    let c = [c.x as f32, c.y as f32, c.z as f32];
    Aabb::new(
        [c[0] - h[0], c[1] - h[1], c[2] - h[2]],
        [c[0] + h[0], c[1] + h[1], c[2] + h[2]],
    )
}

/// The same boxes as the oracle's input.
fn live(boxes: &[Option<(Aabb, bool)>]) -> Vec<(u32, Aabb, bool)> {
    boxes
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.map(|(a, d)| (i as u32, a, d)))
        .collect()
}

fn sorted_pairs(bp: &BroadPhase) -> Vec<(u32, u32)> {
    let mut p: Vec<_> = bp.pairs().collect();
    let n = p.len();
    p.sort_unstable();
    p.dedup();
    assert_eq!(p.len(), n, "a pair was reported twice");
    p
}

/// Runs a random edit sequence; every update is checked against the oracle. Returns the
/// pairs of every frame in the broad phase's own order.
fn run(seed: u64, n: usize, frames: usize, fixed: Option<f32>) -> Vec<Vec<(u32, u32)>> {
    run_with_stats(seed, n, frames, fixed).0
}

/// [`run`], with the counters of every update.
fn run_with_stats(
    seed: u64,
    n: usize,
    frames: usize,
    fixed: Option<f32>,
) -> (Vec<Vec<(u32, u32)>>, Vec<BroadStats>) {
    let mut rng = Rng::new(seed);
    let spread = (n as f64).cbrt() * 1.2;
    let mut bp = match fixed {
        Some(s) => BroadPhase::with_cell_size(s).unwrap(),
        None => BroadPhase::new(),
    };
    let mut boxes: Vec<Option<(Aabb, bool)>> = vec![None; n + n / 4];
    let mut order = Vec::new();
    let mut stats = Vec::new();
    for (i, slot) in boxes.iter_mut().take(n).enumerate() {
        let b = random_box(&mut rng, spread);
        let d = rng.below(3) != 0;
        bp.set(i as u32, b, d).unwrap();
        *slot = Some((b, d));
    }
    for frame in 0..frames {
        // Most frames change a third of the boxes; every fourth changes nearly all of them.
        let edits = if frame % 4 == 3 { 2 * n } else { n / 3 };
        for _ in 0..edits {
            let i = rng.below(boxes.len() as u64) as usize;
            match rng.below(10) {
                0 => {
                    assert_eq!(bp.remove(i as u32), boxes[i].is_some());
                    boxes[i] = None;
                }
                1 => {
                    let b = random_box(&mut rng, spread);
                    bp.set(i as u32, b, true).unwrap();
                    boxes[i] = Some((b, true));
                }
                2 => {
                    if let Some((b, d)) = boxes[i] {
                        bp.set(i as u32, b, !d).unwrap();
                        boxes[i] = Some((b, !d));
                    }
                }
                _ => {
                    // A small motion, as from one frame to the next.
                    if let Some((mut b, d)) = boxes[i] {
                        let s = 0.05 * (b.hi[0] - b.lo[0]).min(1.0);
                        let m = rng.vec(-1.0, 1.0);
                        for (k, v) in [m.x, m.y, m.z].into_iter().enumerate() {
                            b.lo[k] += s * v as f32;
                            b.hi[k] += s * v as f32;
                        }
                        bp.set(i as u32, b, d).unwrap();
                        boxes[i] = Some((b, d));
                    }
                }
            }
        }
        bp.update();
        let pairs = sorted_pairs(&bp);
        let all = brute_force_pairs(&live(&boxes));
        assert_eq!(pairs, all, "seed {seed}");
        // The second oracle, used by `kdop bench broad` where all pairs cost too much.
        assert_eq!(single_sweep_pairs(&live(&boxes)), all, "seed {seed}");
        assert_eq!(bp.len(), live(&boxes).len());
        check_queries(&bp, &boxes, &mut rng, spread);
        order.push(bp.pairs().collect());
        stats.push(bp.stats());
    }
    (order, stats)
}

/// Random query boxes (of every size the boxes have) against every live box: each
/// overlapping proxy reported once, no other.
fn check_queries(bp: &BroadPhase, boxes: &[Option<(Aabb, bool)>], rng: &mut Rng, spread: f64) {
    for _ in 0..20 {
        let q = random_box(rng, spread);
        let mut got = Vec::new();
        bp.query(&q, |p| got.push(p));
        let n = got.len();
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), n, "a proxy was reported twice for {q:?}");
        let want: Vec<u32> = live(boxes)
            .into_iter()
            .filter(|(_, b, _)| b.overlaps(&q))
            .map(|(i, _, _)| i)
            .collect();
        assert_eq!(got, want, "query {q:?}");
    }
}

#[test]
fn pairs_equal_brute_force_over_random_edits() {
    let (mut refreshed, mut whole) = (0, 0);
    for seed in 0..6 {
        let (order, stats) = run_with_stats(seed, 300, 12, None);
        assert!(
            order.iter().any(|f| !f.is_empty()),
            "seed {seed}: no pairs at all"
        );
        refreshed += stats.iter().map(|s| s.rows_refreshed).sum::<u64>();
        whole += stats
            .iter()
            .map(|s| s.rows_swept - s.rows_refreshed)
            .sum::<u64>();
    }
    // Both ways of sweeping a row were checked: for its changed boxes' pairs alone, the
    // others kept (few changed), and whole (many did, or the grid was rebuilt).
    assert!(
        refreshed > 0 && whole > 0,
        "{refreshed} rows refreshed, {whole} swept whole"
    );
}

#[test]
fn fixed_cells_of_any_size_equal_brute_force() {
    // Cells far smaller than the boxes (most boxes large), and far larger (one cell).
    for (seed, size) in [(10, 0.05), (11, 0.7), (12, 1000.0)] {
        run(seed, 200, 6, Some(size));
    }
}

#[test]
fn same_calls_give_the_same_order_on_any_thread_count() {
    let a = common::on_threads(1, || run(21, 2000, 4, None));
    let b = common::on_threads(4, || run(21, 2000, 4, None));
    assert_eq!(a, b);
}

#[test]
fn bad_boxes_are_refused_and_change_nothing() {
    let mut bp = BroadPhase::new();
    bp.set(3, Aabb::new([0.0; 3], [1.0; 3]), true).unwrap();
    for bad in [
        Aabb::new([f32::NAN, 0.0, 0.0], [1.0; 3]),
        Aabb::new([2.0, 0.0, 0.0], [1.0; 3]),
    ] {
        let e = bp.set(3, bad, true).unwrap_err();
        assert!(e.to_string().contains("proxy 3"), "{e}");
    }
    assert!(
        bp.set(u32::MAX, Aabb::new([0.0; 3], [1.0; 3]), true)
            .is_err()
    );
    assert_eq!(bp.aabb(3), Some(Aabb::new([0.0; 3], [1.0; 3])));
    assert!(BroadPhase::with_cell_size(0.0).is_err());
    assert!(BroadPhase::with_cell_size(f32::NAN).is_err());
    assert!(!bp.remove(7));
}

#[test]
fn static_pairs_are_never_reported() {
    let mut bp = BroadPhase::new();
    let b = Aabb::new([0.0; 3], [1.0; 3]);
    bp.set(0, b, false).unwrap();
    bp.set(1, b, false).unwrap();
    bp.update();
    assert_eq!(bp.pair_count(), 0);
    bp.set(1, b, true).unwrap();
    bp.update();
    assert_eq!(sorted_pairs(&bp), vec![(0, 1)]);
}

#[test]
fn a_box_whose_cell_count_overflows_stays_out_of_the_cells() {
    // 2^21 x 2^21 x 2^22 cells: 2^64, which a wrapping product once counted as 0 cells
    // and tried to list (found by the world_edits fuzz target).
    let mut bp = BroadPhase::with_cell_size(1.0).unwrap();
    let huge = Aabb::new([0.0; 3], [2_097_151.5, 2_097_151.5, 4_194_303.5]);
    let small = Aabb::new([0.0; 3], [1.0; 3]);
    bp.set(0, huge, true).unwrap();
    bp.set(1, small, false).unwrap();
    bp.update();
    assert_eq!(bp.stats().large, 1);
    assert_eq!(sorted_pairs(&bp), vec![(0, 1)]);
}

/// Frames where only dynamic boxes change (moves, removals, new boxes, a box grown large
/// and back), among many static ones of ordinary size, keep the kept static pairs by
/// runs of dynamic ids; frames where a static box changes (moved, removed, made dynamic
/// or a dynamic one made static) in between drop them one by one. Every frame equals
/// brute force.
#[test]
fn static_pairs_stay_exact_when_only_dynamic_boxes_change() {
    for seed in 0..4 {
        let mut rng = Rng::new(100 + seed);
        let n = 1500;
        let spread = (n as f64).cbrt() * 0.9;
        let ordinary = |rng: &mut Rng| {
            let c = rng.vec(-spread, spread);
            let h = rng.range(0.2, 0.8) as f32;
            let c = [c.x as f32, c.y as f32, c.z as f32];
            Aabb::new(c.map(|v| v - h), c.map(|v| v + h))
        };
        let mut bp = BroadPhase::new();
        let mut boxes: Vec<Option<(Aabb, bool)>> = vec![None; n + 100];
        for (i, slot) in boxes.iter_mut().take(n).enumerate() {
            let b = ordinary(&mut rng);
            let d = i % 5 == 0;
            bp.set(i as u32, b, d).unwrap();
            *slot = Some((b, d));
        }
        bp.update();
        let mut frames_with_pairs = 0;
        for frame in 0..16 {
            let statics_change = frame % 4 == 3;
            for _ in 0..60 {
                let i = rng.below(boxes.len() as u64) as usize;
                let dynamic = boxes[i].is_none_or(|(_, d)| d);
                if !dynamic && !statics_change {
                    continue;
                }
                match rng.below(12) {
                    0 => {
                        bp.remove(i as u32);
                        boxes[i] = None;
                    }
                    1 if statics_change => {
                        if let Some((b, d)) = boxes[i] {
                            bp.set(i as u32, b, !d).unwrap();
                            boxes[i] = Some((b, !d));
                        }
                    }
                    2 => {
                        // Large for a frame: out of the rows.
                        let c = rng.vec(-spread, spread);
                        let c = [c.x as f32, c.y as f32, c.z as f32];
                        let b = Aabb::new(c.map(|v| v - 9.0), c.map(|v| v + 9.0));
                        bp.set(i as u32, b, dynamic).unwrap();
                        boxes[i] = Some((b, dynamic));
                    }
                    _ => {
                        let b = ordinary(&mut rng);
                        bp.set(i as u32, b, dynamic).unwrap();
                        boxes[i] = Some((b, dynamic));
                    }
                }
            }
            bp.update();
            let pairs = sorted_pairs(&bp);
            assert_eq!(
                pairs,
                brute_force_pairs(&live(&boxes)),
                "seed {seed}, frame {frame}"
            );
            frames_with_pairs += usize::from(pairs.len() > n / 4);
        }
        assert!(
            frames_with_pairs > 8,
            "seed {seed}: too few pairs to compare"
        );
    }
}

/// Setting many boxes at once gives what setting them one by one gives: the same pairs in
/// the same order, over frames of lists in any order, with repeated ids (the last box
/// wins), new ids and both kinds of box, checked against brute force too.
#[test]
fn set_many_equals_setting_one_by_one() {
    let mut rng = Rng::new(61);
    let n = 1500;
    let spread = (n as f64).cbrt() * 1.2;
    let (mut one, mut many) = (BroadPhase::new(), BroadPhase::new());
    let mut boxes: Vec<Option<(Aabb, bool)>> = vec![None; n + 200];
    for frame in 0..12 {
        let dynamic = frame % 3 != 2;
        let len = if frame == 0 {
            n
        } else {
            40 + rng.below(600) as usize
        };
        let list: Vec<(u32, Aabb)> = (0..len)
            .map(|i| {
                let id = match frame {
                    0 => i as u32,
                    // Ascending on some frames, any order (repeats too) on others.
                    _ if frame % 2 == 0 => (i * (n + 200) / len) as u32,
                    _ => rng.below((n + 200) as u64) as u32,
                };
                (id, random_box(&mut rng, spread))
            })
            .collect();
        for &(id, b) in &list {
            one.set(id, b, dynamic).unwrap();
            boxes[id as usize] = Some((b, dynamic));
        }
        many.set_many(&list, dynamic).unwrap();
        one.update();
        many.update();
        let order: Vec<_> = many.pairs().collect();
        assert_eq!(order, one.pairs().collect::<Vec<_>>(), "frame {frame}");
        assert_eq!(
            sorted_pairs(&many),
            brute_force_pairs(&live(&boxes)),
            "frame {frame}"
        );
    }
}

/// A bad box anywhere in a list refuses the whole list, naming its proxy, with nothing
/// changed: not the boxes before it either.
#[test]
fn set_many_refuses_a_list_with_a_bad_box_whole() {
    let unit = Aabb::new([0.0; 3], [1.0; 3]);
    let moved = Aabb::new([0.5; 3], [1.5; 3]);
    for at in 0..3 {
        let mut bp = BroadPhase::new();
        bp.set(0, unit, true).unwrap();
        let mut list = vec![(0, moved), (1, moved), (2, moved)];
        list[at] = (at as u32, Aabb::new([f32::NAN, 0.0, 0.0], [1.0; 3]));
        let e = bp.set_many(&list, true).unwrap_err();
        assert!(e.to_string().contains(&format!("proxy {at}")), "{e}");
        assert_eq!(bp.aabb(0), Some(unit));
        assert_eq!((bp.aabb(1), bp.aabb(2), bp.len()), (None, None, 1));
    }
    let mut bp = BroadPhase::new();
    assert!(bp.set_many(&[(5, unit), (u32::MAX, unit)], true).is_err());
    assert!(bp.is_empty());
}

/// `n` dynamic cubes centred at random within `spread` of the origin, cube `i` of
/// half-extent `half(i, rng)`, set and updated once; with the boxes as the oracle takes them.
fn cubes(
    rng: &mut Rng,
    n: u32,
    spread: f64,
    mut half: impl FnMut(u32, &mut Rng) -> f32,
) -> (BroadPhase, Vec<Option<(Aabb, bool)>>) {
    let mut bp = BroadPhase::new();
    let mut boxes = Vec::new();
    for i in 0..n {
        let c = rng.vec(-spread, spread);
        let h = half(i, rng);
        let c = [c.x as f32, c.y as f32, c.z as f32];
        let b = Aabb::new(c.map(|v| v - h), c.map(|v| v + h));
        bp.set(i, b, true).unwrap();
        boxes.push(Some((b, true)));
    }
    bp.update();
    (bp, boxes)
}

/// Large dynamic boxes that do not move cost no lookups: an update where nothing changed
/// compares no boxes and keeps every pair, and one where a few small boxes moved compares
/// far fewer boxes than the large ones' own lookups did, with the pairs of brute force.
#[test]
fn sleeping_large_boxes_cost_no_lookups() {
    let mut rng = Rng::new(77);
    let spread = 12.0;
    let half = |i, _: &mut Rng| if i % 50 == 0 { 4.0 } else { 0.3 };
    let (mut bp, mut boxes) = cubes(&mut rng, 3000, spread, half);
    let first = bp.stats();
    assert!(first.large >= 50, "{first:?}");
    let pairs = sorted_pairs(&bp);
    assert_eq!(pairs, brute_force_pairs(&live(&boxes)));
    bp.update();
    assert_eq!(bp.stats().compared, 0, "{:?}", bp.stats());
    assert_eq!(sorted_pairs(&bp), pairs);
    for frame in 0..4 {
        for k in 0..10 {
            let i = 1 + k * 97 + frame;
            let c = rng.vec(-spread, spread);
            let c = [c.x as f32, c.y as f32, c.z as f32];
            let b = Aabb::new(c.map(|v| v - 0.3), c.map(|v| v + 0.3));
            bp.set(i, b, true).unwrap();
            boxes[i as usize] = Some((b, true));
        }
        bp.update();
        assert!(
            bp.stats().compared * 10 < first.compared,
            "frame {frame}: {:?} against {first:?}",
            bp.stats()
        );
        assert_eq!(
            sorted_pairs(&bp),
            brute_force_pairs(&live(&boxes)),
            "frame {frame}"
        );
    }
}

#[test]
fn few_moving_boxes_among_many_sweep_only_their_rows() {
    // Enough resting boxes for chunks of rows at their full size: a few boxes moving
    // among them, nudged or sent across cells, are patched into their chunks (nothing
    // else of a chunk is re-sorted or swept), and the pairs stay exact.
    let mut rng = Rng::new(5);
    let n = 40_000u32;
    let half = |_, rng: &mut Rng| rng.range(0.2, 0.6) as f32;
    let (mut bp, mut boxes) = cubes(&mut rng, n, 30.0, half);
    let mut patched = 0;
    for frame in 0..30 {
        let moving = 1 + rng.below(8) as usize;
        for _ in 0..moving {
            let i = rng.below(u64::from(n)) as usize;
            let (b, _) = boxes[i].unwrap();
            let step = if rng.below(2) == 0 { 0.05 } else { 2.0 };
            let m = rng.vec(-step, step);
            let m = [m.x as f32, m.y as f32, m.z as f32];
            let b = Aabb::new(
                [0, 1, 2].map(|k| b.lo[k] + m[k]),
                [0, 1, 2].map(|k| b.hi[k] + m[k]),
            );
            bp.set(i as u32, b, true).unwrap();
            boxes[i] = Some((b, true));
        }
        bp.update();
        let s = bp.stats();
        // A box has at most four rows; a chunk re-sorted whole sweeps all of its rows.
        assert!(s.rows_swept <= 4 * s.moved, "frame {frame}: {s:?}");
        patched += s.chunks_patched;
        assert_eq!(
            sorted_pairs(&bp),
            single_sweep_pairs(&live(&boxes)),
            "frame {frame}"
        );
    }
    assert!(patched >= 30, "{patched} chunks patched");
}

/// Many large boxes moving among small ones, few enough boxes changed per large box that
/// the pairs of unchanged boxes are kept: the changed boxes are then looked up among the
/// unchanged large boxes, and the changed large boxes anew, in slices on the pool. Every
/// update equals brute force, and one thread and four give the same pairs in the same order.
#[test]
fn moving_large_boxes_keep_pairs_alike_on_any_thread_count() {
    let run = || {
        let mut rng = Rng::new(91);
        let n = 4000u32;
        let half = |i, _: &mut Rng| if i % 25 == 0 { 3.0 } else { 0.3 };
        let (mut bp, mut boxes) = cubes(&mut rng, n, 14.0, half);
        assert!(bp.stats().large >= 100, "{:?}", bp.stats());
        let mut order = Vec::new();
        for frame in 0..4u32 {
            // 600 distinct boxes (7 is prime to n), one in 25 of them large.
            for k in 0..600u32 {
                let i = (k * 7 + frame * 13) % n;
                let (b, _) = boxes[i as usize].unwrap();
                let s = 0.05 * (b.hi[0] - b.lo[0]);
                let m = rng.vec(-1.0, 1.0);
                let b = moved_by(&b, [m.x as f32 * s, m.y as f32 * s, m.z as f32 * s]);
                bp.set(i, b, true).unwrap();
                boxes[i as usize] = Some((b, true));
            }
            bp.update();
            check_kept_update(&bp, &boxes, frame);
            order.push(bp.pairs().collect::<Vec<_>>());
        }
        order
    };
    let one = common::on_threads(1, run);
    assert_eq!(common::on_threads(4, run), one);
}

/// Small boxes moving among many large ones stacked in one place, so that each small box
/// meets dozens of them before and after its move: the lists it leaves and joins are
/// found from sorted sets there, and every update still equals brute force.
#[test]
fn small_boxes_moving_among_many_stacked_large_ones_keep_exact_pairs() {
    let mut rng = Rng::new(17);
    let mut bp = BroadPhase::new();
    let mut boxes = Vec::new();
    // 60 large boxes about the origin, 1,500 small ones among and around them.
    for i in 0..1560u32 {
        let (spread, h) = if i < 60 { (0.5, 4.0) } else { (5.0, 0.3) };
        let c = rng.vec(-spread, spread);
        let c = [c.x as f32, c.y as f32, c.z as f32];
        let b = Aabb::new(c.map(|v| v - h), c.map(|v| v + h));
        bp.set(i, b, true).unwrap();
        boxes.push(Some((b, true)));
    }
    bp.update();
    assert_eq!(bp.stats().large, 60, "{:?}", bp.stats());
    for frame in 0..5u32 {
        for k in 0..300u32 {
            let i = 60 + (k * 7 + frame * 11) % 1500;
            let (b, _) = boxes[i as usize].unwrap();
            let m = rng.vec(-0.2, 0.2);
            let b = moved_by(&b, [m.x as f32, m.y as f32, m.z as f32]);
            bp.set(i, b, true).unwrap();
            boxes[i as usize] = Some((b, true));
        }
        bp.update();
        check_kept_update(&bp, &boxes, frame);
    }
}

/// `b` moved by `m`.
fn moved_by(b: &Aabb, m: [f32; 3]) -> Aabb {
    Aabb::new(
        [0, 1, 2].map(|k| b.lo[k] + m[k]),
        [0, 1, 2].map(|k| b.hi[k] + m[k]),
    )
}

/// An update that kept the pairs of unchanged boxes (`large.rs`) and found brute force's
/// pairs.
fn check_kept_update(bp: &BroadPhase, boxes: &[Option<(Aabb, bool)>], frame: u32) {
    let s = bp.stats();
    assert!(!s.regridded && s.large_kept, "frame {frame}: {s:?}");
    assert_eq!(
        sorted_pairs(bp),
        brute_force_pairs(&live(boxes)),
        "frame {frame}"
    );
}

/// The boxes of a real mesh's triangles, in file order.
fn triangle_boxes(path: &std::path::Path) -> Vec<Aabb> {
    let mesh = kdop::io::formats::load_mesh(path).unwrap();
    (0..mesh.triangle_count())
        .map(|i| {
            let t = mesh.triangle(i).unwrap();
            let (lo, hi) = (t[0].min(t[1]).min(t[2]), t[0].max(t[1]).max(t[2]));
            Aabb::new(lo.as_vec3().to_array(), hi.as_vec3().to_array())
        })
        .collect()
}

/// Real geometry's boxes: every triangle of a mesh of `../shared/data/meshes` a box (one in
/// five static), clustered and of every size as real parts make them; a building's walls
/// and floors are large boxes among thousands of small ones. Then a few boxes move, then a
/// third of them, then a few again, so that the large boxes' pairs are kept in some
/// updates and found anew in others (both are asserted); every update equals the oracle
/// (all pairs, or one plain sweep for the building).
#[test]
fn real_mesh_triangles_as_boxes_equal_the_oracle() {
    let Some(dir) = common::meshes_dir() else {
        return;
    };
    let mut ways = [0; 2];
    for name in [
        "fcl_env.obj",
        "boeing_part.obj",
        "kuka_iiwa_link0.obj",
        "samurai_monastry.obj",
    ] {
        let tris = triangle_boxes(&dir.join(name));
        let mut rng = Rng::new(7);
        let mut bp = BroadPhase::new();
        let mut boxes: Vec<Option<(Aabb, bool)>> = Vec::new();
        for (i, b) in tris.iter().enumerate() {
            let dynamic = i % 5 != 0;
            bp.set(i as u32, *b, dynamic).unwrap();
            boxes.push(Some((*b, dynamic)));
        }
        let oracle = |boxes: &[Option<(Aabb, bool)>]| {
            if tris.len() <= 5_000 {
                brute_force_pairs(&live(boxes))
            } else {
                single_sweep_pairs(&live(boxes))
            }
        };
        bp.update();
        assert_eq!(sorted_pairs(&bp), oracle(&boxes), "{name}, first update");
        let large = bp.stats().large;
        for (frame, share) in [0.01, 0.01, 0.3, 0.3, 0.01, 0.01].into_iter().enumerate() {
            for (i, slot) in boxes.iter_mut().enumerate() {
                let Some((b, true)) = *slot else { continue };
                if rng.f64() >= share {
                    continue;
                }
                // A few percent of the box's largest side, in a random direction.
                let size = (0..3).map(|k| b.hi[k] - b.lo[k]).fold(0.0f32, f32::max);
                let m = rng.unit() * f64::from(size) * 0.05;
                let b = moved_by(&b, [m.x as f32, m.y as f32, m.z as f32]);
                bp.set(i as u32, b, true).unwrap();
                *slot = Some((b, true));
            }
            bp.update();
            let s = bp.stats();
            if s.large > 0 {
                ways[usize::from(s.large_kept)] += 1;
            }
            assert_eq!(
                sorted_pairs(&bp),
                oracle(&boxes),
                "{name}, frame {frame}: {s:?}"
            );
        }
        assert!(
            name != "samurai_monastry.obj" || large > 1000,
            "{name}: {large} large"
        );
    }
    assert!(
        ways[0] > 0 && ways[1] > 0,
        "large pairs found anew / kept: {ways:?}"
    );
}
