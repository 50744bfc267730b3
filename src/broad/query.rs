//! Which boxes overlap a given box, as of the last update: the rows the box touches are
//! found in the row directory (a binary search per z-slab it covers), in each row the
//! entries that may reach it by a binary search on their lower x bound (a row knows its
//! widest entry), and each overlapping entry is reported by its home row with the box
//! only, so once; the large boxes are compared one by one. Static pairs, large boxes and
//! the world (objects near a part that was inserted or moved) all look boxes up this way.

use super::place::{coord, key, split};
use super::{Aabb, BroadPhase, Entry, NONE, Row, Rows, SKIP, StaticRows};

/// What a query reads of sorted rows: the dynamic chunks' columns or the static records.
pub(super) trait Sorted {
    /// The row directory, with its closing row.
    fn dir(&self) -> &[Row];
    /// The entries' lower x bounds, in order.
    fn xs(&self) -> &[f32];
    /// Every [`SKIP`]th of [`Sorted::xs`], or nothing (then rows are searched whole).
    fn skip(&self) -> &[f32];
    /// Entry `i`.
    fn entry(&self, i: usize) -> Entry;
}

impl Sorted for Rows {
    fn dir(&self) -> &[Row] {
        &self.rows
    }
    fn xs(&self) -> &[f32] {
        &self.lo[0]
    }
    fn skip(&self) -> &[f32] {
        &[]
    }
    #[inline(always)]
    fn entry(&self, i: usize) -> Entry {
        Rows::entry(self, i)
    }
}

impl Sorted for StaticRows {
    fn dir(&self) -> &[Row] {
        &self.rows
    }
    fn xs(&self) -> &[f32] {
        &self.xs
    }
    fn skip(&self) -> &[f32] {
        &self.skip
    }
    #[inline(always)]
    fn entry(&self, i: usize) -> Entry {
        self.entries[i]
    }
}

/// Calls `found` with the id of every entry of `rows` whose box meets `q`; returns the
/// entries compared. Each box once.
pub(super) fn query_rows(
    rows: &impl Sorted,
    q: &Aabb,
    inv: f32,
    mut found: impl FnMut(u32),
) -> u64 {
    let n = rows.dir().len().saturating_sub(1);
    if n == 0 {
        return 0;
    }
    // A box meeting q was entered in every row it touches, among them the row of their
    // intersection's lower corner, which is one of q's rows.
    let (y0, y1) = (coord(q.lo[1], inv), coord(q.hi[1], inv));
    let (z0, z1) = (coord(q.lo[2], inv), coord(q.hi[2], inv));
    let mut compared = 0;
    let dir = &rows.dir()[..n];
    let mut r = dir.partition_point(|w| w.key < key(z0, y0));
    while r < n {
        let (z, y) = split(dir[r].key);
        if z > z1 {
            break;
        }
        if y < y0 || y > y1 {
            // Out of q's y-range: on to the next slab's first row in range.
            let next = if y < y0 {
                key(z, y0)
            } else if z < z1 {
                key(z + 1, y0)
            } else {
                break;
            };
            r += dir[r..].partition_point(|w| w.key < next);
            continue;
        }
        let span = dir[r].start as usize..rows.dir()[r + 1].start as usize;
        // An entry meeting q has lo ≥ q.lo − its x-extent ≥ q.lo − the row's width; the
        // threshold is lowered a little further for the roundings of that subtraction.
        let w = dir[r].width;
        let t = q.lo[0] - w;
        let t = t - (q.lo[0].abs() + w) * 1e-6;
        let xs = rows.xs();
        let start = if t.is_nan() {
            span.start
        } else if rows.skip().is_empty() {
            span.start + xs[span.clone()].partition_point(|&x| x < t)
        } else {
            first_at_least(xs, rows.skip(), span.start, span.end, t)
        };
        for i in start..span.end {
            // The entry's own lower bound, not `xs`: a record read once.
            let e = rows.entry(i);
            if e.lo[0] > q.hi[0] {
                break;
            }
            compared += 1;
            // The home row of the entry and q: in z and in y, the lower corner's of one
            // or the other.
            let home_z = e.row >> 31 != 0 || z == z0;
            let home_y = (e.row >> 30) & 1 != 0 || y == y0;
            let meets = (0..3).all(|k| e.lo[k] <= q.hi[k] && q.lo[k] <= e.hi[k]);
            if meets && home_z && home_y {
                found(e.proxy);
            }
        }
        r += 1;
    }
    compared
}

impl BroadPhase {
    /// [`query_rows`] over the dynamic chunks whose keys `q`'s rows may fall in.
    pub(super) fn query_dynamic(&self, q: &Aabb, inv: f32, mut found: impl FnMut(u32)) -> u64 {
        let (y0, y1) = (coord(q.lo[1], inv), coord(q.hi[1], inv));
        let (z0, z1) = (coord(q.lo[2], inv), coord(q.hi[2], inv));
        let (a, b) = (self.chunk_of(key(z0, y0)), self.chunk_of(key(z1, y1)));
        self.dynamic
            .get(a..=b)
            .unwrap_or_default()
            .iter()
            .map(|c| query_rows(&c.rows, q, inv, &mut found))
            .sum()
    }
}

/// The first position in `a..b` whose `xs` is not below `t` (`b` if none), where
/// `xs[a..b]` ascends (NaN-free) and `skip` samples `xs` at every [`SKIP`]th position:
/// `xs[a..b].partition_point(|&x| x < t) + a`, found by a binary search of the samples
/// inside `a..b` and a scan of at most one stride of `xs`.
#[inline]
pub(super) fn first_at_least(xs: &[f32], skip: &[f32], a: usize, b: usize, t: f32) -> usize {
    // The samples at SKIP * j inside a..b.
    let (ja, jb) = (a.div_ceil(SKIP), b.div_ceil(SKIP));
    let (mut from, mut to) = (a, b);
    if ja < jb {
        let k = skip[ja..jb].partition_point(|&x| x < t);
        // Samples before k are below t, those from k on are not.
        if k > 0 {
            from = SKIP * (ja + k - 1) + 1;
        }
        if ja + k < jb {
            to = SKIP * (ja + k);
        }
    }
    from + xs[from..to].iter().take_while(|&&x| x < t).count()
}

impl BroadPhase {
    /// Calls `found` with every proxy whose box overlaps `aabb` (closed boxes), dynamic and
    /// static, as placed by the last [`BroadPhase::update`] (call it after one: a box set or
    /// removed since may be seen at either place). Each proxy once, in an order fixed by the
    /// boxes and the sequence of calls. Allocates nothing.
    pub fn query(&self, aabb: &Aabb, mut found: impl FnMut(u32)) {
        if aabb.check(NONE).is_err() {
            return;
        }
        for &l in self.large_dynamic.iter().chain(&self.large_static) {
            if self.proxies[l as usize].aabb.overlaps(aabb) {
                found(l);
            }
        }
        if self.cell <= 0.0 {
            return;
        }
        let inv = 1.0 / self.cell;
        self.query_dynamic(aabb, inv, &mut found);
        query_rows(&self.statics, aabb, inv, &mut found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::lcg;

    /// The sampled search finds what a binary search of the row finds: rows of any length
    /// and alignment against the stride, with repeated values, thresholds below, inside
    /// and above them.
    #[test]
    fn sampled_search_equals_partition_point() {
        let mut s = 5u64;
        for round in 0..300 {
            // Ascending runs (rows) one after another, as in the static array.
            let mut xs = Vec::new();
            let mut rows = vec![0];
            for _ in 0..1 + round % 7 {
                let len = (lcg(&mut s) * 70.0) as usize;
                let mut x = (lcg(&mut s) * 10.0) as f32;
                for _ in 0..len {
                    // Steps of zero now and then: equal bounds.
                    x += if lcg(&mut s) < 0.2 {
                        0.0
                    } else {
                        lcg(&mut s) as f32
                    };
                    xs.push(x);
                }
                rows.push(xs.len());
            }
            let skip: Vec<f32> = xs.iter().copied().step_by(SKIP).collect();
            for w in rows.windows(2) {
                let (a, b) = (w[0], w[1]);
                for _ in 0..20 {
                    let t = if a < b && lcg(&mut s) < 0.5 {
                        xs[a + (lcg(&mut s) * (b - a) as f64) as usize]
                    } else {
                        (lcg(&mut s) * 80.0 - 5.0) as f32
                    };
                    let want = a + xs[a..b].partition_point(|&x| x < t);
                    assert_eq!(first_at_least(&xs, &skip, a, b, t), want, "{a}..{b} t {t}");
                }
            }
        }
    }
}
