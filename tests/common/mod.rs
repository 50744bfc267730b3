//! Helpers shared by the integration tests.
#![allow(dead_code)]

use glam::DVec3;
use std::path::PathBuf;

/// The library's seeded generator with a few test conveniences.
pub struct Rng(kdop::scene::Rng);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(kdop::scene::Rng::new(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        self.0.f64()
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
    /// A rotation from a normalised random quaternion (not uniform over rotations, but
    /// seeded and varied, which is all the tests need).
    pub fn rotation(&mut self) -> glam::DMat3 {
        let q = glam::DQuat::from_xyzw(
            self.f64() - 0.5,
            self.f64() - 0.5,
            self.f64() - 0.5,
            self.f64() - 0.5,
        );
        glam::DMat3::from_quat(q.normalize())
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

/// `n` poses, each a point of the box `[lo, hi]` (drawn first) and a rotation from
/// [`Rng::rotation`] times `scale` (drawn second).
pub fn poses_in_box(seed: u64, n: usize, lo: DVec3, hi: DVec3, scale: f64) -> Vec<kdop::Pose> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let t = DVec3::new(
                rng.range(lo.x, hi.x),
                rng.range(lo.y, hi.y),
                rng.range(lo.z, hi.z),
            );
            kdop::Pose::new(rng.rotation() * scale, t).unwrap()
        })
        .collect()
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

/// Report and detect options for one descent rule and re-bounding method.
pub fn report_and_detect(
    (descent, rebound): (kdop::Descent, kdop::Rebound),
) -> (kdop::QueryOptions, kdop::QueryOptions) {
    (
        kdop::QueryOptions {
            descent,
            rebound,
            ..kdop::QueryOptions::REPORT
        },
        kdop::QueryOptions {
            descent,
            rebound,
            ..kdop::QueryOptions::DETECT
        },
    )
}

/// The descent rules and re-bounding methods the oracle tests run: both descents with the
/// default re-bounding, and the paper's re-bounding from corners once.
pub const CONFIGS: [(kdop::Descent, kdop::Rebound); 3] = [
    (kdop::Descent::EnvironmentFirst, kdop::Rebound::Slabs),
    (kdop::Descent::Larger, kdop::Rebound::Slabs),
    (kdop::Descent::Larger, kdop::Rebound::Corners),
];

/// A cluster of random triangles (sizes vary), some degenerate, some duplicated.
pub fn cluster(rng: &mut Rng, n: usize, radius: f64, size: f64) -> kdop::Mesh {
    let mut tris = Vec::new();
    for i in 0..n {
        let c = rng.vec(-radius, radius);
        let s = size * (0.2 + rng.f64());
        let t = [c, c + rng.vec(-s, s), c + rng.vec(-s, s)];
        let t = match i % 29 {
            0 => [t[0], t[1], t[1]],                // repeated corner
            1 => [t[0], t[1], (t[0] + t[1]) * 0.5], // collinear
            2 => [t[0], t[0], t[0]],                // a point
            _ => t,
        };
        tris.push(t);
        if i % 31 == 0 {
            tris.push(t); // duplicate
        }
    }
    kdop::Mesh::from_triangles(&tris).unwrap()
}

/// A random rotation (times a random axis scaling when `affine`) and a translation in
/// `[-spread, spread]^3`.
pub fn random_pose(rng: &mut Rng, spread: f64, affine: bool) -> kdop::Pose {
    let mut m = rng.rotation();
    if affine {
        m *= glam::DMat3::from_diagonal(DVec3::new(
            rng.range(0.5, 1.5),
            rng.range(0.5, 1.5),
            rng.range(0.5, 1.5),
        ));
    }
    kdop::Pose::new(m, rng.vec(-spread, spread)).unwrap()
}

/// `f` run on a rayon pool of `threads` threads (determinism tests compare thread counts).
pub fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}
