//! Per-thread scratch of the descent (Klosowski et al. 1998, §4.2, Algorithm 1): the stack
//! of node pairs, the bounds of refined environment leaves, and the raw contacts. Nothing
//! here is proportional to an environment or an object; it grows to the largest query run
//! with it and is then reused.

use super::{Contact, NodePair};
use crate::dop::Dop;
use crate::tri::{Screen, Triangle};

/// The scratch one thread's queries share: give each thread one and reuse it.
#[derive(Clone, Debug, Default)]
pub struct Workspace<const K: usize> {
    pub(crate) stack: PairStack,
    /// Bounds of single triangles of refined environment leaves this query.
    pub(crate) tri_dops: Vec<RefinedTri<K>>,
    /// Which leaves this query refined, and where their triangles' bounds start.
    pub(crate) memo: RefineMemo,
    /// Contacts as `[part, static triangle, flying triangle]`, in the order found.
    pub(crate) raw: Vec<[u32; 3]>,
    /// Where a trial of the pair's other side (`steer.rs`) leaves its contacts.
    pub(crate) spare_raw: Vec<[u32; 3]>,
    /// The raw contacts of one part as sort keys (static triangle, flying triangle).
    pub(crate) keys: Vec<u64>,
    pub(crate) contacts: Vec<Contact>,
    /// The contacts of the last object-against-object query.
    pub(crate) pair_contacts: Vec<crate::pair::ObjectContact>,
    /// The last large static triangle that screened flying nodes ([`ScreenCache`]).
    pub(crate) screen: ScreenCache,
}

/// The last static triangle that screened flying nodes, by part and position, prepared
/// ([`Screen`]): a descent under one large triangle pops pair after pair of it, so its
/// axes are projected once rather than per node. (Preparing it only from its second or
/// third use, and running the plain test before, which projects only the axes it
/// reaches, was slower on the matrix's worst detect cell: `docs/benchmarks.md`.)
#[derive(Clone, Debug, Default)]
pub(crate) struct ScreenCache {
    key: u64,
    screen: Option<Screen>,
}

impl ScreenCache {
    /// Forgets the triangle (a new query names other hierarchies).
    pub(crate) fn clear(&mut self) {
        self.screen = None;
    }

    /// Whether the static triangle at position `pos` of part `p` (`tri` gives its
    /// corners) may meet flying k-DOP `d` (the test of `tri::triangle_meets_dop` with no
    /// epsilon: flying k-DOPs are enlarged by it already). Every caller has found `d` to
    /// overlap the triangle's own k-DOP (or its one-triangle leaf's, which contains it), so
    /// only the triangle's plane and edge axes are tested ([`Screen::meets`]); dropping
    /// the k-DOP's own directions can only keep more.
    #[inline]
    pub(crate) fn meets<const K: usize>(
        &mut self,
        p: u32,
        pos: u32,
        tri: impl FnOnce() -> Triangle,
        d: &Dop<K>,
    ) -> bool {
        let key = u64::from(p) << 32 | u64::from(pos);
        match &self.screen {
            Some(screen) if self.key == key => screen.meets(d, 0.0),
            _ => {
                let t = tri();
                let screen = Screen::new(&t);
                let meets = screen.meets(d, 0.0);
                (self.key, self.screen) = (key, Some(screen));
                meets
            }
        }
    }
}

impl<const K: usize> Workspace<K> {
    /// Empties the per-query lists and numbers a new query for the refinement memo.
    pub(crate) fn start_query(&mut self) {
        self.raw.clear();
        self.stack.clear();
        self.tri_dops.clear();
        self.memo.start();
        self.screen.clear();
    }

    /// The node pairs a stopped descent left unvisited: a start set for a later query of
    /// the same hierarchies. (A descent stops only where its stack names no scratch of
    /// this query; see `Expand::resumable`.)
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "resumed by fronts and budgets next")
    )]
    pub(crate) fn pending(&self) -> &[NodePair] {
        self.stack.live()
    }

    /// Capacities of its buffers (for [`Workspace::reserve`]).
    pub(crate) fn sizes(&self) -> [usize; 7] {
        [
            self.stack.slots.len(),
            self.tri_dops.capacity(),
            self.memo.keys.len(),
            self.memo.used.capacity(),
            self.raw.capacity(),
            self.contacts.capacity(),
            self.pair_contacts.capacity(),
        ]
    }

    /// Grows its buffers to at least `sizes`, so that a query no larger than one they
    /// came from allocates nothing.
    pub(crate) fn reserve(&mut self, s: &[usize]) {
        self.stack.reserve(s[0]);
        self.tri_dops
            .reserve_exact(s[1].saturating_sub(self.tri_dops.len()));
        self.memo.reserve(s[2]);
        self.memo
            .used
            .reserve_exact(s[3].saturating_sub(self.memo.used.len()));
        self.raw.reserve_exact(s[4].saturating_sub(self.raw.len()));
        self.spare_raw
            .reserve_exact(s[4].saturating_sub(self.spare_raw.len()));
        self.keys
            .reserve_exact(s[4].saturating_sub(self.keys.len()));
        self.contacts
            .reserve_exact(s[5].saturating_sub(self.contacts.len()));
        self.pair_contacts
            .reserve_exact(s[6].saturating_sub(self.pair_contacts.len()));
    }

    /// Bytes held.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.stack.slots.capacity() * size_of::<NodePair>()
            + self.tri_dops.capacity() * size_of::<RefinedTri<K>>()
            + self.memo.keys.capacity() * 12
            + self.memo.used.capacity() * 4
            + (self.raw.capacity() + self.spare_raw.capacity()) * 12
            + self.keys.capacity() * 8
            + self.contacts.capacity() * size_of::<Contact>()
            + self.pair_contacts.capacity() * size_of::<crate::pair::ObjectContact>()
    }
}

/// The bound of one triangle of a refined environment leaf.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RefinedTri<const K: usize> {
    pub(crate) dop: Dop<K>,
    /// The triangle's leaf position in its part.
    pub(crate) pos: u32,
    /// The bound's size (sum of box extents), for the size gates of the descent.
    pub(crate) size: f32,
    /// Flying nodes smaller than this are screened by the triangle's plane and edges
    /// (`descent::WIDE_TRI`): both gates folded into one number when the leaf is refined,
    /// since every pair under it compares against them.
    pub(crate) screens_below: f32,
}

/// Which environment leaves the current query refined into per-triangle bounds: an
/// open-addressed table keyed by `(part, node)` holding each leaf's first slot. It holds
/// what one query touches, never a slot per environment node. Nodes of one part index
/// consecutive entries, so leaves near each other in the hierarchy share cache lines as
/// they would in an array over the nodes; the keys are apart from the slots so that a probe
/// reads 8 bytes per entry.
#[derive(Clone, Debug, Default)]
pub(crate) struct RefineMemo {
    keys: Vec<u64>,
    slots: Vec<u32>,
    /// The entries this query filled, to empty at the next.
    used: Vec<u32>,
    /// `keys.len() - 1` (a power of two less one), or 0 before the first use.
    mask: usize,
}

/// An entry no query filled.
const EMPTY: u64 = u64::MAX;

impl RefineMemo {
    /// Forgets every entry.
    fn start(&mut self) {
        for &i in &self.used {
            self.keys[i as usize] = EMPTY;
        }
        self.used.clear();
    }

    /// The first slot of leaf `e` of part `p` if this query refined it, else `None` after
    /// recording that its slots start at `slot`.
    #[inline]
    pub(crate) fn get_or_insert(&mut self, p: u32, e: u32, slot: u32) -> Option<u32> {
        if 4 * (self.used.len() + 1) > 3 * self.keys.len() {
            self.grow();
        }
        let key = (u64::from(p) << 32) | u64::from(e);
        let mut i = home(p, e) & self.mask;
        loop {
            let k = self.keys[i];
            if k == key {
                return Some(self.slots[i]);
            }
            if k == EMPTY {
                self.keys[i] = key;
                self.slots[i] = slot;
                self.used.push(i as u32);
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Makes the table at least `entries` long (a power of two), keeping its entries.
    fn reserve(&mut self, entries: usize) {
        while self.keys.len() < entries {
            self.grow();
        }
    }

    /// Doubles the table (at least 64 entries), keeping this query's entries.
    #[cold]
    fn grow(&mut self) {
        let n = (2 * self.keys.len()).max(64);
        let keys = std::mem::replace(&mut self.keys, vec![EMPTY; n]);
        let slots = std::mem::replace(&mut self.slots, vec![0; n]);
        self.mask = n - 1;
        let used = std::mem::take(&mut self.used);
        for &j in &used {
            let (key, slot) = (keys[j as usize], slots[j as usize]);
            let mut i = home((key >> 32) as u32, key as u32) & self.mask;
            while self.keys[i] != EMPTY {
                i = (i + 1) & self.mask;
            }
            self.keys[i] = key;
            self.slots[i] = slot;
            self.used.push(i as u32);
        }
    }
}

/// Where leaf `e` of part `p` is looked for first: consecutive nodes of a part at
/// consecutive entries, parts spread apart.
#[inline]
fn home(p: u32, e: u32) -> usize {
    e.wrapping_add(p.wrapping_mul(0x9E37_79B9)) as usize
}

/// The traversal stack of node pairs. Pushes do not branch on whether they keep their
/// entry: in close proximity the k-DOP tests that decide are close to coin flips (about one
/// mispredicted branch per test on the nested spheres), so each entry is written to the
/// next free slot and the top moves by 0 or 1. The slots stay allocated between queries.
#[derive(Clone, Debug, Default)]
pub(crate) struct PairStack {
    slots: Vec<NodePair>,
    top: usize,
}

impl PairStack {
    pub(crate) fn clear(&mut self) {
        self.top = 0;
    }

    pub(crate) fn reserve(&mut self, slots: usize) {
        if self.slots.len() < slots {
            self.slots.resize(slots, [0; 3]);
        }
    }

    /// The entries not yet popped, bottom first.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "resumed by fronts and budgets next")
    )]
    pub(crate) fn live(&self) -> &[NodePair] {
        &self.slots[..self.top]
    }

    /// Room for two more entries (a branch that is taken only while the stack grows).
    #[inline(always)]
    fn room(&mut self) {
        if self.top + 2 > self.slots.len() {
            self.slots.resize((2 * self.slots.len()).max(64), [0; 3]);
        }
    }

    /// Pushes `a` if `keep`.
    #[inline(always)]
    pub(crate) fn push_if(&mut self, a: NodePair, keep: bool) {
        self.room();
        self.slots[self.top] = a;
        self.top += usize::from(keep);
    }

    /// Pushes `a` if `keep_a`, then `b` if `keep_b` (so `b` is popped first when both are
    /// kept): `a` goes to the free slot and `b` to the one after it, or over `a` when `a`
    /// is not kept.
    #[inline(always)]
    pub(crate) fn push_two(&mut self, a: NodePair, keep_a: bool, b: NodePair, keep_b: bool) {
        self.room();
        // One bounds check for both slots.
        let free = &mut self.slots[self.top..self.top + 2];
        free[0] = a;
        free[usize::from(keep_a)] = b;
        self.top += usize::from(keep_a) + usize::from(keep_b);
    }

    /// [`PairStack::push_two`], except that `a` is popped first when both are kept and
    /// `a_deeper()` says its overlap is the deeper: a detect descent's order (`a_deeper`
    /// runs only then).
    #[inline(always)]
    pub(crate) fn push_two_deeper_first(
        &mut self,
        a: NodePair,
        keep_a: bool,
        b: NodePair,
        keep_b: bool,
        a_deeper: impl FnOnce() -> bool,
    ) {
        if keep_a && keep_b && a_deeper() {
            self.push_two(b, true, a, true);
        } else {
            self.push_two(a, keep_a, b, keep_b);
        }
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<NodePair> {
        if self.top == 0 {
            return None;
        }
        self.top -= 1;
        Some(self.slots[self.top])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memo finds what this query inserted, forgets it at the next query, and keeps
    /// its entries through growth: checked against a `HashMap` on seeded keys.
    #[test]
    fn memo_matches_a_hash_map() {
        let mut s = 99u64;
        let mut memo = RefineMemo::default();
        for query in 0..40 {
            memo.start();
            let mut oracle = std::collections::HashMap::new();
            let n = 1 + (query * 37) % 500;
            for i in 0..n {
                let p = (crate::testing::lcg(&mut s) * 4.0) as u32;
                let e = (crate::testing::lcg(&mut s) * 300.0) as u32;
                let got = memo.get_or_insert(p, e, i as u32);
                let want = oracle.get(&(p, e)).copied();
                assert_eq!(got, want, "query {query}, key ({p}, {e})");
                oracle.entry((p, e)).or_insert(i as u32);
            }
        }
    }

    /// The deeper-first push pops `a` first only when both are kept and `a` is the
    /// deeper, asks for the depths only then, and otherwise pushes as `push_two` does.
    #[test]
    fn deeper_first_push_orders_only_two_kept_pairs() {
        let (a, b) = ([1, 0, 0], [2, 0, 0]);
        let popped = |keep_a, keep_b, a_deeper: bool| {
            let mut stack = PairStack::default();
            let mut asked = false;
            stack.push_two_deeper_first(a, keep_a, b, keep_b, || {
                asked = true;
                a_deeper
            });
            let order: Vec<_> = std::iter::from_fn(|| stack.pop()).collect();
            (order, asked)
        };
        assert_eq!(popped(true, true, true), (vec![a, b], true));
        assert_eq!(popped(true, true, false), (vec![b, a], true));
        assert_eq!(popped(true, false, true), (vec![a], false));
        assert_eq!(popped(false, true, true), (vec![b], false));
        assert_eq!(popped(false, false, true), (vec![], false));
    }

    /// The screen cache answers for the triangle its key names: a new part or position
    /// is a new triangle, the same key asks for no corners again, and a cleared cache
    /// forgets its triangle.
    #[test]
    fn screen_cache_follows_its_key() {
        use glam::DVec3;
        let node = Dop::<18>::from_points(&[DVec3::splat(-0.1), DVec3::splat(0.1)]);
        // The plane x + y + z = 1 misses the node; the plane z = 0 cuts it.
        let tilted = [
            DVec3::new(10.0, -4.5, -4.5),
            DVec3::new(-4.5, 10.0, -4.5),
            DVec3::new(-4.5, -4.5, 10.0),
        ];
        let flat = [
            DVec3::new(-9.0, -9.0, 0.0),
            DVec3::new(9.0, -9.0, 0.0),
            DVec3::new(0.0, 9.0, 0.0),
        ];
        let mut cache = ScreenCache::default();
        for (p, pos, t, want) in [
            (0, 7, tilted, false),
            (0, 8, flat, true),
            (1, 8, tilted, false),
        ] {
            assert_eq!(cache.meets(p, pos, || t, &node), want);
            let again = cache.meets(p, pos, || unreachable!("asked again"), &node);
            assert_eq!(again, want, "part {p}, position {pos}");
        }
        cache.clear();
        assert!(cache.meets(1, 8, || flat, &node));
    }
}
