//! Scratch given back after a burst. Lists that an update or a step fills per changed item
//! keep the capacity of the largest frame they served: after a scene is loaded at once (a
//! million objects placed in one step) they hold a million items' worth while a frame
//! changes a few thousand. A [`Burst`] remembers the most items a frame used lately,
//! decaying by a 64th a frame; once a list that grows with them holds over four times
//! twice that (and over a floor, so that small scenes never trim), each such list is cut
//! to the same share of its capacity. Steady frames then never trim again, and a list
//! cut too short grows once, so a steady state still allocates nothing
//! (`tests/broad_trim.rs`; the world's in `tests/world.rs`,
//! `a_world_loaded_at_once_gives_its_scratch_back_and_answers_alike`).

/// The remembered peak loses this share of itself each frame.
const DECAY: usize = 64;

/// Items' worth of scratch never given back: scenes this small keep theirs.
const FLOOR: usize = 4096;

/// The most items a frame used lately, decaying.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Burst {
    peak: usize,
}

impl Burst {
    /// Notes that this frame used `used` items; returns `(keep, of)` when `capacity` (that
    /// of a list holding one entry an item) is so far above the recent peak that the lists
    /// growing with the items should be cut to `keep / of` of their capacity.
    pub(crate) fn note(&mut self, used: usize, capacity: usize) -> Option<(usize, usize)> {
        self.peak = used.max(self.peak - self.peak / DECAY);
        let keep = 2 * self.peak + FLOOR;
        (capacity > 4 * keep).then_some((keep, capacity))
    }
}

/// `v` cut to about `keep / of` of its capacity, never below what it holds (the allocator
/// copies what `v` holds into a smaller block).
pub(crate) fn shrink_share<T>(v: &mut Vec<T>, keep: usize, of: usize) {
    let target = v.capacity().saturating_mul(keep) / of.max(1) + 16;
    if target < v.capacity() {
        v.shrink_to(target);
    }
}
