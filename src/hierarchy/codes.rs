//! Byte codes of the triangles' k-DOPs in leaves of several triangles: each bound of a
//! triangle's k-DOP as one byte, a step count from its leaf's bound inward, rounded
//! outward. Klosowski et al. 1998 (§4.3) give the environment single-triangle leaves;
//! kdop keeps leaves of τ = 4 for memory and refines them during a query into one bound
//! per triangle (`query::descent`). Decoding a code is a multiply-add per bound, far cheaper than
//! projecting the triangle's corners (`docs/benchmarks.md`, "Design choices"). The idea is
//! that of quantised child bounds in compressed BVHs; the step is 1/255 of the leaf's
//! width per axis.
//!
//! A decoded bound is sound by construction: lower bounds count steps up from the leaf's
//! lower bound, upper bounds down from its upper bound, and the encoder checks its codes
//! with the decoder itself, stepping back any bound that falls inside the triangle's own
//! k-DOP. Code 0 is the leaf's bound itself, which contains the triangle.
//!
//! The build encodes from the triangle bounds it computed anyway
//! ([`Bvh::build_with_codes`]). Saved files carry the codes (format version 2,
//! `io::saved`), and the loader checks that every decoded bound contains its triangle's
//! corners ([`Bvh::validate_with_codes`]), so a hostile code can loosen a bound but never
//! make a query miss a contact.

use super::{Bvh, END};
use crate::dop::Dop;
use rayon::prelude::*;

/// The codes of every triangle position of `bvh` (leaf order), or none when every leaf
/// holds one triangle (queries refine only leaves of several). `own(pos)` is the k-DOP of
/// the triangle at position `pos` as the build bounds it: the merge of its corners'
/// [`Dop::from_point_quick`] ([`own_bound`]), which the leaf's bound contains.
pub(crate) fn encode<const K: usize>(
    bvh: &Bvh<K>,
    own: impl Fn(usize) -> Dop<K> + Sync,
) -> Vec<[u8; K]> {
    if !needs_codes(bvh) {
        return Vec::new();
    }
    // Each position's leaf, so positions can be encoded in parallel (the codes do not
    // depend on the number of threads).
    leaf_of(bvh)
        .par_iter()
        .enumerate()
        .with_min_len(1024)
        .map(|(pos, &leaf)| encode_one(&bvh.nodes[leaf as usize].dop, &own(pos)))
        .collect()
}

/// Per triangle position of `bvh`, the leaf node holding it.
pub(crate) fn leaf_of<const K: usize>(bvh: &Bvh<K>) -> Vec<u32> {
    let mut leaf_of = vec![0u32; bvh.tris.len()];
    for (i, node) in bvh.nodes.iter().enumerate() {
        if node.is_leaf() {
            let mut pos = node.first_triangle() as usize;
            loop {
                leaf_of[pos] = i as u32;
                if bvh.ids[pos] & END != 0 {
                    break;
                }
                pos += 1;
            }
        }
    }
    leaf_of
}

/// Whether some leaf of `bvh` holds several triangles, so that its part keeps codes.
pub(crate) fn needs_codes<const K: usize>(bvh: &Bvh<K>) -> bool {
    bvh.ids.iter().any(|&id| id & END == 0)
}

/// The k-DOP of the triangle at position `pos` as the build bounds it: its corners'
/// bounds rounded out branch-free ([`Dop::from_point_quick`]) and merged.
pub(crate) fn own_bound<const K: usize>(bvh: &Bvh<K>, pos: usize) -> Dop<K> {
    let [a, b, c] = bvh.tri_at(pos);
    Dop::<K>::from_point_quick(a)
        .merge(&Dop::from_point_quick(b))
        .merge(&Dop::from_point_quick(c))
}

/// The code of a triangle with bound `own` inside leaf bound `leaf` (which contains
/// `own`): [`Encoder::encode`] for one triangle.
pub(crate) fn encode_one<const K: usize>(leaf: &Dop<K>, own: &Dop<K>) -> [u8; K] {
    Encoder::new(leaf).encode(own)
}

/// Encodes the triangles of one leaf: what a code depends on besides the triangle (the
/// leaf's bound and its steps per unit of gap) computed once.
pub(crate) struct Encoder<const K: usize> {
    leaf: Dop<K>,
    /// Steps per unit of gap, per bound: 255 per width, none on a flat axis.
    per: [f32; K],
}

impl<const K: usize> Encoder<K> {
    /// The encoder for triangles of the leaf bounded by `leaf`.
    #[inline]
    pub(crate) fn new(leaf: &Dop<K>) -> Self {
        let n = K / 2;
        let mut per = [0.0f32; K];
        for a in 0..n {
            let width = leaf.b[n + a] - leaf.b[a];
            let p = if width > 0.0 { 255.0 / width } else { 0.0 };
            per[a] = p;
            per[n + a] = p;
        }
        Encoder { leaf: *leaf, per }
    }

    /// The code of a triangle with bound `own` (which the leaf's bound contains): per
    /// bound the estimated step count, then, while [`decode`] puts a bound inside
    /// `own`'s, one step less. The check runs the decoder itself, so what queries decode
    /// is what was checked.
    #[inline]
    pub(crate) fn encode(&self, own: &Dop<K>) -> [u8; K] {
        let (n, leaf) = (K / 2, &self.leaf);
        // Per bound: the gap between the leaf's bound and the triangle's, in steps. `as u8`
        // truncates the clamped non-negative count, which is its floor.
        let mut gap = [0.0f32; K];
        for a in 0..n {
            gap[a] = own.b[a] - leaf.b[a];
            gap[n + a] = leaf.b[n + a] - own.b[n + a];
        }
        let mut code = [0u8; K];
        for i in 0..K {
            code[i] = (gap[i] * self.per[i]).clamp(0.0, 255.0) as u8;
        }
        loop {
            let d = decode(leaf, &code);
            let mut done = true;
            for (i, c) in code.iter_mut().enumerate() {
                let outside = if i < n {
                    d.b[i] <= own.b[i]
                } else {
                    d.b[i] >= own.b[i]
                };
                // Code 0 is the leaf's own bound, which contains `own`.
                if !outside && *c > 0 {
                    *c -= 1;
                    done = false;
                }
            }
            if done {
                return code;
            }
        }
    }
}

/// The k-DOP that `code` gives inside `leaf`: one multiply-add per bound, in lanes.
#[inline(always)]
pub(crate) fn decode<const K: usize>(leaf: &Dop<K>, code: &[u8; K]) -> Dop<K> {
    let n = K / 2;
    let mut step = [0.0f32; K];
    for a in 0..n {
        let s = (leaf.b[n + a] - leaf.b[a]) * (1.0 / 255.0);
        step[a] = s;
        step[n + a] = -s;
    }
    let mut out = *leaf;
    for i in 0..K {
        out.b[i] = leaf.b[i] + f32::from(code[i]) * step[i];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::BuildOptions;
    use crate::mesh::Mesh;
    use crate::testing::lcg;
    use glam::DVec3;

    fn soup(n: usize, size: f64, seed: u64) -> Mesh {
        let mut s = seed;
        let p = |s: &mut u64| DVec3::new(lcg(s), lcg(s), lcg(s));
        let tris: Vec<[DVec3; 3]> = (0..n)
            .map(|i| {
                let c = p(&mut s) * 10.0 - 5.0;
                // Some degenerate triangles: a repeated corner, and a point.
                match i % 7 {
                    0 => [c, c, c + p(&mut s) * size],
                    1 => [c, c, c],
                    _ => [
                        c,
                        c + (p(&mut s) - 0.5) * size,
                        c + (p(&mut s) - 0.5) * size,
                    ],
                }
            })
            .collect();
        Mesh::from_triangles(&tris).unwrap()
    }

    /// Every decoded bound contains its triangle's corners (exactly, `Dop::contains_point`)
    /// and lies inside its leaf's bound; the codes are not all zero (they tighten).
    fn sound<const K: usize>() {
        for (seed, size, leaf) in [(1u64, 0.5, 4u32), (2, 3.0, 4), (3, 0.05, 16), (4, 1e-9, 4)] {
            for n in [50usize, 701] {
                let bvh = Bvh::<K>::build(
                    soup(n, size, seed ^ n as u64),
                    &BuildOptions {
                        leaf_size: leaf,
                        ..BuildOptions::ENVIRONMENT
                    },
                )
                .unwrap();
                let codes = encode(&bvh, |pos| own_bound(&bvh, pos));
                assert_eq!(codes.len(), bvh.tris.len());
                let mut tighter = 0;
                for node in bvh.nodes.iter().filter(|n| n.is_leaf()) {
                    let mut pos = node.first_triangle() as usize;
                    loop {
                        let d = decode(&node.dop, &codes[pos]);
                        for v in bvh.tri_at(pos) {
                            assert!(d.contains_point(v), "k = {K}: a corner outside its bound");
                        }
                        assert!(node.dop.contains(&d), "k = {K}: outside the leaf");
                        tighter += usize::from(d != node.dop);
                        if bvh.ids[pos] & END != 0 {
                            break;
                        }
                        pos += 1;
                    }
                }
                assert!(
                    tighter > n / 4,
                    "k = {K}: codes barely tighten ({tighter} of {n})"
                );
            }
        }
    }

    #[test]
    fn decoded_bounds_contain_their_triangles() {
        crate::testing::for_each_k!(sound);
    }

    /// Leaves of one triangle need no codes.
    #[test]
    fn single_triangle_leaves_have_no_codes() {
        let bvh = Bvh::<18>::build(
            soup(200, 0.5, 9),
            &BuildOptions {
                leaf_size: 1,
                ..BuildOptions::ENVIRONMENT
            },
        )
        .unwrap();
        assert!(encode(&bvh, |pos| own_bound(&bvh, pos)).is_empty());
    }
}
