//! Probes of a world whose objects were all moved since its last step (a CAD tool asking
//! "what would this touch here" while a script moves an assembly):
//! `cargo run --release --example probe_moved -- [objects] [probes]`
//!
//! N tori of 768 triangles at random poses in a cube sized for a few neighbours each are
//! stepped once, then every one is moved a little (`World::set_pose`), and a torus is
//! probed at random poses. Prints the microseconds per probe and the bodies touched.
use glam::{DQuat, DVec3};
use kdop::{ObjectDesc, Pose, ProbeScratch, World};

#[path = "support/uniform.rs"]
mod support;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let probes: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(200);
    let mut rnd = support::uniform(7);
    let side = (n as f64 * 8.0).cbrt() * 2.0;
    let pose = |rnd: &mut dyn FnMut() -> f64| {
        let axis = DVec3::new(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5).normalize_or(DVec3::X);
        let at = DVec3::new(rnd(), rnd(), rnd()) * side;
        Pose::from_rotation_translation(DQuat::from_axis_angle(axis, rnd() * 6.0), at).unwrap()
    };
    let mut world = World::<18>::new();
    let torus = kdop::scene::torus(1.0, 0.3, 32, 12).unwrap();
    let shape = world.add_shape(torus).unwrap();
    let ids: Vec<_> = (0..n)
        .map(|_| {
            world
                .add_object(shape, pose(&mut rnd), ObjectDesc::default())
                .unwrap()
        })
        .collect();
    world.step().unwrap();
    for &id in &ids {
        let p = world.pose(id).unwrap();
        let nudge = Pose::from_translation(DVec3::new(0.01, 0.0, 0.0)).unwrap();
        world.set_pose(id, nudge.after(&p).unwrap()).unwrap();
    }
    let poses: Vec<Pose> = (0..probes).map(|_| pose(&mut rnd)).collect();
    let (mut scratch, mut hits) = (ProbeScratch::new(), Vec::new());
    let mut touched = 0;
    let t = std::time::Instant::now();
    for p in &poses {
        world
            .probe(shape, p, &ObjectDesc::default(), &mut scratch, &mut hits)
            .unwrap();
        touched += hits.len();
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / probes as f64;
    println!("objects {n} moved {n} probes {probes}: {us:.1} us a probe, {touched} bodies touched");
}
