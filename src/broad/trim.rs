//! The broad phase's scratch given back after a burst of changes ([`crate::trim`]): the
//! changed ids and their boxes as they were, the placed entries per chunk and per slice,
//! and the static lookups, each cut to what recent updates used once a bulk load or a
//! large edit has passed.

use super::BroadPhase;
use crate::trim::shrink_share;

impl BroadPhase {
    /// Notes that an update changed `changed` boxes, and cuts the scratch down to what
    /// recent updates used when a burst long past left it far larger.
    pub(super) fn trim_scratch(&mut self, changed: usize) {
        let Some((keep, of)) = self.burst.note(changed, self.moved.capacity()) else {
            return;
        };
        shrink_share(&mut self.moved, keep, of);
        shrink_share(&mut self.moved_old, keep, of);
        shrink_share(&mut self.arrived, keep, of);
        shrink_share(&mut self.buried, keep, of);
        shrink_share(&mut self.near_boxes, keep, of);
        shrink_share(&mut self.incoming, keep, of);
        shrink_share(&mut self.fresh, keep, of);
        for c in &mut self.dynamic {
            shrink_share(&mut c.incoming, keep, of);
            shrink_share(&mut c.outgoing, keep, of);
        }
        for s in &mut self.placing {
            s.shrink_share(keep, of);
        }
        for s in &mut self.near_slices {
            s.shrink_share(keep, of);
        }
    }
}
