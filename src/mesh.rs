//! Validated triangle meshes.
//!
//! A [`Mesh`] is a list of vertices and a list of triangles (three vertex indices each),
//! checked once on construction: non-finite or out-of-range coordinates, out-of-range
//! indices and empty meshes are typed errors. Degenerate triangles (zero area, repeated or
//! collinear corners) and duplicate triangles are accepted; every later stage handles them
//! exactly (a degenerate triangle is the segment or point it is).

use crate::MAX_COORDINATE;
use crate::error::{Error, Result};
use crate::pose::Pose;
use crate::tri::Triangle;
use glam::DVec3;
use std::collections::HashMap;

/// Largest number of triangles (or vertices) a mesh may have: indices are `u32` with one
/// bit reserved.
pub const MAX_ELEMENTS: usize = (1 << 31) - 1;

/// A validated triangle mesh with `f64` coordinates.
///
/// # Example
/// ```
/// use glam::DVec3;
/// let m = kdop::Mesh::new(
///     vec![DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::Z],
///     vec![[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]],
/// ).unwrap();
/// assert_eq!(m.triangle_count(), 4);
/// assert!(kdop::Mesh::new(vec![DVec3::NAN], vec![[0, 0, 0]]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    vertices: Vec<DVec3>,
    triangles: Vec<[u32; 3]>,
}

impl Mesh {
    /// Checks and wraps vertices and triangles.
    ///
    /// # Errors
    /// [`Error::EmptyMesh`] without triangles; [`Error::NonFiniteCoordinate`],
    /// [`Error::CoordinateOutOfRange`] (beyond [`MAX_COORDINATE`]),
    /// [`Error::IndexOutOfRange`], [`Error::TooLarge`].
    pub fn new(vertices: Vec<DVec3>, triangles: Vec<[u32; 3]>) -> Result<Mesh> {
        validate(&vertices, &triangles)?;
        Ok(Mesh::from_valid(vertices, triangles))
    }

    /// Wraps vertices and triangles that [`validate`] accepted.
    pub(crate) fn from_valid(vertices: Vec<DVec3>, triangles: Vec<[u32; 3]>) -> Mesh {
        Mesh {
            vertices,
            triangles,
        }
    }

    /// A mesh from flat `f32` positions (`x, y, z` per vertex) and flat indices (three per
    /// triangle), as game engines and file loaders hold them.
    ///
    /// # Errors
    /// As [`Mesh::new`], and [`Error::InvalidParameter`] if a length is not a multiple of 3.
    pub fn from_flat(positions: &[f32], indices: &[u32]) -> Result<Mesh> {
        if positions.len() % 3 != 0 || indices.len() % 3 != 0 {
            return Err(Error::InvalidParameter {
                name: "mesh arrays",
                reason: "positions and indices must come in groups of three".into(),
            });
        }
        let v = positions
            .chunks_exact(3)
            .map(|c| DVec3::new(c[0].into(), c[1].into(), c[2].into()))
            .collect();
        let t = indices
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        Mesh::new(v, t)
    }

    /// A "triangle soup": every triangle given by its own three corners.
    ///
    /// # Errors
    /// As [`Mesh::new`].
    pub fn from_triangles(tris: &[Triangle]) -> Result<Mesh> {
        let vertices = tris.iter().flatten().copied().collect();
        let n = u32::try_from(tris.len().saturating_mul(3)).map_err(|_| Error::TooLarge {
            what: "triangles",
            count: tris.len(),
        })?;
        let triangles = (0..n / 3).map(|i| [3 * i, 3 * i + 1, 3 * i + 2]).collect();
        Mesh::new(vertices, triangles)
    }

    /// The vertices.
    #[must_use]
    pub fn vertices(&self) -> &[DVec3] {
        &self.vertices
    }

    /// The triangles as vertex indices.
    #[must_use]
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// Number of triangles.
    #[must_use]
    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }

    /// The corners of triangle `i`, or `None` if there is no such triangle.
    #[must_use]
    pub fn triangle(&self, i: usize) -> Option<Triangle> {
        let t = self.triangles.get(i)?;
        Some(t.map(|v| self.vertices[v as usize]))
    }

    /// The same triangles, in the same order, with vertices of bit-identical position
    /// (treating `-0.0` as `0.0`) merged into one and unreferenced vertices dropped.
    /// Geometry is unchanged exactly; memory shrinks for "triangle soup" files.
    #[must_use]
    pub fn welded(&self) -> Mesh {
        let key = |p: DVec3| p.to_array().map(|c| (c + 0.0).to_bits());
        let mut map: HashMap<[u64; 3], u32> = HashMap::with_capacity(self.vertices.len());
        let mut vertices = Vec::new();
        let triangles = self
            .triangles
            .iter()
            .map(|t| {
                t.map(|v| {
                    let p = self.vertices[v as usize];
                    *map.entry(key(p)).or_insert_with(|| {
                        vertices.push(p + DVec3::ZERO);
                        (vertices.len() - 1) as u32
                    })
                })
            })
            .collect();
        Mesh {
            vertices,
            triangles,
        }
    }

    /// This mesh with every vertex moved by `pose` (see [`Pose::transform_point`]).
    ///
    /// # Errors
    /// [`Error::CoordinateOutOfRange`] if a moved vertex leaves the supported range.
    pub fn transformed(&self, pose: &Pose) -> Result<Mesh> {
        let vertices: Vec<DVec3> = self
            .vertices
            .iter()
            .map(|&p| pose.transform_point(p))
            .collect();
        for (i, v) in vertices.iter().enumerate() {
            check_point(*v, i)?;
        }
        Ok(Mesh {
            vertices,
            triangles: self.triangles.clone(),
        })
    }

    /// Smallest and largest coordinates over the referenced vertices.
    #[must_use]
    pub fn bounds(&self) -> (DVec3, DVec3) {
        let mut lo = DVec3::INFINITY;
        let mut hi = DVec3::NEG_INFINITY;
        for t in &self.triangles {
            for &v in t {
                let p = self.vertices[v as usize];
                lo = lo.min(p);
                hi = hi.max(p);
            }
        }
        (lo, hi)
    }

    pub(crate) fn into_parts(self) -> (Vec<DVec3>, Vec<[u32; 3]>) {
        (self.vertices, self.triangles)
    }
}

/// The checks of [`Mesh::new`], on borrowed arrays, so that a caller that knows where the
/// arrays came from (a file reader) can say where a refused vertex or triangle is.
pub(crate) fn validate(vertices: &[DVec3], triangles: &[[u32; 3]]) -> Result<()> {
    if triangles.is_empty() || vertices.is_empty() {
        return Err(Error::EmptyMesh);
    }
    if triangles.len() > MAX_ELEMENTS {
        return Err(Error::TooLarge {
            what: "triangles",
            count: triangles.len(),
        });
    }
    if vertices.len() > MAX_ELEMENTS {
        return Err(Error::TooLarge {
            what: "vertices",
            count: vertices.len(),
        });
    }
    for (i, v) in vertices.iter().enumerate() {
        check_point(*v, i)?;
    }
    for (t, tri) in triangles.iter().enumerate() {
        for &index in tri {
            if index as usize >= vertices.len() {
                return Err(Error::IndexOutOfRange {
                    triangle: t,
                    index,
                    vertex_count: vertices.len(),
                });
            }
        }
    }
    Ok(())
}

/// Whether [`check_point`] accepts `v` (finite, no coordinate beyond [`MAX_COORDINATE`]),
/// without making its error: for passes over many points that name the first bad one.
#[inline]
pub(crate) fn point_in_range(v: DVec3) -> bool {
    // NaN fails every comparison, an infinity the bound.
    let a = v.abs();
    a.x <= MAX_COORDINATE && a.y <= MAX_COORDINATE && a.z <= MAX_COORDINATE
}

pub(crate) fn check_point(v: DVec3, i: usize) -> Result<()> {
    if point_in_range(v) {
        return Ok(());
    }
    if !v.is_finite() {
        return Err(Error::NonFiniteCoordinate { vertex: i });
    }
    for c in v.to_array() {
        if c.abs() > MAX_COORDINATE {
            return Err(Error::CoordinateOutOfRange {
                vertex: i,
                value: c,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_errors() {
        assert_eq!(Mesh::new(vec![], vec![]), Err(Error::EmptyMesh));
        assert_eq!(Mesh::new(vec![DVec3::ZERO], vec![]), Err(Error::EmptyMesh));
        assert!(matches!(
            Mesh::new(vec![DVec3::ZERO], vec![[0, 0, 1]]),
            Err(Error::IndexOutOfRange { index: 1, .. })
        ));
        assert!(matches!(
            Mesh::new(vec![DVec3::new(0.0, f64::INFINITY, 0.0)], vec![[0, 0, 0]]),
            Err(Error::NonFiniteCoordinate { vertex: 0 })
        ));
        assert!(matches!(
            Mesh::new(vec![DVec3::ZERO, DVec3::splat(1e300)], vec![[0, 1, 1]]),
            Err(Error::CoordinateOutOfRange { vertex: 1, .. })
        ));
        assert!(Mesh::from_flat(&[0.0; 4], &[0, 0, 0]).is_err());
        // Degenerate triangles are fine.
        assert!(Mesh::new(vec![DVec3::ZERO], vec![[0, 0, 0]]).is_ok());
    }

    #[test]
    fn weld_keeps_geometry_and_order() {
        let soup = Mesh::from_triangles(&[
            [DVec3::ZERO, DVec3::X, DVec3::Y],
            [DVec3::X, DVec3::Y, DVec3::new(-0.0, 0.0, 1.0)],
            [DVec3::new(0.0, -0.0, 0.0), DVec3::X, DVec3::Z],
        ])
        .unwrap();
        let w = soup.welded();
        assert_eq!(w.triangle_count(), 3);
        assert_eq!(w.vertices().len(), 4);
        for i in 0..3 {
            assert_eq!(
                w.triangle(i),
                soup.triangle(i).map(|t| t.map(|p| p + DVec3::ZERO))
            );
        }
    }
}
