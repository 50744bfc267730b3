//! Closed triangle meshes of simple shapes, with shared vertices, centred at the origin.

use crate::error::{Error, Result};
use crate::mesh::Mesh;
use glam::DVec3;
use std::collections::HashMap;
use std::f64::consts::TAU;

/// `x > 0`, false for NaN.
fn positive(x: f64) -> bool {
    x > 0.0
}

fn bad(name: &'static str, reason: &str) -> Error {
    Error::InvalidParameter {
        name,
        reason: reason.into(),
    }
}

/// Triangles of a grid of `(nu + 1) x (nv + 1)` points, wrapping in u and/or v.
fn grid(
    nu: usize,
    nv: usize,
    wrap_u: bool,
    wrap_v: bool,
    point: impl Fn(f64, f64) -> DVec3,
) -> Result<Mesh> {
    let cu = if wrap_u { nu } else { nu + 1 };
    let cv = if wrap_v { nv } else { nv + 1 };
    let mut v = Vec::with_capacity(cu * cv);
    for i in 0..cu {
        for j in 0..cv {
            v.push(point(i as f64 / nu as f64, j as f64 / nv as f64));
        }
    }
    let id = |i: usize, j: usize| ((i % cu) * cv + (j % cv)) as u32;
    let mut t = Vec::with_capacity(2 * nu * nv);
    for i in 0..nu {
        for j in 0..nv {
            let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
            t.push([a, b, c]);
            t.push([a, c, d]);
        }
    }
    Mesh::new(v, t)
}

/// A torus around the z axis: major radius `r_major`, tube radius `r_minor`;
/// `2 * nu * nv` triangles.
///
/// # Errors
/// [`Error::InvalidParameter`] for fewer than 3 segments or non-positive radii.
pub fn torus(r_major: f64, r_minor: f64, nu: usize, nv: usize) -> Result<Mesh> {
    if nu < 3 || nv < 3 || !positive(r_major) || !positive(r_minor) {
        return Err(bad("torus", "needs 3+ segments and positive radii"));
    }
    grid(nu, nv, true, true, |u, v| {
        let (su, cu) = (u * TAU).sin_cos();
        let (sv, cv) = (v * TAU).sin_cos();
        DVec3::new(
            (r_major + r_minor * cv) * cu,
            (r_major + r_minor * cv) * su,
            r_minor * sv,
        )
    })
}

/// A torus like [`torus`] whose tube radius is modulated by waves,
/// `r_minor (1 + amplitude sin(waves_u 2πu) sin(waves_v 2πv))`: the paper's deformed torus.
///
/// # Errors
/// As [`torus`], and for an amplitude outside `[0, 1)`.
pub fn wrinkled_torus(
    r_major: f64,
    r_minor: f64,
    nu: usize,
    nv: usize,
    amplitude: f64,
    waves_u: u32,
    waves_v: u32,
) -> Result<Mesh> {
    if nu < 3 || nv < 3 || !positive(r_major) || !positive(r_minor) {
        return Err(bad("torus", "needs 3+ segments and positive radii"));
    }
    if !(0.0..1.0).contains(&amplitude) {
        return Err(bad("amplitude", "must be in [0, 1)"));
    }
    grid(nu, nv, true, true, |u, v| {
        let (su, cu) = (u * TAU).sin_cos();
        let (sv, cv) = (v * TAU).sin_cos();
        let r = r_minor
            * (1.0
                + amplitude * (waves_u as f64 * u * TAU).sin() * (waves_v as f64 * v * TAU).sin());
        DVec3::new((r_major + r * cv) * cu, (r_major + r * cv) * su, r * sv)
    })
}

/// A sphere of latitude rings and longitude segments: `2 * segments * (rings - 1)`
/// triangles (the poles are fans).
///
/// # Errors
/// [`Error::InvalidParameter`] for fewer than 3 segments or 2 rings, or a non-positive radius.
pub fn uv_sphere(radius: f64, segments: usize, rings: usize) -> Result<Mesh> {
    if segments < 3 || rings < 2 || !positive(radius) {
        return Err(bad(
            "uv_sphere",
            "needs 3+ segments, 2+ rings, positive radius",
        ));
    }
    let mut v = vec![DVec3::new(0.0, 0.0, radius), DVec3::new(0.0, 0.0, -radius)];
    for r in 1..rings {
        let (st, ct) = (std::f64::consts::PI * r as f64 / rings as f64).sin_cos();
        for s in 0..segments {
            let (sp, cp) = (TAU * s as f64 / segments as f64).sin_cos();
            v.push(DVec3::new(st * cp, st * sp, ct) * radius);
        }
    }
    let ring = |r: usize, s: usize| (2 + (r - 1) * segments + s % segments) as u32;
    let mut t = Vec::new();
    for s in 0..segments {
        t.push([0, ring(1, s), ring(1, s + 1)]);
        t.push([1, ring(rings - 1, s + 1), ring(rings - 1, s)]);
    }
    for r in 1..rings - 1 {
        for s in 0..segments {
            let (a, b, c, d) = (
                ring(r, s),
                ring(r + 1, s),
                ring(r + 1, s + 1),
                ring(r, s + 1),
            );
            t.push([a, b, c]);
            t.push([a, c, d]);
        }
    }
    Mesh::new(v, t)
}

/// A subdivided icosahedron projected on the sphere: `20 * 4^subdivisions` triangles.
///
/// # Errors
/// [`Error::InvalidParameter`] for more than 8 subdivisions or a non-positive radius.
pub fn icosphere(radius: f64, subdivisions: u32) -> Result<Mesh> {
    if subdivisions > 8 || !positive(radius) {
        return Err(bad(
            "icosphere",
            "needs at most 8 subdivisions and a positive radius",
        ));
    }
    let p = (1.0 + 5f64.sqrt()) / 2.0;
    let mut v: Vec<DVec3> = [
        (-1.0, p, 0.0),
        (1.0, p, 0.0),
        (-1.0, -p, 0.0),
        (1.0, -p, 0.0),
        (0.0, -1.0, p),
        (0.0, 1.0, p),
        (0.0, -1.0, -p),
        (0.0, 1.0, -p),
        (p, 0.0, -1.0),
        (p, 0.0, 1.0),
        (-p, 0.0, -1.0),
        (-p, 0.0, 1.0),
    ]
    .iter()
    .map(|&(x, y, z)| DVec3::new(x, y, z).normalize())
    .collect();
    let mut t: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..subdivisions {
        let mut mid: HashMap<(u32, u32), u32> = HashMap::new();
        let mut midpoint = |a: u32, b: u32, v: &mut Vec<DVec3>| {
            *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                v.push(((v[a as usize] + v[b as usize]) * 0.5).normalize());
                (v.len() - 1) as u32
            })
        };
        let mut next = Vec::with_capacity(t.len() * 4);
        for [a, b, c] in t {
            let ab = midpoint(a, b, &mut v);
            let bc = midpoint(b, c, &mut v);
            let ca = midpoint(c, a, &mut v);
            next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        t = next;
    }
    Mesh::new(v.into_iter().map(|p| p * radius).collect(), t)
}

/// A box of half extents `h` with each face split into `n x n` quads (`12 n^2` triangles);
/// `inward` turns the faces to point inside (walls of a room).
///
/// # Errors
/// [`Error::InvalidParameter`] for `n == 0` or non-positive extents.
pub fn box_mesh(h: DVec3, n: usize, inward: bool) -> Result<Mesh> {
    if n == 0 || !h.cmpgt(DVec3::ZERO).all() {
        return Err(bad("box_mesh", "needs n >= 1 and positive half extents"));
    }
    let mut v = Vec::new();
    let mut t = Vec::new();
    let mut index: HashMap<[u64; 3], u32> = HashMap::new();
    let mut vid = |p: DVec3, v: &mut Vec<DVec3>| {
        *index
            .entry(p.to_array().map(|c| (c + 0.0).to_bits()))
            .or_insert_with(|| {
                v.push(p);
                (v.len() - 1) as u32
            })
    };
    for axis in 0..3 {
        for side in [-1.0, 1.0] {
            let (u, w) = ((axis + 1) % 3, (axis + 2) % 3);
            let corner = |i: usize, j: usize| {
                let mut p = DVec3::ZERO;
                p[axis] = side * h[axis];
                p[u] = h[u] * (2.0 * i as f64 / n as f64 - 1.0);
                p[w] = h[w] * (2.0 * j as f64 / n as f64 - 1.0);
                p
            };
            for i in 0..n {
                for j in 0..n {
                    let q = [
                        corner(i, j),
                        corner(i + 1, j),
                        corner(i + 1, j + 1),
                        corner(i, j + 1),
                    ]
                    .map(|p| vid(p, &mut v));
                    let flip = (side < 0.0) != inward;
                    if flip {
                        t.push([q[0], q[2], q[1]]);
                        t.push([q[0], q[3], q[2]]);
                    } else {
                        t.push([q[0], q[1], q[2]]);
                        t.push([q[0], q[2], q[3]]);
                    }
                }
            }
        }
    }
    Mesh::new(v, t)
}

/// A closed cylinder along z of radius `r` and height `height`, `segments` around and
/// `stacks` along: `2 * segments * stacks + 2 * segments` triangles.
///
/// # Errors
/// [`Error::InvalidParameter`] for fewer than 3 segments, no stacks or non-positive sizes.
pub fn cylinder(r: f64, height: f64, segments: usize, stacks: usize) -> Result<Mesh> {
    if segments < 3 || stacks == 0 || !positive(r) || !positive(height) {
        return Err(bad(
            "cylinder",
            "needs 3+ segments, 1+ stacks, positive sizes",
        ));
    }
    let mut v = vec![
        DVec3::new(0.0, 0.0, -height / 2.0),
        DVec3::new(0.0, 0.0, height / 2.0),
    ];
    for k in 0..=stacks {
        let z = height * (k as f64 / stacks as f64 - 0.5);
        for s in 0..segments {
            let (sa, ca) = (TAU * s as f64 / segments as f64).sin_cos();
            v.push(DVec3::new(r * ca, r * sa, z));
        }
    }
    let id = |k: usize, s: usize| (2 + k * segments + s % segments) as u32;
    let mut t = Vec::new();
    for s in 0..segments {
        t.push([0, id(0, s + 1), id(0, s)]);
        t.push([1, id(stacks, s), id(stacks, s + 1)]);
        for k in 0..stacks {
            let (a, b, c, d) = (id(k, s), id(k, s + 1), id(k + 1, s + 1), id(k + 1, s));
            t.push([a, b, c]);
            t.push([a, c, d]);
        }
    }
    Mesh::new(v, t)
}

/// A tube of radius `tube` around the (p, q) torus knot on a torus of radii `r_major`,
/// `r_minor`: `2 * segments * sides` triangles.
///
/// # Errors
/// [`Error::InvalidParameter`] for too few segments or sides, or non-positive sizes.
pub fn torus_knot(
    p: u32,
    q: u32,
    r_major: f64,
    r_minor: f64,
    tube: f64,
    segments: usize,
    sides: usize,
) -> Result<Mesh> {
    if segments < 8 || sides < 3 || !positive(tube) || !positive(r_major) || p == 0 || q == 0 {
        return Err(bad(
            "torus_knot",
            "needs 8+ segments, 3+ sides, positive sizes",
        ));
    }
    let (p, q) = (f64::from(p), f64::from(q));
    let curve = |t: f64| {
        let a = t * TAU;
        let r = r_major + r_minor * (q * a).cos();
        DVec3::new(
            r * (p * a).cos(),
            r * (p * a).sin(),
            r_minor * (q * a).sin(),
        )
    };
    grid(segments, sides, true, true, |u, v| {
        let c = curve(u);
        let tangent = (curve(u + 1e-4) - curve(u - 1e-4)).normalize();
        let n = tangent.cross(DVec3::Z).normalize_or(DVec3::X);
        let b = tangent.cross(n);
        let (sv, cv) = (v * TAU).sin_cos();
        c + (n * cv + b * sv) * tube
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap as Map;

    /// Closed and consistently oriented: every directed edge appears once, its reverse once.
    fn closed(m: &Mesh) -> bool {
        let mut e: Map<(u32, u32), u32> = Map::new();
        for t in m.triangles() {
            for k in 0..3 {
                *e.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
            }
        }
        e.iter()
            .all(|(&(a, b), &c)| c == 1 && e.get(&(b, a)) == Some(&1))
    }

    #[test]
    fn shapes_are_closed_with_expected_counts() {
        let cases = [
            (torus(2.0, 0.5, 32, 12).unwrap(), 768),
            (uv_sphere(1.0, 16, 8).unwrap(), 2 * 16 * 7),
            (icosphere(1.0, 3).unwrap(), 1280),
            (box_mesh(DVec3::ONE, 6, false).unwrap(), 432),
            (box_mesh(DVec3::ONE, 2, true).unwrap(), 48),
            (cylinder(1.0, 2.0, 40, 4).unwrap(), 400),
            (torus_knot(3, 7, 5.0, 1.6, 0.7, 280, 12).unwrap(), 6720),
        ];
        for (i, (m, n)) in cases.iter().enumerate() {
            assert_eq!(m.triangle_count(), *n, "shape {i}");
            assert!(closed(m), "shape {i} is not closed");
        }
    }
}
