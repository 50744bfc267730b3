//! Helpers shared by the integration tests.
#![allow(dead_code)]

use glam::DVec3;
use std::path::PathBuf;

/// SplitMix64: small, seeded, reproducible.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn vec(&mut self, lo: f64, hi: f64) -> DVec3 {
        DVec3::new(self.range(lo, hi), self.range(lo, hi), self.range(lo, hi))
    }
    pub fn grid(&mut self, n: u64) -> DVec3 {
        DVec3::new(
            self.below(n) as f64,
            self.below(n) as f64,
            self.below(n) as f64,
        )
    }
    pub fn unit(&mut self) -> DVec3 {
        loop {
            let v = self.vec(-1.0, 1.0);
            let l = v.length();
            if l > 0.1 && l <= 1.0 {
                return v / l;
            }
        }
    }
}

/// `../shared/data/meshes` relative to the repository root, if present.
pub fn meshes_dir() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/meshes");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} is absent; the real-mesh checks did not run",
            p.display()
        );
        None
    }
}
