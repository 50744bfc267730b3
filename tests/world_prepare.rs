//! `World::prepare` sizes the threads' pose caches for the world's shapes, so that the
//! first step does not grow them: a counting allocator watches the first step of two like
//! worlds, one prepared, and the prepared one's step holds less than a quarter of one
//! cache's bytes more while the other's holds more than a cache (its own test binary, one
//! test, so that no other test's allocations are counted).

mod common;

use kdop::{ObjectDesc, PartDesc, Pose, World};

#[path = "support/counting_alloc.rs"]
mod counting;

#[global_allocator]
static A: counting::Counting = counting::Counting;

/// Peak heap bytes the first step of a world holds above those live before it: a torus
/// of 20,000 triangles as two parts, and as an object touching both.
fn first_step_peak(prepared: bool) -> usize {
    let mut world = World::<18>::new();
    let torus = kdop::scene::torus(1.0, 0.35, 200, 50).unwrap();
    let shape = world.add_shape(torus).unwrap();
    for x in [-0.9, 0.9] {
        let placement = Pose::from_translation(glam::DVec3::new(x, 0.0, 0.0)).unwrap();
        world
            .add_part(shape, placement, PartDesc::default())
            .unwrap();
    }
    let turned = Pose::new(glam::DMat3::from_rotation_x(0.3), glam::DVec3::ZERO).unwrap();
    world
        .add_object(shape, turned, ObjectDesc::default())
        .unwrap();
    if prepared {
        world.prepare();
    }
    let (stats, peak) = counting::peak_during(|| world.step().unwrap());
    assert!(stats.narrow_pairs >= 2, "{stats:?}");
    assert!(world.pairs().len() >= 2, "the object touches both parts");
    peak
}

#[test]
fn a_prepared_world_steps_first_without_growing_its_caches() {
    common::on_threads(2, || {
        let cold = first_step_peak(false);
        let prepared = first_step_peak(true);
        // A pose cache holds about 128 bytes per triangle of the shape it is for.
        let cache = 128 * 20_000;
        assert!(cold > cache, "cold first step held only {cold} bytes more");
        assert!(
            prepared < cache / 4,
            "prepared first step held {prepared} bytes more"
        );
    });
}
