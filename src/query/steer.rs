//! Which side of a pair flies, learned from the pair's own queries. Between two
//! hierarchies each in its own frame (Klosowski et al. 1998, §6.1, "Multiple flying
//! objects"), either may be re-bounded under the relative pose: the answer is the same, the
//! work is not. The size rule ([`super::swaps`]) re-bounds the smaller side unless it is
//! more than four times larger, which is right on most pairs of real meshes and wrong on
//! some (a terrain flying over a ball: its few nodes near the ball re-bound tightly, where
//! the ball's many small nodes re-bound into the terrain's triangles; `docs/benchmarks.md`,
//! "Cross-matrix"). No cheap reading of the two hierarchies tells which, so a state that
//! keeps querying one pair now and then also runs the other side on the same pose, for its
//! work alone, and keeps the side whose descents cost less.
//!
//! The trials are spaced out (at the first descent, then after 2, 4, … more, then every
//! [`MAX_GAP`]th), counted in the paper's cost terms rather than timed, so the choice is
//! the same run to run and on any thread count, and each stops once it has cost a quarter
//! more than the query it is weighed against ([`Budget`]): a trial costs at most that. A
//! witness answer (detect) is no descent and counts for nothing. The choice changes only
//! when the other side has cost at least a fifth less over [`MIN_TRIALS`] trials or more;
//! after a change the count starts anew.

use super::control::Step;
use super::{Control, NodePair, QueryOptions, QueryState, QueryStats};
use crate::error::Result;

/// Descents before the first trial.
const FIRST_GAP: u32 = 1;
/// The most descents between two trials.
const MAX_GAP: u32 = 1024;
/// Trials before the side may change.
const MIN_TRIALS: u32 = 3;
/// Trials after which both sums are halved, so that the choice follows poses that drift
/// into another regime.
const HALVE_AT: u32 = 16;

/// The learned side of the pair a state last queried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Steer {
    /// The two sides' object ids (0: none yet).
    pair: (u64, u64),
    /// Whether the side that flies is the other one than the size rule's.
    flipped: bool,
    /// Descents since the last trial, and how many the next trial waits for.
    descents: u32,
    gap: u32,
    /// Trials since the last change, and the costs of both sides over them.
    trials: u32,
    chosen: u64,
    other: u64,
    /// Tests only: the next trial stops at its first pair (an empty answer of its own).
    #[cfg(test)]
    tight: bool,
}

impl Steer {
    /// Whether the pair `(a, b)` flies the other side than the size rule says: its own
    /// record if the state's last pair was this one, else a fresh record (the rule's side).
    #[inline]
    pub(crate) fn flipped(&mut self, pair: (u64, u64)) -> bool {
        if self.pair != pair {
            *self = Steer {
                pair,
                gap: FIRST_GAP,
                ..Steer::default()
            };
        }
        self.flipped
    }

    /// Whether the last pair flies the other side than the size rule's.
    pub(crate) fn is_flipped(&self) -> bool {
        self.flipped
    }

    /// Counts a query whose work was `stats`; true when a trial of the other side is due
    /// now (the query descended, and enough descents passed since the last trial).
    #[inline]
    pub(crate) fn due(&mut self, stats: &QueryStats) -> bool {
        if stats.witness_hits != 0 {
            return false;
        }
        self.descents += 1;
        self.descents >= self.gap
    }

    /// The control of a trial weighed against a query whose work was `chosen`.
    pub(crate) fn budget(&self, chosen: &Side) -> Budget {
        #[cfg(test)]
        if self.tight {
            return Budget { limit: 0 };
        }
        Budget::against(chosen)
    }

    /// Tests only: a trial is due at the pair's next descent, stopped at its first pair
    /// when `tight`.
    #[cfg(test)]
    pub(crate) fn force_trial(&mut self, pair: (u64, u64), tight: bool) {
        self.flipped(pair);
        (self.descents, self.gap, self.tight) = (0, 1, tight);
    }

    /// Records a trial: the chosen side's query and the other side's on the same pose.
    /// Changes the side when the other has cost enough less.
    pub(crate) fn record(&mut self, chosen: &Side, other: &Side) {
        self.descents = 0;
        self.gap = (self.gap * 2).min(MAX_GAP);
        self.trials += 1;
        self.chosen += chosen.cost();
        self.other += other.cost();
        if self.trials >= MIN_TRIALS && self.other * 5 < self.chosen * 4 {
            self.flipped = !self.flipped;
            (self.trials, self.chosen, self.other, self.gap) = (0, 0, 0, FIRST_GAP);
        } else if self.trials >= HALVE_AT {
            (self.trials, self.chosen, self.other) = (MIN_TRIALS, self.chosen / 2, self.other / 2);
        }
    }
}

/// The control of a trial: it stops once its work passes a quarter more than the query
/// it is weighed against, which it then cannot beat.
pub(crate) struct Budget {
    limit: u64,
}

impl Budget {
    /// The budget of a trial against the query `chosen`.
    fn against(chosen: &Side) -> Self {
        Budget {
            limit: chosen.cost() * 5 / 4 + 16,
        }
    }
}

impl Control for Budget {
    #[inline(always)]
    fn visit(&mut self, _: NodePair, stats: &QueryStats) -> Step {
        // A trial of a twinned side costs more per triangle pair; stopping on the plain
        // terms lets it run a little longer, never shorter, than it can win.
        if stats.work() > self.limit {
            Step::Stop
        } else {
            Step::Continue
        }
    }
}

/// One side's query of a trial: its work, and whether its static side was posed (a twin
/// frame: the triangle tests then place both triangles, `descent.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Side {
    pub(crate) stats: QueryStats,
    pub(crate) twinned: bool,
}

impl Side {
    /// Its work as the trials weigh it: [`QueryStats::work`], each triangle pair counted
    /// twice when both triangles are placed.
    fn cost(&self) -> u64 {
        let second = if self.twinned {
            QueryStats::NP_WEIGHT * self.stats.np
        } else {
            0
        };
        self.stats.work() + second
    }
}

/// Whether a trial of a side that is `twinned` may be weighed against the chosen side
/// (`chosen_twinned`): never a posed static side against one at the identity, whose
/// triangle tests place one triangle and not two, a difference the cost terms do not see
/// well enough (`docs/benchmarks.md`, "Design choices").
fn may_try(twinned: bool, chosen_twinned: bool) -> bool {
    chosen_twinned || !twinned
}

impl<const K: usize> QueryState<K> {
    /// The stats a steered query reports, the query being `chosen` (its contacts in the
    /// workspace): when a trial of the pair's other side (posed if `other_twinned`) is
    /// allowed and due, `run` queries that side on the same pose under the trial's options
    /// and control, and returns its work and whether it ran that side at all (a pose without
    /// a usable inverse may leave only the chosen one). The trial's contacts go to the
    /// spare list, so the answer's stay; the pair's witness, which would name the other
    /// side's leaves, is forgotten; the trial's work is added to the stats.
    pub(crate) fn weigh_other_side(
        &mut self,
        options: &QueryOptions,
        chosen: Side,
        other_twinned: bool,
        run: impl FnOnce(&mut Self, &QueryOptions, &mut Budget) -> Result<(QueryStats, bool)>,
    ) -> Result<QueryStats> {
        if !(may_try(other_twinned, chosen.twinned) && self.steer.due(&chosen.stats)) {
            return Ok(chosen.stats);
        }
        let trial = QueryOptions {
            witness: false,
            ..*options
        };
        let mut budget = self.steer.budget(&chosen);
        std::mem::swap(&mut self.work.raw, &mut self.work.spare_raw);
        let tried = run(self, &trial, &mut budget);
        std::mem::swap(&mut self.work.raw, &mut self.work.spare_raw);
        self.pair.clear();
        let (other, ran) = tried?;
        if ran {
            let side = Side {
                stats: other,
                twinned: other_twinned,
            };
            self.steer.record(&chosen, &side);
        }
        let s = chosen.stats;
        Ok(QueryStats {
            nv: s.nv + other.nv,
            np: s.np + other.np,
            nu: s.nu + other.nu,
            climb_steps: s.climb_steps + other.climb_steps,
            ..s
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(nv: u64) -> QueryStats {
        QueryStats {
            nv,
            ..QueryStats::default()
        }
    }

    fn work(nv: u64) -> Side {
        Side {
            stats: stats(nv),
            twinned: false,
        }
    }

    /// The trials come at the first descent, then after 2, 4, … more, then every 1024th;
    /// witness answers do not count.
    #[test]
    fn trials_back_off_to_every_1024th_descent() {
        let mut s = Steer::default();
        assert!(!s.flipped((1, 2)));
        let witness = QueryStats {
            witness_hits: 1,
            ..QueryStats::default()
        };
        let mut at = Vec::new();
        for i in 1..=6000 {
            assert!(!s.due(&witness), "a witness answer is no descent");
            if s.due(&stats(10)) {
                at.push(i);
                // The other side costs the same: no change, ever.
                s.record(&work(10), &work(10));
            }
        }
        assert_eq!(
            &at[..12],
            [1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 3071]
        );
        assert!(
            at.windows(2).skip(10).all(|w| w[1] - w[0] == 1024),
            "{at:?}"
        );
        assert!(!s.flipped((1, 2)));
    }

    /// A side a fifth cheaper wins after three trials; one only a tenth cheaper never does;
    /// after a change, the same evidence is needed to change back.
    #[test]
    fn the_side_changes_on_enough_evidence_only() {
        let mut s = Steer::default();
        s.flipped((1, 2));
        for _ in 0..40 {
            s.record(&work(100), &work(90));
            assert!(!s.flipped((1, 2)), "a tenth less is within the hysteresis");
        }
        let mut s = Steer::default();
        s.flipped((1, 2));
        s.record(&work(100), &work(70));
        s.record(&work(100), &work(70));
        assert!(!s.flipped((1, 2)), "not before three trials");
        s.record(&work(100), &work(70));
        assert!(s.flipped((1, 2)), "three trials a fifth cheaper or more");
        // Now the flipped side is the chosen one, and the rule's side must win anew.
        s.record(&work(70), &work(100));
        s.record(&work(70), &work(100));
        s.record(&work(70), &work(100));
        assert!(s.flipped((1, 2)));
        let mut back = s;
        for _ in 0..3 {
            back.record(&work(100), &work(20));
        }
        assert!(
            !back.flipped((1, 2)),
            "far cheaper again: back to the rule's side"
        );
    }

    /// Another pair starts from the size rule's side; a triangle and a re-bound weigh more
    /// than an overlap test.
    #[test]
    fn another_pair_starts_afresh_and_costs_weigh_the_terms() {
        let mut s = Steer::default();
        s.flipped((1, 2));
        for _ in 0..3 {
            s.record(&work(100), &work(10));
        }
        assert!(s.flipped((1, 2)));
        assert!(!s.flipped((1, 3)), "a new pair is the rule's");
        assert!(!s.flipped((1, 2)), "and the old one's record is gone");
        let np = QueryStats {
            np: 1,
            ..QueryStats::default()
        };
        let nu = QueryStats {
            nu: 1,
            ..QueryStats::default()
        };
        assert!(np.work() > nu.work() && nu.work() > stats(1).work());
        let posed = Side {
            stats: np,
            twinned: true,
        };
        assert_eq!(posed.cost(), 2 * np.work(), "a placed pair counts twice");
        // A posed side is tried only against a posed chosen side.
        assert!(may_try(false, false) && may_try(false, true) && may_try(true, true));
        assert!(!may_try(true, false));
    }

    /// A trial stops once its work passes a quarter more than the query it is weighed
    /// against (plus a little, so that a tiny query's trial is not cut at its root).
    #[test]
    fn a_trial_stops_past_its_budget() {
        let mut b = Budget::against(&work(100));
        assert_eq!(b.visit([0; 3], &stats(129)), Step::Continue);
        assert_eq!(b.visit([0; 3], &stats(130)), Step::Stop);
        let mut tiny = Budget::against(&work(0));
        assert_eq!(tiny.visit([0; 3], &stats(4)), Step::Continue);
    }
}
