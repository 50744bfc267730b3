//! The descent of two hierarchies as one loop with a control point (Klosowski et al. 1998,
//! §4.2, Algorithm 1, made iterative): node pairs known or assumed to overlap are popped
//! from a stack and expanded by a back-end (the k-DOP hierarchies, or the OBB trees), which
//! pushes the pairs of children worth visiting. Before each expansion a [`Control`] may let
//! it continue, prune the pair, or stop the descent, leaving the unvisited pairs on the
//! stack; a descent may also start from a saved set of pairs instead of the roots. Temporal
//! fronts (start where the last frame's descent ended) and time budgets (stop and answer
//! "maybe") are controls.

use super::workspace::PairStack;
use super::{NodePair, QueryStats};

/// What a [`Control`] says about the next node pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "temporal fronts (issue 20) will prune; tests do now"
    )
)]
pub(crate) enum Step {
    /// Expand the pair.
    Continue,
    /// Skip it (and everything below it).
    Prune,
    /// End the descent here; the pair and the rest of the stack stay unvisited.
    Stop,
}

/// The caller's hand in a descent.
pub(crate) trait Control {
    /// The node pairs to start from; empty for the roots.
    fn start(&self) -> &[NodePair] {
        &[]
    }
    /// Called before each node pair is expanded, with the work done so far.
    fn visit(&mut self, pair: NodePair, stats: &QueryStats) -> Step;
}

/// The plain descent: from the roots, every pair expanded.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Full;

impl Control for Full {
    #[inline(always)]
    fn visit(&mut self, _: NodePair, _: &QueryStats) -> Step {
        Step::Continue
    }
}

/// How a descent ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Every pair was visited.
    Done,
    /// A detect query found its contact.
    Found,
    /// The control stopped it; the unvisited pairs are on the stack.
    Stopped,
}

/// A hierarchy pair's side of the descent: its stack, and the expansion of one pair.
pub(crate) trait Expand {
    /// The stack of pairs to visit.
    fn stack(&mut self) -> &mut PairStack;
    /// The work done so far.
    fn stats(&self) -> &QueryStats;
    /// Whether a descent may stop before `pair` and start from it later. A pair that
    /// names this query's scratch is not: it and the pairs below it are visited without
    /// asking the control, so a stopped descent's stack holds none of them.
    fn resumable(&self, pair: NodePair) -> bool {
        let _ = pair;
        true
    }
    /// Expands `pair`: tests what lies below it and pushes the pairs to visit. Returns
    /// true when a detect query has found its contact.
    fn expand(&mut self, pair: NodePair) -> bool;
}

/// Runs the descent over what is on `side`'s stack until it empties, a detect query finds
/// its contact, or `control` stops it.
#[inline(always)]
pub(crate) fn descend(side: &mut impl Expand, control: &mut impl Control) -> Ended {
    while let Some(pair) = side.stack().pop() {
        if side.resumable(pair) {
            match control.visit(pair, side.stats()) {
                Step::Continue => {}
                Step::Prune => continue,
                Step::Stop => {
                    side.stack().push_if(pair, true);
                    return Ended::Stopped;
                }
            }
        }
        if side.expand(pair) {
            return Ended::Found;
        }
    }
    Ended::Done
}

/// A control that stops after a number of expansions: the tests' stand-in for a time
/// budget, and with [`Limit::from`] a resumption of a stopped descent.
#[cfg(test)]
#[derive(Clone, Debug, Default)]
pub(crate) struct Limit {
    pub(crate) left: usize,
    pub(crate) start: Vec<NodePair>,
}

#[cfg(test)]
impl Control for Limit {
    fn start(&self) -> &[NodePair] {
        &self.start
    }
    fn visit(&mut self, _: NodePair, _: &QueryStats) -> Step {
        if self.left == 0 {
            return Step::Stop;
        }
        self.left -= 1;
        Step::Continue
    }
}
