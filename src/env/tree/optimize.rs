//! Incremental optimisation of the dynamic tree (Bittner, Hapala and Havran 2013, §3:
//! insertion-based optimisation): a bounded number of leaves per call are taken out and
//! inserted again by the same cost-driven search as new ones, so the tree recovers from a
//! run of unlucky edits a little each frame, never in one stall. Leaves are taken in pool
//! order from where the last call stopped, so every leaf's turn comes.
//!
//! [`DynamicTree::rebuild`] is the full alternative: a fresh top-down build over the same
//! leaves, for a tree that has decayed far or after a bulk load.

use super::{DynamicTree, FREE, NULL};

impl<const K: usize> DynamicTree<K> {
    /// Takes out and inserts again up to `budget` leaves (their fat bounds unchanged, their
    /// handles still valid); returns how many it moved. The work is bounded by the budget:
    /// each re-insertion costs what an insertion does.
    pub fn optimize(&mut self, budget: u32) -> u32 {
        let n = self.nodes.len() as u32;
        if self.leaves < 3 {
            return 0;
        }
        let mut done = 0;
        // Every node is looked at once at most, so a pool of few leaves ends the call.
        for _ in 0..n {
            if done == budget {
                break;
            }
            let i = self.optimize_at % n;
            self.optimize_at = (i + 1) % n;
            let node = &self.nodes[i as usize];
            if node.height == 0 && self.root != i {
                self.detach(i);
                self.attach(i);
                done += 1;
            }
        }
        done
    }

    /// Puts every internal node on the free list.
    fn release_inner(&mut self) {
        for i in 0..self.nodes.len() as u32 {
            let height = self.nodes[i as usize].height;
            if height != FREE && height != 0 {
                self.release(i);
            }
        }
    }

    /// Replaces the internal nodes by a fresh top-down build over the leaves' fat bounds
    /// (the surface-area rule of [`crate::BuildOptions`]). Leaves keep their nodes, so
    /// every [`super::TreeLeaf`] stays valid.
    pub fn rebuild(&mut self) {
        if self.leaves < 2 {
            // Nothing inner to build: an empty tree, or a lone leaf, which is the root (a
            // bulk load of one leaf arrives here with the leaf not yet linked).
            self.release_inner();
            self.root = (0..self.nodes.len() as u32)
                .find(|&i| self.nodes[i as usize].is_leaf())
                .unwrap_or(NULL);
            if self.root != NULL {
                self.nodes[self.root as usize].parent = NULL;
            }
            return;
        }
        let (leaves, built, order) = self.fresh_build();
        self.release_inner();
        // Pool node of each built node: a leaf's own node, else a fresh internal one.
        let map: Vec<u32> = built
            .iter()
            .map(|b| {
                if b.is_leaf() {
                    leaves[order[b.first_triangle() as usize] as usize]
                } else {
                    self.allocate()
                }
            })
            .collect();
        for (j, b) in built.iter().enumerate() {
            if !b.is_leaf() {
                let c = b.first_child() as usize;
                self.nodes[map[j] as usize].child = [map[c], map[c + 1]];
                self.nodes[map[c] as usize].parent = map[j];
                self.nodes[map[c + 1] as usize].parent = map[j];
            }
        }
        // Children come after their parent in the build: refit from the back.
        for (j, b) in built.iter().enumerate().rev() {
            if !b.is_leaf() {
                self.refit(map[j]);
                self.regrand(map[j]);
            }
        }
        self.root = map[0];
        self.nodes[self.root as usize].parent = NULL;
    }
}
