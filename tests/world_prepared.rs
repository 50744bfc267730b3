//! Edits prepared through `&self` and applied in one call answer as the same edits made
//! one by one; a batch prepared before another edit is refused whole; probes from other
//! threads behind a read lock see the world before or after a batch, never between.

mod common;

use common::{Rng, cluster, random_pose};
use glam::DVec3;
use kdop::{Error, Mesh, ObjectDesc, PartDesc, PartEdit, PartHandle, Pose, ProbeScratch, World};
use parking_lot::RwLock;
use std::sync::Arc;

/// Two worlds built alike: three shapes, parts and objects with user values.
fn world(seed: u64) -> (World<18>, Vec<kdop::ShapeId>, Vec<PartHandle>) {
    let mut rng = Rng::new(seed);
    let mut w = World::<18>::new();
    let shapes: Vec<_> = [(40, 0.3, 0.1), (60, 1.0, 0.4), (30, 2.0, 0.8)]
        .iter()
        .map(|&(n, r, s)| w.add_shape(cluster(&mut rng, n, r, s)).unwrap())
        .collect();
    let parts = (0..12)
        .map(|i| {
            let desc = PartDesc {
                user: 100 + i,
                ..PartDesc::default()
            };
            let pose = random_pose(&mut rng, 2.5, i % 4 == 0);
            w.add_part(shapes[(i % 3) as usize], pose, desc).unwrap()
        })
        .collect();
    for i in 0..14 {
        let desc = ObjectDesc {
            user: i,
            ..ObjectDesc::default()
        };
        let pose = random_pose(&mut rng, 3.0, false);
        w.add_object(shapes[(i % 3) as usize], pose, desc).unwrap();
    }
    w.step().unwrap();
    (w, shapes, parts)
}

/// A step's colliding pairs by user values, with their contacts.
fn by_user(w: &World<18>) -> Vec<(u64, u64, Vec<[u32; 2]>)> {
    let mut v: Vec<_> = w
        .pairs()
        .iter()
        .map(|p| (p.a_user, p.b_user, w.contacts(p).unwrap().to_vec()))
        .collect();
    v.sort();
    v
}

#[test]
fn a_prepared_batch_answers_as_single_edits() {
    for seed in [1, 2, 3] {
        let (mut one, shapes, parts) = world(seed);
        let (mut batch, batch_shapes, batch_parts) = world(seed);
        // The same edits for each world, in its own handles.
        let edits_for = |shapes: &[kdop::ShapeId], parts: &[PartHandle]| {
            let mut rng = Rng::new(seed ^ 99);
            let mut edits = Vec::new();
            for (i, &p) in parts.iter().enumerate() {
                edits.push(match i % 4 {
                    0 => PartEdit::Remove(p),
                    1 => PartEdit::Move(p, random_pose(&mut rng, 2.5, i % 3 == 0)),
                    2 => PartEdit::Reshape(p, shapes[(i + 1) % 3]),
                    _ => PartEdit::Insert {
                        shape: shapes[i % 3],
                        placement: random_pose(&mut rng, 2.5, false),
                        desc: PartDesc {
                            user: 200 + i as u64,
                            ..PartDesc::default()
                        },
                    },
                });
            }
            edits
        };
        let mut rng = Rng::new(seed ^ 7);
        // A new shape built away from the world, then inserted by the batch.
        let mesh = cluster(&mut rng, 50, 1.5, 0.5);
        let prepared = batch.prepare_shape(mesh.clone()).unwrap();
        let extra = batch.add_prepared_shape(prepared).unwrap();
        let same = one.add_shape(mesh).unwrap();
        let at = random_pose(&mut rng, 1.0, false);
        let desc = PartDesc {
            user: 999,
            ..PartDesc::default()
        };
        let mut batch_edits = edits_for(&batch_shapes, &batch_parts);
        batch_edits.push(PartEdit::Insert {
            shape: extra,
            placement: at,
            desc,
        });
        let p = batch.prepare_edits(&batch_edits).unwrap();
        assert_eq!(p.len(), batch_edits.len());
        let inserted = batch.finalize_edits(p).unwrap();
        assert_eq!(inserted.len(), 4);
        for e in edits_for(&shapes, &parts) {
            match e {
                PartEdit::Remove(h) => one.remove_part(h).unwrap(),
                PartEdit::Move(h, pose) => one.set_part_placement(h, pose).unwrap(),
                PartEdit::Reshape(h, s) => one.set_part_shape(h, s).unwrap(),
                PartEdit::Insert {
                    shape,
                    placement,
                    desc,
                } => {
                    one.add_part(shape, placement, desc).unwrap();
                }
            }
        }
        one.add_part(same, at, desc).unwrap();
        one.step().unwrap();
        batch.step().unwrap();
        assert!(
            !by_user(&one).is_empty(),
            "seed {seed}: a scene with contacts"
        );
        assert_eq!(by_user(&batch), by_user(&one), "seed {seed}");
        assert_eq!(batch.part_count(), one.part_count());
        batch.part_tree().validate().unwrap();
    }
}

#[test]
fn a_stale_or_bad_batch_changes_nothing() {
    let (mut w, shapes, parts) = world(7);
    let before = w.to_bytes();
    // A part removed earlier in the batch cannot be named again; the error names the edit.
    let err = w
        .prepare_edits(&[
            PartEdit::Remove(parts[0]),
            PartEdit::Move(parts[0], Pose::IDENTITY),
        ])
        .err()
        .unwrap();
    assert!(err.to_string().contains("part edit 1"), "{err}");
    assert!(matches!(err.root(), Error::StaleHandle { what: "part" }));
    // Prepared, then the world is edited: the batch is refused whole.
    let p = w
        .prepare_edits(&[PartEdit::Remove(parts[1]), PartEdit::Remove(parts[2])])
        .unwrap();
    w.set_part_placement(parts[3], Pose::from_translation(DVec3::X).unwrap())
        .unwrap();
    let edited = w.to_bytes();
    assert!(matches!(
        w.finalize_edits(p),
        Err(Error::StaleHandle {
            what: "prepared edits"
        })
    ));
    assert_eq!(w.to_bytes(), edited, "a refused batch changes nothing");
    assert_ne!(edited, before);
    // Another world's batch or shape.
    let (other, other_shapes, _) = world(8);
    let theirs = other.prepare_edits(&[]).unwrap();
    assert!(matches!(
        w.finalize_edits(theirs),
        Err(Error::ForeignHandle { .. })
    ));
    let shape = other
        .prepare_shape(cluster(&mut Rng::new(3), 5, 1.0, 0.5))
        .unwrap();
    assert!(matches!(
        w.add_prepared_shape(shape),
        Err(Error::ForeignHandle { .. })
    ));
    let err = w
        .prepare_edits(&[PartEdit::Reshape(parts[4], other_shapes[0])])
        .err()
        .unwrap();
    assert!(
        matches!(err.root(), Error::ForeignHandle { what: "shape" }),
        "{err}"
    );
    // A batch with a flattening insert is fine (parts take any pose); one whose placement
    // is not finite is refused before anything happens.
    let flat =
        Pose::from_rows([1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
    let ok = w
        .prepare_edits(&[PartEdit::Insert {
            shape: shapes[0],
            placement: flat,
            desc: PartDesc::default(),
        }])
        .unwrap();
    assert_eq!(w.finalize_edits(ok).unwrap().len(), 1);
}

#[test]
fn probes_behind_a_read_lock_never_see_half_a_batch() {
    // A plate that the probe always touches, and a batch that puts a second plate under
    // the probe and takes it away again, with unrelated parts inserted and removed.
    let plate = Mesh::new(
        vec![
            DVec3::new(-1.0, -1.0, 0.0),
            DVec3::new(1.0, -1.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
        ],
        vec![[0, 1, 2]],
    )
    .unwrap();
    let pin = Mesh::new(
        vec![
            DVec3::new(0.0, 0.0, -1.0),
            DVec3::new(0.0, 0.0, 1.0),
            DVec3::new(0.0, 0.1, 1.0),
        ],
        vec![[0, 1, 2]],
    )
    .unwrap();
    let mut w = World::<18>::new();
    let plate = w.add_shape(plate).unwrap();
    let pin = w.add_shape(pin).unwrap();
    let under = |z: f64| Pose::from_translation(DVec3::new(0.0, 0.0, z)).unwrap();
    let far = Pose::from_translation(DVec3::new(50.0, 0.0, 0.0)).unwrap();
    let user = |u| PartDesc {
        user: u,
        ..PartDesc::default()
    };
    w.add_part(plate, under(0.0), user(1)).unwrap();
    let second = w.add_part(plate, far, user(2)).unwrap();
    let world = Arc::new(RwLock::new(w));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Probes done over all threads: the batches go on until both sides have been seen.
    let probed = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let probes: Vec<_> = (0..2)
        .map(|_| {
            let (world, stop, probed) =
                (Arc::clone(&world), Arc::clone(&stop), Arc::clone(&probed));
            std::thread::spawn(move || {
                let mut scratch = ProbeScratch::new();
                let mut hits = Vec::new();
                let mut seen = [0u32; 2];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let w = world.read();
                    w.probe(
                        pin,
                        &Pose::IDENTITY,
                        &ObjectDesc::default(),
                        &mut scratch,
                        &mut hits,
                    )
                    .unwrap();
                    let users: Vec<u64> = hits.iter().map(|h| h.user).collect();
                    // Before a batch, or after one: never one plate moved and not the
                    // other's companion edits.
                    assert!(users == [1] || users == [1, 2], "{users:?}");
                    seen[users.len() - 1] += 1;
                    probed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                seen
            })
        })
        .collect();
    let mut extra: Vec<PartHandle> = Vec::new();
    let mut round = 0;
    // At least 200 batches, and on until the probes have run among them a while (a probe
    // thread may not be scheduled at all during the first ones).
    while round < 200 || probed.load(std::sync::atomic::Ordering::Relaxed) < 400 {
        round += 1;
        let z = if round % 2 == 0 { 0.3 } else { 0.0 };
        let pose = if round % 2 == 0 { under(z) } else { far };
        let mut edits = vec![PartEdit::Move(second, pose)];
        edits.extend(extra.drain(..).map(PartEdit::Remove));
        for i in 0..5u32 {
            edits.push(PartEdit::Insert {
                shape: plate,
                placement: Pose::from_translation(DVec3::new(20.0 + f64::from(i), 0.0, 0.0))
                    .unwrap(),
                desc: user(10 + u64::from(i)),
            });
        }
        // Prepared under the read lock, while probes go on; applied under the write lock.
        let prepared = world.read().prepare_edits(&edits).unwrap();
        extra = world.write().finalize_edits(prepared).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    // Each probe checked its answer above; here, that they ran among the batches.
    let seen = probes
        .into_iter()
        .map(|p| p.join().unwrap())
        .fold([0u32; 2], |a, s| [a[0] + s[0], a[1] + s[1]]);
    assert!(seen[0] + seen[1] >= 400, "{seen:?}");
}
