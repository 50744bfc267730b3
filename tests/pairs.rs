//! Object against object (`FlyingObject::collide_with`) against brute force: seeded random
//! soups of very different sizes (so either object is the reference), turning and affine
//! poses for both, and the smaller real meshes at near poses. Report must equal the
//! oracle's set; detect must agree with it.

mod common;

use common::{CONFIGS, Rng, cluster, meshes_dir, random_pose, report_and_detect};
use glam::DVec3;
use kdop::oracle::brute_force_object_contacts;
use kdop::{
    BuildOptions, FlyingObject, Mesh, ObjectContact, Pose, QueryOptions, QueryState, Reference,
};

/// Checks report and detect for `a` at `pa` against `b` at `pb` with a fresh state and with
/// `state` (which has seen other poses of the pair, and other pairs); returns the number
/// of contacts.
fn check<const K: usize>(
    a: &FlyingObject<K>,
    pa: &Pose,
    b: &FlyingObject<K>,
    pb: &Pose,
    state: &mut QueryState<K>,
    what: &str,
) -> usize {
    let want = brute_force_object_contacts(a, pa, b, pb, 0.0);
    for config in CONFIGS {
        let (report, detect) = report_and_detect(config);
        // A fresh state takes the size rule's frame; one that has seen the pair may have
        // learned the other (`QueryState::flies_other_side`), never the world's here.
        let mut fresh_state = QueryState::new();
        let fresh = a
            .collide_with(pa, b, pb, &report, &mut fresh_state)
            .unwrap();
        assert_eq!(fresh.reference, Reference::of(a, b), "{what}");
        assert_eq!(
            fresh.contacts,
            &want[..],
            "{what}: report, fresh, {config:?}"
        );
        let got = a.collide_with(pa, b, pb, &report, state).unwrap();
        assert_ne!(got.reference, Reference::World, "{what}");
        assert_eq!(got.contacts, &want[..], "{what}: report, {config:?}");
        let found = a.collide_with(pa, b, pb, &detect, state).unwrap();
        assert_eq!(
            found.collides,
            !want.is_empty(),
            "{what}: detect, {config:?}"
        );
        if let Some(c) = found.contacts.first() {
            assert!(
                want.contains(c),
                "{what}: detect found {c:?}, not a contact"
            );
        }
    }
    want.len()
}

fn random_pairs<const K: usize>(seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let mut state = QueryState::new();
    let mut total = 0;
    for round in 0..7 {
        // Radii 0.2 to 8 against 1: either object may be the reference (the first one
        // only when its box is more than four times the second's).
        let r = [0.2, 0.5, 1.0, 2.0, 4.0, 1.0, 8.0][round];
        let a = FlyingObject::<K>::new(cluster(&mut rng, 120, r, 0.5 * r), &BuildOptions::FLYING)
            .unwrap();
        let b =
            FlyingObject::<K>::new(cluster(&mut rng, 90, 1.0, 0.5), &BuildOptions::FLYING).unwrap();
        for i in 0..8 {
            let pb = random_pose(&mut rng, 1.0, i % 4 == 3);
            let pa = random_pose(&mut rng, 1.0, i % 3 == 2);
            total += check(
                &a,
                &pa,
                &b,
                &pb,
                &mut state,
                &format!("seed {seed} round {round} pose {i}"),
            );
        }
    }
    total
}

#[test]
fn random_soups_equal_brute_force() {
    let contacts = random_pairs::<6>(1) + random_pairs::<18>(2) + random_pairs::<26>(3);
    // Overlapping clusters must make contacts, or the comparison proves little.
    assert!(contacts > 500, "only {contacts} contacts");
}

#[test]
fn either_order_gives_the_same_pairs() {
    let mut rng = Rng::new(7);
    let big =
        FlyingObject::<18>::new(cluster(&mut rng, 200, 3.0, 1.5), &BuildOptions::FLYING).unwrap();
    let small =
        FlyingObject::<18>::new(cluster(&mut rng, 80, 0.6, 0.3), &BuildOptions::FLYING).unwrap();
    assert_eq!(Reference::of(&big, &small), Reference::A);
    assert_eq!(Reference::of(&small, &big), Reference::B);
    let (mut s1, mut s2) = (QueryState::new(), QueryState::new());
    let mut seen = 0;
    for _ in 0..20 {
        let (pa, pb) = (
            random_pose(&mut rng, 1.0, false),
            random_pose(&mut rng, 1.0, false),
        );
        let ab = big
            .collide_with(&pa, &small, &pb, &QueryOptions::REPORT, &mut s1)
            .unwrap();
        let ba = small
            .collide_with(&pb, &big, &pa, &QueryOptions::REPORT, &mut s2)
            .unwrap();
        let mut flipped: Vec<ObjectContact> = ba
            .contacts
            .iter()
            .map(|c| ObjectContact {
                a_triangle: c.b_triangle,
                b_triangle: c.a_triangle,
            })
            .collect();
        flipped.sort_unstable();
        assert_eq!(ab.contacts, &flipped[..]);
        seen += ab.contacts.len();
    }
    assert!(seen > 0);
}

#[test]
fn flattening_poses_compare_in_the_other_frame_or_the_world() {
    let tri = Mesh::new(vec![DVec3::ZERO, DVec3::X, DVec3::Y], vec![[0, 1, 2]]).unwrap();
    let big = Mesh::new(
        vec![
            DVec3::new(0.2, 0.2, -4.0),
            DVec3::new(0.2, 0.2, 4.0),
            DVec3::new(0.2, 9.0, 0.0),
        ],
        vec![[0, 1, 2]],
    )
    .unwrap();
    let a = FlyingObject::<18>::new(tri, &BuildOptions::FLYING).unwrap();
    let b = FlyingObject::<18>::new(big, &BuildOptions::FLYING).unwrap();
    assert_eq!(Reference::of(&a, &b), Reference::B);
    // Flattens z: `b` becomes a segment through `a`'s triangle.
    let flat =
        Pose::from_rows([1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
    let mut state = QueryState::new();
    for (pa, pb) in [(Pose::IDENTITY, flat), (flat, Pose::IDENTITY)] {
        let want = brute_force_object_contacts(&a, &pa, &b, &pb, 0.0);
        assert_eq!(want.len(), 1);
        let got = a
            .collide_with(&pa, &b, &pb, &QueryOptions::REPORT, &mut state)
            .unwrap();
        assert_eq!(got.contacts, &want[..]);
    }
    // Neither pose can be inverted: bounds are compared in the world frame, with the same
    // answers as brute force, in report and in detect mode. Flattened onto the plane
    // x = t, `a` becomes the segment x = t, z = 0, 0 <= y <= 1, and `b` (already in x =
    // 0.2) keeps its triangle, which crosses z = 0 along x = 0.2, 0.2 <= y <= 9.
    let onto_x = |t: f64| {
        Pose::from_rows([0.0, 0.0, 0.0, t, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]).unwrap()
    };
    let cases = [
        (flat, flat, 1),
        (onto_x(0.2), flat, 1),
        (flat, onto_x(0.2), 1),
        (flat, onto_x(5.0), 0),
        (onto_x(0.2), onto_x(0.2), 1),
        (onto_x(0.2), onto_x(0.3), 0),
    ];
    for (pa, pb, hits) in cases {
        let want = brute_force_object_contacts(&a, &pa, &b, &pb, 0.0);
        assert_eq!(want.len(), hits, "the oracle on the flattened pair");
        let got = a
            .collide_with(&pa, &b, &pb, &QueryOptions::REPORT, &mut state)
            .unwrap();
        assert_eq!(got.reference, Reference::World);
        assert_eq!(got.contacts, &want[..]);
        let found = a
            .collide_with(&pa, &b, &pb, &QueryOptions::DETECT, &mut state)
            .unwrap();
        assert_eq!(found.collides, hits > 0);
    }
}

/// Each of the smaller real meshes against each, at near poses, with both objects turned.
#[test]
fn real_meshes_equal_brute_force() {
    let Some(dir) = meshes_dir() else { return };
    let names = [
        "fcl_rob.obj",
        "boeing_part.obj",
        "kuka_iiwa_link0.obj",
        "trefoil_knot.obj",
        "soccerball.obj",
    ];
    let meshes: Vec<Mesh> = names
        .iter()
        .map(|n| kdop::io::formats::load_mesh(dir.join(n)).unwrap())
        .collect();
    let objects: Vec<FlyingObject<18>> = meshes
        .iter()
        .map(|m| FlyingObject::new(m.clone(), &BuildOptions::FLYING).unwrap())
        .collect();
    let mut rng = Rng::new(11);
    let (mut contacts, mut touching, mut poses) = (0, 0, 0);
    for (i, a) in objects.iter().enumerate() {
        for (j, b) in objects.iter().enumerate() {
            let near =
                kdop::scene::near_poses(&meshes[j], &meshes[i], 2, (i * 8 + j) as u64).unwrap();
            let mut state = QueryState::new();
            for (k, rel) in near.iter().enumerate() {
                // `b` anywhere, `a` near it: a = pb ∘ rel.
                let pb = random_pose(&mut rng, 50.0, false);
                let pa = pb.after(rel).unwrap();
                let n = check(
                    a,
                    &pa,
                    b,
                    &pb,
                    &mut state,
                    &format!("{} x {}, pose {k}", names[i], names[j]),
                );
                contacts += n;
                touching += usize::from(n > 0);
                poses += 1;
            }
        }
    }
    assert!(
        touching * 2 > poses && contacts > 500,
        "{touching} of {poses} poses touch, {contacts} pairs"
    );
}

/// A one-part environment much smaller than the object is flown in the object's frame; the
/// copy that needs is counted in its memory, and the answers stay the brute force's.
#[test]
fn a_small_environment_flown_in_the_object_counts_its_copy() {
    let mut rng = Rng::new(5);
    let env = kdop::Environment::<18>::from_mesh(
        cluster(&mut rng, 100, 0.3, 0.2),
        &BuildOptions::ENVIRONMENT,
    )
    .unwrap();
    let big =
        FlyingObject::<18>::new(cluster(&mut rng, 200, 5.0, 3.0), &BuildOptions::FLYING).unwrap();
    let before = env.memory_bytes();
    let mut state = QueryState::new();
    state.prepare(&env, &big);
    assert!(env.memory_bytes() > before);
    for _ in 0..10 {
        let pose = random_pose(&mut rng, 0.5, false);
        let want = kdop::oracle::brute_force_contacts(&env, &big, &pose, 0.0);
        let got = env
            .collide(&big, &pose, &QueryOptions::REPORT, &mut state)
            .unwrap();
        assert_eq!(got.contacts, &want[..]);
    }
}

/// A side at the identity pose is compared in the world frame without a twin (as an
/// environment is): its triangles as stored must answer as the contract places them, also
/// where coordinates are zeros of either sign and triangles only touch.
#[test]
fn a_side_at_the_identity_answers_as_brute_force() {
    let mut rng = Rng::new(11);
    let mut state = QueryState::new();
    let mut contacts = 0;
    let mut references = [0; 2];
    for round in 0..6 {
        let r = [0.2, 1.0, 8.0][round % 3];
        let a = FlyingObject::<18>::new(cluster(&mut rng, 120, r, 0.5 * r), &BuildOptions::FLYING)
            .unwrap();
        let b = FlyingObject::<18>::new(cluster(&mut rng, 90, 1.0, 0.5), &BuildOptions::FLYING)
            .unwrap();
        references[usize::from(Reference::of(&a, &b) == Reference::B)] += 1;
        for i in 0..6 {
            let other = random_pose(&mut rng, 1.0, i % 3 == 2);
            let what = format!("round {round} pose {i}");
            let (pa, pb) = if i % 2 == 0 {
                (Pose::IDENTITY, other)
            } else {
                (other, Pose::IDENTITY)
            };
            contacts += check(&a, &pa, &b, &pb, &mut state, &what);
        }
    }
    assert!(
        references.iter().all(|&n| n > 0),
        "references {references:?}"
    );
    assert!(contacts > 100, "only {contacts} contacts");
    // Squares in the plane z = 0 (zeros of both signs) and one across it, touching at
    // edges, a corner and faces: each at the identity against the others moved by whole
    // steps, so that contacts are touching ones.
    let square = |z: f64| {
        Mesh::new(
            vec![
                DVec3::new(-0.0, -0.0, z),
                DVec3::new(1.0, 0.0, z),
                DVec3::new(1.0, 1.0, z),
                DVec3::new(0.0, 1.0, z),
            ],
            vec![[0, 1, 2], [0, 2, 3]],
        )
        .unwrap()
    };
    let wall = Mesh::new(
        vec![
            DVec3::new(1.0, -0.0, -1.0),
            DVec3::new(1.0, 1.0, -1.0),
            DVec3::new(1.0, 1.0, 1.0),
            DVec3::new(1.0, 0.0, 1.0),
        ],
        vec![[0, 1, 2], [0, 2, 3]],
    )
    .unwrap();
    let shapes = [square(-0.0), square(0.0), wall];
    let objects: Vec<FlyingObject<18>> = shapes
        .iter()
        .map(|m| FlyingObject::new(m.clone(), &BuildOptions::FLYING).unwrap())
        .collect();
    let steps = [
        DVec3::ZERO,
        DVec3::new(1.0, 0.0, 0.0),
        DVec3::new(1.0, 1.0, 0.0),
        DVec3::new(-1.0, 0.0, 0.0),
        DVec3::new(0.0, -1.0, -0.0),
    ];
    let mut touching = 0;
    for (i, a) in objects.iter().enumerate() {
        for (j, b) in objects.iter().enumerate() {
            for step in steps {
                let moved = Pose::from_translation(step).unwrap();
                let what = format!("shape {i} against shape {j} moved by {step}");
                let n = check(a, &Pose::IDENTITY, b, &moved, &mut state, &what);
                check(b, &moved, a, &Pose::IDENTITY, &mut state, &what);
                touching += usize::from(n > 0);
            }
        }
    }
    assert!(touching > 10, "only {touching} touching placements");
}
