//! The scenes of the paper's experiments (Klosowski et al. 1998, §5.2, Tables 2–7), made
//! procedurally from a seed at the paper's sizes: *Pipes*, *Torus*, *747*, *Swept*,
//! *Interior*, and the nested spheres of Tables 6–7.
//!
//! The paper's models were its own (and Boeing's); these are stand-ins with the same
//! triangle counts and the same character: long thin triangles in pipe runs, a wrinkled
//! torus over stalagmites, an aircraft-like object among disjoint tetrahedra, a small object
//! on a path whose swept volume is crowded by obstacles that never touch it, and a hand
//! kept in contact with an interior. Everything is a pure function of the seed.

use super::{PlacedMesh, Rng, box_mesh, cylinder, icosphere, shapes, uv_sphere};
use crate::env::Environment;
use crate::error::Result;
use crate::hierarchy::BuildOptions;
use crate::mesh::Mesh;
use crate::pose::Pose;
use crate::query::{QueryOptions, QueryState};
use crate::tri::Triangle;
use crate::tumble::FlyingObject;
use glam::{DMat3, DQuat, DVec3};
use std::f64::consts::TAU;

/// Full size (the paper's triangle counts and steps) or small (a quick smoke run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaperSize {
    /// The paper's sizes.
    Full,
    /// About a tenth of the triangles and steps, for tests and CI.
    Small,
}

/// How the object moves.
#[derive(Clone, Debug)]
pub enum Flight {
    /// A billiard path (§5.2.2) inside `bounds`: moving about `speed` and turning at most
    /// `max_spin` radians per step, reversed on contact. The start is the first of a seeded
    /// sequence of random poses that is free of contact (the same for every bounding
    /// volume, since answers are exact).
    Billiard {
        /// Where the object's origin may go.
        bounds: (DVec3, DVec3),
        /// Distance per step.
        speed: f64,
        /// Largest turn per step, in radians.
        max_spin: f64,
    },
    /// A given path, one pose per step (no reversal).
    Path(Vec<Pose>),
}

/// One experiment's scene: an environment of placed parts, a flying object, its flight.
#[derive(Clone, Debug)]
pub struct PaperScene {
    /// The paper's name for it.
    pub name: &'static str,
    /// Environment parts, where they stand.
    pub environment: Vec<PlacedMesh>,
    /// The flying object.
    pub object: Mesh,
    /// The flight.
    pub flight: Flight,
    /// Collision checks in the flight.
    pub steps: usize,
}

impl PaperScene {
    /// Environment triangles.
    #[must_use]
    pub fn environment_triangles(&self) -> usize {
        self.environment
            .iter()
            .map(|(m, _)| m.triangle_count())
            .sum()
    }
}

impl PaperScene {
    /// The scene with its flying object replaced by `mesh` (a real model, say), fitted by
    /// [`fit_mesh`] into the bounding box of the object it replaces, so that the flight
    /// suits it as it suited the original.
    ///
    /// # Errors
    /// As [`fit_mesh`].
    pub fn with_object(mut self, mesh: &Mesh) -> Result<Self> {
        let (lo, hi) = self.object.bounds();
        self.object = fit_mesh(mesh, lo, hi)?;
        Ok(self)
    }

    /// The scene with its whole environment replaced by `mesh` as one part, fitted by
    /// [`fit_mesh`] into the bounding box of the parts it replaces. Properties the
    /// generator built in (Swept's zero contacts, Interior's contact all along) need not
    /// hold for the new environment.
    ///
    /// # Errors
    /// As [`PaperScene::with_object`].
    pub fn with_environment(mut self, mesh: &Mesh) -> Result<Self> {
        let mut lo = DVec3::INFINITY;
        let mut hi = DVec3::NEG_INFINITY;
        for (m, pose) in &self.environment {
            for t in m.triangles() {
                for &v in t {
                    let p = pose.transform_point(m.vertices()[v as usize]);
                    lo = lo.min(p);
                    hi = hi.max(p);
                }
            }
        }
        self.environment = vec![(fit_mesh(mesh, lo, hi)?, Pose::IDENTITY)];
        Ok(self)
    }
}

/// `mesh` scaled uniformly and moved so that its bounding box is centred on that of
/// `lo..hi` with the same diagonal length (its proportions kept).
///
/// # Errors
/// [`crate::Error::InvalidParameter`] for a mesh that is a single point (no extent to
/// scale) or a target box that is not finite; as [`Mesh::transformed`] if the fitted
/// coordinates leave the valid range.
pub fn fit_mesh(mesh: &Mesh, lo: DVec3, hi: DVec3) -> Result<Mesh> {
    let (mlo, mhi) = mesh.bounds();
    let (from, to) = ((mhi - mlo).length(), (hi - lo).length());
    if !(from > 0.0 && from.is_finite()) {
        return Err(crate::Error::InvalidParameter {
            name: "mesh",
            reason: "all its vertices are one point: there is no extent to fit".into(),
        });
    }
    if !to.is_finite() {
        return Err(crate::Error::InvalidParameter {
            name: "target box",
            reason: format!("{lo} .. {hi} is not finite"),
        });
    }
    let s = to / from;
    let t = (lo + hi) * 0.5 - (mlo + mhi) * 0.5 * s;
    mesh.transformed(&Pose::new(DMat3::from_diagonal(DVec3::splat(s)), t)?)
}

/// The five scenes of Table 2, in the paper's order.
///
/// # Errors
/// Only if a generator's parameters were out of range (they are not).
pub fn table2_scenes(seed: u64, size: PaperSize) -> Result<Vec<PaperScene>> {
    Ok(vec![
        pipes(seed, size)?,
        torus_scene(seed, size)?,
        aircraft(seed, size)?,
        swept(seed, size)?,
        interior(seed, size)?,
    ])
}

/// Merges placed meshes into one mesh (triangles in part order), welded.
fn merge(parts: &[PlacedMesh]) -> Result<Mesh> {
    let mut tris: Vec<Triangle> = Vec::new();
    for (m, p) in parts {
        let placed = m.transformed(p)?;
        tris.extend((0..placed.triangle_count()).filter_map(|i| placed.triangle(i)));
    }
    Ok(Mesh::from_triangles(&tris)?.welded())
}

/// A pose that maps the z axis onto `dir` (unit) and the origin onto `at`, scaling by `s`.
fn along(dir: DVec3, at: DVec3, s: DVec3) -> Result<Pose> {
    let q = DQuat::from_rotation_arc(DVec3::Z, dir);
    Pose::new(DMat3::from_quat(q) * DMat3::from_diagonal(s), at)
}

/// *Pipes*: an interweaving system of pipes on a lattice (about 144,000 triangles; each
/// straight run is one closed tube of long thin triangles), and the same system at a tenth
/// of the size flying among them.
///
/// # Errors
/// As [`Mesh::new`]; not for these parameters.
pub fn pipes(seed: u64, size: PaperSize) -> Result<PaperScene> {
    let mut rng = Rng::new(seed ^ 0x9195);
    let (lattice, pipes_n, runs) = match size {
        PaperSize::Full => (7usize, 65usize, 30usize),
        PaperSize::Small => (5, 12, 12),
    };
    let spacing = 10.0;
    let dirs = [
        DVec3::X,
        DVec3::NEG_X,
        DVec3::Y,
        DVec3::NEG_Y,
        DVec3::Z,
        DVec3::NEG_Z,
    ];
    let max = (lattice - 1) as f64;
    let mut system = Vec::new();
    for _ in 0..pipes_n {
        let mut node = DVec3::new(
            rng.next_u64() as f64 % lattice as f64,
            rng.next_u64() as f64 % lattice as f64,
            rng.next_u64() as f64 % lattice as f64,
        )
        .floor();
        let radius = rng.range(0.5, 1.1);
        let mut tris: Vec<Triangle> = Vec::new();
        for _ in 0..runs {
            // A straight run of 1 to 3 lattice edges in a direction that stays inside.
            let d = dirs[(rng.next_u64() % 6) as usize];
            let len = 1 + rng.next_u64() % 3;
            let mut end = node;
            for _ in 0..len {
                let next = end + d;
                if next.cmplt(DVec3::ZERO).any() || next.cmpgt(DVec3::splat(max)).any() {
                    break;
                }
                end = next;
            }
            if end == node {
                continue;
            }
            let (a, b) = (node * spacing, end * spacing);
            let tube = cylinder(radius, (b - a).length() + radius, 24, 1)?;
            let placed = tube.transformed(&along(d, (a + b) * 0.5, DVec3::ONE)?)?;
            tris.extend((0..placed.triangle_count()).filter_map(|i| placed.triangle(i)));
            node = end;
        }
        if !tris.is_empty() {
            system.push((Mesh::from_triangles(&tris)?.welded(), Pose::IDENTITY));
        }
    }
    // The flying copy: the whole system at a tenth of the size, centred on its own origin
    // (small enough to fly between the pipes, which stand about 8 units apart).
    let centre = DVec3::splat(max * spacing * 0.5);
    let shrink = Pose::new(DMat3::from_diagonal(DVec3::splat(0.1)), -centre * 0.1)?;
    let object = merge(&system)?.transformed(&shrink)?;
    let lo = DVec3::splat(spacing * 0.5);
    let hi = DVec3::splat(max * spacing - spacing * 0.5);
    Ok(PaperScene {
        name: "Pipes",
        environment: system,
        object,
        flight: Flight::Billiard {
            bounds: (lo, hi),
            speed: 0.25,
            max_spin: 0.02,
        },
        steps: if size == PaperSize::Full { 2000 } else { 300 },
    })
}

/// *Torus*: a wrinkled torus of 20,000 triangles flying over a landscape of stalagmites
/// and dimples of about 98,000 triangles.
///
/// # Errors
/// As [`Mesh::new`]; not for these parameters.
pub fn torus_scene(seed: u64, size: PaperSize) -> Result<PaperScene> {
    let mut rng = Rng::new(seed ^ 0x7045);
    let (nu, nv, grid) = match size {
        PaperSize::Full => (200usize, 50usize, 221usize),
        PaperSize::Small => (60, 16, 70),
    };
    let object = shapes::wrinkled_torus(3.0, 1.0, nu, nv, 0.12, 9, 4)?;
    // Landscape: a height field over [0, 100]^2.
    let extent = 100.0;
    let features: Vec<(DVec3, f64, f64)> = (0..70)
        .map(|i| {
            let c = DVec3::new(rng.range(5.0, 95.0), rng.range(5.0, 95.0), 0.0);
            if i % 3 == 2 {
                (c, -rng.range(3.0, 6.0), rng.range(4.0, 8.0)) // a dimple
            } else {
                (c, rng.range(8.0, 25.0), rng.range(1.0, 2.5)) // a stalagmite
            }
        })
        .collect();
    let height = |x: f64, y: f64| {
        features.iter().fold(0.0, |h, (c, a, w)| {
            let d2 = (x - c.x).powi(2) + (y - c.y).powi(2);
            h + a * (-d2 / (w * w)).exp()
        })
    };
    let ny = grid + 1;
    let mut v = Vec::with_capacity(grid * (ny + 1));
    for i in 0..grid {
        for j in 0..=ny {
            let (x, y) = (
                extent * i as f64 / (grid - 1) as f64,
                extent * j as f64 / ny as f64,
            );
            v.push(DVec3::new(x, y, height(x, y)));
        }
    }
    let id = |i: usize, j: usize| (i * (ny + 1) + j) as u32;
    let mut t = Vec::new();
    for i in 0..grid - 1 {
        for j in 0..ny {
            t.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
            t.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
        }
    }
    let land = Mesh::new(v, t)?;
    Ok(PaperScene {
        name: "Torus",
        environment: vec![(land, Pose::IDENTITY)],
        object,
        flight: Flight::Billiard {
            bounds: (DVec3::new(5.0, 5.0, 2.0), DVec3::new(95.0, 95.0, 22.0)),
            speed: 0.3,
            max_spin: 0.03,
        },
        steps: if size == PaperSize::Full { 2000 } else { 300 },
    })
}

/// *747*: an aircraft-like object of about 14,500 triangles (fuselage, nose, wings, tail,
/// engines) among 25,000 random tetrahedra, each in its own cell of a grid and so disjoint.
///
/// # Errors
/// As [`Mesh::new`]; not for these parameters.
pub fn aircraft(seed: u64, size: PaperSize) -> Result<PaperScene> {
    let mut rng = Rng::new(seed ^ 0x747);
    let (detail, cells) = match size {
        PaperSize::Full => (1usize, [30usize, 30, 28]),
        PaperSize::Small => (2, [14, 14, 13]),
    };
    let s = |v: f64, d: usize| (v / d as f64).max(3.0) as usize;
    let parts: Vec<PlacedMesh> = vec![
        // Fuselage along x.
        (
            cylinder(3.0, 60.0, s(64.0, detail), s(40.0, detail))?,
            along(DVec3::X, DVec3::ZERO, DVec3::ONE)?,
        ),
        // Nose and tail cones: a stretched sphere.
        (
            uv_sphere(3.0, s(64.0, detail), s(33.0, detail))?,
            along(DVec3::X, DVec3::ZERO, DVec3::new(1.0, 1.0, 11.0))?,
        ),
        // Wings, stabiliser, fin.
        (
            box_mesh(DVec3::new(6.0, 30.0, 0.4), s(16.0, detail), false)?,
            Pose::from_translation(DVec3::new(2.0, 0.0, -1.0))?,
        ),
        (
            box_mesh(DVec3::new(3.0, 10.0, 0.3), s(8.0, detail), false)?,
            Pose::from_translation(DVec3::new(-27.0, 0.0, 1.0))?,
        ),
        (
            box_mesh(DVec3::new(3.5, 0.3, 6.0), s(8.0, detail), false)?,
            Pose::from_translation(DVec3::new(-27.0, 0.0, 6.0))?,
        ),
    ];
    let mut parts = parts;
    for y in [-18.0, -9.0, 9.0, 18.0] {
        parts.push((
            cylinder(1.2, 6.0, s(24.0, detail), 2)?,
            along(DVec3::X, DVec3::new(4.0, y, -2.5), DVec3::ONE)?,
        ));
    }
    let object = merge(&parts)?;
    // Tetrahedra: one per grid cell, inside its cell's middle half, so none touch.
    let cell = 20.0;
    let mut tris: Vec<Triangle> = Vec::new();
    for i in 0..cells[0] {
        for j in 0..cells[1] {
            for k in 0..cells[2] {
                let base = DVec3::new(i as f64, j as f64, k as f64) * cell;
                let mut corner = || base + rng.in_box(DVec3::splat(0.3), DVec3::splat(0.7)) * cell;
                let (a, b, c, d) = (corner(), corner(), corner(), corner());
                tris.extend([[a, b, c], [a, c, d], [a, d, b], [b, d, c]]);
            }
        }
    }
    let tets = Mesh::from_triangles(&tris)?;
    let hi = DVec3::new(cells[0] as f64, cells[1] as f64, cells[2] as f64) * cell;
    Ok(PaperScene {
        name: "747",
        environment: vec![(tets, Pose::IDENTITY)],
        object,
        flight: Flight::Billiard {
            bounds: (DVec3::splat(35.0), hi - 35.0),
            speed: 1.0,
            max_spin: 0.02,
        },
        steps: if size == PaperSize::Full { 10_000 } else { 600 },
    })
}

/// *Swept*: a 36-triangle axe (handle, head, blade: three boxes) on a smooth path of 1,000
/// steps, with 10,000 small tetrahedra placed close to the volume it sweeps; every one that
/// would touch it somewhere on the path is dropped, so the flight has no contact at all.
///
/// # Errors
/// As [`Mesh::new`]; not for these parameters.
pub fn swept(seed: u64, size: PaperSize) -> Result<PaperScene> {
    let mut rng = Rng::new(seed ^ 0x5e7);
    let (steps, wanted) = match size {
        PaperSize::Full => (1000usize, 10_000usize),
        PaperSize::Small => (200, 1000),
    };
    let object = merge(&[
        (
            box_mesh(DVec3::new(0.25, 0.25, 4.0), 1, false)?,
            Pose::IDENTITY,
        ),
        (
            box_mesh(DVec3::new(1.0, 0.5, 0.6), 1, false)?,
            Pose::from_translation(DVec3::new(0.0, 0.0, 3.6))?,
        ),
        (
            box_mesh(DVec3::new(1.5, 0.1, 1.0), 1, false)?,
            Pose::from_translation(DVec3::new(2.0, 0.0, 3.6))?,
        ),
    ])?;
    // A smooth path: sums of slow sinusoids in position and in the rotation axis.
    let ph: Vec<f64> = (0..9).map(|_| rng.range(0.0, TAU)).collect();
    let path: Vec<Pose> = (0..steps)
        .map(|i| {
            let t = i as f64 / steps as f64 * TAU;
            let p = DVec3::new(
                40.0 * (t + ph[0]).sin() + 10.0 * (3.0 * t + ph[1]).sin(),
                40.0 * (2.0 * t + ph[2]).sin() + 8.0 * (5.0 * t + ph[3]).cos(),
                25.0 * (t + ph[4]).cos() + 6.0 * (4.0 * t + ph[5]).sin(),
            );
            let axis = DVec3::new((t + ph[6]).sin(), (2.0 * t + ph[7]).cos(), 1.0).normalize();
            let q = DQuat::from_axis_angle(axis, 3.0 * t + ph[8]);
            Pose::new(DMat3::from_quat(q), p).unwrap_or(Pose::IDENTITY)
        })
        .collect();
    // Candidates: small tetrahedra just off the object's surface at random steps.
    let corners: Vec<DVec3> = object.vertices().to_vec();
    let mut keep: Vec<Triangle> = Vec::new();
    while keep.len() < wanted * 4 {
        let mut cand: Vec<Triangle> = Vec::new();
        for _ in 0..(wanted - keep.len() / 4) * 2 {
            let pose = &path[(rng.next_u64() % steps as u64) as usize];
            let v = corners[(rng.next_u64() % corners.len() as u64) as usize];
            let centre = pose.transform_point(v * rng.range(1.05, 1.6) + rng.unit() * 0.3);
            let mut corner = || centre + rng.unit() * rng.range(0.1, 0.4);
            let (a, b, c, d) = (corner(), corner(), corner(), corner());
            cand.extend([[a, b, c], [a, c, d], [a, d, b], [b, d, c]]);
        }
        // Drop every candidate that touches the object anywhere on the path (exact).
        let env =
            Environment::<18>::from_mesh(Mesh::from_triangles(&cand)?, &BuildOptions::ENVIRONMENT)?;
        let obj = FlyingObject::<18>::new(object.clone(), &BuildOptions::FLYING)?;
        let mut state = QueryState::new();
        let mut hit = vec![false; cand.len() / 4];
        for pose in &path {
            for c in env
                .collide(&obj, pose, &QueryOptions::REPORT, &mut state)?
                .contacts
            {
                hit[c.env_triangle as usize / 4] = true;
            }
        }
        for (t, h) in cand.chunks(4).zip(hit) {
            if !h && keep.len() < wanted * 4 {
                keep.extend_from_slice(t);
            }
        }
    }
    Ok(PaperScene {
        name: "Swept",
        environment: vec![(Mesh::from_triangles(&keep)?, Pose::IDENTITY)],
        object,
        flight: Flight::Path(path),
        steps,
    })
}

/// *Interior*: a cluttered cabin of about 170,000 triangles (walls, rows of seats, bins,
/// ducts, fittings, a work table) and a hand of 448 triangles that a path keeps pressed
/// into the table while it slides and turns: many contacts at every step.
///
/// # Errors
/// As [`Mesh::new`]; not for these parameters.
pub fn interior(seed: u64, size: PaperSize) -> Result<PaperScene> {
    let mut rng = Rng::new(seed ^ 0x1e7);
    let (wall_n, rows, ducts, fittings, steps) = match size {
        PaperSize::Full => (40usize, 12usize, 30usize, 40usize, 2528usize),
        PaperSize::Small => (12, 3, 6, 8, 250),
    };
    let mut parts: Vec<PlacedMesh> = vec![(
        box_mesh(DVec3::new(60.0, 20.0, 10.0), wall_n, true)?,
        Pose::IDENTITY,
    )];
    // Seats: six per row, a cushion and a back each.
    for r in 0..rows {
        for s in 0..6 {
            let at = DVec3::new(-50.0 + 8.0 * r as f64, -15.0 + 6.0 * s as f64, -7.0);
            parts.push((
                box_mesh(DVec3::new(2.0, 2.2, 0.5), 4, false)?,
                Pose::from_translation(at)?,
            ));
            parts.push((
                box_mesh(DVec3::new(0.4, 2.2, 2.5), 4, false)?,
                Pose::from_translation(at + DVec3::new(-2.0, 0.0, 2.5))?,
            ));
        }
    }
    // Overhead bins along both sides.
    for i in 0..rows {
        for y in [-17.0, 17.0] {
            parts.push((
                box_mesh(DVec3::new(3.8, 2.5, 1.5), 10, false)?,
                Pose::from_translation(DVec3::new(-50.0 + 8.0 * i as f64, y, 7.5))?,
            ));
        }
    }
    // Ducts and cables under the ceiling, fittings anywhere.
    for _ in 0..ducts {
        let at = DVec3::new(
            rng.range(-55.0, 55.0),
            rng.range(-18.0, 18.0),
            rng.range(6.0, 9.0),
        );
        parts.push((
            cylinder(rng.range(0.3, 0.8), rng.range(10.0, 30.0), 32, 20)?,
            along(DVec3::X, at, DVec3::ONE)?,
        ));
    }
    for _ in 0..fittings {
        let at = DVec3::new(
            rng.range(-55.0, 55.0),
            rng.range(-18.0, 18.0),
            rng.range(-9.0, 9.0),
        );
        parts.push((
            icosphere(rng.range(0.4, 1.2), 3)?,
            Pose::from_translation(at)?,
        ));
    }
    // The work table the hand is pressed into: top at z = 0.
    let table_n = if size == PaperSize::Full { 30 } else { 10 };
    parts.push((
        box_mesh(DVec3::new(12.0, 6.0, 0.5), table_n, false)?,
        Pose::from_translation(DVec3::new(40.0, 0.0, -0.5))?,
    ));
    // The hand: a palm and five fingers, palm down, 448 triangles.
    let mut hand: Vec<PlacedMesh> = vec![(
        box_mesh(DVec3::new(0.9, 0.8, 0.2), 2, false)?,
        Pose::IDENTITY,
    )];
    for f in 0..4 {
        let y = -0.6 + 0.4 * f as f64;
        hand.push((
            cylinder(0.15, 1.4, 8, 4)?,
            along(DVec3::X, DVec3::new(1.5, y, 0.0), DVec3::ONE)?,
        ));
    }
    hand.push((
        cylinder(0.17, 1.0, 8, 4)?,
        along(
            DVec3::new(0.5, 1.0, 0.0).normalize(),
            DVec3::new(0.3, 1.2, 0.0),
            DVec3::ONE,
        )?,
    ));
    let object = merge(&hand)?;
    // The path: sliding over the table, palm 0.1 below its top, turning about z.
    let ph: Vec<f64> = (0..4).map(|_| rng.range(0.0, TAU)).collect();
    let path = (0..steps)
        .map(|i| {
            let t = i as f64 / steps as f64 * TAU;
            let p = DVec3::new(
                40.0 + 8.0 * (t + ph[0]).sin(),
                3.5 * (2.0 * t + ph[1]).sin(),
                0.1,
            );
            let q = DQuat::from_rotation_z(0.8 * (3.0 * t + ph[2]).sin() + ph[3]);
            Pose::new(DMat3::from_quat(q), p).unwrap_or(Pose::IDENTITY)
        })
        .collect();
    Ok(PaperScene {
        name: "Interior",
        environment: parts,
        object,
        flight: Flight::Path(path),
        steps,
    })
}

/// The nested spheres of Tables 6–7: an outer sphere of radius 1 and an inner one of
/// radius `1 - alpha`, each with about `faces` triangles (UV spheres: 2,000 faces as 40
/// segments × 26 rings, 20,000 as 100 × 101).
///
/// # Errors
/// [`crate::Error::InvalidParameter`] for `alpha` outside `(0, 1)`.
pub fn nested_spheres(faces: usize, alpha: f64) -> Result<(Mesh, Mesh)> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(crate::Error::InvalidParameter {
            name: "alpha",
            reason: format!("{alpha} is not in (0, 1)"),
        });
    }
    // 2 * segments * (rings - 1) = faces; the paper's two sizes exactly, others near.
    let (segments, rings) = match faces {
        2000 => (40, 26),
        20_000 => (100, 101),
        _ => {
            let r = ((faces as f64 / 4.0).sqrt().round() as usize).max(2);
            ((faces / (2 * r)).max(3), r + 1)
        }
    };
    Ok((
        uv_sphere(1.0, segments, rings)?,
        uv_sphere(1.0 - alpha, segments, rings)?,
    ))
}

/// The α values of Tables 6–7.
pub const ALPHAS: [f64; 8] = [0.55, 0.1, 0.055, 0.01, 0.0055, 0.001, 0.00055, 0.0001];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::brute_force_contacts;

    /// Triangle counts that follow from how each scene is made (grid and tessellation
    /// formulas), so the generators cannot drift from the paper's sizes unnoticed.
    #[test]
    fn full_sizes_follow_from_construction() {
        let t = torus_scene(1, PaperSize::Full).unwrap();
        assert_eq!(t.object.triangle_count(), 2 * 200 * 50);
        assert_eq!(t.environment_triangles(), 2 * 220 * 222);
        let a = aircraft(1, PaperSize::Full).unwrap();
        assert_eq!(a.environment_triangles(), 30 * 30 * 28 * 4);
        let i = interior(1, PaperSize::Full).unwrap();
        // Palm: a box of 2 x 2 quads per face; fingers: 8 sides x 4 stacks plus caps.
        assert_eq!(i.object.triangle_count(), 12 * 4 + 5 * (2 * 8 * 4 + 2 * 8));
        for faces in [2000, 20_000] {
            let (outer, inner) = nested_spheres(faces, 0.01).unwrap();
            assert_eq!(
                (outer.triangle_count(), inner.triangle_count()),
                (faces, faces)
            );
        }
        let p = pipes(1, PaperSize::Full).unwrap();
        assert!((120_000..170_000).contains(&p.environment_triangles()));
        assert_eq!(p.object.triangle_count(), p.environment_triangles());
    }

    #[test]
    fn same_seed_same_scene() {
        for f in [pipes, torus_scene, aircraft, swept, interior] {
            let (a, b, c) = (
                f(3, PaperSize::Small).unwrap(),
                f(3, PaperSize::Small).unwrap(),
                f(4, PaperSize::Small).unwrap(),
            );
            let verts = |s: &PaperScene| -> Vec<u64> {
                s.environment
                    .iter()
                    .flat_map(|(m, _)| m.vertices().iter().flat_map(|v| v.to_array()))
                    .chain(s.object.vertices().iter().flat_map(|v| v.to_array()))
                    .map(f64::to_bits)
                    .collect()
            };
            assert_eq!(verts(&a), verts(&b), "{}", a.name);
            assert_ne!(verts(&a), verts(&c), "{}", a.name);
        }
    }

    /// The Swept scene's promise, checked by brute force at every step: obstacles crowd the
    /// path, none is touched.
    #[test]
    fn swept_path_touches_no_obstacle() {
        let s = swept(2, PaperSize::Small).unwrap();
        let Flight::Path(path) = &s.flight else {
            panic!("Swept flies a path")
        };
        let env =
            Environment::<6>::build(s.environment.clone(), &BuildOptions::ENVIRONMENT).unwrap();
        let obj = FlyingObject::<6>::new(s.object.clone(), &BuildOptions::FLYING).unwrap();
        for pose in path {
            assert!(brute_force_contacts(&env, &obj, pose, 0.0).is_empty());
        }
        // Close, not just absent: with a margin of 0.5 many obstacles come within reach.
        let near: usize = path
            .iter()
            .step_by(10)
            .map(|p| brute_force_contacts(&env, &obj, p, 0.5).len())
            .sum();
        assert!(near > 50, "{near}");
    }

    /// The Interior path keeps the hand in contact: brute force finds contacts at every
    /// tenth step.
    #[test]
    fn interior_hand_stays_in_contact() {
        let s = interior(2, PaperSize::Small).unwrap();
        let Flight::Path(path) = &s.flight else {
            panic!("Interior flies a path")
        };
        let env =
            Environment::<6>::build(s.environment.clone(), &BuildOptions::ENVIRONMENT).unwrap();
        let obj = FlyingObject::<6>::new(s.object.clone(), &BuildOptions::FLYING).unwrap();
        for pose in path.iter().step_by(10) {
            assert!(brute_force_contacts(&env, &obj, pose, 0.0).len() > 5);
        }
    }

    /// A unit icosphere (bounds ±1) fitted into a 2 × 4 × 2 box centred at (11, 2, 1):
    /// scaled by √24 / √12 = √2 about that centre.
    #[test]
    fn fitted_meshes_take_the_replaced_box() {
        let ball = icosphere(1.0, 2).unwrap();
        let fitted = fit_mesh(
            &ball,
            DVec3::new(10.0, 0.0, 0.0),
            DVec3::new(12.0, 4.0, 2.0),
        )
        .unwrap();
        let (lo, hi) = fitted.bounds();
        let want = 2f64.sqrt();
        assert!(
            (lo - DVec3::new(11.0 - want, 2.0 - want, 1.0 - want))
                .abs()
                .max_element()
                < 1e-12
        );
        assert!(
            (hi - DVec3::new(11.0 + want, 2.0 + want, 1.0 + want))
                .abs()
                .max_element()
                < 1e-12
        );
        assert_eq!(fitted.triangle_count(), ball.triangle_count());
        // In a scene: the object keeps the replaced object's box centre, the environment
        // becomes one part.
        let s = swept(3, PaperSize::Small).unwrap();
        let (olo, ohi) = s.object.bounds();
        let t = s.clone().with_object(&ball).unwrap();
        let (nlo, nhi) = t.object.bounds();
        assert!(((nlo + nhi) - (olo + ohi)).abs().max_element() < 1e-9);
        assert!(((nhi - nlo).length() - (ohi - olo).length()).abs() < 1e-9);
        let e = s.with_environment(&ball).unwrap();
        assert_eq!(e.environment.len(), 1);
        assert_eq!(e.environment_triangles(), ball.triangle_count());
        // A mesh of one point has nothing to scale: a typed error, not a NaN mesh.
        let point = Mesh::from_triangles(&[[DVec3::ONE; 3]]).unwrap();
        assert!(matches!(
            fit_mesh(&point, DVec3::ZERO, DVec3::ONE),
            Err(crate::Error::InvalidParameter { .. })
        ));
    }

    /// The 747's tetrahedra are pairwise disjoint: their boxes are, by brute force.
    #[test]
    fn aircraft_obstacles_are_disjoint() {
        let s = aircraft(2, PaperSize::Small).unwrap();
        let m = &s.environment[0].0;
        let boxes: Vec<(DVec3, DVec3)> = (0..m.triangle_count() / 4)
            .map(|t| {
                (0..4).flat_map(|k| m.triangle(4 * t + k).unwrap()).fold(
                    (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY)),
                    |(lo, hi), p| (lo.min(p), hi.max(p)),
                )
            })
            .collect();
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                assert!(
                    !(a.0.cmple(b.1).all() && b.0.cmple(a.1).all()),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
