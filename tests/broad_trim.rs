//! After a bulk load, the broad phase gives back the scratch the load grew: a hundred
//! thousand boxes set in one update, then frames moving one box in a thousand. The
//! scratch that grew with the changed boxes (their ids and their boxes as they were, at
//! least 36 bytes each) is cut once the load is long past, and the frames after that
//! allocate nothing; every pair still equals the plain sweep's. Its own test binary, one
//! test, with a counting allocator.

mod common;

use kdop::oracle::single_sweep_pairs;
use kdop::{Aabb, BroadPhase};

#[path = "support/counting_alloc.rs"]
mod counting;

#[global_allocator]
static A: counting::Counting = counting::Counting;

#[test]
fn a_bulk_load_gives_its_scratch_back() {
    common::on_threads(1, || {
        let mut rng = common::Rng::new(12);
        let n = 100_000u32;
        let spread = 60.0;
        const PERIOD: usize = 4;
        let boxes: Vec<[Aabb; PERIOD]> = (0..n)
            .map(|_| {
                let c = rng.vec(-spread, spread);
                let h = rng.range(0.2, 0.6) as f32;
                std::array::from_fn(|k| {
                    let c = [c.x as f32 + 0.05 * k as f32, c.y as f32, c.z as f32];
                    Aabb::new(c.map(|v| v - h), c.map(|v| v + h))
                })
            })
            .collect();
        let dynamic = |i: u32| i % 5 != 2;
        let mut bp = BroadPhase::new();
        let (moving, fixed): (Vec<_>, Vec<_>) = (0..n)
            .map(|i| (i, boxes[i as usize][0]))
            .partition(|&(i, _)| dynamic(i));
        bp.set_many(&moving, true).unwrap();
        bp.set_many(&fixed, false).unwrap();
        bp.update();
        let loaded = bp.memory_bytes();
        // Each frame moves one dynamic box in a thousand to its next place; after PERIOD
        // frames of a cycle the boxes stand where they began it.
        let lists: Vec<Vec<u32>> = (0..1000)
            .map(|j| (0..n).filter(|&i| dynamic(i) && i % 1000 == j).collect())
            .collect();
        let mut places = vec![0usize; n as usize];
        let mut frame = |bp: &mut BroadPhase, f: usize| {
            for &i in &lists[f % 1000] {
                let p = &mut places[i as usize];
                *p = (*p + 1) % PERIOD;
                bp.set(i, boxes[i as usize][*p], true).unwrap();
            }
            bp.update();
        };
        for f in 0..1000 {
            frame(&mut bp, f);
        }
        let trimmed = bp.memory_bytes();
        assert!(
            trimmed + 36 * n as usize <= loaded,
            "the load's scratch was kept: {loaded} bytes after it, {trimmed} a thousand frames on"
        );
        // Each box moves once in a thousand frames: a thousand more let any list cut too
        // short grow back, and the thousand after are counted.
        for f in 0..1000 {
            frame(&mut bp, f);
        }
        let ((), allocations) = counting::allocations_during(|| {
            for f in 0..1000 {
                frame(&mut bp, f);
            }
        });
        assert_eq!(allocations, 0, "frames after the trim allocated");
        let all: Vec<(u32, Aabb, bool)> = (0..n)
            .map(|i| (i, boxes[i as usize][places[i as usize]], dynamic(i)))
            .collect();
        let mut got: Vec<(u32, u32)> = bp.pairs().collect();
        got.sort_unstable();
        let mut want = single_sweep_pairs(&all);
        want.sort_unstable();
        assert_eq!(got, want);
    });
}
