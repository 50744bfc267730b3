//! Removal from the dynamic tree (Box2D's `b2RemoveLeaf`): the leaf's sibling takes its
//! parent's place, the parent is freed, and the path above is refitted as far as a node
//! changes.

use super::{DynamicTree, NULL, TreeLeaf, same_bits};
use crate::error::Result;

impl<const K: usize> DynamicTree<K> {
    /// Removes `leaf`; its handle is stale afterwards. Returns its item.
    ///
    /// # Errors
    /// [`crate::Error::StaleHandle`] for a leaf already removed (or not of this tree); the
    /// tree is unchanged.
    pub fn remove(&mut self, leaf: TreeLeaf) -> Result<u32> {
        let i = self.check(leaf)? as u32;
        let item = self.nodes[i as usize].child[1];
        self.detach(i);
        self.release(i);
        self.leaves -= 1;
        Ok(item)
    }

    /// Unlinks leaf node `leaf` from the tree, keeping the node.
    pub(super) fn detach(&mut self, leaf: u32) {
        if self.root == leaf {
            self.root = NULL;
            return;
        }
        let parent = self.nodes[leaf as usize].parent;
        let grand = self.nodes[parent as usize].parent;
        let c = self.nodes[parent as usize].child;
        let sibling = if c[0] == leaf { c[1] } else { c[0] };
        self.replace_child(grand, parent, sibling);
        self.release(parent);
        // Each node is its children's union, so once a refit leaves a node as it was, every
        // node above is as it was too.
        let mut at = grand;
        while at != NULL {
            let (dop, height) = (self.nodes[at as usize].dop, self.nodes[at as usize].height);
            self.refit(at);
            let n = &self.nodes[at as usize];
            if n.height == height && same_bits(&n.dop, &dop) {
                break;
            }
            at = n.parent;
        }
    }
}
