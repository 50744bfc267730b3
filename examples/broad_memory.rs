//! The broad phase's bytes a box after a bulk load and after frames where few boxes move
//! (the scratch the load grew is given back: `src/trim.rs`):
//! `cargo run --release --example broad_memory -- [boxes]`
use kdop::{Aabb, BroadPhase};

#[path = "support/uniform.rs"]
mod support;

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut uniform = support::uniform(3);
    let mut rnd = move || uniform() as f32;
    let side = (n as f32 * 3.0).cbrt() * 1.4;
    let mut boxes: Vec<(u32, Aabb)> = (0..n)
        .map(|i| {
            let c = [rnd() * side, rnd() * side, rnd() * side];
            let h = 0.5 + rnd() * 0.5;
            (i, Aabb::new(c.map(|v| v - h), c.map(|v| v + h)))
        })
        .collect();
    let mut bp = BroadPhase::new();
    bp.set_many(&boxes, true).unwrap();
    bp.update();
    let show = |bp: &BroadPhase, what: &str| {
        println!(
            "{what}: {:.1} B/box",
            bp.memory_bytes() as f64 / f64::from(n)
        );
    };
    show(&bp, "after the bulk load");
    for f in 0..400 {
        let some: Vec<(u32, Aabb)> = boxes
            .iter_mut()
            .skip(f)
            .step_by(1000)
            .map(|(i, b)| {
                b.lo[0] += 0.01;
                b.hi[0] += 0.01;
                (*i, *b)
            })
            .collect();
        bp.set_many(&some, true).unwrap();
        bp.update();
    }
    show(&bp, "after 400 frames of 0.1 % moving");
}
