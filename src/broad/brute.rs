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
///
/// A pair is found from the box of the two that comes first in x (ties by input order),
/// which scans the boxes after it that start within its x-extent: the dynamic ones for any
/// box, the static ones only for a dynamic box, so that a large static box does not walk
/// every static box beside it.
#[must_use]
pub fn single_sweep_pairs(boxes: &[(u32, Aabb, bool)]) -> Vec<(u32, u32)> {
    let mut order: Vec<&(u32, Aabb, bool)> = boxes.iter().collect();
    order.sort_by(|a, b| a.1.lo[0].total_cmp(&b.1.lo[0]));
    // Positions in `order` of the dynamic boxes, and of the static ones.
    let (dynamic, fixed): (Vec<usize>, Vec<usize>) = (0..order.len()).partition(|&i| order[i].2);
    let mut out = Vec::new();
    for (i, &&(a, ba, da)) in order.iter().enumerate() {
        let later = |list: &[usize]| list.partition_point(|&j| j <= i);
        let mut scan = |list: &[usize]| {
            for &j in &list[later(list)..] {
                let (b, bb, _) = *order[j];
                if bb.lo[0] > ba.hi[0] {
                    break;
                }
                if ba.overlaps(&bb) {
                    out.push((a.min(b), a.max(b)));
                }
            }
        };
        scan(&dynamic);
        if da {
            scan(&fixed);
        }
    }
    out.sort_unstable();
    out
}
