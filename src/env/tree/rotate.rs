//! Tree rotations (Box2D v3's `b2RotateNodes`, after Kopta et al. 2012): at a node with
//! children B and C, swap one child with a grandchild under the other when that shrinks the
//! area of the node the grandchild leaves. Insertion applies it at each node on the way up
//! where something below changed, so a tree built by insertions keeps close to a top-down
//! build's cost.

use super::{DynamicTree, search_area, search_union_area};

impl<const K: usize> DynamicTree<K> {
    /// The best area-reducing swap at internal node `a`, if any, applied and refitted;
    /// whether there was one.
    pub(super) fn rotate(&mut self, a: u32) -> bool {
        let [b, c] = self.nodes[a as usize].child;
        // Candidates: (child kept in place, its sibling's child moving up, the other child
        // moving down), as (x, y): swap x with y, where y is a grandchild under the other.
        let mut best: Option<(f32, u32, u32)> = None;
        for (moving_down, parent_of_up) in [(b, c), (c, b)] {
            let p = &self.nodes[parent_of_up as usize];
            if p.is_leaf() {
                continue;
            }
            let [f, g] = p.child;
            let before = search_area(&p.dop);
            for (up, stays) in [(f, g), (g, f)] {
                let after = search_union_area(
                    &self.nodes[moving_down as usize].dop,
                    &self.nodes[stays as usize].dop,
                );
                let gain = before - after;
                if gain > 0.0 && best.is_none_or(|(g0, _, _)| gain > g0) {
                    best = Some((gain, moving_down, up));
                }
            }
        }
        if let Some((_, down, up)) = best {
            self.swap(a, down, up);
            return true;
        }
        false
    }

    /// Swaps `down` (a child of `a`) with `up` (a child of `a`'s other child).
    fn swap(&mut self, a: u32, down: u32, up: u32) {
        let mid = self.nodes[up as usize].parent;
        self.replace_child(a, down, up);
        self.replace_child(mid, up, down);
        self.refit(mid);
        self.refit(a);
    }
}
