//! The broad phase in steady state updates without allocating, with large boxes among
//! small ones: sleeping, a few moving (their pairs kept) and all moving (found anew). A
//! counting allocator watches whole periods of a repeating motion once the buffers have
//! grown to it (its own test binary, one test, so that no other test's allocations are
//! counted). On one thread: on several, which thread's scratch streams a chunk depends on
//! the stealing, and a thread's scratch may still grow to a chunk it had not had before.

mod common;

use kdop::{Aabb, BroadPhase};

#[path = "support/counting_alloc.rs"]
mod counting;

#[global_allocator]
static A: counting::Counting = counting::Counting;

#[test]
fn steady_updates_allocate_nothing() {
    common::on_threads(1, || {
        let mut rng = common::Rng::new(9);
        let n = 4000u32;
        let spread = 14.0;
        // Each box cycles through a few places; one in forty is ten times larger, one in
        // forty ten times longer along x, a fifth of them static.
        const PERIOD: usize = 4;
        let boxes: Vec<[Aabb; PERIOD]> = (0..n)
            .map(|i| {
                std::array::from_fn(|_| {
                    let c = rng.vec(-spread, spread);
                    let c = [c.x as f32, c.y as f32, c.z as f32];
                    let h = match i % 40 {
                        0 => [3.0; 3],
                        1 => [3.0, 0.3, 0.3],
                        _ => [0.3; 3],
                    };
                    Aabb::new(
                        [0, 1, 2].map(|k| c[k] - h[k]),
                        [0, 1, 2].map(|k| c[k] + h[k]),
                    )
                })
            })
            .collect();
        let dynamic = |i: u32| i % 5 != 2;
        let mut bp = BroadPhase::new();
        for (i, b) in boxes.iter().enumerate() {
            bp.set(i as u32, b[0], dynamic(i as u32)).unwrap();
        }
        bp.update();
        // A period: a frame where nothing moves, one where a few boxes move (kept large
        // pairs), one where a few large ones do, and one where every box moves (all found
        // anew). The lists are made before anything is counted.
        let lists: Vec<Vec<u32>> = (0..PERIOD)
            .map(|f| match f {
                0 => vec![],
                1 => (0..n).filter(|i| i % 97 == 3).collect(),
                2 => (0..n).filter(|i| i % 40 < 2 && i % 80 < 40).collect(),
                _ => (0..n).collect(),
            })
            .collect();
        let period = |bp: &mut BroadPhase| {
            let mut pairs = 0;
            for (f, moving) in lists.iter().enumerate() {
                for &i in moving {
                    bp.set(i, boxes[i as usize][f], dynamic(i)).unwrap();
                }
                bp.update();
                pairs += bp.pair_count();
            }
            pairs
        };
        // Periods to grow every buffer to what the motion needs: the kept pairs' two
        // buffers change places at some updates only, so each sees the largest frame
        // only in every other period, and a chunk's columns grow by a sixteenth when
        // they are short, so a chunk whose count swings grows over several periods.
        // Warm up until two periods in a row allocate nothing (at most sixteen), then
        // count three more.
        let (mut warm, mut quiet) = (0, 0);
        for _ in 0..16 {
            let (pairs, allocations) = counting::allocations_during(|| period(&mut bp));
            warm += pairs;
            quiet = if allocations == 0 { quiet + 1 } else { 0 };
            if quiet == 2 {
                break;
            }
        }
        assert_eq!(quiet, 2, "the buffers still grew after sixteen periods");
        assert!(warm > 0);
        assert!(bp.stats().large > 100, "{:?}", bp.stats());
        let (steady, allocations) =
            counting::allocations_during(|| (0..3).map(|_| period(&mut bp)).sum::<usize>());
        assert!(steady > 0);
        assert_eq!(allocations, 0, "updates in steady state allocated");
    });
}
