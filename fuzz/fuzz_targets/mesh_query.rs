//! Arbitrary meshes, build options, part placements and poses: building either fails with a typed error or
//! yields hierarchies whose queries equal brute force (report) and agree with it (detect).
//! With one part, the OBBTree back-end is built from the same meshes and checked the same way
//! (no extra input bytes, so earlier corpora keep their meaning).
#![no_main]

mod decode;

use decode::Bytes;
use kdop::oracle::brute_force_contacts;
use kdop::{
    AxisRule, BuildOptions, Environment, FlyingObject, Mesh, ObbQueryState, ObbTree, Pose,
    QueryOptions, QueryState, Rebound, SplitPoint,
};
use libfuzzer_sys::fuzz_target;

fn mesh(b: &mut Bytes) -> Option<Mesh> {
    let nv = 1 + (b.byte() % 12) as usize;
    let nt = (b.byte() % 16) as usize;
    let v = (0..nv).map(|_| b.point()).collect();
    let t = (0..nt)
        .map(|_| {
            [
                b.byte() as u32 % (nv as u32 + 1),
                b.byte() as u32 % nv as u32,
                b.byte() as u32 % nv as u32,
            ]
        })
        .collect();
    // Out-of-range indices, NaN and huge coordinates must be typed errors.
    Mesh::new(v, t).ok()
}

fn run<const K: usize>(b: &mut Bytes) {
    // Every rule and split point, however many there are (a fixed `% 4` once left the
    // surface-area rule, the default, out of every run).
    let rule = AxisRule::ALL[usize::from(b.byte()) % AxisRule::ALL.len()];
    let split = SplitPoint::ALL[usize::from(b.byte()) % SplitPoint::ALL.len()];
    let opts = BuildOptions {
        rule,
        split,
        leaf_size: u32::from(b.byte() % 6),
    };
    let (Some(e), Some(o)) = (mesh(b), mesh(b)) else {
        return;
    };
    // One or two parts; the second one placed by a fuzzed pose (placement errors are fine).
    let mut parts = vec![(e.clone(), Pose::IDENTITY)];
    if b.byte() % 2 == 1
        && let Ok(p) = b.pose()
    {
        parts.push((e.clone(), p));
    }
    // The OBB back-end on the same meshes, when the environment is that one mesh.
    let obb = if parts.len() == 1 {
        ObbTree::from_mesh(&e, opts.leaf_size)
            .ok()
            .zip(ObbTree::from_mesh(&o, opts.leaf_size).ok())
    } else {
        None
    };
    let Ok(env) = Environment::<K>::build(parts, &opts) else {
        return;
    };
    assert_eq!(env.validate(), Ok(()));
    let Ok(obj) = FlyingObject::<K>::new(o, &opts) else {
        return;
    };
    let mut st = QueryState::new();
    let mut cold_st = QueryState::new();
    let mut obb_st = ObbQueryState::new();
    for _ in 0..3 {
        let Ok(pose) = b.pose() else { continue };
        let expect = brute_force_contacts(&env, &obj, &pose, 0.0);
        // Detect first: its witness is the last contact of the previous pose.
        let d = env
            .collide(&obj, &pose, &QueryOptions::DETECT, &mut st)
            .unwrap();
        assert_eq!(d.collides, !expect.is_empty());
        if let Some(c) = d.contacts.first() {
            assert!(
                expect.contains(c),
                "detect reported a pair that is not a contact"
            );
        }
        let r = env
            .collide(&obj, &pose, &QueryOptions::REPORT, &mut st)
            .unwrap();
        assert_eq!(r.contacts, &expect[..]);
        // Cold (no witness), and re-bounding from corners where the others use slabs.
        let cold = QueryOptions {
            witness: false,
            rebound: Rebound::Corners,
            ..QueryOptions::DETECT
        };
        let d = env.collide(&obj, &pose, &cold, &mut cold_st).unwrap();
        assert_eq!(d.collides, !expect.is_empty());
        if let Some((te, to)) = &obb {
            let pairs: Vec<[u32; 2]> = expect
                .iter()
                .map(|c| [c.env_triangle, c.object_triangle])
                .collect();
            let r = te
                .collide(to, &pose, &QueryOptions::REPORT, &mut obb_st)
                .unwrap();
            assert_eq!(r.contacts, &pairs[..]);
            let d = te
                .collide(to, &pose, &QueryOptions::DETECT, &mut obb_st)
                .unwrap();
            assert_eq!(d.collides, !pairs.is_empty());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    match b.byte() % 4 {
        0 => run::<6>(&mut b),
        1 => run::<14>(&mut b),
        2 => run::<18>(&mut b),
        _ => run::<26>(&mut b),
    }
});
