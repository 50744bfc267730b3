//! Insertion into the dynamic tree (Bittner, Hapala and Havran 2013, §3.1; Box2D v3's
//! `b2FindBestSibling`): the sibling is the node whose union with the new leaf adds the
//! least area to the tree. A node's cost is the area of its union with the leaf plus what its
//! ancestors grow by; its children cost at least the leaf's own area plus what it and its
//! ancestors grow by, so a depth-first branch and bound, the child of least growth first,
//! skips every subtree whose bound cannot beat the best found (an exhaustive search,
//! because Box2D v3's single greedy path leaves trees markedly costlier than a fresh
//! build's; `docs/benchmarks.md`, "Design choices"). Then a new parent joins the two,
//! and the path up is refitted and rotated (`rotate.rs`) until two nodes in a row are left
//! as they were: a rotation reads a node's children and grandchildren, so above those
//! two it would weigh the same bounds as before the insertion.

use super::{
    DynamicTree, NULL, TreeLeaf, check_bound, prefetch_children, prefetch_grandchildren, same_bits,
    search_area, search_union_area,
};
use crate::dop::Dop;
use crate::error::Result;

impl<const K: usize> DynamicTree<K> {
    /// Inserts a leaf bounding `dop` (enlarged by the tree's margin) that carries `item`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for an empty or non-finite `dop`; the tree is
    /// unchanged.
    pub fn insert(&mut self, dop: &Dop<K>, item: u32) -> Result<TreeLeaf> {
        check_bound(dop)?;
        let fat = self.fattened(dop);
        let i = self.allocate();
        let node = &mut self.nodes[i as usize];
        node.dop = fat;
        node.child = [NULL, item];
        node.height = 0;
        let generation = node.generation;
        self.attach(i);
        self.leaves += 1;
        Ok(TreeLeaf {
            index: i,
            generation,
        })
    }

    /// Inserts many leaves at once (`(bound, item)` each, enlarged as by
    /// [`DynamicTree::insert`]) and then rebuilds the whole tree top-down
    /// ([`DynamicTree::rebuild`]): a bulk load, far quicker than one insertion after
    /// another, and a tree as good as a fresh build's, where insertions one by one leave
    /// one whose queries visit more nodes (`docs/benchmarks.md`, "Design choices").
    /// Returns the new leaves' handles in order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for an empty or non-finite bound, in an
    /// [`crate::Error::Context`] naming its index; the tree is unchanged.
    pub fn insert_bulk(&mut self, leaves: &[(Dop<K>, u32)]) -> Result<Vec<TreeLeaf>> {
        for (i, (dop, _)) in leaves.iter().enumerate() {
            check_bound(dop).map_err(|e| e.context(format!("leaf {i} of the bulk insertion")))?;
        }
        let handles = leaves
            .iter()
            .map(|(dop, item)| {
                let fat = self.fattened(dop);
                let i = self.allocate();
                let node = &mut self.nodes[i as usize];
                node.dop = fat;
                node.child = [NULL, *item];
                node.height = 0;
                TreeLeaf {
                    index: i,
                    generation: node.generation,
                }
            })
            .collect();
        self.leaves += leaves.len() as u32;
        self.rebuild();
        Ok(handles)
    }

    /// Links leaf node `leaf` (its bound set) into the tree.
    pub(super) fn attach(&mut self, leaf: u32) {
        self.nodes[leaf as usize].parent = NULL;
        if self.root == NULL {
            self.root = leaf;
            return;
        }
        let dop = self.nodes[leaf as usize].dop;
        let sibling = self.best_sibling(&dop);
        let old_parent = self.nodes[sibling as usize].parent;
        let parent = self.allocate();
        {
            let s = &self.nodes[sibling as usize];
            let height = s.height + 1;
            let union = s.dop.merge(&dop);
            let p = &mut self.nodes[parent as usize];
            p.dop = union;
            p.parent = old_parent;
            p.child = [sibling, leaf];
            p.height = height;
        }
        self.nodes[sibling as usize].parent = parent;
        self.nodes[leaf as usize].parent = parent;
        self.regrand(parent);
        self.replace_child(old_parent, sibling, parent);
        let mut at = old_parent;
        // Nodes in a row left as they were (bound, height, children).
        let mut still = 0;
        if at != NULL {
            prefetch_grandchildren(&self.nodes, at);
        }
        while at != NULL {
            // The rotations read the grandchildren beside the path, which the search did
            // not: asked for a level ahead, their misses overlap this level's work.
            let up = self.nodes[at as usize].parent;
            if up != NULL {
                prefetch_grandchildren(&self.nodes, up);
            }
            let (dop, height) = (self.nodes[at as usize].dop, self.nodes[at as usize].height);
            self.refit(at);
            let rotated = self.rotate(at);
            let n = &self.nodes[at as usize];
            if !rotated && n.height == height && same_bits(&n.dop, &dop) {
                still += 1;
                if still == 2 {
                    break;
                }
            } else {
                still = 0;
            }
            at = n.parent;
        }
    }

    /// The node whose union with `dop` costs the tree least. Each node's own cost is
    /// reckoned when its parent is expanded, so leaves never enter the stack and an inner
    /// node enters it only when the bound below it can still beat the best. Depth first
    /// rather than best first: the search mostly follows one path, and a stack costs less
    /// than a heap's ordering (`docs/benchmarks.md`, "Design choices").
    pub(super) fn best_sibling(&mut self, dop: &Dop<K>) -> u32 {
        // Growths are kept non-negative (rounding could take one below zero, and huge
        // bounds make it NaN, which `max` turns into zero), so a node's bound stays at least
        // the leaf's own area.
        let leaf_area = search_area(dop);
        let nodes = &self.nodes[..];
        let root = &nodes[self.root as usize];
        let mut best = self.root;
        let mut best_cost = search_union_area(&root.dop, dop);
        let mut stack = std::mem::take(&mut self.search);
        stack.clear();
        let below_root = (best_cost - search_area(&root.dop)).max(0.0);
        // The node to open next: the child of least growth of the last one opened, taken
        // without a trip through the stack; the other child waits there.
        let mut next = None;
        if !root.is_leaf() && leaf_area + below_root < best_cost {
            prefetch_children(nodes, self.root);
            prefetch_grandchildren(nodes, self.root);
            next = Some((below_root, self.root));
        }
        while let Some((inherited, i)) = next.take().or_else(|| stack.pop()) {
            if leaf_area + inherited >= best_cost {
                continue;
            }
            let mut open = [(f32::INFINITY, NULL); 2];
            for (slot, c) in nodes[i as usize].child.into_iter().enumerate() {
                let node = &nodes[c as usize];
                let direct = search_union_area(&node.dop, dop);
                let cost = direct + inherited;
                if cost < best_cost {
                    best = c;
                    best_cost = cost;
                }
                if !node.is_leaf() {
                    let below = (inherited + direct - search_area(&node.dop)).max(0.0);
                    if leaf_area + below < best_cost {
                        // Its children were asked for with this node's grandchildren.
                        prefetch_grandchildren(nodes, c);
                        open[slot] = (below, c);
                    }
                }
            }
            if open[1].0 < open[0].0 {
                open.swap(0, 1);
            }
            if open[1].1 != NULL {
                stack.push(open[1]);
            }
            if open[0].1 != NULL {
                next = Some(open[0]);
            }
        }
        self.search = stack;
        best
    }
}
