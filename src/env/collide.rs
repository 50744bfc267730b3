//! A flying object against an environment (Klosowski et al. 1998, §4.2): the descent of
//! `crate::query` with the environment as its static side, or, for a single part much
//! smaller than the object, with the object as the static side and the part flying; which
//! of those two a state's queries of one pair take is learned from their work
//! (`crate::query::steer`).

use super::Environment;
use crate::dop::Wide;
use crate::error::Result;
use crate::pose::Pose;
use crate::query::{
    Contact, Control, Ended, Full, Outcome, QueryOptions, QueryState, QueryStats, Side, Statics,
    Twin,
};
use crate::tumble::FlyingObject;

impl<const K: usize> Environment<K> {
    /// Checks `object` placed by `pose` against the environment.
    ///
    /// Answers are exact for the environment's triangles as stored (world coordinates) and
    /// the object's placed by [`Pose::transform_point`]. When the environment is one part
    /// whose box is more than four times smaller than the object's (both in their own
    /// frames, the rule of [`crate::Reference::of`]), the descent runs in the
    /// object's frame with the part re-bounded, not the large object; the answer is the same.
    /// For such a pair, a state that keeps querying it also tries the object re-bounded
    /// now and then (at its first descent, then after 2, 4, … more, then every 1024th), for the
    /// work alone and stopped once it costs a quarter more than the query, and goes on with
    /// that side when its descents cost a fifth less; the outcome's stats include the
    /// trials' work. Detect mode may then find another contact than the
    /// size rule's side would (every contact found is one); the choice depends only on the
    /// state's queries so far.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for a negative or non-finite epsilon.
    ///
    /// # Performance
    /// No allocation once `state` has warmed up (its buffers grow to the largest report).
    /// Nodes of the flying hierarchy are re-bounded at most once per pose; repeating a
    /// query with the same pose reuses them.
    pub fn collide<'s>(
        &self,
        object: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        state: &'s mut QueryState<K>,
    ) -> Result<Outcome<'s>> {
        zone!("Environment::collide");
        let wide = Wide::detect();
        let Some(part) = self.flying_for(object) else {
            // The witness inlined here, where most detect queries of a moving object end.
            let statics = self.statics();
            let (found, tried) =
                statics.witness(object, pose, options, &mut state.parts(), None)?;
            if found {
                return Ok(self.finish(state, tried));
            }
            let (mut stats, _) =
                statics.run(object, pose, options, state.parts(), wide, None, &mut Full)?;
            stats.np += tried.np;
            return Ok(self.finish(state, stats));
        };
        let flipped = state.steer.flipped((object.id, part.id));
        let (stats, swapped, _) = self.query_side(
            object, part, pose, options, state, wide, !flipped, &mut Full,
        )?;
        // The part flying sees the object in its posed frame; the environment's side is
        // at the identity.
        let posed = Twin::posed(pose);
        let chosen = Side {
            stats,
            twinned: swapped && posed,
        };
        let stats = state.weigh_other_side(options, chosen, !swapped && posed, |state, o, c| {
            let (other, other_swapped, _) =
                self.query_side(object, part, pose, o, state, wide, !swapped, c)?;
            Ok((other, other_swapped != swapped))
        })?;
        Ok(self.finish(state, stats))
    }

    /// [`Environment::collide`] under `control`, with the k-DOP tests of the descent in
    /// AVX form when `wide` is given and k is 18 or 26 (tests run both forms and compare).
    /// Leaves the raw contacts in the state.
    #[cfg_attr(
        not(test),
        allow(
            dead_code,
            reason = "the size rule's side under any control: tests now, fronts and budgets next"
        )
    )]
    pub(crate) fn query(
        &self,
        object: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        state: &mut QueryState<K>,
        wide: Option<Wide>,
        control: &mut impl Control,
    ) -> Result<(QueryStats, Ended)> {
        match self.flying_for(object) {
            Some(part) => self
                .query_side(object, part, pose, options, state, wide, true, control)
                .map(|(stats, _, ended)| (stats, ended)),
            None => self
                .statics()
                .run(object, pose, options, state.parts(), wide, None, control),
        }
    }

    /// The query with `part` (the one part as a flying object) flying in the object's frame
    /// when `swap` is set and `pose` has a usable inverse, else with the object flying.
    /// Returns the stats, whether the part flew, and how the descent ended; the raw
    /// contacts are `[0, part triangle, object triangle]` either way.
    #[allow(clippy::too_many_arguments)]
    fn query_side(
        &self,
        object: &FlyingObject<K>,
        part: &FlyingObject<K>,
        pose: &Pose,
        options: &QueryOptions,
        state: &mut QueryState<K>,
        wide: Option<Wide>,
        swap: bool,
        control: &mut impl Control,
    ) -> Result<(QueryStats, bool, Ended)> {
        // The object is the static side and the part flies in its frame; answers stay
        // exact in world coordinates. Without a usable inverse of `pose` the object
        // cannot be seen from, and the environment stays the static side.
        let twin = swap
            .then(|| Twin::new(pose, &Pose::IDENTITY, object.magnitude, part))
            .flatten();
        if let Some((twin, inverse)) = twin {
            let q = state.parts();
            let (stats, ended) =
                object
                    .statics()
                    .run(part, &inverse, options, q, wide, twin.as_ref(), control)?;
            // [0, object triangle, part triangle] as the environment's contacts are.
            state.work.raw.iter_mut().for_each(|r| r.swap(1, 2));
            return Ok((stats, true, ended));
        }
        let (stats, ended) =
            self.statics()
                .run(object, pose, options, state.parts(), wide, None, control)?;
        Ok((stats, false, ended))
    }

    /// The environment as the static side of a descent.
    pub(crate) fn statics(&self) -> Statics<'_, K> {
        Statics {
            top: &self.top,
            parts: &self.parts,
        }
    }

    /// Sorts the raw contacts of a query into the state's contact list and answers.
    #[inline(always)]
    pub(crate) fn finish<'s>(
        &self,
        state: &'s mut QueryState<K>,
        mut stats: QueryStats,
    ) -> Outcome<'s> {
        let work = &mut state.work;
        work.contacts.clear();
        let ids = &self.ids;
        let contact = |[p, e, o]: [u32; 3]| Contact {
            part: ids[p as usize],
            env_triangle: e,
            object_triangle: o,
        };
        match work.raw[..] {
            [] => {}
            // One contact: every detect query that finds one.
            [w] => work.contacts.push(contact(w)),
            [[first, ..], ..] if work.raw.iter().all(|r| r[0] == first) => {
                // Most queries meet one part: its contacts sort as `u64` keys, which
                // compare as one integer where `[u32; 3]` compares through slices.
                work.keys.clear();
                work.keys.extend(
                    work.raw
                        .iter()
                        .map(|&[_, e, o]| (u64::from(e) << 32) | u64::from(o)),
                );
                work.keys.sort_unstable();
                work.contacts.extend(
                    work.keys
                        .iter()
                        .map(|&k| contact([first, (k >> 32) as u32, k as u32])),
                );
            }
            _ => {
                work.raw.sort_unstable_by_key(|&[p, e, o]| {
                    (u128::from(p) << 64) | (u128::from(e) << 32) | u128::from(o)
                });
                work.contacts.extend(work.raw.iter().map(|&r| contact(r)));
            }
        }
        stats.contacts = work.contacts.len() as u64;
        Outcome {
            collides: !work.contacts.is_empty(),
            contacts: &work.contacts,
            stats,
        }
    }
}
