//! Per-mesh BV-trees of k-DOPs (Klosowski et al. 1998, §3.3).
//!
//! Nodes live in one contiguous array addressed by `u32` index. The two children of an
//! internal node are adjacent (`first`, `first + 1`), always after their parent, so the
//! array has no cycles by construction and a loader can check that cheaply. The mesh's
//! triangles are stored in leaf order, each leaf a contiguous run whose last entry carries
//! [`END`], so a leaf is one index.

mod build;
pub(crate) mod codes;
mod validate;

use crate::dop::Dop;
use crate::error::{Error, Result};
use glam::DVec3;

pub(crate) use build::{build, build_over_boxes};

/// Marks a leaf in [`Node::link`]; the other bits are the leaf's first triangle position.
pub(crate) const LEAF: u32 = 1 << 31;
/// Marks the last triangle of a leaf in `Bvh::ids`; the other bits are the original
/// triangle index.
pub(crate) const END: u32 = 1 << 31;

/// The positions of the leaf whose triangles start at position `first` (its last carries
/// [`END`] in `ids`).
#[inline]
pub(crate) fn leaf_span(ids: &[u32], first: usize) -> std::ops::Range<usize> {
    let mut last = first;
    while ids[last] & END == 0 {
        last += 1;
    }
    first..last + 1
}

/// The most triangles any leaf holds, from the [`END`] marks of `ids` (0 for none).
pub(crate) fn longest_leaf(ids: &[u32]) -> usize {
    ids.split_inclusive(|&v| v & END != 0)
        .map(<[u32]>::len)
        .max()
        .unwrap_or(0)
}

/// One node: its k-DOP and a link (first child, or `LEAF | first triangle`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub(crate) struct Node<const K: usize> {
    pub dop: Dop<K>,
    pub link: u32,
}

// Node sizes are part of the memory figures in docs/benchmarks.md.
const _: () = assert!(std::mem::size_of::<Node<6>>() == 28);
const _: () = assert!(std::mem::size_of::<Node<14>>() == 60);
const _: () = assert!(std::mem::size_of::<Node<18>>() == 76);
const _: () = assert!(std::mem::size_of::<Node<26>>() == 108);

impl<const K: usize> Node<K> {
    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.link & LEAF != 0
    }
    /// First child (internal nodes).
    #[inline]
    pub fn first_child(&self) -> u32 {
        self.link
    }
    /// First triangle position (leaves).
    #[inline]
    pub fn first_triangle(&self) -> u32 {
        self.link & !LEAF
    }
}

/// How to choose the axis of the splitting plane (§3.3.4, "Choice of Axis").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AxisRule {
    /// The axis along which the node's k-DOP is longest (three subtractions).
    LongestSide,
    /// The axis minimising the sum of the children's k-DOP volumes.
    MinSum,
    /// The axis minimising the larger of the children's k-DOP volumes.
    MinMax,
    /// The axis along which the triangle centroids have the largest variance (the
    /// paper's default).
    Splatter,
    /// kdop's default, not one of the paper's rules: the plane (axis *and* position) that
    /// minimises a surface-area cost, `S(left) n_left + S(right) n_right`, over 16 slices
    /// of the centroids' range per axis, where `S` sums the products of pairs of the
    /// child k-DOP's `k / 2` extents: half the surface area for a box; with the diagonal
    /// extents of larger k it weighs elongated nodes more than their area would, which
    /// pruned better on every flight we measured. The split point option is not used (but
    /// for the median fallback when all centroids share a slice).
    /// Trees prune better: 11–30 % fewer k-DOP tests on the paper's flights and 24 % fewer
    /// on the nested spheres (`docs/benchmarks.md`), for 1.7–3.5 times splatter's build
    /// time.
    SurfaceArea,
}

impl AxisRule {
    /// Every rule: the paper's four in the order of §3.3.1, then kdop's surface-area rule
    /// (for comparisons and parameter sweeps).
    pub const ALL: [AxisRule; 5] = [
        AxisRule::LongestSide,
        AxisRule::MinSum,
        AxisRule::MinMax,
        AxisRule::Splatter,
        AxisRule::SurfaceArea,
    ];
}

impl std::str::FromStr for AxisRule {
    type Err = Error;

    /// The names the `kdop` program takes: `longest-side`, `min-sum`, `min-max`,
    /// `splatter`, `surface-area` (also `longest`, `minsum`, `minmax`, `sah`).
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "longest-side" | "longest" => AxisRule::LongestSide,
            "min-sum" | "minsum" => AxisRule::MinSum,
            "min-max" | "minmax" => AxisRule::MinMax,
            "splatter" => AxisRule::Splatter,
            "surface-area" | "sah" => AxisRule::SurfaceArea,
            _ => {
                return Err(Error::InvalidParameter {
                    name: "axis rule",
                    reason: format!(
                        "{s:?} is none of longest-side, min-sum, min-max, splatter, surface-area"
                    ),
                });
            }
        })
    }
}

/// Where to put the splitting plane along the chosen axis (§3.3.4, "Choice of Split Point").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SplitPoint {
    /// The mean of the centroid coordinates (the paper's default: tighter volumes).
    Mean,
    /// The median of the centroid coordinates (balanced trees).
    Median,
}

impl SplitPoint {
    /// Both split points.
    pub const ALL: [SplitPoint; 2] = [SplitPoint::Mean, SplitPoint::Median];
}

/// Parameters of a hierarchy build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BuildOptions {
    /// Axis rule; default [`AxisRule::SurfaceArea`] (the paper's default was
    /// [`AxisRule::Splatter`]).
    pub rule: AxisRule,
    /// Split point; default [`SplitPoint::Mean`]. [`AxisRule::SurfaceArea`] chooses its
    /// own position and does not use it.
    pub split: SplitPoint,
    /// The leaf threshold τ: a node with at most this many triangles is a leaf (§4.3).
    /// The paper used 1 for environments; 1..=4096 is accepted.
    pub leaf_size: u32,
}

impl BuildOptions {
    /// Defaults for an environment: the surface-area rule, τ = 4. Queries refine multi-triangle
    /// leaves into per-triangle bounds, so τ = 4 makes nearly the same tests as τ = 1 (the
    /// same on the demo flight, 6 % more k-DOP tests on nested spheres) while the
    /// environment takes less than half the memory (`docs/benchmarks.md`); the paper's
    /// τ = 1 is a parameter away.
    pub const ENVIRONMENT: BuildOptions = BuildOptions {
        rule: AxisRule::SurfaceArea,
        split: SplitPoint::Mean,
        leaf_size: 4,
    };
    /// Defaults for a flying object: the surface-area rule, τ = 4. Fewer, fuller leaves mean fewer
    /// nodes to re-bound when the object turns (§4.3).
    pub const FLYING: BuildOptions = BuildOptions {
        rule: AxisRule::SurfaceArea,
        split: SplitPoint::Mean,
        leaf_size: 4,
    };
    /// Defaults for a shape whose vertices are replaced frame after frame
    /// ([`crate::FlyingObject::deform`], [`crate::World::add_shape_with`]): the
    /// surface-area rule, τ = 16. A refit re-makes every leaf and inner node its
    /// deformation reaches, and a deformed leaf's triangles are bounded from their corners
    /// when a query refines it, so fewer, fuller leaves cost the refit less and the query
    /// little: a report query no more, a detect query a few microseconds more, which a
    /// shape refit every frame repays (`docs/benchmarks.md`, "Design choices").
    pub const DEFORMING: BuildOptions = BuildOptions {
        rule: AxisRule::SurfaceArea,
        split: SplitPoint::Mean,
        leaf_size: 16,
    };

    pub(crate) fn check(&self) -> Result<()> {
        if self.leaf_size == 0 || self.leaf_size > 4096 {
            return Err(Error::InvalidParameter {
                name: "leaf_size",
                reason: format!("{} is outside 1..=4096", self.leaf_size),
            });
        }
        Ok(())
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions::ENVIRONMENT
    }
}

/// A BV-tree of k-DOPs over one mesh, which it owns (triangles reordered into leaf order).
#[derive(Clone, Debug, PartialEq)]
pub struct Bvh<const K: usize> {
    pub(crate) nodes: Vec<Node<K>>,
    pub(crate) vertices: Vec<DVec3>,
    /// Triangles in leaf order.
    pub(crate) tris: Vec<[u32; 3]>,
    /// Original index of the triangle at each position, with [`END`] on each leaf's last.
    pub(crate) ids: Vec<u32>,
}

impl<const K: usize> Bvh<K> {
    /// Builds the hierarchy of a mesh (which it keeps, triangles reordered).
    ///
    /// Large builds run on rayon's current thread pool; the result is identical whatever
    /// the number of threads.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a leaf size outside `1..=4096`.
    ///
    /// # Complexity
    /// O(n log n) for splatter and longest side; min sum and min max also compute six
    /// k-DOP volumes per node.
    pub fn build(mesh: crate::Mesh, options: &BuildOptions) -> Result<Self> {
        options.check()?;
        Ok(build(mesh, options).0)
    }

    /// [`Bvh::build`] and the byte codes of its leaves' triangles ([`codes`]), encoded
    /// from the triangle bounds the build computed anyway.
    ///
    /// # Errors
    /// As [`Bvh::build`].
    pub(crate) fn build_with_codes(
        mesh: crate::Mesh,
        options: &BuildOptions,
    ) -> Result<(Self, Vec<[u8; K]>)> {
        options.check()?;
        let (bvh, tdops) = build(mesh, options);
        let codes = codes::encode(&bvh, |pos| tdops[bvh.id_at(pos) as usize]);
        Ok((bvh, codes))
    }

    /// Number of nodes.
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of triangles.
    #[must_use]
    pub fn triangle_count(&self) -> usize {
        self.tris.len()
    }

    /// The root's k-DOP: it contains every triangle.
    #[must_use]
    pub fn root_dop(&self) -> Dop<K> {
        self.nodes[0].dop
    }

    /// The k-DOP of every node, root first (for inspection, drawing and benchmarks).
    pub fn bounds(&self) -> impl ExactSizeIterator<Item = &Dop<K>> {
        self.nodes.iter().map(|n| &n.dop)
    }

    /// Height of the tree (a single leaf has depth 0).
    #[must_use]
    pub fn depth(&self) -> usize {
        let mut best = 0;
        let mut stack = vec![(0u32, 0usize)];
        while let Some((n, d)) = stack.pop() {
            best = best.max(d);
            let node = &self.nodes[n as usize];
            if !node.is_leaf() {
                stack.push((node.first_child(), d + 1));
                stack.push((node.first_child() + 1, d + 1));
            }
        }
        best
    }

    /// Bytes used by vertices, triangles, ids and nodes.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.vertices.len() * std::mem::size_of::<DVec3>()
            + self.tris.len() * (12 + 4)
            + self.nodes.len() * std::mem::size_of::<Node<K>>()
    }

    /// The corners of the triangle at leaf-order position `pos`.
    #[inline(always)]
    pub(crate) fn tri_at(&self, pos: usize) -> [DVec3; 3] {
        let [a, b, c] = self.tris[pos];
        [
            self.vertices[a as usize],
            self.vertices[b as usize],
            self.vertices[c as usize],
        ]
    }

    /// The original index of the triangle at leaf-order position `pos`.
    #[inline]
    pub(crate) fn id_at(&self, pos: usize) -> u32 {
        self.ids[pos] & !END
    }

    /// The corners of the triangle with original index `id`, if any (linear search; for
    /// tests and reports, not hot paths).
    #[must_use]
    pub fn triangle(&self, id: u32) -> Option<[DVec3; 3]> {
        let pos = self.ids.iter().position(|&v| v & !END == id)?;
        Some(self.tri_at(pos))
    }

    /// Sum of the volumes of all node k-DOPs (a quality measure, §3.3.4).
    #[must_use]
    pub fn total_volume(&self) -> f64 {
        self.nodes.iter().map(|n| n.dop.volume()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mesh;

    use crate::testing::lcg;

    fn soup(n: usize, seed: u64) -> Mesh {
        let mut s = seed;
        let mut tris = Vec::new();
        for i in 0..n {
            let c = DVec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 10.0;
            let p = |s: &mut u64| c + DVec3::new(lcg(s), lcg(s), lcg(s)) * 0.3;
            let t = [p(&mut s), p(&mut s), p(&mut s)];
            // Some exact duplicates and degenerate triangles.
            let t = match i % 17 {
                0 => [t[0], t[0], t[0]],
                1 => [t[0], t[1], (t[0] + t[1]) * 0.5],
                _ => t,
            };
            tris.push(t);
            if i % 23 == 0 {
                tris.push(t);
            }
        }
        Mesh::from_triangles(&tris).unwrap()
    }

    fn all_options() -> Vec<BuildOptions> {
        let mut v = Vec::new();
        for rule in AxisRule::ALL {
            for split in SplitPoint::ALL {
                for leaf_size in [1, 3, 8] {
                    v.push(BuildOptions {
                        rule,
                        split,
                        leaf_size,
                    });
                }
            }
        }
        v
    }

    fn valid_for<const K: usize>() {
        let m = soup(700, 3);
        for o in all_options() {
            let b = Bvh::<K>::build(m.clone(), &o).unwrap();
            assert_eq!(b.validate(), Ok(()), "{o:?}");
            assert_eq!(b.triangle_count(), m.triangle_count());
            // Every leaf respects the threshold.
            for n in &b.nodes {
                if n.is_leaf() {
                    let mut pos = n.first_triangle() as usize;
                    let mut count = 1;
                    while b.ids[pos] & END == 0 {
                        pos += 1;
                        count += 1;
                    }
                    assert!(count <= o.leaf_size as usize);
                }
            }
        }
    }

    #[test]
    fn builds_are_valid_for_every_k_rule_split_and_leaf_size() {
        crate::testing::for_each_k!(valid_for);
    }

    #[test]
    fn identical_centroids_terminate() {
        let t = [DVec3::ZERO, DVec3::X, DVec3::Y];
        let m = Mesh::from_triangles(&vec![t; 1000]).unwrap();
        for o in all_options() {
            let b = Bvh::<18>::build(m.clone(), &o).unwrap();
            assert_eq!(b.validate(), Ok(()));
            assert!(b.depth() <= 12, "median fallback keeps it balanced");
        }
    }

    #[test]
    fn centroids_a_few_ulps_apart_terminate() {
        // Centroid ranges of a few subnormal steps (where 16 / range overflows to
        // infinity) and of a few ulps around 2^39: every rule still splits and ends.
        for (base, step) in [(0.0, f64::from_bits(1)), (2f64.powi(39), 2f64.powi(-13))] {
            let tris: Vec<[DVec3; 3]> = (0..300)
                .map(|i| {
                    let x = base + f64::from(i % 5) * step;
                    [
                        DVec3::new(x, 0.0, 0.0),
                        DVec3::new(x, 1.0, 0.0),
                        DVec3::new(x, 0.0, 1.0),
                    ]
                })
                .collect();
            let m = Mesh::from_triangles(&tris).unwrap();
            for o in all_options() {
                let b = Bvh::<18>::build(m.clone(), &o).unwrap();
                assert_eq!(b.validate(), Ok(()), "{o:?}");
                assert!(b.depth() <= 12, "{o:?}: depth {}", b.depth());
            }
        }
    }

    /// Centroids in a geometric progression (ratio 16/15, from 1e-300 to 1e11): the mean
    /// and the surface-area rule peel off a triangle or two per level (139 and 276 levels
    /// deep without the guard), and the build recurses. Past `BALANCE_DEPTH` nodes split
    /// at the median, so no tree is deeper than that plus `log2(n)`.
    #[test]
    fn adversarial_spacing_keeps_the_tree_shallow() {
        let mut tris = Vec::new();
        let mut x = 1e-300f64;
        while x < 1e11 {
            let s = x * 0.01;
            tris.push([
                DVec3::new(x, 0.0, 0.0),
                DVec3::new(x + s, 0.0, 0.0),
                DVec3::new(x, s, s),
            ]);
            x *= 16.0 / 15.0;
        }
        let n = tris.len();
        let m = Mesh::from_triangles(&tris).unwrap();
        let bound = build::BALANCE_DEPTH as usize + n.ilog2() as usize + 1;
        for o in all_options() {
            let b = Bvh::<26>::build(m.clone(), &o).unwrap();
            assert_eq!(b.validate(), Ok(()), "{o:?}");
            assert!(b.depth() <= bound, "{o:?}: depth {} > {bound}", b.depth());
        }
    }

    /// Two rows of small triangles along x, 3 apart in y. The centroids spread most along
    /// x (variance 8.3 against 2.25), so splatter cuts across both rows. For boxes (k = 6)
    /// the surface-area measure is the boxes' half area: two thin rows (about 1.5 each)
    /// cost far less than two 5 x 3 patches (about 16 each), so the rule must keep each
    /// row whole.
    #[test]
    fn surface_area_keeps_thin_rows_together_for_boxes() {
        let tri = |x: f64, y: f64| {
            [
                DVec3::new(x, y, 0.0),
                DVec3::new(x + 0.1, y, 0.0),
                DVec3::new(x, y + 0.1, 0.05),
            ]
        };
        let tris: Vec<[DVec3; 3]> = (0..100)
            .flat_map(|i| [tri(f64::from(i) * 0.1, 0.0), tri(f64::from(i) * 0.1, 3.0)])
            .collect();
        let m = Mesh::from_triangles(&tris).unwrap();
        let root_children_y = |rule| {
            let o = BuildOptions {
                rule,
                ..BuildOptions::ENVIRONMENT
            };
            let b = Bvh::<6>::build(m.clone(), &o).unwrap();
            let c = b.nodes[0].first_child() as usize;
            [c, c + 1].map(|i| b.nodes[i].dop.box_extent().y)
        };
        for y in root_children_y(AxisRule::SurfaceArea) {
            assert!(y < 0.2, "a root child spans both rows: y extent {y}");
        }
        // The contrast that makes the test mean something: splatter does cut the rows.
        assert!(root_children_y(AxisRule::Splatter).iter().all(|&y| y > 3.0));
    }

    #[test]
    fn same_tree_whatever_the_thread_count() {
        let m = soup(40_000, 9);
        for rule in AxisRule::ALL {
            let o = BuildOptions {
                rule,
                ..BuildOptions::ENVIRONMENT
            };
            let build_with = |threads: usize| {
                crate::testing::pool(threads).install(|| Bvh::<18>::build(m.clone(), &o).unwrap())
            };
            let one = build_with(1);
            assert_eq!(one, build_with(2), "{rule:?}");
            assert_eq!(one, build_with(3), "{rule:?}");
        }
    }

    #[test]
    fn validate_catches_damage() {
        let b = Bvh::<14>::build(soup(50, 1), &BuildOptions::ENVIRONMENT).unwrap();
        let mut c = b.clone();
        c.nodes[1].dop.b[0] += 1.0; // shrink a child below its geometry
        assert!(c.validate().is_err());
        let mut c = b.clone();
        c.nodes[0].link = 0; // self-loop
        assert!(c.validate().is_err());
        let mut c = b.clone();
        c.ids[0] ^= END;
        assert!(c.validate().is_err());
        let mut c = b;
        c.tris[3][1] = 1_000_000;
        assert!(c.validate().is_err());
    }

    #[test]
    fn axis_rules_parse_by_name() {
        let names = [
            "longest-side",
            "min-sum",
            "min-max",
            "splatter",
            "surface-area",
        ];
        for (name, rule) in names.into_iter().zip(AxisRule::ALL) {
            assert_eq!(name.parse::<AxisRule>().unwrap(), rule);
        }
        assert_eq!("sah".parse::<AxisRule>().unwrap(), AxisRule::SurfaceArea);
        for bad in ["", "Splatter", "surface area", "sah "] {
            assert!(matches!(
                bad.parse::<AxisRule>(),
                Err(Error::InvalidParameter { .. })
            ));
        }
    }

    #[test]
    fn rejects_bad_leaf_size() {
        let o = BuildOptions {
            leaf_size: 0,
            ..BuildOptions::ENVIRONMENT
        };
        assert!(Bvh::<6>::build(soup(5, 1), &o).is_err());
    }
}
