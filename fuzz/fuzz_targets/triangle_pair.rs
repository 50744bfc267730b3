//! The fast exact triangle test against the LP reference, on adversarial coordinates.
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
    if !(ok(&t1) && ok(&t2)) {
        return;
    }
    assert_eq!(
        kdop::triangles_intersect(&t1, &t2),
        reference_triangles_intersect(&t1, &t2)
    );
});
