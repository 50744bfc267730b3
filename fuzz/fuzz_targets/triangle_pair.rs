//! The fast exact triangle test against the LP reference, on adversarial coordinates, and
//! the batch form (`intersecting_pairs`) against the pairwise test; the screened forms
//! (no box rejection) against both, non-finite corners included.
#![no_main]

mod decode;

use decode::Bytes;
use kdop::oracle::reference_triangles_intersect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let t1 = [b.point(), b.point(), b.point()];
    let t2 = [b.point(), b.point(), b.point()];
    // The test's domain: any finite coordinates (beyond the mesh range the exact tiers
    // still decide, through big integers).
    let ok = |t: &[glam::DVec3; 3]| t.iter().all(|p| p.is_finite());
    let boxed = kdop::triangles_intersect(&t1, &t2);
    // Outside it (NaN, infinities) no panic, and the screened form answers as the boxed.
    assert_eq!(kdop::triangles_intersect_screened(&t1, &t2), boxed);
    if !(ok(&t1) && ok(&t2)) {
        return;
    }
    assert_eq!(boxed, reference_triangles_intersect(&t1, &t2));
    // A batch: the pair both ways round, then pairs from the remaining bytes (each new
    // triangle against the one before), up to more than one chunk of 64.
    let mut pairs = vec![(t1, t2), (t2, t1)];
    let mut last = t2;
    while !b.0.is_empty() && pairs.len() < 70 {
        let t = [b.point(), b.point(), b.point()];
        if ok(&t) {
            pairs.push((last, t));
            last = t;
        }
    }
    let want: Vec<usize> = (0..pairs.len())
        .filter(|&i| kdop::triangles_intersect(&pairs[i].0, &pairs[i].1))
        .collect();
    let mut got = Vec::new();
    kdop::intersecting_pairs(&pairs, &mut got);
    assert_eq!(got, want);
    got.clear();
    kdop::intersecting_pairs_screened(&pairs, &mut got);
    assert_eq!(got, want);
});
