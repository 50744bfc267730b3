//! A world in steady state steps and probes without allocating: a counting allocator
//! watches whole periods of a repeating motion once the step's buffers and the probe's
//! scratch have grown to it (its own test binary, one test, so that no other test's
//! allocations are counted).

mod common;

use kdop::{ObjectDesc, PartDesc, Pose, ProbeHit, ProbeScratch, World};

#[path = "support/counting_alloc.rs"]
mod counting;

#[global_allocator]
static A: counting::Counting = counting::Counting;

#[test]
fn steady_steps_and_probes_allocate_nothing() {
    common::on_threads(2, || {
        let mut world = World::<18>::new();
        let shapes = [
            world
                .add_shape(kdop::scene::torus(1.0, 0.35, 24, 10).unwrap())
                .unwrap(),
            world
                .add_shape(kdop::scene::icosphere(0.8, 2).unwrap())
                .unwrap(),
            world
                .add_shape(kdop::scene::torus_knot(3, 7, 1.0, 0.32, 0.14, 80, 6).unwrap())
                .unwrap(),
        ];
        let mut rng = common::Rng::new(40);
        for i in 0..6 {
            let placement = Pose::new(rng.rotation(), rng.vec(-6.0, 6.0)).unwrap();
            world
                .add_part(shapes[i % 3], placement, PartDesc::default())
                .unwrap();
        }
        // Each object cycles through a few poses, so every period repeats the one before;
        // every third rests, set to the same pose each frame (its pairs' answers kept).
        const PERIOD: usize = 6;
        let mut objects = Vec::new();
        for i in 0..60 {
            let mut poses: Vec<Pose> = (0..PERIOD)
                .map(|_| Pose::new(rng.rotation(), rng.vec(-6.0, 6.0)).unwrap())
                .collect();
            if i % 3 == 0 {
                poses = vec![poses[0]; PERIOD];
            }
            let desc = ObjectDesc {
                user: i,
                ..ObjectDesc::default()
            };
            let id = world
                .add_object(shapes[i as usize % 3], poses[0], desc)
                .unwrap();
            objects.push((id, poses));
        }
        // A probe each frame among the objects just moved (before the step sees them).
        let probes: Vec<Pose> = (0..PERIOD)
            .map(|_| Pose::new(rng.rotation(), rng.vec(-4.0, 4.0)).unwrap())
            .collect();
        let mut scratch = ProbeScratch::new();
        let mut hits: Vec<ProbeHit> = Vec::new();
        let mut run_period = |world: &mut World<18>| {
            let (mut contacts, mut resting, mut probed) = (0, 0, 0);
            for f in 0..PERIOD {
                for (id, poses) in &objects {
                    world.set_pose(*id, poses[f]).unwrap();
                }
                let desc = ObjectDesc::default();
                world
                    .probe(shapes[f % 3], &probes[f], &desc, &mut scratch, &mut hits)
                    .unwrap();
                probed += hits.iter().map(|h| h.contacts.len()).sum::<usize>();
                let s = world.step().unwrap();
                contacts += s.contacts + s.begins + s.ends;
                resting += s.resting_pairs;
            }
            (contacts, resting, probed)
        };
        // Two periods to grow every buffer to what the motion needs.
        let warm = run_period(&mut world).0 + run_period(&mut world).0;
        assert!(warm > 0, "the motion must make contacts and events");
        let ((steady, resting, probed), allocations) = counting::allocations_during(|| {
            let (a, b) = (run_period(&mut world), run_period(&mut world));
            (a.0 + b.0, a.1 + b.1, a.2 + b.2)
        });
        assert!(steady > 0 && resting > 0, "{steady} {resting}");
        assert!(probed > 0, "the probes must touch something");
        assert_eq!(allocations, 0, "steps and probes in steady state allocated");
    });
}
