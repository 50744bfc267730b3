//! Every invariant of the dynamic tree, checked in full: links both ways, heights, each
//! internal node's bound the union of its children's and its grandchildren links, every
//! node either reachable from the root or on the free list, and the leaf count. Tests run
//! it after every edit.

use super::{DynamicTree, FREE, NULL, TreeNode};
use crate::error::{Error, FormatError, Result};

impl<const K: usize> DynamicTree<K> {
    /// Checks the tree's invariants.
    ///
    /// # Errors
    /// [`FormatError::Corrupt`] naming the first broken invariant.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &'static str| Err(Error::Format(FormatError::Corrupt(what)));
        let n = self.nodes.len();
        let mut seen = vec![false; n];
        let mut leaves = 0u32;
        if self.root != NULL {
            if self.root as usize >= n || self.nodes[self.root as usize].parent != NULL {
                return bad("tree root");
            }
            let mut stack = vec![self.root];
            while let Some(i) = stack.pop() {
                let iu = i as usize;
                if iu >= n || seen[iu] {
                    return bad("tree node reached twice or out of range");
                }
                seen[iu] = true;
                let node = &self.nodes[iu];
                if node.height == FREE {
                    return bad("free node in the tree");
                }
                if node.is_leaf() {
                    leaves += 1;
                    if node.child[0] != NULL || node.dop.is_empty() {
                        return bad("tree leaf");
                    }
                    continue;
                }
                let [a, b] = node.child;
                if a as usize >= n || b as usize >= n || a == b {
                    return bad("tree children");
                }
                let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
                if na.parent != i || nb.parent != i {
                    return bad("tree parent link");
                }
                if node.height != 1 + na.height.max(nb.height) {
                    return bad("tree height");
                }
                if node.dop != na.dop.merge(&nb.dop) {
                    return bad("tree bound is not its children's union");
                }
                let below = |c: &TreeNode<K>| if c.is_leaf() { [NULL; 2] } else { c.child };
                let ([w, x], [y, z]) = (below(na), below(nb));
                if node.grand != [w, x, y, z] {
                    return bad("tree grandchildren");
                }
                stack.extend([a, b]);
            }
        }
        if leaves != self.leaves {
            return bad("tree leaf count");
        }
        let mut f = self.free;
        while f != NULL {
            let fu = f as usize;
            if fu >= n || seen[fu] || self.nodes[fu].height != FREE {
                return bad("tree free list");
            }
            seen[fu] = true;
            f = self.nodes[fu].parent;
        }
        if seen.iter().any(|&s| !s) {
            return bad("tree node neither in the tree nor free");
        }
        Ok(())
    }
}
