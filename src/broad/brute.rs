//! The broad phase's oracle: every pair of boxes compared, no structure at all.

use super::Aabb;

/// Every pair of overlapping boxes with at least one dynamic, as `(smaller id, larger id)`,
/// sorted. `boxes` holds `(id, box, dynamic)` with distinct ids. Quadratic: for tests and
/// for checking benchmarks of modest size.
#[must_use]
pub fn brute_force_pairs(boxes: &[(u32, Aabb, bool)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for (i, (a, ba, da)) in boxes.iter().enumerate() {
        for (b, bb, db) in &boxes[i + 1..] {
            if (*da || *db) && ba.overlaps(bb) {
                out.push(((*a).min(*b), (*a).max(*b)));
            }
        }
    }
    out.sort_unstable();
    out
}

/// The same pairs as [`brute_force_pairs`] from one plain sweep along x over all boxes (no
/// cells, no coherence): a second oracle, for checking runs too large for all pairs.
#[must_use]
pub fn single_sweep_pairs(boxes: &[(u32, Aabb, bool)]) -> Vec<(u32, u32)> {
    let mut order: Vec<&(u32, Aabb, bool)> = boxes.iter().collect();
    order.sort_unstable_by(|a, b| a.1.lo[0].total_cmp(&b.1.lo[0]));
    let mut out = Vec::new();
    for (i, (a, ba, da)) in order.iter().map(|x| (x.0, x.1, x.2)).enumerate() {
        for (b, bb, db) in order[i + 1..].iter().map(|x| (x.0, x.1, x.2)) {
            if bb.lo[0] > ba.hi[0] {
                break;
            }
            if (da || db) && ba.overlaps(&bb) {
                out.push((a.min(b), a.max(b)));
            }
        }
    }
    out.sort_unstable();
    out
}
