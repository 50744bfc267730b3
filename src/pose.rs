//! Placements of objects: affine maps `x -> A x + t` in `f64`.

use crate::error::{Error, Result};
use crate::{MAX_POSE_LINEAR, MAX_POSE_TRANSLATION};
use glam::{DAffine3, DMat3, DQuat, DVec3, Quat, Vec3};

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
    /// Whether the two are the same numbers bit for bit (so that they place every point
    /// alike; `==` takes `0.0` and `-0.0` as equal).
    pub(crate) fn same_bits(&self, other: &Pose) -> bool {
        self.rows
            .iter()
            .flatten()
            .zip(other.rows.iter().flatten())
            .all(|(a, b)| a.to_bits() == b.to_bits())
    }

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

    /// A rigid pose from a rotation quaternion and a translation, as engines keep them.
    ///
    /// The quaternion must be a unit quaternion to within `1e-6`: a non-unit one would
    /// scale and shear the object rather than turn it, so it is refused, not silently
    /// used. Within that tolerance it is normalised.
    ///
    /// # Errors
    /// [`Error::InvalidPose`] for a non-finite or non-unit quaternion, or as
    /// [`Pose::from_rows`].
    pub fn from_rotation_translation(rotation: DQuat, translation: DVec3) -> Result<Pose> {
        if !rotation.is_finite() {
            return Err(Error::InvalidPose {
                reason: "NaN or infinite quaternion entry",
            });
        }
        if (rotation.length_squared() - 1.0).abs() > 2e-6 {
            return Err(Error::InvalidPose {
                reason: "the rotation quaternion is not of unit length (it would scale and shear)",
            });
        }
        Pose::new(DMat3::from_quat(rotation.normalize()), translation)
    }

    /// [`Pose::from_rotation_translation`] from `f32` (glam's `Quat` and `Vec3`): the
    /// quaternion must be a unit one to within `1e-4`, about what `f32` arithmetic keeps.
    ///
    /// # Errors
    /// As [`Pose::from_rotation_translation`].
    pub fn from_rotation_translation_f32(rotation: Quat, translation: Vec3) -> Result<Pose> {
        if rotation.is_finite() && (rotation.length_squared() - 1.0).abs() > 2e-4 {
            return Err(Error::InvalidPose {
                reason: "the rotation quaternion is not of unit length (it would scale and shear)",
            });
        }
        let q = rotation.as_dquat();
        let q = if q.is_finite() { q.normalize() } else { q };
        Pose::from_rotation_translation(q, translation.as_dvec3())
    }

    /// The inverse placement `x -> A^-1 (x - t)`.
    ///
    /// # Errors
    /// [`Error::InvalidPose`] when the linear part is singular (or so near it that the
    /// inverse leaves the pose limits).
    pub fn inverse(&self) -> Result<Pose> {
        let a = self.linear();
        let det = a.determinant();
        let scale = self.linear_inf_norm();
        // Relative to the entries' size: a flattening pose has no inverse.
        if !det.is_finite() || det.abs() <= 1e-12 * scale * scale * scale {
            return Err(Error::InvalidPose {
                reason: "the linear part is singular, so the pose has no inverse",
            });
        }
        let inv = a.inverse();
        Pose::new(inv, -(inv * self.translation()))
    }

    /// `self` after `first`: the pose `x -> self(first(x))`.
    ///
    /// # Errors
    /// As [`Pose::from_rows`], when the product leaves the pose limits.
    pub fn after(&self, first: &Pose) -> Result<Pose> {
        Pose::new(
            self.linear() * first.linear(),
            self.linear() * first.translation() + self.translation(),
        )
    }

    /// The placement of an object posed by `other` as seen from the frame of an object
    /// posed by `self`: `self^-1 ∘ other`. Object-against-object queries use it to bring
    /// one object into the other's frame.
    ///
    /// # Errors
    /// As [`Pose::inverse`] and [`Pose::after`].
    pub fn relative(&self, other: &Pose) -> Result<Pose> {
        self.inverse()?.after(other)
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

    /// Whether the pose is a rotation and a translation: the linear part's columns are of
    /// unit length and at right angles to within `tolerance` (every entry of `AᵀA - I` at
    /// most that in size) and it does not mirror (positive determinant). Poses read from
    /// files or made by arithmetic in `f32` carry rounding of about `1e-7`, so `1e-5` takes
    /// them as rigid while refusing any visible scale or shear. Answers are exact for
    /// any pose; the check is for callers whose poses are meant to be rigid.
    #[must_use]
    pub fn is_rigid(&self, tolerance: f64) -> bool {
        let a = self.linear();
        let g = a.transpose() * a;
        let off = (g - DMat3::IDENTITY).to_cols_array();
        off.iter().all(|e| e.abs() <= tolerance) && a.determinant() > 0.0
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

    /// [`Pose::transform_point`] of three points, bit for bit: on x86_64 the first two
    /// rows in one SSE2 register per column, each lane computing its row in the contract's
    /// order (a triangle is placed a few times in every query).
    #[inline]
    pub(crate) fn transform_three(&self, p: [DVec3; 3]) -> [DVec3; 3] {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{
                _mm_add_pd, _mm_cvtsd_f64, _mm_mul_pd, _mm_set_pd, _mm_set1_pd, _mm_unpackhi_pd,
            };
            let r = &self.rows;
            // SAFETY: SSE2 is part of the x86_64 baseline; these compute on registers.
            unsafe {
                let col = |j: usize| _mm_set_pd(r[1][j], r[0][j]);
                let (c0, c1, c2, c3) = (col(0), col(1), col(2), col(3));
                let one = |q: DVec3| {
                    let a = _mm_mul_pd(c0, _mm_set1_pd(q.x));
                    let b = _mm_add_pd(a, _mm_mul_pd(c1, _mm_set1_pd(q.y)));
                    let c = _mm_add_pd(b, _mm_mul_pd(c2, _mm_set1_pd(q.z)));
                    let d = _mm_add_pd(c, c3);
                    DVec3::new(
                        _mm_cvtsd_f64(d),
                        _mm_cvtsd_f64(_mm_unpackhi_pd(d, d)),
                        ((r[2][0] * q.x + r[2][1] * q.y) + r[2][2] * q.z) + r[2][3],
                    )
                };
                [one(p[0]), one(p[1]), one(p[2])]
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        [
            self.transform_point(p[0]),
            self.transform_point(p[1]),
            self.transform_point(p[2]),
        ]
    }

    /// A bound (Euclidean) on how far apart, seen in this pose's frame, a point can lie
    /// from the triangles a descent bounds there, when answers are exact elsewhere: the
    /// static side's triangles placed by `self` (magnitude `m_fixed` in its own frame), the
    /// flying object's by `flying` (magnitude `m_flying`), and bounds computed for the
    /// flying object under `relative`, the computed `self^-1 ∘ flying`. It covers the
    /// rounding of both placements pulled back through `self^-1`, and the difference
    /// between `relative` and the exact composition, measured by its residual. `None` when
    /// the computed inverse of `self` is too poor for the bound (a residual of 1/2 or more).
    pub(crate) fn twin_margin(
        &self,
        flying: &Pose,
        relative: &Pose,
        m_fixed: f64,
        m_flying: f64,
    ) -> Option<f64> {
        // Generous multiples of the unit roundoff: each placement is three products and
        // three sums per coordinate.
        const U: f64 = 4.0 * f64::EPSILON;
        let norm = |m: &DMat3| {
            (0..3)
                .map(|r| m.row(r).abs().element_sum())
                .fold(0.0, f64::max)
        };
        let vnorm = |v: DVec3| v.abs().max_element();
        let (ls, ts) = (self.linear(), self.translation());
        let (lf, tf) = (flying.linear(), flying.translation());
        let (lr, tr) = (relative.linear(), relative.translation());
        let inv = ls.inverse();
        let rho = norm(&(DMat3::IDENTITY - ls * inv)) + U * norm(&ls) * norm(&inv);
        if !rho.is_finite() || rho >= 0.5 {
            return None;
        }
        // ||ls^-1|| from the computed inverse and its residual (a Neumann series).
        let n_inv = norm(&inv) / (1.0 - rho);
        let place_fixed = U * (norm(&ls) * m_fixed + vnorm(ts));
        let place_flying = U * (norm(&lf) * m_flying + vnorm(tf));
        let place_relative = U * (norm(&lr) * m_flying + vnorm(tr));
        // flying(q) - self(relative(q)), whose pull-back is how far the computed relative
        // pose is from the exact one at q, and the rounding of computing it.
        let resid = norm(&(lf - ls * lr)) * m_flying
            + vnorm(tf - (ls * tr + ts))
            + U * (norm(&ls) * (norm(&lr) * m_flying + vnorm(tr))
                + vnorm(ts)
                + norm(&lf) * m_flying
                + vnorm(tf));
        let linf = n_inv * (place_fixed + place_flying + resid) + place_relative;
        // From the ∞-norm to Euclidean (√3 < 2), and twice that again for the rounding of
        // this bound itself.
        let margin = 4.0 * linf + f64::MIN_POSITIVE;
        margin.is_finite().then_some(margin)
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

    /// Rotations (from quaternions, in `f64` and rounded to `f32`) are rigid; a scale, a
    /// shear and a mirror of the same rotation are not, nor is a rotation scaled by one
    /// part in ten thousand.
    #[test]
    fn rigid_poses_are_told_from_scaled_sheared_and_mirrored_ones() {
        let q = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 0.9);
        let t = DVec3::new(3.0, -1.0, 7.0);
        let rotation = Pose::from_rotation_translation(q, t).unwrap();
        assert!(rotation.is_rigid(1e-12));
        let rounded = Pose::new(
            DMat3::from_cols_array(
                &DMat3::from_quat(q)
                    .to_cols_array()
                    .map(|v| f64::from(v as f32)),
            ),
            t,
        )
        .unwrap();
        assert!(rounded.is_rigid(1e-5) && !rounded.is_rigid(1e-12));
        let r = DMat3::from_quat(q);
        for (what, m) in [
            (
                "scaled",
                r * DMat3::from_diagonal(DVec3::new(1.0, 1.0, 1.0001)),
            ),
            (
                "sheared",
                r * DMat3::from_cols(DVec3::X, DVec3::new(0.01, 1.0, 0.0), DVec3::Z),
            ),
            (
                "mirrored",
                r * DMat3::from_diagonal(DVec3::new(-1.0, 1.0, 1.0)),
            ),
        ] {
            assert!(!Pose::new(m, t).unwrap().is_rigid(1e-5), "{what}");
        }
        assert!(Pose::IDENTITY.is_rigid(0.0));
    }

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

    #[test]
    fn inverse_and_relative_poses() {
        let q = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 0.7);
        let a = Pose::from_rotation_translation(q, DVec3::new(3.0, -1.0, 2.0)).unwrap();
        let b = Pose::new(
            DMat3::from_cols_array(&[2.0, 0.1, 0.0, 0.0, 1.0, 0.3, 0.2, 0.0, 0.5]),
            DVec3::new(-4.0, 0.5, 1.0),
        )
        .unwrap();
        let r = a.relative(&b).unwrap();
        for p in [DVec3::ZERO, DVec3::X, DVec3::new(-2.0, 5.0, 0.25)] {
            // a(r(p)) is b(p) up to rounding.
            let back = a.transform_point(r.transform_point(p));
            assert!(
                (back - b.transform_point(p)).length() < 1e-12,
                "{back} vs {p}"
            );
            let id = b.inverse().unwrap().transform_point(b.transform_point(p));
            assert!((id - p).length() < 1e-12);
        }
        let flat = Pose::new(DMat3::from_diagonal(DVec3::new(1.0, 1.0, 0.0)), DVec3::ZERO);
        assert!(flat.unwrap().inverse().is_err());
    }

    /// Three points placed at once are the three placed one by one, bit for bit: random
    /// rigid poses and points over many magnitudes, with signed zeros and a coordinate far
    /// below its neighbours among them.
    #[test]
    fn three_points_placed_as_one_by_one() {
        let mut rng = crate::scene::Rng::new(31);
        let mut mixed = 0;
        for case in 0..2000 {
            let scale = 10f64.powi(case % 13 - 6);
            let t = rng.in_box(DVec3::splat(-1e3), DVec3::splat(1e3)) * scale;
            let pose = Pose::from_rotation_translation(rng.rotation(), t).unwrap();
            let mut pts = [0, 1, 2].map(|_| rng.in_box(DVec3::splat(-1.0), DVec3::ONE) * scale);
            if case % 7 == 0 {
                pts[1] = DVec3::new(-0.0, 0.0, -0.0);
                pts[2] = DVec3::new(1.0, 2f64.powi(-53), -1.0);
            }
            let one = pts.map(|p| pose.transform_point(p));
            let three = pose.transform_three(pts);
            for (a, b) in one.iter().zip(&three) {
                assert_eq!(
                    a.to_array().map(f64::to_bits),
                    b.to_array().map(f64::to_bits),
                    "pose {pose:?}, points {pts:?}"
                );
            }
            // The sums in reverse order round differently in many of these cases, so a
            // kernel that added in another order would fail above.
            for (p, placed) in pts.iter().zip(&one) {
                for (row, got) in pose.rows.iter().zip(placed.to_array()) {
                    let reversed = ((row[3] + row[2] * p.z) + row[1] * p.y) + row[0] * p.x;
                    mixed += usize::from(reversed.to_bits() != got.to_bits());
                }
            }
        }
        assert!(
            mixed > 1000,
            "the cases tell the orders of addition apart ({mixed})"
        );
    }

    #[test]
    fn quaternions_must_be_rotations() {
        let q = Quat::from_rotation_z(0.5);
        let p = Pose::from_rotation_translation_f32(q, Vec3::new(1.0, 2.0, 3.0)).unwrap();
        assert!(
            p.is_rigid(1e-12),
            "the columns are orthonormal, without a mirror"
        );
        assert!(Pose::from_rotation_translation_f32(q * 1.1, Vec3::ZERO).is_err());
        assert!(
            Pose::from_rotation_translation_f32(
                Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0),
                Vec3::ZERO
            )
            .is_err()
        );
        assert!(
            Pose::from_rotation_translation(DQuat::from_xyzw(0.0, 0.0, 0.0, 2.0), DVec3::ZERO)
                .is_err()
        );
    }
}
