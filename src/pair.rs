//! Object against object: two flying objects, each with its hierarchy in its own frame
//! (Klosowski et al. 1998, §6.1, "Multiple flying objects": the same simultaneous descent
//! of §4.2, with one object's hierarchy standing where the environment's does).
//!
//! One of the two objects is the *reference*: the descent compares bounds in its frame,
//! its hierarchy as stored, and re-bounds the other under the relative pose
//! ([`Pose::relative`]) as a flying object is re-bounded against an environment. The
//! second object is the reference, as an environment is, unless the first one's bounding
//! box in its own frame is more than four times larger: a small object's few nodes cost
//! little to re-bound, where re-bounding a large one at an angle loosens every node the
//! descent meets, but near in size a thin object re-bounded at an angle can cost more than
//! the other (the rule an [`crate::Environment`] of one part follows, measured on the
//! real-mesh matrix).
//!
//! # The exactness contract between two objects
//! The same as against an environment: reported pairs are exact for both objects'
//! triangles placed into world coordinates by [`Pose::transform_point`] of their own poses.
//! The reference frame only decides the work; bounds there are enlarged by a margin that
//! covers the difference between the frames (`Pose::twin_margin`), so no contact is lost.
//! Which frame a state's queries of one pair use is learned from their work
//! (`crate::query::steer`), starting from [`Reference::of`].

use crate::dop::Wide;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::hierarchy::BuildOptions;
use crate::pose::Pose;
use crate::query::{Control, Full, QueryOptions, QueryState, QueryStats, Side, Twin, swaps};
use crate::tumble::FlyingObject;

/// A contact between two objects: a triangle of each, as indices in their meshes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectContact {
    /// Triangle of the first object (`self` of [`FlyingObject::collide_with`]).
    pub a_triangle: u32,
    /// Triangle of the second object.
    pub b_triangle: u32,
}

/// In which object's frame a pair query compares bounds (the other is re-bounded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reference {
    /// The first object (`self`): the second is placed into its frame.
    A,
    /// The second object: the first is placed into its frame.
    B,
    /// Neither: no pose had an inverse good enough to compare the two in (both objects
    /// flattened, say). Bounds were compared in the world frame, the second object's
    /// triangles placed there for the query (a hierarchy built for it, so such a query
    /// allocates in proportion to that object).
    World,
}

impl Reference {
    /// The reference object of a pair: the second one, unless the first one's bounding box
    /// in its own frame (the sum of its x, y and z extents) is more than four times the
    /// second's. In a [`crate::World`] the second is the part, or of two objects the one
    /// whose handle orders after the other's.
    #[must_use]
    pub fn of<const K: usize>(a: &FlyingObject<K>, b: &FlyingObject<K>) -> Reference {
        if swaps(&a.part.bvh.root_dop(), &b.part.bvh.root_dop()) {
            Reference::A
        } else {
            Reference::B
        }
    }

    /// The other object.
    fn other(self) -> Reference {
        match self {
            Reference::A => Reference::B,
            Reference::B | Reference::World => Reference::A,
        }
    }
}

/// The answer of an object-against-object query; contacts borrow the [`QueryState`].
#[derive(Debug)]
pub struct PairOutcome<'a> {
    /// Whether any contact was found.
    pub collides: bool,
    /// The contacts, sorted by the first object's triangle, then the second's. In detect
    /// mode at most one.
    pub contacts: &'a [ObjectContact],
    /// The object in whose frame bounds were compared: [`Reference::of`], or the other one
    /// where the state's earlier queries of the pair found that cheaper (see
    /// [`FlyingObject::collide_with`]) or the reference's pose has no usable inverse, or
    /// [`Reference::World`] when neither has.
    pub reference: Reference,
    /// Work done (the re-bounded nodes are the non-reference object's).
    pub stats: QueryStats,
}

impl<const K: usize> FlyingObject<K> {
    /// The query compared in `reference`'s frame (A or B), the other object re-bounded;
    /// `None` where that object's pose has no inverse good enough to compare in.
    #[allow(clippy::too_many_arguments)]
    fn in_frame(
        &self,
        reference: Reference,
        pose: &Pose,
        other: &FlyingObject<K>,
        other_pose: &Pose,
        options: &QueryOptions,
        state: &mut QueryState<K>,
        control: &mut impl Control,
    ) -> Option<Result<(Reference, QueryStats)>> {
        let ((twin, relative), fixed, flying) = match reference {
            Reference::A => (
                Twin::new(pose, other_pose, self.magnitude, other)?,
                self,
                other,
            ),
            _ => (
                Twin::new(other_pose, pose, other.magnitude, self)?,
                other,
                self,
            ),
        };
        let done = fixed.statics().run(
            flying,
            &relative,
            options,
            state.parts(),
            Wide::detect(),
            twin.as_ref(),
            control,
        );
        Some(done.map(|(stats, _)| (reference, stats)))
    }

    /// This object, placed by `pose`, against `other` placed by `other_pose`.
    ///
    /// The state re-bounds the non-reference object ([`Reference::of`]); keeping one state
    /// per pair keeps its re-bounded nodes and its witness (detect mode) from one query to
    /// the next. Such a state also tries the other frame now and then (after the pair's 4th
    /// descent, then 8, 16, … more, then every 1024th), for the work alone and stopped once
    /// it costs a quarter more than the query, and goes on in that frame when its descents
    /// cost a fifth less; the outcome's stats include the trials' work, and detect mode may
    /// find another contact there (every contact found is one).
    /// The choice depends only on the state's queries so far; a state that goes from pair
    /// to pair (as a [`crate::World`]'s threads do) keeps [`Reference::of`].
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a bad epsilon. Where neither pose has an inverse
    /// good enough to compare the two in (both objects flattened, say), the second object
    /// is placed into the world frame ([`Reference::World`]), and
    /// [`Error::CoordinateOutOfRange`] is possible there, for a placed vertex beyond the
    /// coordinate limit.
    ///
    /// # Example
    /// ```
    /// use glam::DVec3;
    /// use kdop::{BuildOptions, FlyingObject, Mesh, Pose, QueryOptions, QueryState};
    ///
    /// let tri = |z: f64| {
    ///     let v = vec![DVec3::new(-1.0, -1.0, z), DVec3::new(1.0, -1.0, z), DVec3::new(0.0, 1.0, z)];
    ///     Mesh::new(v, vec![[0, 1, 2]])
    /// };
    /// let plate = FlyingObject::<18>::new(tri(0.0)?, &BuildOptions::FLYING)?;
    /// let pin = FlyingObject::<18>::new(
    ///     Mesh::new(vec![DVec3::ZERO, DVec3::Z, DVec3::new(0.0, 0.1, 1.0)], vec![[0, 1, 2]])?,
    ///     &BuildOptions::FLYING,
    /// )?;
    /// let mut state = QueryState::new();
    /// let down = Pose::from_translation(DVec3::new(0.2, 0.0, -0.5))?;
    /// let hit = pin.collide_with(&down, &plate, &Pose::IDENTITY, &QueryOptions::REPORT, &mut state)?;
    /// assert_eq!(hit.contacts.len(), 1);
    /// # Ok::<(), kdop::Error>(())
    /// ```
    pub fn collide_with<'s>(
        &self,
        pose: &Pose,
        other: &FlyingObject<K>,
        other_pose: &Pose,
        options: &QueryOptions,
        state: &'s mut QueryState<K>,
    ) -> Result<PairOutcome<'s>> {
        zone!("FlyingObject::collide_with");
        // The steered reference's frame (the size rule's, or the other where the pair's
        // own queries found it cheaper: `crate::query::steer`) unless its pose has no
        // usable inverse; then the other's; then the world's.
        let rule = Reference::of(self, other);
        let first = if state.steer.flipped((self.id, other.id)) {
            rule.other()
        } else {
            rule
        };
        let framed = [first, first.other()]
            .into_iter()
            .find_map(|r| self.in_frame(r, pose, other, other_pose, options, state, &mut Full));
        let (reference, stats) = match framed {
            Some(done) => done?,
            None => {
                // The second object's triangles placed by its pose exactly as the
                // contract places them, so answers stay exact in the world frame.
                let placed = other.mesh().transformed(other_pose)?;
                let world = FlyingObject::<K>::new(placed, &BuildOptions::ENVIRONMENT)?;
                let (stats, _) = world.statics().run(
                    self,
                    pose,
                    options,
                    state.parts(),
                    Wide::detect(),
                    None,
                    &mut Full,
                )?;
                (Reference::World, stats)
            }
        };
        // A frame is posed (a twin) unless its object is at the identity.
        let posed = |r: Reference| match r {
            Reference::A => Twin::posed(pose),
            _ => Twin::posed(other_pose),
        };
        let stats = if reference == Reference::World {
            stats
        } else {
            let chosen = Side {
                stats,
                twinned: posed(reference),
            };
            let other_frame = reference.other();
            state.weigh_other_side(options, chosen, posed(other_frame), |state, o, c| {
                // The other frame (as `Environment::collide` tries the other side), or
                // nothing where its object's pose has no usable inverse.
                match self.in_frame(other_frame, pose, other, other_pose, o, state, c) {
                    Some(done) => done.map(|(_, stats)| (stats, true)),
                    None => Ok((QueryStats::default(), false)),
                }
            })?
        };
        let work = &mut state.work;
        let (contacts, raw) = (&mut work.pair_contacts, &work.raw);
        contacts.clear();
        // `raw` holds [part 0, reference triangle, other triangle].
        contacts.extend(raw.iter().map(|&[_, r, o]| {
            let (a_triangle, b_triangle) = match reference {
                Reference::A => (r, o),
                Reference::B | Reference::World => (o, r),
            };
            ObjectContact {
                a_triangle,
                b_triangle,
            }
        }));
        // One `u64` key in the derived order (a, then b): fewer instructions than the
        // field-by-field comparison.
        contacts
            .sort_unstable_by_key(|c| (u64::from(c.a_triangle) << 32) | u64::from(c.b_triangle));
        let contacts = &*contacts;
        Ok(PairOutcome {
            collides: !contacts.is_empty(),
            contacts,
            reference,
            stats: QueryStats {
                contacts: contacts.len() as u64,
                ..stats
            },
        })
    }
}
