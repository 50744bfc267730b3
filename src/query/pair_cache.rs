//! What one pair of bodies keeps from query to query (temporal coherence, Klosowski et al.
//! 1998, §6.1): the last contact found, re-tested first by the next detect query, and
//! whether the last detect query found none.

/// The coherence of one pair: its last contact, as (part index in the static side, static
/// leaf position, flying leaf position). Positions are checked against the hierarchies
/// before use, so a cache that meets another pair costs a miss, never a wrong answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairCache {
    pub(crate) witness: Option<[u32; 3]>,
    /// Whether the last detect query of the pair visited every overlapping node pair and
    /// found no contact. The next is likely apart too, and its descent is not ordered
    /// deeper child first: a query that finds nothing visits every overlapping pair
    /// whatever the order, and the ordering only costs.
    pub(crate) apart: bool,
}

impl PairCache {
    /// Forgets everything (the pair's bodies changed).
    pub fn clear(&mut self) {
        self.witness = None;
        self.apart = false;
    }
}
