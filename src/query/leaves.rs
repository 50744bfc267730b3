//! Triangle pairs at the leaves of the descent (Klosowski et al. 1998, §4.2: "if both are
//! leaves, test the triangles"): exact tests (`tri::filtered`), several flying triangles
//! against one static triangle at a time where leaves are wide (`tri::lanes`), and the
//! re-test of a pair's last contact (temporal coherence, §6.1).

use super::descent::{KdopSide, Statics, Walk};
use super::placed::{PlacedObject, PlacedTri};
use crate::dop::OverlapForm;
use crate::hierarchy::{Bvh, END};
use crate::tri::{BATCH, TriBox, intersect_batch, intersect_filtered, set_bits, triangle_distance};
use glam::DVec3;

impl<const K: usize> Walk<'_, K> {
    /// Whether `[part, static position, object position]` is a contact under the walk's
    /// pose (one triangle test, counted in `np`): the witness re-test, and the single pairs
    /// of a flying triangle's descent. Out-of-range positions (a witness from another
    /// static side) are not, and cost no test. The flying triangle is placed where its
    /// pairs are decided: by the world pose for object pairs (`Twin`), else by the query's.
    #[inline(always)]
    pub(super) fn holds(
        &self,
        statics: &Statics<'_, K>,
        object: &mut PlacedObject<K>,
        [part, epos, fpos]: [u32; 3],
        np: &mut u64,
    ) -> bool {
        let Some(p) = statics.parts.get(part as usize) else {
            return false;
        };
        let (epos, fpos) = (epos as usize, fpos as usize);
        if epos >= p.bvh.triangle_count() || fpos >= self.object.part.bvh.triangle_count() {
            return false;
        }
        *np += 1;
        let et = self.static_triangle(&p.bvh, epos);
        let ft = if self.twin.is_some() {
            object.twin_placed(self.object, fpos)
        } else {
            object.placed(self.object, self.pose, fpos)
        };
        pair_hit(&et, &TriBox::new(&et), ft, self.eps)
    }

    /// The contact `[part, static triangle, object triangle]`, triangles numbered as in
    /// their meshes, of the leaf positions `[part, static position, object position]`;
    /// `bvh` is the part's hierarchy.
    #[inline(always)]
    pub(super) fn contact(&self, bvh: &Bvh<K>, [part, epos, fpos]: [u32; 3]) -> [u32; 3] {
        [
            part,
            bvh.id_at(epos as usize),
            self.object.part.bvh.id_at(fpos as usize),
        ]
    }
}

impl<const K: usize, F: OverlapForm> KdopSide<'_, '_, K, F> {
    /// Records a contact: static leaf position `epos` of `part` (hierarchy `bvh`) with
    /// object leaf position `fpos`; it is also the pair's next witness.
    #[inline]
    fn record(&mut self, part: u32, bvh: &Bvh<K>, epos: usize, fpos: usize) {
        let w = [part, epos as u32, fpos as u32];
        self.work.raw.push(self.walk.contact(bvh, w));
        self.pair.witness = Some(w);
    }

    /// One triangle pair: static leaf position `epos` of `part`, object leaf position
    /// `fpos`. Returns true when a detect query can stop.
    #[inline]
    pub(super) fn test_pair(&mut self, part: u32, epos: usize, fpos: usize) -> bool {
        if self.retest([part, epos as u32, fpos as u32]) {
            let statics = self.statics;
            let bvh = &statics.parts[part as usize].bvh;
            self.record(part, bvh, epos, fpos);
            return self.walk.detect;
        }
        false
    }

    /// Whether `[part, static position, object position]` is a contact under the walk's
    /// pose ([`Walk::holds`]).
    #[inline]
    pub(super) fn retest(&mut self, w: [u32; 3]) -> bool {
        self.walk
            .holds(self.statics, self.object, w, &mut self.stats.np)
    }

    /// The pairs of static triangle `et` (box `ebox`, leaf position `epos` of `part`) with
    /// the flying leaf starting at `fpos`, one at a time, the flying triangles placed by
    /// the world pose (`TWIN`) or the query's, decided exactly (`EXACT`, the walk's `eps`
    /// 0: chosen once per leaf, not per pair) or within `eps`. Returns true when a detect
    /// query can stop.
    #[inline(always)]
    fn test_each<const TWIN: bool, const EXACT: bool>(
        &mut self,
        part: u32,
        bvh: &Bvh<K>,
        epos: usize,
        et: &[DVec3; 3],
        ebox: &TriBox,
        mut fpos: usize,
    ) -> bool {
        let walk: &Walk<'_, K> = self.walk;
        let (object, pose, eps) = (walk.object, walk.pose, walk.eps);
        // Counted here and added once: a count in the side's record is stored per pair.
        let mut tested = 0;
        let found = loop {
            tested += 1;
            let ft = if TWIN {
                self.object.twin_placed(object, fpos)
            } else {
                self.object.placed(object, pose, fpos)
            };
            let hit = if EXACT {
                exact_hit(et, ebox, ft)
            } else {
                within(et, &ft.corners, eps)
            };
            if hit {
                self.record(part, bvh, epos, fpos);
                if walk.detect {
                    break true;
                }
            }
            if object.part.bvh.ids[fpos] & END != 0 {
                break false;
            }
            fpos += 1;
        };
        self.stats.np += tested;
        found
    }

    /// Tests the static triangle at leaf position `epos` against the flying leaf starting
    /// at `fpos0`. Returns true when a detect query can stop.
    #[inline(always)]
    pub(super) fn test_pairs(&mut self, part: u32, epos: usize, fpos0: usize) -> bool {
        let walk: &Walk<'_, K> = self.walk;
        let bvh = &self.statics.parts[part as usize].bvh;
        // The static triangle and its box serve every flying triangle of the leaf. The
        // walk's fields are read where each path needs them (loaded up front, they were
        // spilled on every call).
        if walk.twin.is_some() {
            let et = walk.static_triangle(bvh, epos);
            let ebox = TriBox::new(&et);
            return if walk.eps == 0.0 {
                self.test_each::<true, true>(part, bvh, epos, &et, &ebox, fpos0)
            } else {
                self.test_each::<true, false>(part, bvh, epos, &et, &ebox, fpos0)
            };
        }
        let et = bvh.tri_at(epos);
        let ebox = TriBox::new(&et);
        if walk.eps != 0.0 {
            return self.test_each::<false, false>(part, bvh, epos, &et, &ebox, fpos0);
        }
        if !walk.object.wide_leaves {
            return self.test_each::<false, true>(part, bvh, epos, &et, &ebox, fpos0);
        }
        let (object, pose, detect) = (walk.object, walk.pose, walk.detect);
        let mut fpos = fpos0;
        // Exact contacts against wide leaves: the leaf's triangles whose boxes meet the
        // static triangle's are listed (no branch per pair) and decided together, up to
        // `BATCH` at a time (`tri::intersect_batch`). In detect mode the whole batch is
        // tested and its first contact in leaf order kept, so `np` counts every pair of
        // the batch.
        loop {
            let start = fpos;
            let mut listed = [0u8; BATCH];
            let mut n = 0;
            let last = loop {
                self.stats.np += 1;
                let ft = self.object.placed(object, pose, fpos);
                listed[n % BATCH] = (fpos - start) as u8;
                n += usize::from(ebox.overlaps_box(&ft.bbox));
                let end = object.part.bvh.ids[fpos] & END != 0;
                fpos += 1;
                if end || fpos - start == BATCH {
                    break end;
                }
            };
            if n != 0 {
                let placed = &self.object.placed[start..fpos];
                let found = intersect_batch(n, |j| (&placed[usize::from(listed[j])].corners, &et));
                for j in set_bits(found) {
                    let hit = start + usize::from(listed[j]);
                    self.record(part, bvh, epos, hit);
                    if detect {
                        return true;
                    }
                }
            }
            if last {
                return false;
            }
        }
    }
}

/// Whether a static triangle `et` (with its box `ebox`) and a placed object triangle `ft`
/// are a contact: they intersect (`eps == 0`), or are closer than `eps`.
#[inline(always)]
fn pair_hit(et: &[DVec3; 3], ebox: &TriBox, ft: &PlacedTri, eps: f64) -> bool {
    if eps == 0.0 {
        exact_hit(et, ebox, ft)
    } else {
        within(et, &ft.corners, eps)
    }
}

/// [`pair_hit`] with `eps == 0`: the boxes first, then the exact test.
#[inline(always)]
fn exact_hit(et: &[DVec3; 3], ebox: &TriBox, ft: &PlacedTri) -> bool {
    ebox.overlaps_box(&ft.bbox) && intersect_filtered(&ft.corners, et)
}

/// Triangles closer than `eps` (or intersecting).
#[inline]
fn within(a: &[DVec3; 3], b: &[DVec3; 3], eps: f64) -> bool {
    let lo_a = a[0].min(a[1]).min(a[2]) - DVec3::splat(eps);
    let hi_a = a[0].max(a[1]).max(a[2]) + DVec3::splat(eps);
    let lo_b = b[0].min(b[1]).min(b[2]);
    let hi_b = b[0].max(b[1]).max(b[2]);
    if !(lo_a.cmple(hi_b).all() && lo_b.cmple(hi_a).all()) {
        return false;
    }
    triangle_distance(a, b) <= eps
}
