//! What one pair of bodies keeps from query to query (temporal coherence, Klosowski et al.
//! 1998, §6.1): the last contact found, re-tested first by the next detect query.

/// The coherence of one pair: its last contact, as (part index in the static side, static
/// leaf position, flying leaf position). Positions are checked against the hierarchies
/// before use, so a cache that meets another pair costs a miss, never a wrong answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairCache {
    pub(crate) witness: Option<[u32; 3]>,
}

impl PairCache {
    /// Forgets everything (the pair's bodies changed).
    pub fn clear(&mut self) {
        self.witness = None;
    }
}
