//! Procedural scenes: closed meshes of simple shapes, the built-in demo scene, and
//! billiard-path flights (Klosowski et al. 1998, §5.2.2: "a flying object is moved along a
//! random path ... we simply reverse the trajectory when a collision occurs").
//!
//! Everything here is a pure function of a seed, so runs repeat exactly.

pub mod paper;
mod shapes;

use crate::error::Result;
use crate::mesh::Mesh;
use crate::pose::Pose;
use glam::{DMat3, DQuat, DVec3};

pub use shapes::{box_mesh, cylinder, icosphere, torus, torus_knot, uv_sphere, wrinkled_torus};

/// SplitMix64: a small, fast, seeded generator whose sequence never changes between
/// versions (scenes and flights depend on it).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }

    /// Uniform in the box `[lo, hi)`.
    pub fn in_box(&mut self, lo: DVec3, hi: DVec3) -> DVec3 {
        DVec3::new(
            self.range(lo.x, hi.x),
            self.range(lo.y, hi.y),
            self.range(lo.z, hi.z),
        )
    }

    /// Uniform on the unit sphere.
    pub fn unit(&mut self) -> DVec3 {
        loop {
            let v = DVec3::new(
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
            );
            let l = v.length_squared();
            if l > 1e-4 && l <= 1.0 {
                return v / l.sqrt();
            }
        }
    }

    /// A uniformly random rotation.
    pub fn rotation(&mut self) -> DQuat {
        loop {
            let q = DQuat::from_xyzw(
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
            );
            let l = q.length_squared();
            if l > 1e-4 && l <= 1.0 {
                return q.normalize();
            }
        }
    }
}

/// The seed of `kdop bench matrix`'s near poses for one cell: `seed` hashed with the
/// environment's and the object's file names (FNV-1a), so that a cell keeps its poses
/// whichever other meshes run beside it.
#[must_use]
pub fn cell_seed(environment: &str, object: &str, seed: u64) -> u64 {
    let hash = |name: &str, seed: u64| {
        name.bytes().fold(seed ^ 0xCBF2_9CE4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
        })
    };
    hash(environment, hash(object, seed))
}

/// `n` seeded "near" poses of `object` about `environment`, as a user trying two meshes
/// against each other would place them: the centre of the object's bounding box at a
/// random corner of a random environment triangle, moved by up to 10 % of the object's
/// box diagonal along each axis, and turned by a uniformly random rotation. Both meshes
/// as stored, no rescaling.
///
/// # Errors
/// [`crate::Error::EmptyMesh`] if either mesh has no triangle; pose errors only for
/// coordinates near the limits.
pub fn near_poses(environment: &Mesh, object: &Mesh, n: usize, seed: u64) -> Result<Vec<Pose>> {
    if environment.triangle_count() == 0 || object.triangle_count() == 0 {
        return Err(crate::Error::EmptyMesh);
    }
    let (lo, hi) = object.bounds();
    let centre = (lo + hi) * 0.5;
    let reach = (hi - lo).length() * 0.1;
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let tri = environment.triangles()
                [(rng.next_u64() % environment.triangle_count() as u64) as usize];
            let corner = environment.vertices()[tri[(rng.next_u64() % 3) as usize] as usize];
            let target = corner + rng.in_box(DVec3::splat(-reach), DVec3::splat(reach));
            let turn = DMat3::from_quat(rng.rotation());
            Pose::new(turn, target - turn * centre)
        })
        .collect()
}

/// A part of a scene: a mesh and where it stands.
pub type PlacedMesh = (Mesh, Pose);

/// The built-in demo environment: a closed room of `room` units on a side whose walls face
/// inward, filled with `obstacles` randomly placed and turned spheres, tori, boxes and
/// cylinders, each a part. With the defaults of [`demo_environment`] it has about 100,000
/// triangles.
///
/// # Errors
/// Only if the parameters push coordinates out of range.
pub fn room_with_obstacles(seed: u64, room: f64, obstacles: usize) -> Result<Vec<PlacedMesh>> {
    let mut rng = Rng::new(seed);
    let mut parts = Vec::with_capacity(obstacles + 1);
    // Walls: a subdivided box, turned inside out so its normals face the inside.
    parts.push((
        box_mesh(DVec3::splat(room * 0.5), 12, true)?,
        Pose::IDENTITY,
    ));
    let h = room * 0.5 * 0.85;
    for i in 0..obstacles {
        let size = rng.range(0.03, 0.07) * room;
        let mesh = match i % 4 {
            0 => icosphere(size, 3)?,
            1 => torus(size, size * rng.range(0.2, 0.4), 32, 12)?,
            2 => box_mesh(
                DVec3::new(size, size * rng.range(0.3, 1.0), size * rng.range(0.3, 1.0)),
                6,
                false,
            )?,
            _ => cylinder(size * 0.6, size * rng.range(1.5, 3.0), 40, 4)?,
        };
        let q = rng.rotation();
        let t = rng.in_box(DVec3::splat(-h), DVec3::splat(h));
        parts.push((mesh, Pose::new(DMat3::from_quat(q), t)?));
    }
    Ok(parts)
}

/// The demo environment with its defaults: room 100, 136 obstacles, 99,648 triangles.
///
/// # Errors
/// Never for these parameters; the `Result` is that of [`room_with_obstacles`].
pub fn demo_environment(seed: u64) -> Result<Vec<PlacedMesh>> {
    room_with_obstacles(seed, 100.0, 136)
}

/// The demo's flying object: a (3, 7) torus knot tube of 6,720 triangles, about 13 units
/// across.
///
/// # Errors
/// Never; the `Result` is that of [`torus_knot`].
pub fn demo_object() -> Result<Mesh> {
    torus_knot(3, 7, 5.0, 1.6, 0.7, 280, 12)
}

/// A billiard path (§5.2.2): the object moves with a velocity and a spin that are perturbed
/// at random every step; when a step ends in contact, the object goes back to where it was
/// and both are reversed.
#[derive(Clone, Debug)]
pub struct Billiard {
    rng: Rng,
    position: DVec3,
    rotation: DQuat,
    velocity: DVec3,
    spin: DVec3,
    speed: f64,
    max_spin: f64,
    bounds: (DVec3, DVec3),
    last: (DVec3, DQuat),
}

impl Billiard {
    /// A flight starting at `position` with orientation `rotation`, moving about `speed`
    /// units and turning at most `max_spin` radians per step, kept inside `bounds` (the
    /// path reflects off the box's sides as off a wall).
    #[must_use]
    pub fn new(
        seed: u64,
        position: DVec3,
        rotation: DQuat,
        speed: f64,
        max_spin: f64,
        bounds: (DVec3, DVec3),
    ) -> Self {
        let mut rng = Rng::new(seed);
        let velocity = rng.unit() * speed;
        let spin = rng.unit() * max_spin * 0.5;
        Billiard {
            rng,
            position,
            rotation,
            velocity,
            spin,
            speed,
            max_spin,
            bounds,
            last: (position, rotation),
        }
    }

    /// The current pose.
    #[must_use]
    pub fn pose(&self) -> Pose {
        // A normalized quaternion's matrix and a position inside `bounds` are always valid.
        Pose::new(DMat3::from_quat(self.rotation), self.position).unwrap_or(Pose::IDENTITY)
    }

    /// Perturbs the motion and takes one step; returns the new pose to check.
    pub fn step(&mut self) -> Pose {
        self.last = (self.position, self.rotation);
        let jitter = self.rng.unit() * self.speed * 0.15;
        self.velocity = (self.velocity + jitter).normalize_or_zero() * self.speed;
        let spin = self.spin + self.rng.unit() * self.max_spin * 0.2;
        self.spin = if spin.length() > self.max_spin {
            spin.normalize() * self.max_spin
        } else {
            spin
        };
        let mut next = self.position + self.velocity;
        for k in 0..3 {
            if next[k] < self.bounds.0[k] || next[k] > self.bounds.1[k] {
                self.velocity[k] = -self.velocity[k];
                next[k] = self.position[k];
            }
        }
        self.position = next;
        let angle = self.spin.length();
        if angle > 0.0 {
            self.rotation =
                (DQuat::from_axis_angle(self.spin / angle, angle) * self.rotation).normalize();
        }
        self.pose()
    }

    /// The step ended in contact: return to the previous pose and reverse the motion.
    pub fn bounce(&mut self) {
        (self.position, self.rotation) = self.last;
        self.velocity = -self.velocity;
        self.spin = -self.spin;
    }
}

#[cfg(test)]
mod tests {
    /// The object's name is hashed first with FNV-1a from the seed, then the environment's
    /// from that: with seed 0 and an empty environment name, the published FNV-1a test
    /// vector of "a" (0xaf63dc4c8601ec8c), then one more fold that only xors the offset basis.
    #[test]
    fn cell_seed_is_fnv1a_of_the_names() {
        let fnv_a: u64 = 0xaf63_dc4c_8601_ec8c;
        assert_eq!(super::cell_seed("", "a", 0), fnv_a ^ 0xCBF2_9CE4_8422_2325);
        assert_ne!(super::cell_seed("a", "b", 1), super::cell_seed("b", "a", 1));
    }
}
