//! Placements of objects: affine maps `x -> A x + t` in `f64`.

use crate::error::{Error, Result};
use crate::{MAX_POSE_LINEAR, MAX_POSE_TRANSLATION};
use glam::{DAffine3, DMat3, DVec3};

/// An affine placement `x -> A x + t`, usually a rotation and a translation.
///
/// The linear part need not be a rotation: scaling, shearing and mirroring poses are
/// valid too, because tumbling (§4.1) and hill-climbing only use that affine maps preserve
/// convex hulls. Entries are checked on construction (finite, `|A_ij| <=`
/// [`MAX_POSE_LINEAR`], `|t_i| <=` [`MAX_POSE_TRANSLATION`]), so every `Pose` is valid.
///
/// # The exactness contract
/// Collision answers are exact for the coordinates [`Pose::transform_point`] produces:
/// `x'_i = ((A_i0 x + A_i1 y) + A_i2 z) + t_i` in `f64`, in that order, without fused
/// multiply-adds. A reference computation that uses this function sees the same triangles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    rows: [[f64; 4]; 3],
}

impl Default for Pose {
    fn default() -> Self {
        Pose::IDENTITY
    }
}

impl Pose {
    /// The identity placement.
    pub const IDENTITY: Pose = Pose {
        rows: [
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
        ],
    };

    /// A pose from a row-major 3×4 matrix `r00 r01 r02 tx r10 r11 r12 ty r20 r21 r22 tz`.
    ///
    /// # Errors
    /// [`Error::InvalidPose`] for NaN, infinite or out-of-range entries.
    pub fn from_rows(m: [f64; 12]) -> Result<Pose> {
        let rows = [
            [m[0], m[1], m[2], m[3]],
            [m[4], m[5], m[6], m[7]],
            [m[8], m[9], m[10], m[11]],
        ];
        for r in &rows {
            if r.iter().any(|v| !v.is_finite()) {
                return Err(Error::InvalidPose {
                    reason: "NaN or infinite entry",
                });
            }
            if r[..3].iter().any(|v| v.abs() > MAX_POSE_LINEAR) {
                return Err(Error::InvalidPose {
                    reason: "an entry of the linear part (the 3x3 block) is beyond ±2^20 = ±1048576",
                });
            }
            if r[3].abs() > MAX_POSE_TRANSLATION {
                return Err(Error::InvalidPose {
                    reason: "a translation entry is beyond ±2^42 = ±4398046511104",
                });
            }
        }
        Ok(Pose { rows })
    }

    /// A pose from a linear part and a translation.
    ///
    /// # Errors
    /// As [`Pose::from_rows`].
    pub fn new(linear: DMat3, translation: DVec3) -> Result<Pose> {
        let (c0, c1, c2, t) = (linear.x_axis, linear.y_axis, linear.z_axis, translation);
        Pose::from_rows([
            c0.x, c1.x, c2.x, t.x, c0.y, c1.y, c2.y, t.y, c0.z, c1.z, c2.z, t.z,
        ])
    }

    /// A pure translation.
    ///
    /// # Errors
    /// As [`Pose::from_rows`].
    pub fn from_translation(t: DVec3) -> Result<Pose> {
        Pose::new(DMat3::IDENTITY, t)
    }

    /// A pose from a `glam` affine transform.
    ///
    /// # Errors
    /// As [`Pose::from_rows`].
    pub fn from_affine(a: DAffine3) -> Result<Pose> {
        Pose::new(a.matrix3, a.translation)
    }

    /// The row-major 3×4 entries.
    #[must_use]
    pub fn to_rows(&self) -> [f64; 12] {
        let r = &self.rows;
        [
            r[0][0], r[0][1], r[0][2], r[0][3], r[1][0], r[1][1], r[1][2], r[1][3], r[2][0],
            r[2][1], r[2][2], r[2][3],
        ]
    }

    /// The linear part.
    #[must_use]
    pub fn linear(&self) -> DMat3 {
        let r = &self.rows;
        DMat3::from_cols(
            DVec3::new(r[0][0], r[1][0], r[2][0]),
            DVec3::new(r[0][1], r[1][1], r[2][1]),
            DVec3::new(r[0][2], r[1][2], r[2][2]),
        )
    }

    /// The translation.
    #[must_use]
    pub fn translation(&self) -> DVec3 {
        DVec3::new(self.rows[0][3], self.rows[1][3], self.rows[2][3])
    }

    /// The placed point, computed exactly as the contract above says.
    #[inline]
    #[must_use]
    pub fn transform_point(&self, p: DVec3) -> DVec3 {
        let r = &self.rows;
        DVec3::new(
            ((r[0][0] * p.x + r[0][1] * p.y) + r[0][2] * p.z) + r[0][3],
            ((r[1][0] * p.x + r[1][1] * p.y) + r[1][2] * p.z) + r[1][3],
            ((r[2][0] * p.x + r[2][1] * p.y) + r[2][2] * p.z) + r[2][3],
        )
    }

    /// Largest row sum of absolute values of the linear part (the ∞-norm).
    pub(crate) fn linear_inf_norm(&self) -> f64 {
        self.rows
            .iter()
            .map(|r| r[0].abs() + r[1].abs() + r[2].abs())
            .fold(0.0, f64::max)
    }

    /// Largest translation magnitude.
    pub(crate) fn translation_inf_norm(&self) -> f64 {
        self.rows.iter().map(|r| r[3].abs()).fold(0.0, f64::max)
    }

    /// `A^T d` for an integer direction `d`: the direction whose dot product with a local
    /// point gives `d` dotted with the placed point (minus `d . t`).
    #[inline]
    pub(crate) fn pull_back(&self, d: [i8; 3]) -> DVec3 {
        let r = &self.rows;
        let (a, b, c) = (f64::from(d[0]), f64::from(d[1]), f64::from(d[2]));
        DVec3::new(
            a * r[0][0] + b * r[1][0] + c * r[2][0],
            a * r[0][1] + b * r[1][1] + c * r[2][1],
            a * r[0][2] + b * r[1][2] + c * r[2][2],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_and_roundtrip() {
        let rows = [0.0, -1.0, 0.0, 5.0, 1.0, 0.0, 0.0, -2.0, 0.0, 0.0, 1.0, 0.5];
        let p = Pose::from_rows(rows).unwrap();
        assert_eq!(p.to_rows(), rows);
        // 90 degrees about z, then the translation.
        assert_eq!(p.transform_point(DVec3::X), DVec3::new(5.0, -1.0, 0.5));
        let q = Pose::new(p.linear(), p.translation()).unwrap();
        assert_eq!(p, q);
        let mut bad = rows;
        bad[4] = f64::NAN;
        assert!(Pose::from_rows(bad).is_err());
        bad[4] = 1e7;
        assert!(Pose::from_rows(bad).is_err());
        bad[4] = 1.0;
        bad[11] = 1e13;
        assert!(Pose::from_rows(bad).is_err());
    }
}
