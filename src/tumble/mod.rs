//! Flying objects and "tumbling" their k-DOPs (Klosowski et al. 1998, §4.1).
//!
//! When the object turns, its k-DOPs no longer bound it along the fixed directions. Each
//! node keeps the vertices of its k-DOP in the object's initial orientation; under a pose
//! the node is re-bounded by the exact k-DOP of its transformed vertices (the paper's
//! "approximation method", which contains the transformed geometry because an affine map
//! preserves convex hulls). A query re-bounds only the nodes it reaches, once per pose,
//! tracked by a stamp (the paper's "last tumbled" field).
//!
//! The root instead gets the *exact* k-DOP of the transformed object, by hill-climbing on
//! the convex hull of the object's vertices from the previous pose's extreme vertices (the
//! paper's method 1). Comparisons along the climb are exact, and plateaus of equal value are
//! searched, so the climb ends at a true maximum for the (rounded) direction `A^T d`.
//!
//! # Rounding
//! Tumbling runs in `f32` on vertices rounded to `f32`. Every re-bounded interval is widened
//! by a certified margin that covers the vertex rounding, the `f32` arithmetic, and the `f64`
//! rounding of [`Pose::transform_point`], so a tumbled k-DOP always contains the transformed
//! triangles exactly as the triangle test sees them.

use crate::dop::{Dop, axes, f32_down, f32_up, widen_down, widen_up};

use crate::env::Part;
use crate::env::tree::area;
use crate::error::Result;
use crate::exact::{EPS, FLOOR, cmp_dot};
use crate::hierarchy::{BuildOptions, Bvh, Node};
use crate::hull::{Hull, convex_hull};
use crate::mesh::Mesh;
use crate::pose::Pose;
use glam::DVec3;
use rayon::prelude::*;
use std::cmp::Ordering;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

mod deform;
mod leaf;
mod moved;
mod renew;

pub use deform::DeformStats;
pub use renew::Renewal;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Unit roundoff of `f32`.
const U32: f64 = 1.0 / (1u64 << 24) as f64;

/// A rigid (or affinely moving) object with its hierarchy, ready to fly.
///
/// Build once; query with a [`QueryState`](crate::QueryState) per thread.
#[derive(Clone, Debug)]
pub struct FlyingObject<const K: usize> {
    /// The hierarchy in the object's own frame, with its leaves' codes, so the object can
    /// also be the static side of a descent (object against object).
    pub(crate) part: Part<K>,
    /// A part tree of one leaf (this part), for the same purpose.
    pub(crate) top: [Node<K>; 1],
    pub(crate) parent: Vec<u32>,
    /// Copy of every node's link, compact: the traversal reads it on every step.
    pub(crate) links: Vec<u32>,
    /// Per node, the vertices re-bounding projects ([`CornerArrays`]): its own triangle
    /// corners, or the root's k-DOP corners; none for other [`CornerSet::Dop`] nodes.
    pub(crate) stored: CornerArrays,
    /// The k-DOP corners of the [`CornerSet::Dop`] nodes but the root, enumerated at the
    /// first re-bounding by [`Rebound::Corners`] that needs them
    /// ([`FlyingObject::dop_corners`]): the default [`Rebound::Slabs`] never reads them.
    pub(crate) later: OnceLock<CornerArrays>,
    pub(crate) hull: Hull,
    /// Positions of the hull vertices (same order as `hull.vertices`).
    pub(crate) hull_pts: Vec<DVec3>,
    /// Largest coordinate magnitude of the object.
    pub(crate) magnitude: f64,
    /// Whether some leaf holds more than [`SMALL_LEAF`] triangles: queries then decide a
    /// leaf's triangle pairs as a batch (`tri::intersect_batch`), else one by one.
    pub(crate) wide_leaves: bool,
    pub(crate) id: u64,
    /// Buffers kept between deformations ([`FlyingObject::deform`]); none until the first.
    pub(crate) deform: Option<deform::DeformScratch<K>>,
    /// The sum of the inner nodes' box areas, and that sum over the root's area as built:
    /// the surface-area cost whose growth says how far deformations have worn the tree.
    pub(crate) inner_area: f64,
    pub(crate) built_cost: f64,
}

/// The largest flying leaf whose triangle pairs are decided one by one: at the default leaf
/// size of 4 a batch costs as many cycles as it saves in mispredicted branches; larger
/// leaves gain from it (`docs/benchmarks.md`, "Design choices").
pub(crate) const SMALL_LEAF: usize = 4;

impl<const K: usize> FlyingObject<K> {
    /// Builds the flying hierarchy, the k-DOP vertices of every node and the convex hull.
    ///
    /// # Errors
    /// As [`Bvh::build`].
    pub fn new(mesh: Mesh, options: &BuildOptions) -> Result<Self> {
        zone!("FlyingObject::new");
        let (bvh, codes) = Bvh::<K>::build_with_codes(mesh, options)?;
        Ok(Self::from_bvh_with(bvh, codes, true, true))
    }

    /// [`FlyingObject::new`] for a shape that goes on deforming (a worn shape rebuilt):
    /// nodes not bounded by their own triangles' corners keep none, not even the root
    /// ([`CornerSet::Slabs`], re-bounded from their slabs whatever the method), as a
    /// deformation's refit leaves them.
    pub(crate) fn new_deforming(mesh: Mesh, options: &BuildOptions) -> Result<Self> {
        zone!("FlyingObject::new_deforming");
        let (bvh, codes) = Bvh::<K>::build_with_codes(mesh, options)?;
        Ok(Self::from_bvh_with(bvh, codes, false, true))
    }

    /// The object of a built hierarchy, made on the caller's thread alone: for a
    /// `OnceLock`'s initialisation, which must not wait on rayon's pool (a task of the
    /// pool taken while waiting could ask for the same lock, on the same thread).
    pub(crate) fn from_bvh(bvh: Bvh<K>, codes: Vec<[u8; K]>) -> Self {
        Self::from_bvh_with(bvh, codes, true, false)
    }

    /// The object of a built hierarchy; `dop_corners`: whether nodes not bounded by their
    /// own corners are re-bounded from their k-DOP's by [`Rebound::Corners`] (else they
    /// keep none); `on_pool`: whether the nodes are gone through on rayon's pool.
    fn from_bvh_with(bvh: Bvh<K>, codes: Vec<[u8; K]>, dop_corners: bool, on_pool: bool) -> Self {
        let n = bvh.nodes.len();
        let mut parent = vec![u32::MAX; n];
        for (i, node) in bvh.nodes.iter().enumerate() {
            if !node.is_leaf() {
                parent[node.first_child() as usize] = i as u32;
                parent[node.first_child() as usize + 1] = i as u32;
            }
        }
        // Each node's corners, a run of nodes into one flat list each (runs in parallel
        // where allowed: listing a node's distinct corners sorts its triangles'), then
        // stored in node order. Not a list per node: millions of small blocks freed at
        // once leave the allocator a consolidation of milliseconds inside whichever later
        // call first asks for a large block (a query's, say).
        const RUN: usize = 256;
        let run_of = |r: usize| {
            let nodes = r * RUN..((r + 1) * RUN).min(n);
            let mut run = CornerRun {
                sets: Vec::with_capacity(nodes.len()),
                ends: Vec::with_capacity(nodes.len()),
                verts: Vec::new(),
            };
            let mut own = Vec::new();
            for i in nodes {
                // The node's own triangle corners where it has no more than its k-DOP
                // (nearly always so for small nodes): cheaper, and exact rather than
                // approximate. Otherwise its k-DOP's corners, which only the root keeps
                // from the start (the world bounds its objects by them); the others'
                // are enumerated when first needed.
                let complete = own_corners(&bvh, i, &mut own);
                let set = if !complete {
                    if dop_corners {
                        CornerSet::Dop
                    } else {
                        CornerSet::Slabs
                    }
                } else if !dop_corners || own.len() <= ALWAYS_OWN {
                    CornerSet::Own
                } else {
                    // Only whether the k-DOP has fewer corners decides, so the count
                    // stops there; a node that has fewer keeps none until first needed.
                    let fewer = bvh.nodes[i].dop.vertices_until(own.len()).len() < own.len();
                    if fewer {
                        CornerSet::Dop
                    } else {
                        CornerSet::Own
                    }
                };
                if set == CornerSet::Own {
                    run.verts
                        .extend(own.iter().map(|&v| bvh.vertices[v as usize]));
                } else if set == CornerSet::Dop && i == 0 {
                    run.verts
                        .extend_from_slice(&bvh.nodes[0].dop.vertices_small());
                }
                run.sets.push(set);
                run.ends.push(run.verts.len() as u32);
            }
            run
        };
        let runs: Vec<CornerRun> = if on_pool {
            (0..n.div_ceil(RUN)).into_par_iter().map(run_of).collect()
        } else {
            (0..n.div_ceil(RUN)).map(run_of).collect()
        };
        let mut arrays = CornerArrays::with_capacity(n);
        let mut node = bvh.nodes.iter();
        for run in &runs {
            let mut start = 0;
            for (&set, &end) in run.sets.iter().zip(&run.ends) {
                let verts = &run.verts[start..end as usize];
                start = end as usize;
                let scale = node.next().map_or(0.0, |n| n.dop.magnitude());
                arrays.push::<K>(verts, set, scale);
            }
        }
        let (hull, hull_pts, magnitude) = hull_of(&bvh);
        let inner_area = inner_area(&bvh.nodes);
        let root_area = area(&bvh.nodes[0].dop).max(f64::MIN_POSITIVE);
        let links = bvh.nodes.iter().map(|n| n.link).collect();
        let longest_leaf = crate::hierarchy::longest_leaf(&bvh.ids);
        let top = [Node {
            dop: bvh.root_dop(),
            link: crate::hierarchy::LEAF,
        }];
        FlyingObject {
            part: Part {
                bvh,
                placement: Pose::IDENTITY,
                codes,
            },
            top,
            parent,
            links,
            stored: arrays,
            later: OnceLock::new(),
            hull,
            hull_pts,
            magnitude,
            wide_leaves: longest_leaf > SMALL_LEAF,
            id: NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed),
            deform: None,
            inner_area,
            built_cost: inner_area / root_area,
        }
    }

    /// Enumerates the k-DOP corners that [`Rebound::Corners`] re-bounds large nodes from,
    /// once per object; otherwise the first query by that method does it (the default,
    /// [`Rebound::Slabs`], never needs them). Call it before timing queries by corners.
    pub fn prepare_corners(&self) {
        self.dop_corners();
    }

    /// The k-DOP corners of the [`CornerSet::Dop`] nodes but the root (which keeps its
    /// own in [`FlyingObject::stored`]), enumerated by the first call, on the caller's
    /// thread: an enumeration inside a `OnceLock`'s initialisation on rayon's pool could
    /// take another task of the pool that waits for the same lock. A deformation's refit
    /// changes no [`CornerSet::Dop`] node's bound without making it [`CornerSet::Slabs`],
    /// and a renewal makes none, so corners enumerated before them stay true.
    pub(crate) fn dop_corners(&self) -> &CornerArrays {
        self.later.get_or_init(|| {
            let nodes = &self.part.bvh.nodes;
            let mut arrays = CornerArrays::with_capacity(nodes.len());
            for (i, node) in nodes.iter().enumerate() {
                if i != 0 && self.stored.corners[i] == CornerSet::Dop {
                    let corners = node.dop.vertices_small();
                    arrays.push::<K>(&corners, CornerSet::Dop, node.dop.magnitude());
                } else {
                    arrays.push::<K>(&[], CornerSet::Slabs, 0.0);
                }
            }
            arrays
        })
    }

    /// Every node's k-DOP re-bounded under `pose` as queries do it (§4.1: the root exact by
    /// hill-climbing, every other node by `method`), root first, into `out`. For drawing
    /// the placed hierarchy, and for measuring the cost of re-bounding (`Cu`). Unlike
    /// queries, nodes are not intersected with their parent's bound.
    pub fn placed_bounds(&self, pose: &Pose, method: Rebound, out: &mut Vec<Dop<K>>) {
        let mut frame = PoseFrame::<K>::new(pose, self.magnitude);
        out.clear();
        let mut climber = Climber::default();
        climber.reset(self.hull_pts.len(), K);
        out.push(root_exact(self, &mut frame, &mut climber));
        for i in 1..self.part.bvh.nodes.len() {
            out.push(tumble_node(self, i, &mut frame, method));
        }
    }

    /// The object's mesh as it is now (after any deformation), triangles in their original
    /// order: what a fresh build of this object would take.
    #[must_use]
    pub fn mesh(&self) -> Mesh {
        let bvh = &self.part.bvh;
        let mut tris = vec![[0u32; 3]; bvh.tris.len()];
        for (pos, t) in bvh.tris.iter().enumerate() {
            tris[bvh.id_at(pos) as usize] = *t;
        }
        Mesh::from_valid(bvh.vertices.clone(), tris)
    }

    /// The object's hierarchy (in its own frame).
    #[must_use]
    pub fn bvh(&self) -> &Bvh<K> {
        &self.part.bvh
    }

    /// Dimension of the object's convex hull: 3 for a solid, 2 for a flat object, 1 for
    /// one along a line, 0 for a point.
    #[must_use]
    pub fn hull_dimension(&self) -> u8 {
        self.hull.dim.unwrap_or(0)
    }

    /// Number of vertices on the convex hull used for the exact root k-DOP.
    #[must_use]
    pub fn hull_vertex_count(&self) -> usize {
        self.hull.vertices.len()
    }

    /// Bytes of the hierarchy, the stored k-DOP vertices, the hull, and what a deformed
    /// object keeps for its next deformation.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.part.bvh.memory_bytes()
            + self.part.codes.len() * K
            + self.parent.len() * 4
            + self.links.len() * 4
            + self.stored.memory_bytes()
            + self.later.get().map_or(0, CornerArrays::memory_bytes)
            + self.hull.adjacency.len() * 4
            + self.hull.adj_start.len() * 4
            + self.hull_pts.len() * 24
            + self.hull.vertices.len() * 4
            + self
                .deform
                .as_ref()
                .map_or(0, deform::DeformScratch::memory_bytes)
    }
}

/// Per-pose quantities shared by all nodes.
#[derive(Clone, Debug)]
pub(crate) struct PoseFrame<const K: usize> {
    /// Linear part rounded to `f32`, row-major.
    a32: [[f32; 3]; 3],
    /// `d_i . t` per axis (padded to 16 lanes with zeros, for [`corner_bounds`], as are
    /// `coef` and `cons`).
    dt: [f64; 2 * LANES],
    /// Margin coefficients: per axis `|d_i|_1 * ||A||_inf` and the constant part.
    coef: [f64; 2 * LANES],
    cons: [f64; 2 * LANES],
    /// Pulled-back directions `A^T d_i` in `f64`, as rows of x, y and z components (the
    /// root's scan reads them in lanes; [`PoseFrame::pull`] gives one as a vector).
    pull_rows: [[f64; 13]; 3],
    /// The same rounded to `f32`, rows padded to 16 with zeros (for [`own_lanes`]).
    pull32: [[f32; 2 * LANES]; 3],
    /// Root margin per axis.
    root_margin: [f64; 13],
    /// The linear part is exactly the identity: bounds shift instead of re-bounding.
    pub(crate) translation_only: bool,
    /// Per bound (lower bounds first, as in [`Dop`]), for [`shifted`]: `d_i . t` rounded
    /// outward to `f32`, the margin `W_i`, and the direction of the bound (`-1` lower,
    /// `+1` upper). All `f32`, one uniform loop over the `K` bounds: packed SSE. `d_i . t`
    /// and the direction are padded to 32 entries, for [`dual_lanes`]'s lanes too. Filled
    /// by [`PoseFrame::set`] for pure translations (`shift_t` also by the slabs' matrix).
    shift_t: [f32; 4 * LANES],
    shift_w: [f32; K],
    shift_sign: [f32; 4 * LANES],
    /// `||A||_inf`.
    na: f64,
    /// [`Rebound::Slabs`]'s matrix, filled on first use in a pose.
    dual: DualFrame<K>,
}

/// The pose's part of [`dual_lanes`]: the pulled-back directions `A^T d_i` as non-negative
/// combinations of three object-frame axes ([`dual_terms`]), as a matrix.
#[derive(Clone, Debug)]
struct DualFrame<const K: usize> {
    /// Whether the rest is for the frame's current pose.
    ready: bool,
    /// Column `c` holds the coefficient of stored bound `c` in each output bound (rows
    /// padded to 32 with zeros), all in [`Dop`]'s layout.
    m: [[[f32; LANES]; 4]; K],
    /// Per output bound: the margin terms `P`, `Q` of [`dual_lanes`].
    p: [[f32; LANES]; 4],
    q: [[f32; LANES]; 4],
}

impl<const K: usize> PoseFrame<K> {
    pub(crate) fn new(pose: &Pose, object_magnitude: f64) -> Self {
        let mut frame = PoseFrame {
            a32: [[0.0; 3]; 3],
            dt: [0.0; 2 * LANES],
            coef: [0.0; 2 * LANES],
            cons: [0.0; 2 * LANES],
            pull_rows: [[0.0; 13]; 3],
            pull32: [[0.0; 2 * LANES]; 3],
            root_margin: [0.0; 13],
            translation_only: false,
            shift_t: [0.0; 4 * LANES],
            shift_w: [0.0; K],
            shift_sign: std::array::from_fn(|i| if i < K / 2 { -1.0 } else { 1.0 }),
            na: 0.0,
            dual: DualFrame {
                ready: false,
                m: [[[0.0; LANES]; 4]; K],
                p: [[0.0; LANES]; 4],
                q: [[0.0; LANES]; 4],
            },
        };
        frame.set(pose, object_magnitude);
        frame
    }

    /// Makes this the frame of `pose`, in place (a query state keeps one frame and resets
    /// it per pose; the matrix of [`Rebound::Slabs`] is left to [`PoseFrame::prepare_dual`]).
    pub(crate) fn set(&mut self, pose: &Pose, object_magnitude: f64) {
        let lin = pose.linear();
        for (r, row) in self.a32.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v = lin.col(c)[r] as f32;
            }
        }
        let na = pose.linear_inf_norm();
        let nt = pose.translation_inf_norm();
        let t = pose.translation();
        let n = K / 2;
        self.translation_only = lin == glam::DMat3::IDENTITY;
        for (i, d) in AxisLookup::<K>::AXES.iter().enumerate() {
            let l1 = f64::from(d[0].abs() + d[1].abs() + d[2].abs());
            let dt = f64::from(d[0]) * t.x + f64::from(d[1]) * t.y + f64::from(d[2]) * t.z;
            self.dt[i] = dt;
            self.coef[i] = l1 * na;
            // dt rounding and the f64 rounding of transform_point's translation term.
            self.cons[i] = l1 * 8.0 * EPS * nt + 1e-300;
            let pull = pose.pull_back(*d);
            for r in 0..3 {
                self.pull_rows[r][i] = pull[r];
                self.pull32[r][i] = pull[r] as f32;
            }
            self.root_margin[i] = l1 * 16.0 * EPS * (na * object_magnitude + nt) + 1e-300;
            // The shift's terms serve pure translations only (and `d_i . t` the slabs'
            // matrix, which fills it itself): not paid for on every turning pose.
            if self.translation_only {
                let w = f32_up(4.0 * EPS * l1 * (object_magnitude + nt)) + f32::MIN_POSITIVE;
                (self.shift_w[i], self.shift_w[n + i]) = (w, w);
            }
        }
        if self.translation_only {
            self.fill_shift_t();
        }
        self.na = na;
        self.dual.ready = false;
    }

    /// Fills the matrix of [`dual_lanes`] for the frame's pose, unless already done.
    #[inline]
    pub(crate) fn prepare_dual(&mut self) {
        if !self.dual.ready {
            self.fill_dual();
        }
    }

    /// The direction `A^T d_i` pulled back into the object's frame.
    #[inline]
    fn pull(&self, i: usize) -> DVec3 {
        let [x, y, z] = &self.pull_rows;
        DVec3::new(x[i], y[i], z[i])
    }

    /// `d_i . t` rounded outward, per bound, into `shift_t`.
    fn fill_shift_t(&mut self) {
        let n = K / 2;
        for i in 0..n {
            (self.shift_t[i], self.shift_t[n + i]) = (f32_down(self.dt[i]), f32_up(self.dt[i]));
        }
    }

    #[inline(never)]
    fn fill_dual(&mut self) {
        let n = K / 2;
        self.fill_shift_t();
        self.dual.m = [[[0.0; LANES]; 4]; K];
        for (i, d) in AxisLookup::<K>::AXES.iter().enumerate() {
            let l1 = f64::from(d[0].abs() + d[1].abs() + d[2].abs());
            let terms = dual_terms::<K>(self.pull(i));
            let dual = &mut self.dual;
            let mut weighted = 0.0;
            for (lambda, m, s, l1m) in terms {
                let m = m as usize;
                let c = (lambda * f64::from(s)) as f32;
                // The upper bound reads the upper bound of a positively used axis and the
                // lower bound of a negatively used one; the lower bound the opposite.
                let (up, lo) = if s > 0 { (n + m, m) } else { (m, n + m) };
                dual.m[up][(n + i) / LANES][(n + i) % LANES] += c;
                dual.m[lo][i / LANES][i % LANES] += c;
                weighted += lambda * l1m;
            }
            let p = f32_up(2.0 * (11.0 * U32 * weighted + 70.0 * EPS * l1 * self.na));
            let q = f32_up(2.0 * self.cons[i]) + f32::MIN_POSITIVE;
            for r in [i, n + i] {
                dual.p[r / LANES][r % LANES] = p;
                dual.q[r / LANES][r % LANES] = q;
            }
        }
        self.dual.ready = true;
    }
}

/// `u` as `Σ λ_t s_t a_{m_t}` with `λ_t >= 0` over three axes `a_m` of the K-DOP (signs
/// `s_t`): the three directions that span the face, of the convex hull of the K-DOP's unit
/// directions, that `u` points through. Then
/// `u . x <= Σ λ_t β_t` for every point of a k-DOP with bounds `β` (LP duality; weak duality
/// is all soundness needs). The cone is the one the unit sphere's own K-DOP would choose, so
/// the bound is exact whenever the three planes meet at a vertex of the k-DOP (always for
/// K = 6: Arvo's box transform).
///
/// In the chamber `a1 >= a2 >= a3 >= 0` of `|u|`'s sorted components, with `e`, `f`, `c`
/// the axis, edge-diagonal and corner-diagonal directions of the chamber:
/// - 6: `a1 e1 + a2 e2 + a3 e3`;
/// - 14: `(a1 - a2) e1 + (a2 + a3)/2 c + (a2 - a3)/2 c'`, with `c'` the corner diagonal
///   mirrored in the third coordinate (the face `e1 c c'` of the tetrakis hexahedron that
///   the 14 directions span);
/// - 18: `(a1 - a2 - a3) e1 + a2 f12 + a3 f13` when `a1 >= a2 + a3`, else
///   `(a1 + a2 - a3)/2 f12 + (a1 - a2 + a3)/2 f13 + (a2 + a3 - a1)/2 f23`;
/// - 26: `(a1 - a2) e1 + (a2 - a3) f12 + a3 c`.
pub(crate) fn dual_terms<const K: usize>(u: DVec3) -> [(f64, u8, i8, f64); 3] {
    let a = [u.x.abs(), u.y.abs(), u.z.abs()];
    let sg = [
        if u.x < 0.0 { -1i8 } else { 1 },
        if u.y < 0.0 { -1 } else { 1 },
        if u.z < 0.0 { -1 } else { 1 },
    ];
    // Indices of the sorted components, largest first (ties in index order).
    let mut o = [0usize, 1, 2];
    if a[o[1]] > a[o[0]] {
        o.swap(0, 1);
    }
    if a[o[2]] > a[o[1]] {
        o.swap(1, 2);
        if a[o[1]] > a[o[0]] {
            o.swap(0, 1);
        }
    }
    let (a1, a2, a3) = (a[o[0]], a[o[1]], a[o[2]]);
    // Base-3 digits of the chamber's coordinates `o[w]`, signed: the direction with unit
    // components there is `(1, 1, 1) + Σ` in the index of [`AxisLookup`].
    let unit: [i32; 3] = std::array::from_fn(|w| i32::from(sg[o[w]]) * [9, 3, 1][o[w]]);
    let (e1, f12, f13, f23, c) = (
        unit[0],
        unit[0] + unit[1],
        unit[0] + unit[2],
        unit[1] + unit[2],
        unit[0] + unit[1] + unit[2],
    );
    // (λ, direction, |direction|_1)
    let terms: [(f64, i32, f64); 3] = match K {
        6 => [(a1, e1, 1.0), (a2, unit[1], 1.0), (a3, unit[2], 1.0)],
        14 => [
            (a1 - a2, e1, 1.0),
            ((a2 + a3) * 0.5, c, 3.0),
            ((a2 - a3) * 0.5, f12 - unit[2], 3.0),
        ],
        18 if a1 >= a2 + a3 => [(a1 - a2 - a3, e1, 1.0), (a2, f12, 2.0), (a3, f13, 2.0)],
        18 => [
            ((a1 + a2 - a3) * 0.5, f12, 2.0),
            ((a1 - a2 + a3) * 0.5, f13, 2.0),
            ((a2 + a3 - a1) * 0.5, f23, 2.0),
        ],
        _ => [(a1 - a2, e1, 1.0), (a2 - a3, f12, 2.0), (a3, c, 3.0)],
    };
    let mut out = [(0.0, 0, 0, 0.0); 3];
    for (o, (lambda, v, l1)) in out.iter_mut().zip(terms) {
        let (m, s) = AxisLookup::<K>::TABLE[(13 + v) as usize];
        *o = (lambda.max(0.0), m, s, l1);
    }
    out
}

/// Directions of the K-DOP by their coordinates in base 3 (digit `c + 1` per coordinate
/// `c` in {-1, 0, 1}, x first): the axis index `m` and sign `s` with `s a_m` that
/// direction (`(0, 0)` where it is none).
struct AxisLookup<const K: usize>;

impl<const K: usize> AxisLookup<K> {
    /// [`axes`]`(K)`, resolved at compile time.
    const AXES: &'static [[i8; 3]] = axes(K);
    const TABLE: [(u8, i8); 27] = {
        let a = axes(K);
        let mut t = [(0u8, 0i8); 27];
        let mut m = 0;
        while m < a.len() {
            let d = a[m];
            let at = (d[0] as i32 + 1) * 9 + (d[1] as i32 + 1) * 3 + (d[2] as i32 + 1);
            t[at as usize] = (m as u8, 1);
            t[(26 - at) as usize] = (m as u8, -1);
            m += 1;
        }
        t
    };
}

/// Re-bounds a node from its own stored k-DOP by [`dual_terms`]: `K` outputs, each a
/// combination of three stored bounds, as one dense `f32` matrix product (the matrix is the
/// pose's, in [`PoseFrame`]), instead of projecting up to 48 corners.
///
/// Margin: with `x` a point of the node (`|x|_inf <= mag`, from the box bounds), `β` the
/// stored bounds (`|β_m| <= 2 |a_m|_1 mag`) and `y = fl(A x + t)` its placed position,
/// - the matrix entries are the `f64` coefficients rounded to `f32`, and the products and
///   sums (at most three non-zero terms) round by at most `5 U32 Σ λ |β|`;
/// - `u = fl(A^T d)` is off by `2 EPS |d|_1 ||A||` per component, and the `λ`, each one or
///   two roundings of sums of `u`'s components, leave a residual `r = A^T d - Σ λ s a`
///   with `|r|_1 <= 60 EPS |d|_1 ||A||`, so `r . x` is within `|r|_1 mag`;
/// - `d . (y - A x - t)` is within `4 EPS |d|_1 (||A|| mag + |t|)`; the `|t|` part, and
///   the error of `d . t` before its outward rounding to `f32`, are in `cons`;
/// - as in [`shifted`], `w = (|s| + |T|) 2^-21 + mag P + Q` covers the rounding of the sum
///   `s + T` and its own; the final rounding of `s ± w` is stepped over by one ulp.
///
/// `P = 2 (11 U32 Σ λ |a_m|_1 + 70 EPS |d|_1 ||A||)` and `Q = 2 cons + MIN_POSITIVE`.
#[inline(always)]
fn dual_lanes<const K: usize>(d: &Dop<K>, frame: &PoseFrame<K>) -> Dop<K> {
    let n = K / 2;
    let chunks = K.div_ceil(LANES);
    let b = &d.b;
    let mut mag = 0.0f32;
    for c in 0..3 {
        let (l, h) = (b[c].abs(), b[n + c].abs());
        mag = if l > mag { l } else { mag };
        mag = if h > mag { h } else { mag };
    }
    let mut acc = [[0.0f32; LANES]; 4];
    for (c, &bc) in b.iter().enumerate() {
        let col = &frame.dual.m[c];
        for ch in 0..chunks {
            for l in 0..LANES {
                acc[ch][l] += col[ch][l] * bc;
            }
        }
    }
    let mut o = [0.0f32; 4 * LANES];
    for ch in 0..chunks {
        let lanes = ch * LANES..(ch + 1) * LANES;
        let (s, t, sign) = (
            &acc[ch],
            &frame.shift_t[lanes.clone()],
            &frame.shift_sign[lanes],
        );
        let (p, q) = (&frame.dual.p[ch], &frame.dual.q[ch]);
        let r: [f32; LANES] = std::array::from_fn(|l| {
            let w = (s[l].abs() + t[l].abs()) * (1.0 / 2_097_152.0) + (mag * p[l] + q[l]);
            let r = (s[l] + t[l]) + sign[l] * w;
            r + sign[l] * (r.abs() * (1.0 / 8_388_608.0) + f32::MIN_POSITIVE)
        });
        o[ch * LANES..(ch + 1) * LANES].copy_from_slice(&r);
    }
    let mut out = Dop::<K>::EMPTY;
    out.b.copy_from_slice(&o[..K]);
    out
}

/// [`dual_lanes`] compiled with AVX.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dual_avx<const K: usize>(d: &Dop<K>, frame: &PoseFrame<K>) -> Dop<K> {
    dual_lanes(d, frame)
}

/// Re-bounds a k-DOP by [`dual_lanes`], compiled for AVX where the CPU has it.
#[inline]
pub(crate) fn tumble_dual<const K: usize>(d: &Dop<K>, frame: &PoseFrame<K>) -> Dop<K> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, checked just above.
        return unsafe { dual_avx(d, frame) };
    }
    dual_lanes(d, frame)
}

/// Lanes of the re-bounding loop; vertex lists are padded to a multiple of this.
const LANES: usize = 8;

/// Which stored vertices a node of a [`FlyingObject`] is re-bounded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CornerSet {
    /// Its k-DOP's corners, in lanes of vertices ([`tumble_lanes`]), or its slabs.
    Dop,
    /// No corners: re-bounded from its slabs whatever the method. A deformation's refit
    /// nodes ([`FlyingObject::deform`]): enumerating a k-DOP's corners costs far more than
    /// refitting it.
    Slabs,
    /// Its own triangle corners (at most [`MAX_VERTS`]), in lanes of vertices.
    Own,
    /// Its own triangle corners, one vertex at a time onto every direction ([`own_lanes`]).
    OwnLanes,
}

/// The corners of a run of consecutive nodes while an object is built: each node's set,
/// and where its corners end in `verts`.
struct CornerRun {
    sets: Vec<CornerSet>,
    ends: Vec<u32>,
    verts: Vec<DVec3>,
}

/// Whether nodes that keep their own corners put the directions in the lanes
/// ([`own_lanes`]) rather than the vertices ([`tumble_lanes`], then a fold): it pays for
/// every k but 14, whose seven directions leave the one-register fold cheap
/// (`docs/benchmarks.md`, "Design choices").
const fn own_in_lanes(k: usize) -> bool {
    k != 14
}
/// A node's own triangle corners replace its k-DOP's corners only up to this many (a
/// 26-DOP has at most 48 corners, §5).
const MAX_VERTS: usize = 48;

/// A node with at most this many corners of its own keeps them without counting its
/// k-DOP's: such a node almost never has a k-DOP of fewer corners, and counting was most
/// of a build (`docs/benchmarks.md`, "Design choices").
const ALWAYS_OWN: usize = 12;

/// The convex hull of the vertices the triangles use, its vertices' positions, and the
/// largest coordinate magnitude among those vertices.
fn hull_of<const K: usize>(bvh: &Bvh<K>) -> (Hull, Vec<DVec3>, f64) {
    let mut used: Vec<u32> = bvh.tris.iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let pts: Vec<DVec3> = used.iter().map(|&v| bvh.vertices[v as usize]).collect();
    let hull = convex_hull(&pts);
    let hull_pts = hull.vertices.iter().map(|&i| pts[i as usize]).collect();
    let magnitude = pts.iter().fold(0.0f64, |a, p| a.max(p.abs().max_element()));
    (hull, hull_pts, magnitude)
}

/// `v` rounded to `f32`, taken into a node's `(s, m)` for its stored vertices: how far
/// rounding them to `f32` moved them (∞-norm) and their largest `f32` coordinate
/// magnitude. [`slack_done`] makes `s` never 0.
#[inline(always)]
fn rounded(v: DVec3, sm: &mut (f64, f64)) -> glam::Vec3 {
    let f = v.as_vec3();
    let back = f.as_dvec3();
    sm.0 = sm.0.max((back - v).abs().max_element());
    sm.1 = sm.1.max(back.abs().max_element());
    f
}

/// A node's `(s, m)` once [`rounded`] has taken its vertices: `s` never 0.
#[inline(always)]
fn slack_done(sm: (f64, f64)) -> (f64, f64) {
    (sm.0 + f64::MIN_POSITIVE, sm.1)
}

/// `pts` rounded to `f32` into `room`, which may hold more: the rest are copies of the
/// first (harmless for minima and maxima), as [`write_lanes`] pads. Returns the node's
/// slack `(s, m)` ([`rounded`]) over `pts`, taken on the way.
pub(crate) fn write_points(room: &mut [[f32; 3]], pts: &[DVec3]) -> (f64, f64) {
    write_points_by(room, pts.iter())
}

/// [`write_points`] of the vertices `ids` names, read where they are rather than gathered
/// first.
#[inline]
pub(crate) fn write_points_at(
    room: &mut [[f32; 3]],
    ids: &[u32],
    vertices: &[DVec3],
) -> (f64, f64) {
    write_points_by(room, ids.iter().map(|&v| &vertices[v as usize]))
}

#[inline(always)]
fn write_points_by<'a>(
    room: &mut [[f32; 3]],
    pts: impl ExactSizeIterator<Item = &'a DVec3> + Clone,
) -> (f64, f64) {
    debug_assert!(pts.len() <= room.len(), "room for every point");
    let first = pts.clone().next().map(|p| p.as_vec3().to_array());
    let (head, rest) = room.split_at_mut(pts.len().min(room.len()));
    #[cfg(target_arch = "x86_64")]
    let sm = if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, checked just above.
        unsafe { round_points_avx(head, pts) }
    } else {
        round_points(head, pts)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let sm = round_points(head, pts);
    if let Some(first) = first {
        rest.fill(first);
    }
    slack_done(sm)
}

/// [`write_points_at`] without the slack, for a node whose slack its children's give
/// ([`super::deform`]): the vertices `ids` names rounded to `f32` into `room`, the rest of
/// which gets copies of the first.
#[inline]
pub(crate) fn round_points_at(room: &mut [[f32; 3]], ids: &[u32], vertices: &[DVec3]) {
    debug_assert!(ids.len() <= room.len(), "room for every point");
    let (head, rest) = room.split_at_mut(ids.len().min(room.len()));
    for (slot, &v) in head.iter_mut().zip(ids) {
        *slot = vertices[v as usize].as_vec3().to_array();
    }
    if let Some(&first) = head.first() {
        rest.fill(first);
    }
}

/// The first `room.len()` of `pts` rounded to `f32` into `room`, and their `(s, m)`
/// ([`rounded`]).
fn round_points<'a>(room: &mut [[f32; 3]], pts: impl Iterator<Item = &'a DVec3>) -> (f64, f64) {
    let mut sm = (0.0, 0.0);
    for (slot, p) in room.iter_mut().zip(pts) {
        *slot = rounded(*p, &mut sm).to_array();
    }
    sm
}

/// [`round_points`] with a point to a vector: the same roundings, differences and
/// maxima, so the same slots and `(s, m)` bit for bit (vertices are finite here, and
/// `vmaxpd` keeps the running maximum over a NaN as `f64::max` does).
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn round_points_avx<'a>(
    room: &mut [[f32; 3]],
    pts: impl Iterator<Item = &'a DVec3>,
) -> (f64, f64) {
    use std::arch::x86_64::*;
    let abs = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
    let (mut s, mut m) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for (slot, p) in room.iter_mut().zip(pts) {
        // SAFETY: this kernel runs with AVX.
        round_point_avx(unsafe { crate::dop::xyz0(p) }, slot, &mut s, &mut m, abs);
    }
    fold_slack_avx(s, m)
}

/// One point `v` (`[x, y, z, 0]`) of [`round_points_avx`]: rounded into `slot`, its
/// rounding error and magnitude taken into the running lane maxima `s` and `m`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline]
fn round_point_avx(
    v: std::arch::x86_64::__m256d,
    slot: &mut [f32; 3],
    s: &mut std::arch::x86_64::__m256d,
    m: &mut std::arch::x86_64::__m256d,
    abs: std::arch::x86_64::__m256d,
) {
    use std::arch::x86_64::*;
    let f = _mm256_cvtpd_ps(v);
    let back = _mm256_cvtps_pd(f);
    *s = _mm256_max_pd(_mm256_and_pd(_mm256_sub_pd(back, v), abs), *s);
    *m = _mm256_max_pd(_mm256_and_pd(back, abs), *m);
    // x and y in one store, z in another: the slot holds three.
    // SAFETY: eight bytes and four bytes within the slot's twelve.
    unsafe {
        _mm_store_sd(slot.as_mut_ptr().cast(), _mm_castps_pd(f));
        _mm_store_ss(slot.as_mut_ptr().add(2), _mm_movehl_ps(f, f));
    }
}

/// The `(s, m)` of [`round_points_avx`]'s lane maxima: the largest of x, y and z each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline]
fn fold_slack_avx(s: std::arch::x86_64::__m256d, m: std::arch::x86_64::__m256d) -> (f64, f64) {
    use std::arch::x86_64::*;
    let (mut s4, mut m4) = ([0.0f64; 4], [0.0f64; 4]);
    // SAFETY: four `f64` into arrays of four.
    unsafe {
        _mm256_storeu_pd(s4.as_mut_ptr(), s);
        _mm256_storeu_pd(m4.as_mut_ptr(), m);
    }
    (s4[0].max(s4[1]).max(s4[2]), m4[0].max(m4[1]).max(m4[2]))
}

/// `verts` into `chunks` of [`LANES`] vertices as x, y and z rows, padded with copies of
/// the first vertex (harmless for minima and maxima) so re-bounding loops have no tail.
/// Returns the node's slack `(s, m)` ([`rounded`]) over the vertices written: all of
/// `verts` where the chunks have room for them.
pub(crate) fn write_lanes(chunks: &mut [[[f32; LANES]; 3]], verts: &[DVec3]) -> (f64, f64) {
    let mut sm = (0.0, 0.0);
    let first = verts.first().map_or(glam::Vec3::ZERO, |v| v.as_vec3());
    for (c, [xs, ys, zs]) in chunks.iter_mut().enumerate() {
        let lanes = xs.iter_mut().zip(ys.iter_mut()).zip(zs.iter_mut());
        for (l, ((x, y), z)) in lanes.enumerate() {
            let v = verts
                .get(c * LANES + l)
                .map_or(first, |v| rounded(*v, &mut sm));
            (*x, *y, *z) = (v.x, v.y, v.z);
        }
    }
    slack_done(sm)
}

/// The distinct vertices of node `i`'s triangles, sorted, into `own`; `false` (and `own`
/// left empty) when the node has more than [`MAX_VERTS`] triangles, so too many corners.
fn own_corners<const K: usize>(bvh: &Bvh<K>, i: usize, own: &mut Vec<u32>) -> bool {
    let (first, last) = triangle_span(bvh, i);
    distinct_corners(&bvh.tris[first..last], own)
}

/// The distinct vertices of `tris`, sorted, into `own`; `false` (and `own` left empty)
/// when there are more than [`MAX_VERTS`].
pub(crate) fn distinct_corners(tris: &[[u32; 3]], own: &mut Vec<u32>) -> bool {
    own.clear();
    // Only few triangles can have few corners; more are not listed.
    if tris.len() > MAX_VERTS {
        return false;
    }
    own.extend_from_slice(tris.as_flattened());
    own.sort_unstable();
    own.dedup();
    if own.len() > MAX_VERTS {
        own.clear();
        return false;
    }
    true
}

/// The per-node corner arrays of a [`FlyingObject`], built node by node in index order.
#[derive(Clone, Debug)]
pub(crate) struct CornerArrays {
    /// Node `i`'s k-DOP vertices are `verts[vstart[i]..vstart[i + 1]]`, in chunks of
    /// [`LANES`] vertices stored as x, y and z rows (padded with copies of the first);
    /// none for nodes that keep their own corners.
    pub(crate) vstart: Vec<u32>,
    pub(crate) verts: Vec<[[f32; LANES]; 3]>,
    /// Node `i`'s own triangle corners, where it is [`CornerSet::OwnLanes`], are
    /// `own_pts[own_start[i]..own_start[i + 1]]`, one vertex per entry: few enough that
    /// [`own_lanes`] projects each onto all directions at once (no lanes to fold).
    pub(crate) own_start: Vec<u32>,
    pub(crate) own_pts: Vec<[f32; 3]>,
    /// Per node: `(s, m)`, a bound on the distance (∞-norm) between the stored vertices and
    /// the true k-DOP vertices, and the largest stored coordinate magnitude.
    pub(crate) slack: Vec<(f64, f64)>,
    /// Per node: which vertices it keeps, and where (one byte: re-bounding reads it first).
    pub(crate) corners: Vec<CornerSet>,
}

impl CornerArrays {
    pub(crate) fn with_capacity(n: usize) -> Self {
        let mut vstart = Vec::with_capacity(n + 1);
        vstart.push(0);
        let mut own_start = Vec::with_capacity(n + 1);
        own_start.push(0);
        CornerArrays {
            vstart,
            verts: Vec::new(),
            own_start,
            own_pts: Vec::new(),
            slack: Vec::with_capacity(n),
            corners: Vec::with_capacity(n),
        }
    }

    /// Bytes of its arrays (the set of each node aside).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.vstart.len() * 4
            + self.verts.len() * std::mem::size_of::<[[f32; LANES]; 3]>()
            + self.own_start.len() * 4
            + self.own_pts.len() * 12
            + self.slack.len() * 16
    }

    /// The next node's corners: its own triangles' (`set` [`CornerSet::Own`], stored as
    /// [`CornerSet::OwnLanes`] where that pays), its k-DOP's ([`CornerSet::Dop`]), whose
    /// bounds' largest magnitude is `scale`, or none ([`CornerSet::Slabs`], or a
    /// [`CornerSet::Dop`] node given no `verts`: its corners are made when first needed).
    pub(crate) fn push<const K: usize>(&mut self, verts: &[DVec3], set: CornerSet, scale: f64) {
        if set == CornerSet::Slabs || (set == CornerSet::Dop && verts.is_empty()) {
            self.slack.push((0.0, 0.0));
            self.corners.push(set);
            self.own_start.push(self.own_pts.len() as u32);
            self.vstart.push(self.verts.len() as u32);
            return;
        }
        let exact = set != CornerSet::Dop;
        let few = exact && own_in_lanes(K);
        // Rounded to `f32` once, in points or in lanes, the slack taken on the way.
        let (mut s, m) = if few {
            let at = self.own_pts.len();
            self.own_pts.resize(at + verts.len(), [0.0; 3]);
            write_points(&mut self.own_pts[at..], verts)
        } else {
            let at = self.verts.len();
            let chunked = verts.len().div_ceil(LANES);
            self.verts.resize(at + chunked, [[0.0; LANES]; 3]);
            write_lanes(&mut self.verts[at..], verts)
        };
        if !exact {
            // The enumeration finds every true vertex to within its merge tolerance
            // (1024 EPS scale, see dop::brep) plus a few ulps; double it for margin.
            s += 2048.0 * EPS * scale;
        }
        self.slack.push((s, m));
        self.corners.push(match (exact, few) {
            (false, _) => CornerSet::Dop,
            (true, false) => CornerSet::Own,
            (true, true) => CornerSet::OwnLanes,
        });
        self.own_start.push(self.own_pts.len() as u32);
        self.vstart.push(self.verts.len() as u32);
    }
}

/// The summed box area of the inner nodes among `nodes`: the surface-area cost, over the
/// root's area, whose growth says how far deformations have worn a tree.
pub(crate) fn inner_area<const K: usize>(nodes: &[Node<K>]) -> f64 {
    nodes
        .iter()
        .filter(|n| !n.is_leaf())
        .map(|n| area(&n.dop))
        .sum()
}

/// The leaf-order triangle positions `first..last` under node `i`.
fn triangle_span<const K: usize>(bvh: &Bvh<K>, i: usize) -> (usize, usize) {
    let mut lo = i;
    while !bvh.nodes[lo].is_leaf() {
        lo = bvh.nodes[lo].first_child() as usize;
    }
    let mut hi = i;
    while !bvh.nodes[hi].is_leaf() {
        hi = bvh.nodes[hi].first_child() as usize + 1;
    }
    let first = bvh.nodes[lo].first_triangle() as usize;
    let last = crate::hierarchy::leaf_span(&bvh.ids, bvh.nodes[hi].first_triangle() as usize);
    (first, last.end)
}

/// Updates the per-lane extremes of every axis with transformed vertices `w`. The
/// directions have coordinates in {-1, 0, 1}, so projections are sums and differences
/// ("no multiplications", §3.3.3), written out per k so they compile to a few vector adds.
#[inline(always)]
fn project_lanes<const K: usize>(
    w: &[[f32; LANES]; 3],
    lo: &mut [[f32; LANES]; 16],
    hi: &mut [[f32; LANES]; 16],
) {
    #[inline(always)]
    fn upd(lo: &mut [f32; LANES], hi: &mut [f32; LANES], p: [f32; LANES]) {
        for l in 0..LANES {
            lo[l] = if p[l] < lo[l] { p[l] } else { lo[l] };
            hi[l] = if p[l] > hi[l] { p[l] } else { hi[l] };
        }
    }
    let add =
        |a: &[f32; LANES], b: &[f32; LANES]| std::array::from_fn::<f32, LANES, _>(|l| a[l] + b[l]);
    let sub =
        |a: &[f32; LANES], b: &[f32; LANES]| std::array::from_fn::<f32, LANES, _>(|l| a[l] - b[l]);
    let [w0, w1, w2] = w;
    upd(&mut lo[0], &mut hi[0], *w0);
    upd(&mut lo[1], &mut hi[1], *w1);
    upd(&mut lo[2], &mut hi[2], *w2);
    let mut i = 3;
    if K == 14 || K == 26 {
        // (1,1,1), (1,-1,1), (1,1,-1), (1,-1,-1)
        let s = add(w0, w2);
        let t = sub(w0, w2);
        upd(&mut lo[i], &mut hi[i], add(&s, w1));
        upd(&mut lo[i + 1], &mut hi[i + 1], sub(&s, w1));
        upd(&mut lo[i + 2], &mut hi[i + 2], add(&t, w1));
        upd(&mut lo[i + 3], &mut hi[i + 3], sub(&t, w1));
        i += 4;
    }
    if K == 18 || K == 26 {
        // (1,1,0), (1,0,1), (0,1,1), (1,-1,0), (1,0,-1), (0,1,-1)
        upd(&mut lo[i], &mut hi[i], add(w0, w1));
        upd(&mut lo[i + 1], &mut hi[i + 1], add(w0, w2));
        upd(&mut lo[i + 2], &mut hi[i + 2], add(w1, w2));
        upd(&mut lo[i + 3], &mut hi[i + 3], sub(w0, w1));
        upd(&mut lo[i + 4], &mut hi[i + 4], sub(w0, w2));
        upd(&mut lo[i + 5], &mut hi[i + 5], sub(w1, w2));
    }
}

/// How a query re-bounds the flying nodes it reaches under a turning pose (§4.1; the
/// root is always exact, by hill-climbing, and a pure translation always shifts the
/// stored bounds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Rebound {
    /// The paper's approximation method: the k-DOP of the node's transformed k-DOP corners
    /// (or of its own triangle corners, where it has no more of those, up to 48). Exact for
    /// the rotated k-DOP, and costs a projection of up to 48 corners per node. An object's k-DOP
    /// corners are enumerated by the first query that needs them
    /// ([`FlyingObject::prepare_corners`]).
    Corners,
    /// From the node's own slabs, by LP duality: each world bound is a combination of
    /// three stored bounds with weights fixed per pose, one small matrix product per node
    /// (about 225 instructions against 700 for [`Rebound::Corners`] per node of the 747
    /// flight at k = 18, `docs/benchmarks.md`). The bound is exact
    /// where the three planes meet at a corner of the node's k-DOP (always for k = 6:
    /// Arvo's box transform) and slightly looser elsewhere. Nodes that keep their own
    /// triangle corners (small nodes, where those are tighter than any k-DOP) still project
    /// them. The default.
    #[default]
    Slabs,
}

/// Re-bounds node `node` of `obj` under the pose of `frame` by `method`, widened by a
/// certified margin: [`tumble_dual`] or the k-DOP of the node's transformed stored
/// vertices (by [`own_lanes`] for [`CornerSet::OwnLanes`] nodes, compiled for AVX where
/// the CPU has it, else by [`tumble_lanes`]).
///
/// For k ≥ 14 on x86_64 CPUs with AVX the vertex projection runs compiled for AVX
/// ([`tumble_avx`]: each eight-lane row is one register instead of two); the results are
/// bit for bit those of the portable form ([`tumble_lanes`]), which tests check. Callgrind
/// over every node of the demo's knot, measured before the shuffle fold ([`fold8_avx`]):
/// k = 14, 18, 26 took 46–50 % of the portable form's instructions, but k = 6 (one chunk
/// of corners per node) took 23 % more, so it stays portable.
#[inline(always)]
pub(crate) fn tumble_node<const K: usize>(
    obj: &FlyingObject<K>,
    node: usize,
    frame: &mut PoseFrame<K>,
    method: Rebound,
) -> Dop<K> {
    if frame.translation_only {
        return shifted(&obj.part.bvh.nodes[node].dop, frame);
    }
    let set = obj.stored.corners[node];
    if set == CornerSet::OwnLanes {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX, checked just above.
            return unsafe { own_avx(obj, node, frame) };
        }
        return own_portable(obj, node, frame);
    }
    if set == CornerSet::Slabs || (method == Rebound::Slabs && set == CornerSet::Dop) {
        frame.prepare_dual();
        return tumble_dual(&obj.part.bvh.nodes[node].dop, frame);
    }
    let kept = if set == CornerSet::Dop && node != 0 {
        obj.dop_corners()
    } else {
        &obj.stored
    };
    #[cfg(target_arch = "x86_64")]
    if K > 6 && std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, checked just above.
        return unsafe { tumble_avx(kept, node, frame) };
    }
    tumble_lanes(kept, node, frame)
}

/// [`own_portable`] compiled with AVX: the sixteen direction lanes are two registers
/// (one for k <= 14).
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn own_avx<const K: usize>(
    obj: &FlyingObject<K>,
    node: usize,
    frame: &PoseFrame<K>,
) -> Dop<K> {
    own_portable(obj, node, frame)
}

/// Re-bounds a node that keeps its own triangle corners: [`own_lanes`] over them, then
/// [`corner_bounds`].
#[inline(always)]
fn own_portable<const K: usize>(
    obj: &FlyingObject<K>,
    node: usize,
    frame: &PoseFrame<K>,
) -> Dop<K> {
    let pts = &obj.stored.own_pts
        [obj.stored.own_start[node] as usize..obj.stored.own_start[node + 1] as usize];
    let mut lo = [f32::INFINITY; 2 * LANES];
    let mut hi = [f32::NEG_INFINITY; 2 * LANES];
    own_lanes::<K>(pts, frame, &mut lo, &mut hi);
    corner_bounds(obj.stored.slack[node], frame, &lo, &hi)
}

/// Per direction `i` (lanes): the extremes over `pts` of `fl32(A^T d_i) . p` in `f32`,
/// each vertex onto every direction at once, so a node of few corners costs a few vector
/// operations per corner and no folding of lanes ([`tumble_lanes`] puts vertices in the
/// lanes instead, which pays for k-DOP corner sets of up to 48).
///
/// Error: rounding `A^T d_i` to `f32` moves the projection by at most `U32 |A^T d_i|_1 m`
/// (`m` the largest stored coordinate magnitude), and the three products and two sums by
/// at most `γ_3 (1 + U32) |A^T d_i|_1 m`; `|A^T d_i|_1 <= |d_i|_1 ||A||_inf` is the frame's
/// `coef`. That is about `4 U32` of `coef m`, within the `7 U32 coef m` that
/// [`corner_bounds`] adds for [`tumble_lanes`]' longer chain (rotate, then sum up to
/// three rotated coordinates).
#[inline(always)]
fn own_lanes<const K: usize>(
    pts: &[[f32; 3]],
    frame: &PoseFrame<K>,
    lo: &mut [f32; 2 * LANES],
    hi: &mut [f32; 2 * LANES],
) {
    // One register of eight lanes holds k = 6 and 14; 18 and 26 need two.
    let w = if K / 2 <= LANES { LANES } else { 2 * LANES };
    let [px, py, pz] = &frame.pull32;
    for p in pts {
        for i in 0..w {
            let v = (p[0] * px[i] + p[1] * py[i]) + p[2] * pz[i];
            lo[i] = if v < lo[i] { v } else { lo[i] };
            hi[i] = if v > hi[i] { v } else { hi[i] };
        }
    }
}

/// [`tumble_lanes`] compiled with AVX, with the lanes reduced by [`fold8_avx`]: eight
/// directions' lanes in 21 shuffles and comparisons instead of about 80 for the halving of
/// [`fold_lanes`] (callgrind: the halving was a third of a corner re-bounding at k = 26).
/// Minima and maxima are exact in any order, so the bounds are bit for bit the portable
/// form's (a signed zero may come out with the other sign, which the epilogue's sums with
/// a non-zero margin erase).
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn tumble_avx<const K: usize>(
    kept: &CornerArrays,
    node: usize,
    frame: &PoseFrame<K>,
) -> Dop<K> {
    let mut lo = [[f32::INFINITY; LANES]; 16];
    let mut hi = [[f32::NEG_INFINITY; LANES]; 16];
    corner_lanes(kept, node, frame, &mut lo, &mut hi);
    let mut l = [0.0f32; 2 * LANES];
    let mut h = [0.0f32; 2 * LANES];
    // One group of eight directions for k = 14, two for k = 18 and 26.
    for g in 0..(K / 2).div_ceil(LANES) {
        let at = g * LANES;
        // SAFETY: the caller guarantees AVX.
        unsafe {
            l[at..at + LANES].copy_from_slice(&fold8_avx::<false>(&lo, at));
            h[at..at + LANES].copy_from_slice(&fold8_avx::<true>(&hi, at));
        }
    }
    corner_bounds(kept.slack[node], frame, &l, &h)
}

/// Lane `j` of the result is the minimum (`MAX == false`) or maximum of the lanes of
/// `v[at + j]`, for `j < 8`: pairs of rows are folded with one shuffle pair and one
/// comparison per level (8 rows -> 4 -> 2), and the two halves of the last row meet in
/// the third.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn fold8_avx<const MAX: bool>(v: &[[f32; LANES]; 16], at: usize) -> [f32; LANES] {
    use std::arch::x86_64::{
        __m256, _mm256_loadu_ps, _mm256_max_ps, _mm256_min_ps, _mm256_permute2f128_ps,
        _mm256_shuffle_ps, _mm256_storeu_ps,
    };
    let pick = |a: __m256, b: __m256| {
        if MAX {
            _mm256_max_ps(a, b)
        } else {
            _mm256_min_ps(a, b)
        }
    };
    // Per 128-bit half: [a0 a2 b0 b2] against [a1 a3 b1 b3], giving [a01 a23 b01 b23].
    let pair = |a: __m256, b: __m256| {
        pick(
            _mm256_shuffle_ps::<0b10_00_10_00>(a, b),
            _mm256_shuffle_ps::<0b11_01_11_01>(a, b),
        )
    };
    // SAFETY: `at + 8 <= 16` rows (callers pass 0 or 8), each of `LANES` = 8 floats.
    let row = |i: usize| unsafe { _mm256_loadu_ps(v[at + i].as_ptr()) };
    // Level 2 leaves [a0123 b0123 c0123 d0123 | a4567 b4567 c4567 d4567].
    let abcd = pair(pair(row(0), row(1)), pair(row(2), row(3)));
    let efgh = pair(pair(row(4), row(5)), pair(row(6), row(7)));
    let all = pick(
        _mm256_permute2f128_ps::<0x20>(abcd, efgh),
        _mm256_permute2f128_ps::<0x31>(abcd, efgh),
    );
    let mut out = [0.0f32; LANES];
    // SAFETY: `out` holds eight floats.
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), all) };
    out
}

/// The portable body of [`tumble_node`] for a pose that is not a pure translation.
#[inline(always)]
fn tumble_lanes<const K: usize>(kept: &CornerArrays, node: usize, frame: &PoseFrame<K>) -> Dop<K> {
    let mut lo = [[f32::INFINITY; LANES]; 16];
    let mut hi = [[f32::NEG_INFINITY; LANES]; 16];
    corner_lanes(kept, node, frame, &mut lo, &mut hi);
    // Lanes reduced by halving, so that each step is one vector minimum or maximum.
    let l = std::array::from_fn(|i| fold_lanes(&lo[i], |x, y| if y < x { y } else { x }));
    let h = std::array::from_fn(|i| fold_lanes(&hi[i], |x, y| if y > x { y } else { x }));
    corner_bounds(kept.slack[node], frame, &l, &h)
}

/// Per direction (rows; callers start them at ±infinity, and rows past `K / 2` stay so),
/// per lane: the extremes of the projections of node `node`'s stored vertices under the
/// frame's linear part. Comparisons, not `f32::min/max`: coordinates are validated, never
/// NaN, and this compiles to minps/maxps.
#[inline(always)]
fn corner_lanes<const K: usize>(
    kept: &CornerArrays,
    node: usize,
    frame: &PoseFrame<K>,
    lo: &mut [[f32; LANES]; 16],
    hi: &mut [[f32; LANES]; 16],
) {
    let chunks = &kept.verts[kept.vstart[node] as usize..kept.vstart[node + 1] as usize];
    let a = &frame.a32;
    for [cx, cy, cz] in chunks {
        let mut w = [[0.0f32; LANES]; 3];
        for l in 0..LANES {
            for (r, wr) in w.iter_mut().enumerate() {
                wr[l] = a[r][0] * cx[l] + a[r][1] * cy[l] + a[r][2] * cz[l];
            }
        }
        project_lanes::<K>(&w, lo, hi);
    }
}

/// The bounds from the projections' extremes `l`, `h` (per direction), widened by the
/// node's certified margin and the translation. In lanes (eight, or sixteen for k >= 18),
/// so that it vectorises: per node it was about 150 scalar instructions, as much as
/// projecting ten corners. Lanes past `K / 2` compute unused values (possibly NaN from
/// the infinities [`corner_lanes`] leaves there).
#[inline(always)]
fn corner_bounds<const K: usize>(
    (sl, m): (f64, f64),
    frame: &PoseFrame<K>,
    l: &[f32; 2 * LANES],
    h: &[f32; 2 * LANES],
) -> Dop<K> {
    let n = K / 2;
    let w = if n <= LANES { LANES } else { 2 * LANES };
    let node_term = sl + 7.0 * U32 * m;
    let mut lo = [0.0f32; 2 * LANES];
    let mut hi = [0.0f32; 2 * LANES];
    for i in 0..w {
        let margin = (frame.coef[i] * node_term + frame.cons[i]) * (1.0 + 1.0 / 1048576.0);
        let dt = frame.dt[i];
        let (a, b) = (f64::from(l[i]), f64::from(h[i]));
        // The f64 sums round by at most EPS of their magnitude each (4 EPS covers them);
        // widen_down/widen_up then step out by at least one f32 ulp.
        lo[i] = widen_down((a + dt - margin - 4.0 * EPS * (a.abs() + dt.abs())) as f32);
        hi[i] = widen_up((b + dt + margin + 4.0 * EPS * (b.abs() + dt.abs())) as f32);
    }
    let mut out = Dop::<K>::EMPTY;
    out.b[..n].copy_from_slice(&lo[..n]);
    out.b[n..].copy_from_slice(&hi[..n]);
    out
}

/// The minimum (or maximum, by `pick`) of the lanes, halving: 8 -> 4 -> 2 -> 1.
#[inline(always)]
fn fold_lanes(v: &[f32; LANES], pick: impl Fn(f32, f32) -> f32) -> f32 {
    let q: [f32; 4] = std::array::from_fn(|i| pick(v[i], v[i + 4]));
    let d: [f32; 2] = std::array::from_fn(|i| pick(q[i], q[i + 2]));
    pick(d[0], d[1])
}

/// Under a pure translation `t` the node's own k-DOP `B` (which contains its geometry
/// exactly) moves by `d_i . t`, all in `f32`:
/// - placed coordinates are `fl(x + t)`, off by at most `EPS |x + t|` per coordinate, so
///   projections move by at most `M = EPS |d_i|_1 (mag + |t|)` (`mag` the object's largest
///   coordinate magnitude);
/// - `d_i . t` is computed in `f64` to within `2 EPS |d_i|_1 |t|`, then rounded outward to
///   `T` (down for lower bounds, up for upper ones);
/// - `r = fl32(B + T)` is off by at most `2^-24 (|B| + |T|)`;
/// - the bound is `fl32(r ∓ w)` with `w = (|B| + |T|) 2^-22 + W`, where `shift_w` holds
///   `W >= 4 EPS |d_i|_1 (mag + |t|) + MIN_POSITIVE`. The roundings of `w` and of the last
///   step cost at most `2^-23 (|B| + |T|)` and a relative `2^-22` of `W`, so what is left
///   of `w` still exceeds the rounding of `r` plus `M` plus the error of `d_i . t`;
///   `MIN_POSITIVE` covers subnormal steps.
///
/// This costs a few `f32` ulps of tightness; the root, whose bound is meant to be exact up
/// to its own rounding, goes through [`shifted_root`] instead.
///
/// `|t| <= MAX_POSE_TRANSLATION` keeps every value finite in `f32`.
#[inline]
fn shifted<const K: usize>(d: &Dop<K>, frame: &PoseFrame<K>) -> Dop<K> {
    let mut out = Dop::<K>::EMPTY;
    // Groups of four bounds (one SSE register); the last group overlaps the one before when
    // K is not a multiple of four, which recomputes some bounds to the same values.
    let mut c = 0;
    while c < K {
        let c4 = if c + 4 > K { K - 4 } else { c };
        let mut o = [0.0f32; 4];
        for (l, o) in o.iter_mut().enumerate() {
            let i = c4 + l;
            let (b, t) = (d.b[i], frame.shift_t[i]);
            let w = (b.abs() + t.abs()) * (1.0 / 4_194_304.0) + frame.shift_w[i];
            *o = (b + t) + frame.shift_sign[i] * w;
        }
        out.b[c4..c4 + 4].copy_from_slice(&o);
        c += 4;
    }
    out
}

/// [`shifted`] in `f64`, rounded once: within two `f32` ulps of the exact bound. Placed
/// coordinates are `fl(x + t)`, off by at most `EPS |x + t|` per coordinate, so projections
/// move by at most `EPS |d_i|_1 (|x| + |t|)`; `d_i . t` is off by `2 EPS |d_i|_1 |t|`, and the
/// two sums below by `EPS` of their magnitudes, which are at most `|d_i|_1 (|x| + |t|)` up to
/// the bounds' own `f32` rounding (`|x|` bounded by the object's magnitude).
/// `16 EPS |d_i|_1 (mag + |t|)` covers all of it, with room: that is the frame's root
/// margin, whose `||A||_inf` factor is 1 for the identity.
fn shifted_root<const K: usize>(d: &Dop<K>, frame: &PoseFrame<K>) -> Dop<K> {
    let n = K / 2;
    let mut out = Dop::<K>::EMPTY;
    for i in 0..n {
        let m = frame.root_margin[i];
        let dt = frame.dt[i];
        out.b[i] = widen_down((f64::from(d.b[i]) + dt - m) as f32);
        out.b[n + i] = widen_up((f64::from(d.b[n + i]) + dt + m) as f32);
    }
    out
}

/// Scratch for exact hill-climbing on the hull.
#[derive(Clone, Debug, Default)]
pub(crate) struct Climber {
    /// Previous extreme hull slot per direction: `[max along d_i, max along -d_i]`.
    pub extremes: Vec<u32>,
    /// Per direction slot, a certificate for its extreme: the direction `c0` it was last
    /// climbed for, and `s > 0` such that the extreme stays the strict maximum for every
    /// direction `c` with `|c - c0|_inf < s` (`s = 0`: none). See [`Climber::extreme`].
    certs: Vec<(DVec3, f64)>,
    /// Climbs answered by a certificate (for tests).
    pub certified: u64,
    mark: Vec<u32>,
    round: u32,
    queue: Vec<u32>,
    /// Hill-climbing moves made (for statistics).
    pub steps: u64,
    /// The first pulled-back direction of the last pose, to tell a flight from a jump.
    last_pull: Option<DVec3>,
}

impl Climber {
    /// Capacities of its buffers (for [`Climber::reserve`]).
    pub(crate) fn sizes(&self) -> [usize; 4] {
        [
            self.extremes.capacity(),
            self.certs.capacity(),
            self.mark.capacity(),
            self.queue.capacity(),
        ]
    }

    /// Grows its buffers to at least `sizes`.
    pub(crate) fn reserve(&mut self, sizes: &[usize]) {
        self.extremes
            .reserve_exact(sizes[0].saturating_sub(self.extremes.len()));
        self.certs
            .reserve_exact(sizes[1].saturating_sub(self.certs.len()));
        self.mark
            .reserve_exact(sizes[2].saturating_sub(self.mark.len()));
        self.queue
            .reserve_exact(sizes[3].saturating_sub(self.queue.len()));
    }

    pub(crate) fn reset(&mut self, hull_len: usize, k: usize) {
        self.extremes.clear();
        self.extremes.resize(k, 0);
        self.certs.clear();
        self.certs.resize(k, (DVec3::ZERO, 0.0));
        self.mark.clear();
        self.mark.resize(hull_len, 0);
        self.round = 0;
        self.last_pull = None;
    }

    /// The hull slot maximising `c . p` for direction slot `slot`: the slot's previous
    /// extreme when its certificate covers `c`, else a climb from it, which then gets a new
    /// certificate. `mag` is at least every coordinate's magnitude in `pts`.
    ///
    /// A certificate: at the end of a climb every neighbour `q` of the extreme `v` is
    /// strictly lower, and `s` is a lower bound of `min_q -c0 . (q - v) / |q - v|_1` (the
    /// filtered values minus twice their error bound, rounded down). For a direction `c`
    /// with `|c - c0|_inf < s`, `c . (q - v) <= c0 . (q - v) + |c - c0|_inf |q - v|_1 < 0`
    /// for every neighbour, so `v` is again a strict local maximum, hence the maximum (as
    /// for a climb ending without ties). Between poses of a flight the directions turn
    /// little, and most climbs end here after a handful of operations.
    pub(crate) fn extreme(
        &mut self,
        hull: &Hull,
        pts: &[DVec3],
        mag: f64,
        c: DVec3,
        slot: usize,
    ) -> u32 {
        let (c0, s) = self.certs[slot];
        let moved = (c - c0).abs().max_element();
        if moved * (1.0 + 1e-12) < s {
            self.certified += 1;
            return self.extremes[slot];
        }
        let (v, radius) = self.climb_certified(hull, pts, mag, c, self.extremes[slot]);
        self.extremes[slot] = v;
        self.certs[slot] = (c, radius);
        v
    }

    /// The hull slot maximising `c . p`, climbing from `start`.
    #[cfg(test)]
    fn climb(&mut self, hull: &Hull, pts: &[DVec3], mag: f64, c: DVec3, start: u32) -> u32 {
        self.climb_certified(hull, pts, mag, c, start).0
    }

    /// The hull slot maximising `c . p`, climbing from `start`, with the certificate
    /// radius of [`Climber::extreme`] for its result (0 when some neighbour is not
    /// certified strictly lower), gathered during the last scan of neighbours.
    fn climb_certified(
        &mut self,
        hull: &Hull,
        pts: &[DVec3],
        mag: f64,
        c: DVec3,
        start: u32,
    ) -> (u32, f64) {
        // One error bound for every comparison of the climb, not one per point: a computed
        // `c . p` is within 3.01 EPS `|c| . |p|` <= 3.01 EPS `|c|_1 mag` of the exact
        // value, so a difference of two is within 6.02 EPS and its rounding of the sum of
        // both; 10 EPS covers that and the rounding of the bound itself.
        let ca = c.abs();
        let bound = 10.0 * EPS * ((ca.x + ca.y + ca.z) * mag) + FLOOR;
        let mut cur = start;
        // The value of `best`, computed once per vertex rather than once per comparison.
        let mut value = c.dot(pts[cur as usize]);
        loop {
            let mut best = cur;
            let mut best_value = value;
            let mut tie = false;
            let pc = pts[cur as usize];
            let mut radius = f64::INFINITY;
            for &nb in hull.neighbours(cur) {
                let p = pts[nb as usize];
                let v = c.dot(p);
                let diff = v - best_value;
                let order = if diff > bound {
                    Ordering::Greater
                } else if -diff > bound {
                    if best == cur {
                        // `c . (p - cur)` is within `bound` of `diff`; twice that also
                        // covers the rounding of the subtraction and of the division.
                        let len = (p - pc).abs();
                        let len = (len.x + len.y + len.z) * (1.0 + 1e-12);
                        radius = radius.min((-diff - 2.0 * bound) / len * (1.0 - 1e-12));
                    }
                    Ordering::Less
                } else {
                    radius = 0.0;
                    cmp_dot(c, p, pts[best as usize])
                };
                match order {
                    Ordering::Greater => {
                        best = nb;
                        best_value = v;
                        tie = false;
                    }
                    Ordering::Equal if best == cur => tie = true,
                    _ => {}
                }
            }
            if best != cur {
                cur = best;
                value = best_value;
                self.steps += 1;
                continue;
            }
            // No neighbour is higher. At a corner that makes `cur` the maximum: the edges to
            // the neighbours span the tangent cone, which contains the whole hull.
            if !tie || hull.corner[cur as usize] {
                // NaN (a zero-length edge cannot occur on a hull) or no neighbour: none.
                let radius = if radius > 0.0 && radius.is_finite() {
                    radius
                } else {
                    0.0
                };
                return (cur, if tie { 0.0 } else { radius });
            }
            // A plateau of equal values around a vertex inside a flat face: search it for a
            // vertex with a strictly better neighbour (exists unless the plateau is the
            // maximum).
            match self.escape_plateau(hull, pts, c, cur) {
                Some(v) => {
                    cur = v;
                    value = c.dot(pts[cur as usize]);
                    self.steps += 1;
                }
                None => return (cur, 0.0),
            }
        }
    }

    fn escape_plateau(&mut self, hull: &Hull, pts: &[DVec3], c: DVec3, from: u32) -> Option<u32> {
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.round = 1;
        }
        let level = pts[from as usize];
        self.queue.clear();
        self.queue.push(from);
        self.mark[from as usize] = self.round;
        let mut head = 0;
        while head < self.queue.len() {
            let v = self.queue[head];
            head += 1;
            for &nb in hull.neighbours(v) {
                match cmp_dot(c, pts[nb as usize], level) {
                    Ordering::Greater => return Some(nb),
                    Ordering::Equal if self.mark[nb as usize] != self.round => {
                        self.mark[nb as usize] = self.round;
                        self.queue.push(nb);
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

/// Hulls of at most this many vertices are scanned whole for the root bound rather than
/// climbed: one pass over the vertices, all directions at once in vector lanes, against
/// 2k/2 climbs that must at least check their certificates. Scan cost grows with the hull,
/// a climb's does not; 64 stays well below the size where they cost the same
/// (`docs/benchmarks.md`, "Design choices").
const SCAN_HULL: usize = 64;

/// A pose whose first pulled-back direction moved by more than this share of its largest
/// component since the last pose is a jump (see [`root_dop`]): a climb that far crosses
/// much of the hull, while a flight's steps stay well below it (`docs/benchmarks.md`,
/// "Triangle tests in the descent and the root on random poses").
const FAR_TURN: f64 = 0.1;

/// The exact k-DOP of the placed object (up to outward rounding): the stored root bound
/// shifted under a pure translation, else the extremes of the hull's vertices, by a scan
/// of a small hull ([`root_scanned`]) or hill-climbing on a larger one ([`root_climbed`]).
///
/// A pose that turned far from the previous one (random poses rather than a flight) is
/// not climbed for: the climb would cross much of the hull for one bound, so the root's
/// own corners are projected instead (looser, never wrong; no per-pose matrix to fill,
/// which a query whose root misses would fill for nothing), and climbing resumes once
/// poses move coherently again.
pub(crate) fn root_dop<const K: usize>(
    obj: &FlyingObject<K>,
    frame: &mut PoseFrame<K>,
    climber: &mut Climber,
) -> Dop<K> {
    if !climbs(obj, frame) {
        return root_exact(obj, frame, climber);
    }
    let c = frame.pull(0);
    let jumped = climber
        .last_pull
        .replace(c)
        .is_none_or(|p| (c - p).abs().max_element() > FAR_TURN * c.abs().max_element());
    if jumped {
        tumble_node(obj, 0, frame, Rebound::Corners)
    } else {
        root_exact(obj, frame, climber)
    }
}

/// [`root_dop`] for an object that keeps no climb state between queries (the world's
/// objects, which share a thread's state): exact by a scan or a shift where that is cheap,
/// else the root k-DOP's corners projected (the k-DOP of the turned root k-DOP: no per-pose
/// matrix to fill, and as tight as the slabs or tighter up to their margins). A climb from
/// another object's extremes crosses much of the hull, and keeping a climb per object cost
/// more than it saved in the world demo (`docs/benchmarks.md`, "Design choices").
pub(crate) fn root_dop_unkept<const K: usize>(
    obj: &FlyingObject<K>,
    frame: &mut PoseFrame<K>,
    scratch: &mut Climber,
) -> Dop<K> {
    if !climbs(obj, frame) {
        return root_exact(obj, frame, scratch);
    }
    // A pose with no previous one to climb from: the root's own corners projected, which
    // needs none of the per-pose matrix the slabs fill (most of a pose's set-up when the
    // root is all a pose is used for, as in the world's bounds).
    tumble_node(obj, 0, frame, Rebound::Corners)
}

/// Whether [`root_exact`] would climb the hull for `frame` (a turning pose, a hull past a
/// scan's size, no deformation): where it does not, it is cheap and both root bounds above
/// take it; where it does, they may project the root's corners instead.
fn climbs<const K: usize>(obj: &FlyingObject<K>, frame: &PoseFrame<K>) -> bool {
    obj.hull_pts.len() > SCAN_HULL && !frame.translation_only && obj.deform.is_none()
}

/// The exact k-DOP of the placed object, however far the pose turned: [`root_dop`]
/// without its shortcut for jumps.
pub(crate) fn root_exact<const K: usize>(
    obj: &FlyingObject<K>,
    frame: &mut PoseFrame<K>,
    climber: &mut Climber,
) -> Dop<K> {
    if obj.deform.is_some() {
        // A deformed object keeps no hull (re-making one per deformation would cost more
        // than the refit): its root is re-bounded from its slabs like any node, or
        // shifted, and contains the object without being tight.
        tumble_node(obj, 0, frame, Rebound::Slabs)
    } else if obj.hull_pts.is_empty() {
        Dop::EMPTY
    } else if frame.translation_only {
        // The stored root bound is already the exact k-DOP of the object.
        shifted_root(&obj.part.bvh.nodes[0].dop, frame)
    } else if obj.hull_pts.len() <= SCAN_HULL {
        root_scanned(obj, frame)
    } else {
        root_climbed(obj, frame, climber)
    }
}

/// The root bound from the extreme hull vertices found by climbing from the previous
/// pose's ones (§4.1).
pub(crate) fn root_climbed<const K: usize>(
    obj: &FlyingObject<K>,
    frame: &PoseFrame<K>,
    climber: &mut Climber,
) -> Dop<K> {
    let mut lo = [0.0; 13];
    let mut hi = [0.0; 13];
    for i in 0..K / 2 {
        let c = frame.pull(i);
        let (hull, pts, mag) = (&obj.hull, &obj.hull_pts, obj.magnitude);
        let hi_v = climber.extreme(hull, pts, mag, c, 2 * i);
        let lo_v = climber.extreme(hull, pts, mag, -c, 2 * i + 1);
        hi[i] = c.dot(obj.hull_pts[hi_v as usize]);
        lo[i] = c.dot(obj.hull_pts[lo_v as usize]);
    }
    root_bounds(frame, &lo, &hi)
}

/// The root bound from a scan of every hull vertex, compiled for AVX where the CPU has it
/// (each lane computes what the portable form does, so the bounds are the same).
///
/// The scan's extreme may differ from the climb's exact one where two projections tie to
/// within rounding; then it is the larger computed value, within the same rounding of the
/// exact extreme, which the root margin covers as it does for the climb.
pub(crate) fn root_scanned<const K: usize>(obj: &FlyingObject<K>, frame: &PoseFrame<K>) -> Dop<K> {
    let mut lo = [f64::INFINITY; 13];
    let mut hi = [f64::NEG_INFINITY; 13];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, checked just above.
        unsafe { scan_avx(&obj.hull_pts, frame, &mut lo, &mut hi) };
        return root_bounds(frame, &lo, &hi);
    }
    scan_lanes(&obj.hull_pts, frame, &mut lo, &mut hi);
    root_bounds(frame, &lo, &hi)
}

/// [`scan_lanes`] compiled with AVX.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn scan_avx<const K: usize>(
    pts: &[DVec3],
    frame: &PoseFrame<K>,
    lo: &mut [f64; 13],
    hi: &mut [f64; 13],
) {
    scan_lanes(pts, frame, lo, hi);
}

/// Per direction `i < K / 2`: the extremes of `A^T d_i . p` over `pts`, the directions in
/// lanes, each projection summed as [`DVec3::dot`] does.
#[inline(always)]
fn scan_lanes<const K: usize>(
    pts: &[DVec3],
    frame: &PoseFrame<K>,
    lo: &mut [f64; 13],
    hi: &mut [f64; 13],
) {
    let [px, py, pz] = &frame.pull_rows;
    for p in pts {
        for i in 0..K / 2 {
            let v = (p.x * px[i] + p.y * py[i]) + p.z * pz[i];
            lo[i] = if v < lo[i] { v } else { lo[i] };
            hi[i] = if v > hi[i] { v } else { hi[i] };
        }
    }
}

/// The root's bounds from the extreme projections `lo`, `hi` of the hull (object frame,
/// per direction): translated, widened by the frame's root margin, rounded outward.
fn root_bounds<const K: usize>(frame: &PoseFrame<K>, lo: &[f64; 13], hi: &[f64; 13]) -> Dop<K> {
    let n = K / 2;
    let mut out = Dop::<K>::EMPTY;
    for i in 0..n {
        let hi = hi[i] + frame.dt[i];
        let lo = lo[i] + frame.dt[i];
        let m = frame.root_margin[i];
        out.b[i] = f32_down(lo - m - 4.0 * EPS * lo.abs());
        out.b[n + i] = f32_up(hi + m + 4.0 * EPS * hi.abs());
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use glam::{DMat3, DQuat};

    use crate::testing::lcg;

    /// Points written with AVX (where the CPU has it) are the portable roundings, slots
    /// and slack bit for bit, at every scale and with room to spare.
    #[test]
    fn written_points_are_the_portable_roundings() {
        let mut s = 5u64;
        for case in 0..5_000 {
            let n = case % 37;
            let pts: Vec<DVec3> = (0..n)
                .map(|_| {
                    let scale = 10f64.powf(lcg(&mut s) * 60.0 - 40.0);
                    (DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) - 0.5) * scale
                })
                .collect();
            let mut fast = vec![[7.0f32; 3]; n + case % 3];
            let mut portable = fast.clone();
            let got = write_points(&mut fast, &pts);
            let (head, rest) = portable.split_at_mut(n);
            let want = slack_done(round_points(head, pts.iter()));
            if let Some(first) = pts.first() {
                rest.fill(first.as_vec3().to_array());
            }
            assert_eq!(
                (got.0.to_bits(), got.1.to_bits()),
                (want.0.to_bits(), want.1.to_bits())
            );
            let bits = |v: &[[f32; 3]]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&portable), "case {case}");
        }
    }

    fn blob(seed: u64) -> Mesh {
        let mut s = seed;
        let tris: Vec<[DVec3; 3]> = (0..300)
            .map(|_| {
                let c = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 4.0 - 2.0;
                [
                    c,
                    c + DVec3::new(lcg(&mut s), 0.1, 0.0),
                    c + DVec3::new(0.0, lcg(&mut s), 0.2),
                ]
            })
            .collect();
        Mesh::from_triangles(&tris).unwrap()
    }

    fn random_pose(s: &mut u64, affine: bool, far: bool) -> Pose {
        let q =
            DQuat::from_xyzw(lcg(s) - 0.5, lcg(s) - 0.5, lcg(s) - 0.5, lcg(s) - 0.5).normalize();
        let mut m = DMat3::from_quat(q);
        if affine {
            m *= DMat3::from_diagonal(DVec3::new(0.3 + lcg(s), 1.0, 2.0 * lcg(s) + 0.1));
            m.x_axis.y += lcg(s) - 0.5;
        }
        let t = DVec3::new(lcg(s), lcg(s), lcg(s)) * if far { 1e9 } else { 10.0 };
        Pose::new(m, t).unwrap()
    }

    /// A flat grid of triangles in the plane `x + y + z = 1`, tilted so that no k-DOP
    /// direction is normal to it: every node's k-DOP is a thin slab of corners.
    fn flat(seed: u64) -> Mesh {
        let mut s = seed;
        let u = DVec3::new(1.0, -1.0, 0.0);
        let v = DVec3::new(1.0, 1.0, -2.0);
        let o = DVec3::new(1.0, 0.0, 0.0);
        let tris: Vec<[DVec3; 3]> = (0..80)
            .map(|_| {
                let (a, b) = (lcg(&mut s) * 3.0, lcg(&mut s) * 3.0);
                let p = o + u * a + v * b;
                [p, p + u * 0.3, p + v * (0.1 + lcg(&mut s) * 0.2)]
            })
            .collect();
        Mesh::from_triangles(&tris).unwrap()
    }

    fn props<const K: usize>() {
        // A soup (no shared corners), a welded mesh (corners shared by many triangles) and
        // a flat soup (degenerate k-DOPs).
        props_for::<K>(blob(K as u64));
        props_for::<K>(crate::scene::torus_knot(2, 3, 3.0, 1.0, 0.4, 120, 8).unwrap());
        props_for::<K>(flat(K as u64));
    }

    fn props_for<const K: usize>(mesh: Mesh) {
        props_of(&FlyingObject::<K>::new(mesh, &BuildOptions::FLYING).unwrap());
    }

    /// Over 60 poses: the root bound, however found, is exact, and every node's re-bounded
    /// k-DOP contains its placed triangles, by either method.
    pub(super) fn props_of<const K: usize>(obj: &FlyingObject<K>) {
        let mut climber = Climber::default();
        climber.reset(obj.hull_pts.len(), K);
        let mut s = 77u64;
        for round in 0..60 {
            let pose = if round % 5 == 2 {
                // Pure translations take the shifting shortcut; the largest allowed ones
                // too, where f32 ulps of the translation dwarf the object.
                let scale = [1e9, 10.0, crate::MAX_POSE_TRANSLATION, 1e-3][round / 5 % 4];
                let t = (DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) - 0.5) * 2.0 * scale;
                Pose::from_translation(t).unwrap()
            } else {
                random_pose(&mut s, round % 3 == 1, round % 4 == 3)
            };
            let mut frame = PoseFrame::<K>::new(&pose, obj.magnitude);
            // Exactness of the root: brute force over every vertex gives the same bounds,
            // whichever way the root is found (the dispatching form, and both of its
            // methods whatever the hull's size).
            let placed: Vec<DVec3> = (0..obj.part.bvh.tris.len())
                .flat_map(|p| obj.part.bvh.tri_at(p))
                .map(|v| pose.transform_point(v))
                .collect();
            let brute = Dop::<K>::from_points(&placed);
            let width = brute.box_extent().max_element();
            // The dispatching form re-bounds the root approximately after a jump: it
            // must contain every vertex, and is tight when it climbed or scanned.
            let dispatched = root_dop(obj, &mut frame, &mut climber);
            for v in &placed {
                assert!(
                    dispatched.contains_point(*v),
                    "dispatched root misses a vertex"
                );
            }
            let exact = root_exact(obj, &mut frame, &mut climber);
            if obj.deform.is_some() {
                // A deformed object has no hull to climb: its root contains it, loosely.
                for v in &placed {
                    assert!(exact.contains_point(*v), "deformed root misses a vertex");
                }
            }
            let hulls = obj.deform.is_none();
            for (how, root) in [
                ("exact", exact),
                ("climbed", root_climbed(obj, &frame, &mut climber)),
                ("scanned", root_scanned(obj, &frame)),
            ]
            .into_iter()
            .filter(|_| hulls)
            {
                for v in &placed {
                    assert!(root.contains_point(*v), "{how} root misses a vertex");
                }
                for i in 0..K {
                    let diff = (f64::from(root.b[i]) - f64::from(brute.b[i])).abs();
                    assert!(
                        diff <= 1e-6 * (width + f64::from(brute.b[i]).abs()),
                        "{how} root not tight on {i}: {diff}"
                    );
                }
            }
            // Every node's tumbled k-DOP contains its placed triangles, by either method.
            for (ni, method) in (0..obj.part.bvh.nodes.len())
                .flat_map(|ni| [(ni, Rebound::Corners), (ni, Rebound::Slabs)])
            {
                let d = tumble_node(obj, ni, &mut frame, method);
                let mut stack = vec![ni];
                while let Some(x) = stack.pop() {
                    let nd = &obj.part.bvh.nodes[x];
                    if nd.is_leaf() {
                        let mut pos = nd.first_triangle() as usize;
                        loop {
                            for v in obj.part.bvh.tri_at(pos) {
                                assert!(
                                    d.contains_point(pose.transform_point(v)),
                                    "tumbled node misses a vertex"
                                );
                            }
                            if obj.part.bvh.ids[pos] & crate::hierarchy::END != 0 {
                                break;
                            }
                            pos += 1;
                        }
                    } else {
                        stack.push(nd.first_child() as usize);
                        stack.push(nd.first_child() as usize + 1);
                    }
                }
            }
        }
    }

    #[test]
    fn tumbled_and_root_dops_contain_the_placed_object() {
        crate::testing::for_each_k!(props);
    }

    /// The AVX-compiled re-bounding (corners for k ≥ 14, slabs for every k, when this CPU
    /// has AVX) gives the portable form's bounds bit for bit, on every node of two objects
    /// under rotations and an affine map; so the containment checks of `props` (which run
    /// the dispatching form) cover both. For corners with k = 6 both sides are the portable
    /// form: that case guards the dispatch only.
    #[test]
    fn avx_and_portable_rebounding_agree_bitwise() {
        fn one<const K: usize>() {
            let mut s = 5u64 + K as u64;
            for mesh in [
                blob(K as u64 + 1),
                crate::scene::torus_knot(2, 3, 3.0, 1.0, 0.4, 120, 8).unwrap(),
            ] {
                let obj = FlyingObject::<K>::new(mesh, &BuildOptions::FLYING).unwrap();
                for round in 0..6 {
                    let pose = random_pose(&mut s, round % 3 == 2, round == 5);
                    let mut frame = PoseFrame::<K>::new(&pose, obj.magnitude);
                    frame.prepare_dual();
                    let (mut lo, mut hi) = ([f64::INFINITY; 13], [f64::NEG_INFINITY; 13]);
                    scan_lanes(&obj.hull_pts, &frame, &mut lo, &mut hi);
                    let bits = |d: Dop<K>| d.b.map(f32::to_bits);
                    assert_eq!(
                        bits(root_scanned(&obj, &frame)),
                        bits(root_bounds(&frame, &lo, &hi)),
                        "k={K} root scan"
                    );
                    for i in 0..obj.part.bvh.nodes.len() {
                        let corners = tumble_node(&obj, i, &mut frame, Rebound::Corners);
                        let portable = match obj.stored.corners[i] {
                            CornerSet::OwnLanes => own_portable(&obj, i, &frame),
                            CornerSet::Dop if i != 0 => tumble_lanes(obj.dop_corners(), i, &frame),
                            _ => tumble_lanes(&obj.stored, i, &frame),
                        };
                        assert_eq!(bits(corners), bits(portable), "k={K} node {i}");
                        let dop = &obj.part.bvh.nodes[i].dop;
                        assert_eq!(
                            bits(tumble_dual(dop, &frame)),
                            bits(dual_lanes(dop, &frame)),
                            "k={K} node {i}, slabs"
                        );
                    }
                }
            }
        }
        crate::testing::for_each_k!(one);
    }

    /// `dual_terms` writes `u` as a non-negative combination of three directions of the
    /// K-DOP, to within the residual [`dual_lanes`]'s margin assumes (`20 EPS |u|_inf` per
    /// component; the check's own f64 sum adds up to `9 EPS |u|_inf`): on random directions
    /// of every scale, axis directions, ties, signed zeros, and the 18-DOP's chamber
    /// boundary `a1 = a2 + a3`.
    #[test]
    fn dual_terms_reproduce_the_direction() {
        fn one<const K: usize>() {
            let mut s = 3u64 + K as u64;
            let mut cases = vec![
                DVec3::X,
                DVec3::NEG_Y,
                DVec3::ONE,
                DVec3::new(-0.0, 2.0, 2.0),
                DVec3::new(1.0, -1.0, 0.0),
                DVec3::new(3.0, 2.0, 1.0),
                DVec3::new(2.0, -1.0, 1.0),
                DVec3::new(1e-300, -1e-300, 0.5),
                DVec3::new(1e300, 3e299, -7e299),
            ];
            for i in 0..3000 {
                let scale = 10f64.powi((i % 41) - 20);
                let u = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 2.0 - 1.0;
                cases.push(u * scale);
            }
            for u in cases {
                let mut sum = DVec3::ZERO;
                for (lambda, m, sign, l1) in dual_terms::<K>(u) {
                    assert!(lambda >= 0.0, "k={K} u={u:?}: negative weight");
                    let a = axes(K)[m as usize];
                    assert_eq!(l1, f64::from(a[0].abs() + a[1].abs() + a[2].abs()));
                    let d = DVec3::new(a[0].into(), a[1].into(), a[2].into());
                    sum += d * (lambda * f64::from(sign));
                }
                let r = (sum - u).abs().max_element();
                assert!(
                    r <= 29.0 * EPS * u.abs().max_element(),
                    "k={K} u={u:?}: residual {r:e}"
                );
            }
        }
        crate::testing::for_each_k!(one);
    }

    /// Slabs are exact where the three planes meet at a corner of the k-DOP: for k = 6
    /// always (a turned box bounded as Arvo bounds it), and for every k on the k-DOP of a
    /// ball, where every face is present. Compared with the k-DOP of the turned corners
    /// (`Dop::vertices`), to 1e-5 of the size plus the magnitude (the margins are f32 ulps
    /// of the magnitude); and slabs contain those corners.
    #[test]
    fn slabs_are_exact_on_boxes_and_full_dops() {
        fn one<const K: usize>(ball: bool) {
            let mut s = 9u64 + K as u64;
            for round in 0..40 {
                let c = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 20.0 - 10.0;
                let dop = if ball {
                    let r = 0.1 + lcg(&mut s) * 5.0;
                    let n = K / 2;
                    let mut b = [0.0f32; K];
                    for (i, a) in axes(K).iter().enumerate() {
                        let d = DVec3::new(a[0].into(), a[1].into(), a[2].into());
                        (b[i], b[n + i]) = (
                            (d.dot(c) - r * d.length()) as f32,
                            (d.dot(c) + r * d.length()) as f32,
                        );
                    }
                    Dop { b }
                } else {
                    let e = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 4.0;
                    Dop::<K>::from_points(&[c, c + e])
                };
                let pose = random_pose(&mut s, round % 3 == 1, false);
                let corners: Vec<DVec3> = dop
                    .vertices()
                    .iter()
                    .map(|v| pose.transform_point(*v))
                    .collect();
                let exact = Dop::<K>::from_points(&corners);
                let mag = dop.magnitude();
                let mut frame = PoseFrame::<K>::new(&pose, mag);
                frame.prepare_dual();
                let slabs = tumble_dual(&dop, &frame);
                let size = exact.box_extent().max_element();
                for i in 0..K {
                    let diff = (f64::from(slabs.b[i]) - f64::from(exact.b[i])).abs();
                    // The margins are a few f32 ulps of the magnitude.
                    assert!(
                        diff <= 1e-5 * (size + mag),
                        "k={K} ball={ball} bound {i}: {diff:e}"
                    );
                }
                for v in &corners {
                    assert!(
                        slabs.contains_point(*v),
                        "k={K} ball={ball}: a corner is out"
                    );
                }
            }
        }
        one::<6>(false);
        one::<6>(true);
        one::<14>(true);
        one::<18>(true);
        one::<26>(true);
    }

    /// The written-out projections follow the direction tables exactly.
    #[test]
    fn projections_follow_the_axis_tables() {
        fn one<const K: usize>() {
            let w: [[f32; LANES]; 3] =
                std::array::from_fn(|r| std::array::from_fn(|l| (r * 10 + l) as f32 * 0.37 - 3.0));
            let mut lo = [[f32::INFINITY; LANES]; 16];
            let mut hi = [[f32::NEG_INFINITY; LANES]; 16];
            project_lanes::<K>(&w, &mut lo, &mut hi);
            for (i, d) in axes(K).iter().enumerate() {
                for l in 0..LANES {
                    let exact = f64::from(d[0]) * f64::from(w[0][l])
                        + f64::from(d[1]) * f64::from(w[1][l])
                        + f64::from(d[2]) * f64::from(w[2][l]);
                    // At most two f32 roundings of sums of the three magnitudes.
                    let bound = 2.0 * U32 * (0..3).map(|r| f64::from(w[r][l].abs())).sum::<f64>();
                    assert!(
                        (f64::from(lo[i][l]) - exact).abs() <= bound,
                        "k={K} axis {i}"
                    );
                    assert_eq!(lo[i][l], hi[i][l]);
                }
            }
        }
        crate::testing::for_each_k!(one);
    }

    /// Hill-climbing from every hull vertex along directions that tie many vertices exactly
    /// (axes, diagonals, turns about z of points mirrored in z) ends on a vertex whose value
    /// equals the brute-force maximum, exactly.
    #[test]
    fn climbs_reach_the_exact_maximum_from_every_start() {
        let mut sets: Vec<Vec<DVec3>> = Vec::new();
        // A solid grid: many points on faces and edges.
        let g = |n: i32| (0..n).map(f64::from);
        sets.push(
            g(5).flat_map(|x| g(5).flat_map(move |y| g(5).map(move |z| DVec3::new(x, y, z))))
                .collect(),
        );
        // Rings mirrored in z (the hand's fingers): every horizontal direction ties a pair.
        sets.push(
            (0..16)
                .flat_map(|i| {
                    let a = f64::from(i) * std::f64::consts::TAU / 16.0;
                    let r = if i % 2 == 0 { 1.0 } else { 0.7 };
                    [-0.3, 0.3].map(|z| DVec3::new(r * a.cos(), r * a.sin(), z))
                })
                .collect(),
        );
        // A grid's surface after a seeded shuffle: another insertion order for quickhull.
        let mut surface: Vec<DVec3> = sets[0]
            .iter()
            .copied()
            .filter(|p| p.to_array().iter().any(|&v| v == 0.0 || v == 4.0))
            .collect();
        let mut s = 5u64;
        for i in (1..surface.len()).rev() {
            surface.swap(i, (lcg(&mut s) * (i + 1) as f64) as usize % (i + 1));
        }
        sets.push(surface);
        // Small clouds on a 3 × 3 × 3 grid: some leave a hull vertex inside a flat face
        // (quickhull kept it when a later point made its triangles coplanar), where only
        // the plateau search finds the way up.
        for round in 0..3000 {
            let n = 5 + round % 8;
            let mut coord = || (lcg(&mut s) * 3.0).floor();
            sets.push(
                (0..n)
                    .map(|_| DVec3::new(coord(), coord(), coord()))
                    .collect(),
            );
        }
        let mut dirs: Vec<DVec3> = Vec::new();
        for d in axes(26) {
            let d = DVec3::new(f64::from(d[0]), f64::from(d[1]), f64::from(d[2]));
            dirs.extend([d, -d]);
        }
        for i in 0..16 {
            let a = f64::from(i) * std::f64::consts::TAU / 16.0 + 0.1;
            dirs.push(DVec3::new(a.cos(), a.sin(), 0.0));
        }
        let mut flat_vertices = 0;
        for pts in &sets {
            let hull = convex_hull(pts);
            if hull.dim != Some(3) {
                continue;
            }
            let hp: Vec<DVec3> = hull.vertices.iter().map(|&i| pts[i as usize]).collect();
            let mag = hp.iter().fold(0.0f64, |m, p| m.max(p.abs().max_element()));
            flat_vertices += hull.corner.iter().filter(|&&c| !c).count();
            let mut climber = Climber::default();
            climber.reset(hp.len(), 26);
            for &c in &dirs {
                let best = (0..hp.len())
                    .reduce(|a, b| {
                        if cmp_dot(c, hp[b], hp[a]) == Ordering::Greater {
                            b
                        } else {
                            a
                        }
                    })
                    .unwrap();
                for start in 0..hp.len() as u32 {
                    let got = climber.climb(&hull, &hp, mag, c, start);
                    assert_eq!(
                        cmp_dot(c, hp[got as usize], hp[best]),
                        Ordering::Equal,
                        "direction {c} from {start}"
                    );
                }
            }
        }
        assert!(
            flat_vertices > 10,
            "only {flat_vertices} flat vertices: plateaus untested"
        );
    }

    /// Certified extremes (`Climber::extreme`): directions turning in small steps through
    /// whole circles, on smooth and faceted hulls (a knot, a soup, a box grid with flat
    /// faces), give the brute-force maximum at every step, while most steps are answered by
    /// a certificate and some need a climb (so both paths run). A radius 100 times too
    /// large fails at the third step.
    #[test]
    fn certified_extremes_stay_exact_while_turning() {
        let grid = {
            let mut tris = Vec::new();
            for i in 0..6 {
                for j in 0..6 {
                    let p = DVec3::new(f64::from(i), f64::from(j), 0.0);
                    tris.push([p, p + DVec3::X, p + DVec3::Y + DVec3::Z * 3.0]);
                }
            }
            Mesh::from_triangles(&tris).unwrap()
        };
        for mesh in [
            crate::scene::torus_knot(2, 3, 3.0, 1.0, 0.4, 120, 8).unwrap(),
            blob(3),
            grid,
        ] {
            let obj = FlyingObject::<18>::new(mesh, &BuildOptions::FLYING).unwrap();
            let pts = &obj.hull_pts;
            let mut climber = Climber::default();
            climber.reset(pts.len(), 2);
            let (mut certified, mut climbed) = (0, 0);
            for step in 0..2000 {
                // Two incommensurate turns, so the directions sweep the sphere.
                let a = f64::from(step) * 0.011;
                let b = f64::from(step) * 0.0037;
                let c = DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin());
                for (slot, dir) in [(0, c), (1, -c)] {
                    let before = climber.certified;
                    let got = climber.extreme(&obj.hull, pts, obj.magnitude, dir, slot);
                    if climber.certified > before {
                        certified += 1;
                    } else {
                        climbed += 1;
                    }
                    let best = (0..pts.len())
                        .reduce(|x, y| {
                            if cmp_dot(dir, pts[y], pts[x]) == Ordering::Greater {
                                y
                            } else {
                                x
                            }
                        })
                        .unwrap();
                    assert_eq!(
                        cmp_dot(dir, pts[got as usize], pts[best]),
                        Ordering::Equal,
                        "step {step} slot {slot}: not the maximum"
                    );
                }
            }
            assert!(
                certified > 1000 && climbed > 20,
                "certified {certified}, climbed {climbed}: a path went untested"
            );
        }
    }

    #[test]
    fn climbing_handles_plateaus() {
        // An axis-aligned grid box: under the identity many vertices tie on every axis,
        // and face-interior points are not on the hull, so climbs meet ties at hull
        // corners (plateaus inside flat faces are tested by
        // `climbs_reach_the_exact_maximum_from_every_start`).
        let mut tris = Vec::new();
        for i in 0..10 {
            for j in 0..10 {
                let p = DVec3::new(i as f64, j as f64, 0.0);
                tris.push([p, p + DVec3::X, p + DVec3::Y]);
                let q = DVec3::new(i as f64, j as f64, 5.0);
                tris.push([q, q + DVec3::X, q + DVec3::Y]);
            }
        }
        let obj =
            FlyingObject::<18>::new(Mesh::from_triangles(&tris).unwrap(), &BuildOptions::FLYING)
                .unwrap();
        for pose in [
            Pose::IDENTITY,
            Pose::from_translation(DVec3::new(0.5, -3.0, 2.0)).unwrap(),
        ] {
            // Start every climb from vertex 0, with no certificate from an earlier pose.
            let mut climber = Climber::default();
            climber.reset(obj.hull_pts.len(), 18);
            let mut frame = PoseFrame::<18>::new(&pose, obj.magnitude);
            // These poses would shift the stored root bound; climb instead, which is what
            // this test is for (with the shift it passed even when climbs returned their
            // start vertex).
            frame.translation_only = false;
            let root = root_climbed(&obj, &frame, &mut climber);
            let t = pose.translation();
            // Bounds are rounded outward to f32: never inside, at most two f32 ulps out.
            let near_above = |got: f32, exact: f64| {
                let g = f64::from(got);
                g >= exact && g - exact <= 2.0 * U32 * 2.0 * exact.abs().max(1.0)
            };
            assert!(near_above(root.hi(0), 10.0 + t.x));
            assert!(near_above(-root.lo(1), -t.y));
            // (10, 10) is not a vertex: the largest x + y is 19.
            assert!(near_above(root.hi(3), 19.0 + t.x + t.y));
        }
    }
}
