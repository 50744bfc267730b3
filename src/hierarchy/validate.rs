//! Structural and geometric validation of a hierarchy and its leaf codes: used by tests,
//! and by the loader on every file, so that a damaged or hostile file can never make a
//! query loop, index out of bounds or miss a contact.

use super::{Bvh, END};
use crate::dop::Dop;
use rayon::prelude::*;

impl<const K: usize> Bvh<K> {
    /// Checks every invariant; `Err` names the first one broken.
    ///
    /// - children come after their parent, in range, and every node but the root is the
    ///   child of exactly one node (so the nodes form one tree, without cycles);
    /// - leaves cover every triangle position exactly once, each leaf a run ending in the
    ///   end mark;
    /// - triangle vertex indices are in range and original ids form a permutation;
    /// - every leaf's k-DOP contains its triangles' corners (exactly), and every internal
    ///   k-DOP contains its children's.
    ///
    /// # Errors
    /// A static description of the first broken invariant.
    pub fn validate(&self) -> Result<(), &'static str> {
        self.check(None)
    }

    /// [`Bvh::validate`], and also that `codes` ([`super::codes`]) are present exactly when
    /// some leaf holds several triangles, one per triangle position, and that each decodes
    /// to a k-DOP containing its triangle's corners (so a query that refines a leaf through
    /// them cannot miss a contact).
    ///
    /// # Errors
    /// A static description of the first broken invariant.
    pub(crate) fn validate_with_codes(&self, codes: &[[u8; K]]) -> Result<(), &'static str> {
        self.check(Some(codes))
    }

    /// The checks of [`Bvh::validate`], and of `codes` when given.
    fn check(&self, codes: Option<&[[u8; K]]>) -> Result<(), &'static str> {
        let n = self.nodes.len();
        let t = self.tris.len();
        if n == 0 || t == 0 {
            return Err("empty hierarchy");
        }
        if self.ids.len() != t {
            return Err("id count differs from triangle count");
        }
        if n > 2 * t {
            return Err("more nodes than a binary tree over the triangles can have");
        }
        let mut parent_seen = vec![false; n];
        let mut covered = vec![false; t];
        for (i, node) in self.nodes.iter().enumerate() {
            if node.dop.b.iter().any(|v| v.is_nan()) {
                return Err("NaN bound");
            }
            if node.is_leaf() {
                let mut pos = node.first_triangle() as usize;
                loop {
                    if pos >= t {
                        return Err("leaf runs past the last triangle");
                    }
                    if std::mem::replace(&mut covered[pos], true) {
                        return Err("triangle in two leaves");
                    }
                    let tri = self.tris[pos];
                    if tri.iter().any(|&v| v as usize >= self.vertices.len()) {
                        return Err("vertex index out of range");
                    }
                    if self.ids[pos] & END != 0 {
                        break;
                    }
                    pos += 1;
                }
            } else {
                let c = node.first_child() as usize;
                if c <= i || c + 1 >= n {
                    return Err("child index not after parent or out of range");
                }
                for k in [c, c + 1] {
                    if std::mem::replace(&mut parent_seen[k], true) {
                        return Err("node has two parents");
                    }
                }
            }
        }
        if parent_seen[0] {
            return Err("root has a parent");
        }
        if parent_seen.iter().skip(1).any(|&s| !s) {
            return Err("unreachable node");
        }
        if covered.iter().any(|&c| !c) {
            return Err("triangle in no leaf");
        }
        let mut seen = vec![false; t];
        for &id in &self.ids {
            let id = (id & !END) as usize;
            if id >= t || std::mem::replace(&mut seen[id], true) {
                return Err("original triangle ids are not a permutation");
            }
        }
        if let Some(codes) = codes
            && codes.len()
                != if super::codes::needs_codes(self) {
                    t
                } else {
                    0
                }
        {
            return Err("leaf codes missing or of the wrong count");
        }
        let codes = codes.unwrap_or(&[]);
        for v in &self.vertices {
            if !v.is_finite() || v.abs().max_element() > crate::MAX_COORDINATE {
                return Err("vertex coordinate out of range");
            }
        }
        // The structure is sound; now the geometry, node by node in parallel. A corner is
        // checked through the k-DOP the build gives each vertex (rounded out, so it contains
        // the vertex): one comparison of bounds instead of K / 2 exact projections, and for
        // every file kdop writes the leaf bound is the merge of exactly these. Only when
        // that fails is the corner itself tested, exactly.
        let vdops: Vec<Dop<K>> = self
            .vertices
            .par_iter()
            .with_min_len(4096)
            .map(|&p| Dop::<K>::from_point_quick(p))
            .collect();
        let broken = self
            .nodes
            .par_iter()
            .with_min_len(1024)
            .find_map_first(|node| {
                if node.is_leaf() {
                    let mut pos = node.first_triangle() as usize;
                    loop {
                        let inside = |dop: &Dop<K>| {
                            self.tris[pos].iter().all(|&v| {
                                dop.contains(&vdops[v as usize])
                                    || dop.contains_point(self.vertices[v as usize])
                            })
                        };
                        if !inside(&node.dop) {
                            return Some("leaf bound does not contain its triangle");
                        }
                        if let Some(code) = codes.get(pos)
                            && !inside(&super::codes::decode(&node.dop, code))
                        {
                            return Some("leaf code does not contain its triangle");
                        }
                        if self.ids[pos] & END != 0 {
                            return None;
                        }
                        pos += 1;
                    }
                }
                let c = node.first_child() as usize;
                let ok = node.dop.contains(&self.nodes[c].dop)
                    && node.dop.contains(&self.nodes[c + 1].dop);
                (!ok).then_some("bound does not contain a child's bound")
            });
        match broken {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}
