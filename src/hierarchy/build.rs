//! Top-down construction of a BV-tree (Klosowski et al. 1998, §3.3.2 and §3.3.4).
//!
//! Each triangle is represented by its centroid. A node with more than τ triangles is
//! split by a plane orthogonal to x, y or z, chosen by one of the four axis rules, placed at
//! the mean or the median of the centroid coordinates. If the mean leaves one side empty
//! (identical centroids, or rounding) the median is used; the median breaks ties by triangle
//! index, so every split makes progress and the recursion ends.
//!
//! kdop's default rule is not the paper's: [`AxisRule::SurfaceArea`] picks the axis and the
//! position together, by the binned surface-area heuristic of ray-tracing BVHs (MacDonald
//! and Booth 1990; binned as in Wald 2007), with a measure over all `k / 2` extents of a
//! k-DOP rather than its box (the sum of their pairwise products, see [`measure`]). For
//! two trees descended against each other a node's chance of overlapping the other
//! tree's nodes grows with its extent in every direction, diagonals included; on the
//! paper's flights the box area pruned clearly worse (Swept, 26-DOP: 203 k-DOP tests per
//! query against 168; `docs/benchmarks.md`).
//!
//! Subtrees above a size threshold are built in parallel with `rayon::join`. Each subtree
//! is a pure function of its input slice, and results are concatenated left before right,
//! so the tree is identical whatever the number of threads.

use super::{BuildOptions, Bvh, END, LEAF, Node, SplitPoint};
use crate::AxisRule;
use crate::dop::Dop;
use crate::mesh::Mesh;
use glam::DVec3;
use rayon::prelude::*;

/// Subtrees with more triangles than this are split off to another rayon task.
const PARALLEL_MIN: usize = 8192;

#[derive(Clone, Copy, Debug)]
struct Item {
    c: DVec3,
    id: u32,
}

/// A node of the intermediate tree, stored in post-order.
#[derive(Clone, Copy, Debug)]
struct Tmp<const K: usize> {
    dop: Dop<K>,
    /// Children (indices into the same post-order vector), or `None` for a leaf.
    kids: Option<(u32, u32)>,
    /// Item range (leaves).
    range: (u32, u32),
}

/// Builds a hierarchy over a validated mesh; also returns each triangle's k-DOP (the
/// merge of its corners' [`Dop::from_point_quick`]), indexed by original triangle id, for
/// callers that encode leaf contents ([`super::codes`]).
pub(crate) fn build<const K: usize>(mesh: Mesh, opts: &BuildOptions) -> (Bvh<K>, Vec<Dop<K>>) {
    zone!("Bvh::build");
    let (vertices, triangles) = mesh.into_parts();
    let vdops: Vec<Dop<K>> = vertices
        .par_iter()
        .with_min_len(4096)
        .map(|&p| Dop::<K>::from_point_quick(p))
        .collect();
    let tdops: Vec<Dop<K>> = triangles
        .par_iter()
        .with_min_len(4096)
        .map(|t| {
            vdops[t[0] as usize]
                .merge(&vdops[t[1] as usize])
                .merge(&vdops[t[2] as usize])
        })
        .collect();
    drop(vdops);
    let mut items: Vec<Item> = triangles
        .par_iter()
        .with_min_len(4096)
        .enumerate()
        .map(|(i, t)| {
            let [a, b, c] = t.map(|v| vertices[v as usize]);
            Item {
                c: (a + b + c) / 3.0,
                id: i as u32,
            }
        })
        .collect();

    let (nodes, order) = build_nodes(&mut items, &tdops, opts);
    let mut tris = Vec::with_capacity(triangles.len());
    let mut ids = Vec::with_capacity(triangles.len());
    for (pos, &(id, last)) in order.iter().enumerate() {
        debug_assert_eq!(pos, tris.len());
        tris.push(triangles[id as usize]);
        ids.push(id | if last { END } else { 0 });
    }
    let bvh = Bvh {
        nodes,
        vertices,
        tris,
        ids,
    };
    (bvh, tdops)
}

/// Builds the node array over items with the given centroids and bounds (indexed by item
/// id); returns the nodes and `(id, last of its leaf)` in leaf order.
fn build_nodes<const K: usize>(
    items: &mut [Item],
    dops: &[Dop<K>],
    opts: &BuildOptions,
) -> (Vec<Node<K>>, Vec<(u32, bool)>) {
    let mut tmp = Vec::with_capacity(2 * items.len() / opts.leaf_size as usize + 1);
    build_range(items, 0, 0, dops, opts, &mut tmp);
    flatten(&tmp, items)
}

/// A tree with one leaf per box (for the tree over an environment's parts): the nodes, and
/// for each leaf-order position the box index. Leaves link to their position.
pub(crate) fn build_over_boxes<const K: usize>(
    centroids: &[DVec3],
    dops: &[Dop<K>],
    rule: AxisRule,
) -> (Vec<Node<K>>, Vec<u32>) {
    let mut items: Vec<Item> = centroids
        .iter()
        .enumerate()
        .map(|(i, &c)| Item { c, id: i as u32 })
        .collect();
    let opts = BuildOptions {
        rule,
        split: SplitPoint::Mean,
        leaf_size: 1,
    };
    let (nodes, order) = build_nodes(&mut items, dops, &opts);
    (nodes, order.into_iter().map(|(id, _)| id).collect())
}

fn merged<const K: usize>(items: &[Item], tdops: &[Dop<K>]) -> Dop<K> {
    items
        .iter()
        .fold(Dop::EMPTY, |d, it| d.merge(&tdops[it.id as usize]))
}

/// Depth below which the rules split as they choose; deeper nodes split at the median of
/// their centroids' longest extent, so a tree is never deeper than this plus `log2(n)`.
/// Ordinary meshes never reach it; adversarial ones can (centroids in a geometric
/// progression make the mean and the surface-area rule peel off one triangle per level,
/// hundreds or thousands of levels deep), and the build recurses.
pub(super) const BALANCE_DEPTH: u32 = 64;

/// Builds the subtree over `items` (positions `offset..` in the full item array) at
/// `depth`, appending its nodes to `out` in post-order; returns the index of its root in
/// `out`.
///
/// Sequential recursion writes straight into `out`; at a parallel split the right subtree
/// is built into its own vector and appended (shifted) after the left one, so nodes are
/// copied only at the few parallel levels and the order never depends on scheduling.
fn build_range<const K: usize>(
    items: &mut [Item],
    offset: u32,
    depth: u32,
    tdops: &[Dop<K>],
    opts: &BuildOptions,
    out: &mut Vec<Tmp<K>>,
) -> u32 {
    let n = items.len();
    if n <= opts.leaf_size as usize {
        out.push(Tmp {
            dop: merged(items, tdops),
            kids: None,
            range: (offset, offset + n as u32),
        });
        return out.len() as u32 - 1;
    }
    let mid = if depth < BALANCE_DEPTH {
        split(items, tdops, opts)
    } else {
        let (lo, hi) = centroid_bounds(items);
        median_split(items, lo, hi)
    };
    let (left, right) = items.split_at_mut(mid);
    let (lroot, rroot) = if n > PARALLEL_MIN {
        let (l, mut r) = rayon::join(
            || build_range(left, offset, depth + 1, tdops, opts, out),
            || {
                let mut v = Vec::with_capacity(2 * right.len() / opts.leaf_size as usize + 1);
                let root = build_range(right, offset + mid as u32, depth + 1, tdops, opts, &mut v);
                (root, v)
            },
        );
        let shift = out.len() as u32;
        for t in r.1.iter_mut() {
            if let Some((a, b)) = t.kids.as_mut() {
                *a += shift;
                *b += shift;
            }
        }
        out.append(&mut r.1);
        (l, r.0 + shift)
    } else {
        let l = build_range(left, offset, depth + 1, tdops, opts, out);
        let r = build_range(right, offset + mid as u32, depth + 1, tdops, opts, out);
        (l, r)
    };
    let dop = out[lroot as usize].dop.merge(&out[rroot as usize].dop);
    out.push(Tmp {
        dop,
        kids: Some((lroot, rroot)),
        range: (offset, offset + n as u32),
    });
    out.len() as u32 - 1
}

/// Reorders `items` around a splitting plane and returns the size of the left part,
/// which is always in `1..items.len()`.
fn split<const K: usize>(items: &mut [Item], tdops: &[Dop<K>], opts: &BuildOptions) -> usize {
    let (axis, mean) = match opts.rule {
        AxisRule::SurfaceArea => return split_sah(items, tdops),
        AxisRule::Splatter => {
            // One pass gives both the axis and the mean to cut at.
            let (mean, var) = moments(items);
            let axis = longest(var);
            (axis, Some(mean[axis]))
        }
        AxisRule::LongestSide => {
            let ext = merged(items, tdops).box_extent();
            (longest(ext), None)
        }
        AxisRule::MinSum | AxisRule::MinMax => {
            let mut best = (f64::INFINITY, 0usize);
            for axis in 0..3 {
                let mid = partition(items, axis, opts.split, None);
                let vl = merged(&items[..mid], tdops).volume();
                let vr = merged(&items[mid..], tdops).volume();
                let cost = if opts.rule == AxisRule::MinSum {
                    vl + vr
                } else {
                    vl.max(vr)
                };
                if cost < best.0 {
                    best = (cost, axis);
                }
            }
            (best.1, None)
        }
    };
    partition(items, axis, opts.split, mean)
}

fn longest(ext: DVec3) -> usize {
    if ext.x >= ext.y && ext.x >= ext.z {
        0
    } else if ext.y >= ext.z {
        1
    } else {
        2
    }
}

/// Mean and (unnormalised) variance of the centroids per axis, in one pass. Sums are taken
/// relative to the first centroid, which keeps cancellation small; the variance only picks
/// an axis, and the mean is the same one a separate pass would compute up to rounding.
fn moments(items: &[Item]) -> (DVec3, DVec3) {
    let n = items.len() as f64;
    let origin = items[0].c;
    let (s, s2) = items
        .iter()
        .fold((DVec3::ZERO, DVec3::ZERO), |(s, s2), it| {
            let d = it.c - origin;
            (s + d, s2 + d * d)
        });
    let mean = s / n;
    (origin + mean, s2 - s * mean)
}

/// Partitions along `axis` at the mean (`mean` if the caller already has it) or the
/// median; falls back to the median when the mean leaves a side empty. Returns the left
/// size, in `1..len`.
fn partition(items: &mut [Item], axis: usize, split: SplitPoint, mean: Option<f64>) -> usize {
    if split == SplitPoint::Mean {
        let mean = mean
            .unwrap_or_else(|| items.iter().map(|it| it.c[axis]).sum::<f64>() / items.len() as f64);
        let mid = partition_by(items, |it| it.c[axis] < mean);
        if mid > 0 && mid < items.len() {
            return mid;
        }
    }
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| {
        a.c[axis].total_cmp(&b.c[axis]).then(a.id.cmp(&b.id))
    });
    mid
}

/// Moves the items for which `left` holds to the front (deterministic two-pointer
/// partition); returns how many there are.
fn partition_by(items: &mut [Item], left: impl Fn(&Item) -> bool) -> usize {
    let mut i = 0;
    let mut j = items.len();
    while i < j {
        if left(&items[i]) {
            i += 1;
        } else {
            j -= 1;
            items.swap(i, j);
        }
    }
    i
}

/// The least and greatest centroid coordinates per axis.
fn centroid_bounds(items: &[Item]) -> (DVec3, DVec3) {
    items.iter().fold(
        (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY)),
        |(lo, hi), it| (lo.min(it.c), hi.max(it.c)),
    )
}

/// Splits at the median along the longest extent of the centroids, whose bounds are
/// `lo`, `hi`: a balanced split whatever the spacing (the depth guard's, and the
/// surface-area rule's fallback).
fn median_split(items: &mut [Item], lo: DVec3, hi: DVec3) -> usize {
    partition(items, longest(hi - lo), SplitPoint::Median, None)
}

/// Converts the post-order tree into the pair layout (children adjacent, after their
/// parent) and lists `(triangle id, last of its leaf)` in leaf order.
fn flatten<const K: usize>(tmp: &[Tmp<K>], items: &[Item]) -> (Vec<Node<K>>, Vec<(u32, bool)>) {
    let mut nodes: Vec<Node<K>> = Vec::with_capacity(tmp.len());
    let mut order: Vec<(u32, bool)> = Vec::with_capacity(items.len());
    // (temporary index, final slot); slots are allocated two at a time for children.
    let root = tmp.len() as u32 - 1;
    nodes.push(Node {
        dop: tmp[root as usize].dop,
        link: 0,
    });
    let mut stack = vec![(root, 0u32)];
    while let Some((t, slot)) = stack.pop() {
        let node = &tmp[t as usize];
        match node.kids {
            Some((a, b)) => {
                let first = nodes.len() as u32;
                nodes.push(Node {
                    dop: tmp[a as usize].dop,
                    link: 0,
                });
                nodes.push(Node {
                    dop: tmp[b as usize].dop,
                    link: 0,
                });
                nodes[slot as usize].link = first;
                // Right pushed first so the left subtree is laid out (and its leaves
                // numbered) first.
                stack.push((b, first + 1));
                stack.push((a, first));
            }
            None => {
                let start = order.len() as u32;
                let (lo, hi) = node.range;
                for (k, it) in items[lo as usize..hi as usize].iter().enumerate() {
                    order.push((it.id, k + 1 == (hi - lo) as usize));
                }
                nodes[slot as usize].link = LEAF | start;
            }
        }
    }
    (nodes, order)
}

/// Bins per axis of [`split_sah`].
const BINS: usize = 16;

/// [`Dop::merge`] for bounds that are never NaN (a built mesh's), in a form the compiler
/// turns into packed minimum and maximum instructions (`f32::min` must ignore a NaN, which
/// costs a compare and a blend per bound): the dispenser's surface-area build takes
/// 336 ms with it, 382 ms with `Dop::merge`.
#[inline]
fn merge_finite<const K: usize>(a: &Dop<K>, b: &Dop<K>) -> Dop<K> {
    let (x, y) = (&a.b, &b.b);
    let mut out = [0.0f32; K];
    for i in 0..K {
        out[i] = if i < K / 2 {
            if y[i] < x[i] { y[i] } else { x[i] }
        } else if y[i] > x[i] {
            y[i]
        } else {
            x[i]
        };
    }
    Dop { b: out }
}

/// The surface measure of the cost model: `Σ_{i<j} e_i e_j` over the k-DOP's `K / 2`
/// extents `e_i`. For a box (k = 6) it is half the surface area. For larger k the
/// diagonal extents enter too: a long node is long along most directions, so it costs
/// more than its area would say (a 10 x 0.1 x 0.05 strip measures about 1,035 at k = 18
/// against a 5 x 3.1 x 0.05 patch's 712). Measured against the box area on the paper's
/// flights, this measure made 16–17 % fewer k-DOP tests (Swept, 26-DOP: 168 against 203
/// per query; `docs/benchmarks.md`).
fn measure<const K: usize>(d: &Dop<K>) -> f64 {
    let (mut s, mut s2) = (0.0, 0.0);
    for i in 0..K / 2 {
        let e = f64::from(d.hi(i)) - f64::from(d.lo(i));
        s += e;
        s2 += e * e;
    }
    (s * s - s2) / 2.0
}

/// The slice of a centroid at `t` slice widths from the low end: `(t as usize).min(BINS -
/// 1)`, NaN (a flat axis, `0 * inf`) to slice 0. Clamped as a float first, so that the
/// conversion is a plain truncation rather than the saturating one to `usize`: the
/// dispenser's surface-area build takes 3–9 % less time (`docs/benchmarks.md`, Build).
#[inline]
fn bin_index(t: f64) -> usize {
    const LAST: f64 = (BINS - 1) as f64;
    let t = if t >= 0.0 { t } else { 0.0 };
    let t = if t < LAST { t } else { LAST };
    t as u32 as usize
}

/// The binned surface-area split: centroids binned into [`BINS`] equal slices per axis,
/// each slice boundary costed as `measure(left) * n_left + measure(right) * n_right`, the
/// cheapest kept. Not inlined: its bins (up to 5 KB) stay out of the recursion's frames.
/// Falls back to the median along the centroids' longest extent when every
/// centroid falls in one bin (identical or nearly identical centroids).
#[inline(never)]
fn split_sah<const K: usize>(items: &mut [Item], tdops: &[Dop<K>]) -> usize {
    let (cmin, cmax) = centroid_bounds(items);
    let scale = DVec3::splat(BINS as f64) / (cmax - cmin);
    // The same arithmetic bins an item while costing and while partitioning.
    let bin = |c: f64, axis: usize| -> usize { bin_index((c - cmin[axis]) * scale[axis]) };
    // One pass over the items fills the bins of all three axes: each triangle's bound is
    // read once per level (the items' ids are scattered, so that read is the cost).
    let mut bins = [[(Dop::<K>::EMPTY, 0usize); BINS]; 3];
    for it in items.iter() {
        let d = &tdops[it.id as usize];
        for (axis, axis_bins) in bins.iter_mut().enumerate() {
            let b = &mut axis_bins[bin(it.c[axis], axis)];
            b.0 = merge_finite(&b.0, d);
            b.1 += 1;
        }
    }
    let mut best = (f64::INFINITY, 0usize, 0usize);
    for (axis, bins) in bins.iter().enumerate() {
        if cmax[axis] <= cmin[axis] {
            continue;
        }
        // right[i]: the cost of bins i.. as one child.
        let mut right = [0.0f64; BINS];
        let (mut d, mut n) = (Dop::<K>::EMPTY, 0usize);
        let mut cost = f64::INFINITY;
        for i in (1..BINS).rev() {
            // An empty bin changes neither side: small nodes leave most bins empty.
            if bins[i].1 != 0 {
                d = merge_finite(&d, &bins[i].0);
                n += bins[i].1;
                cost = measure(&d) * n as f64;
            }
            right[i] = cost;
        }
        let (mut d, mut n) = (Dop::<K>::EMPTY, 0usize);
        for i in 1..BINS {
            if bins[i - 1].1 == 0 {
                // The same split as the boundary before (or none yet).
                continue;
            }
            d = merge_finite(&d, &bins[i - 1].0);
            n += bins[i - 1].1;
            if n == items.len() {
                continue;
            }
            let cost = measure(&d) * n as f64 + right[i];
            // Strictly less: ties keep the first axis and boundary, so the tree is a
            // function of the input alone.
            if cost < best.0 {
                best = (cost, axis, i);
            }
        }
    }
    if best.0.is_finite() {
        let (axis, boundary) = (best.1, best.2);
        let mid = partition_by(items, |it| bin(it.c[axis], axis) < boundary);
        if mid > 0 && mid < items.len() {
            return mid;
        }
    }
    median_split(items, cmin, cmax)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float clamp picks the slice the integer clamp did, on every kind of value a
    /// centroid's offset can take (flat axes give NaN, ranges of a few subnormal steps
    /// give infinities): trees must not change with it.
    #[test]
    fn bin_index_is_the_saturating_integer_clamp() {
        let reference = |t: f64| (t as usize).min(BINS - 1);
        let mut values = vec![
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            5e-324,
            -1.0,
            f64::MAX,
            2f64.powi(31),
            2f64.powi(32),
            2f64.powi(64),
        ];
        for k in 0..=BINS + 1 {
            let k = k as f64;
            values.extend([k, k.next_down(), k.next_up(), k + 0.5]);
        }
        for t in values {
            assert_eq!(bin_index(t), reference(t), "t = {t:e}");
        }
    }
}
