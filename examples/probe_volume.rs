use glam::DVec3;
use kdop::Dop;
use std::time::Instant;
fn main() {
    let mut s = 1u64;
    let mut r = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64) / ((1u64 << 53) as f64)
    };
    let dops: Vec<Dop<18>> = (0..20000)
        .map(|_| {
            let pts: Vec<DVec3> = (0..9).map(|_| DVec3::new(r(), r(), r())).collect();
            Dop::<18>::from_points(&pts)
        })
        .collect();
    let which = std::env::args().nth(1).unwrap_or_default();
    let t = Instant::now();
    let mut v = 0.0;
    for _ in 0..5 {
        for d in &dops {
            if which == "v" {
                v += d.vertices().len() as f64
            } else {
                v += d.volume();
            }
        }
    }
    println!(
        "{which}: {:.2} us each ({v:.3})",
        t.elapsed().as_secs_f64() * 1e6 / 100000.0
    );
}
