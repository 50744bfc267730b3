//! Saved worlds: a world edited (parts removed, moved and re-shaped, objects removed, a
//! shape deformed), saved and read back answers every step as the original does, on the
//! same calls; damaged, cut, foreign and inconsistent files are typed errors.

mod common;

use common::{Rng, cluster, random_pose};
use kdop::{
    Body, BuildOptions, Environment, Error, FormatError, Mesh, Mode, ObjectDesc, ObjectId,
    PartDesc, PartHandle, Pose, World,
};

/// A world with holes in its handle slots, a deformed shape and affine part placements;
/// its objects' handles (in the world's order) and its meshes' current forms.
fn edited_world(seed: u64) -> World<18> {
    let mut rng = Rng::new(seed);
    let mut w = World::<18>::new();
    let mut meshes: Vec<Mesh> = [(40, 0.05, 0.02), (60, 1.0, 0.4), (30, 6.0, 2.0)]
        .iter()
        .map(|&(n, r, s)| cluster(&mut rng, n, r, s))
        .collect();
    let shapes: Vec<_> = meshes
        .iter()
        .map(|m| w.add_shape(m.clone()).unwrap())
        .collect();
    let parts: Vec<PartHandle> = (0..10)
        .map(|i| {
            let desc = PartDesc {
                group: 1 + (i % 2),
                user: 100 + u64::from(i),
                ..PartDesc::default()
            };
            w.add_part(
                shapes[(i % 3) as usize],
                random_pose(&mut rng, 2.5, i % 3 == 0),
                desc,
            )
            .unwrap()
        })
        .collect();
    let objects: Vec<ObjectId> = (0..16)
        .map(|i| {
            let desc = ObjectDesc {
                mode: if i % 4 == 1 {
                    Mode::Detect
                } else {
                    Mode::Report
                },
                group: 1 << (i % 2),
                mask: if i % 5 == 0 { 1 } else { u32::MAX },
                user: i,
            };
            w.add_object(
                shapes[(i % 3) as usize],
                random_pose(&mut rng, 3.0, false),
                desc,
            )
            .unwrap()
        })
        .collect();
    w.step().unwrap();
    for &p in &parts[..3] {
        w.remove_part(p).unwrap();
    }
    w.set_part_placement(parts[4], random_pose(&mut rng, 2.5, true))
        .unwrap();
    w.set_part_shape(parts[5], shapes[0]).unwrap();
    for &o in &objects[..4] {
        w.remove_object(o).unwrap();
    }
    // A deformed shape is saved as it stands.
    let m = &mut meshes[1];
    let moved: Vec<_> = m
        .vertices()
        .iter()
        .map(|&v| v * 1.3 + rng.vec(-0.05, 0.05))
        .collect();
    *m = Mesh::new(moved, m.triangles().to_vec()).unwrap();
    w.deform_shape(shapes[1], m.vertices()).unwrap();
    w.step().unwrap();
    w
}

/// A step's pairs with each side named by its index in its world's handle order, the
/// users, the event and the contacts.
type Seen = Vec<(usize, usize, u64, u64, bool, Vec<[u32; 2]>)>;

fn seen(w: &World<18>) -> Seen {
    let objects: Vec<_> = w.object_ids().collect();
    let parts: Vec<_> = w.part_ids().collect();
    let index = |b: Body| match b {
        Body::Object(o) => objects.iter().position(|&x| x == o).unwrap(),
        Body::Part(p) => 1000 + parts.iter().position(|&x| x == p).unwrap(),
    };
    w.pairs()
        .iter()
        .map(|p| {
            (
                index(p.a),
                index(p.b),
                p.a_user,
                p.b_user,
                p.event == kdop::PairEvent::Begin,
                w.contacts(p).unwrap().to_vec(),
            )
        })
        .collect()
}

#[test]
fn a_saved_world_answers_as_the_original() {
    for seed in [3, 11, 29] {
        let mut original = edited_world(seed);
        let bytes = original.to_bytes();
        let loaded = World::<18>::from_bytes(&bytes).unwrap();
        let mut copy = loaded.world;
        assert_eq!(loaded.objects, copy.object_ids().collect::<Vec<_>>());
        assert_eq!(loaded.parts, copy.part_ids().collect::<Vec<_>>());
        assert_eq!(copy.object_count(), original.object_count());
        assert_eq!(copy.part_count(), original.part_count());
        assert_eq!(
            copy.to_bytes(),
            bytes,
            "seed {seed}: saved again, the same bytes"
        );
        let (ids, copy_ids): (Vec<_>, Vec<_>) =
            (original.object_ids().collect(), copy.object_ids().collect());
        let mut rng = Rng::new(seed ^ 77);
        for frame in 0..6 {
            if frame > 0 {
                // The same calls on both: small moves, a teleport.
                for (&a, &b) in ids.iter().zip(&copy_ids) {
                    let step = Pose::from_translation(rng.vec(-0.3, 0.3)).unwrap();
                    let pose = step.after(&original.pose(a).unwrap()).unwrap();
                    original.set_pose(a, pose).unwrap();
                    copy.set_pose(b, pose).unwrap();
                }
            }
            original.step().unwrap();
            copy.step().unwrap();
            let (mut want, got) = (seen(&original), seen(&copy));
            assert!(
                !want.is_empty() || frame > 0,
                "seed {seed}: a scene with contacts"
            );
            if frame == 0 {
                // The copy's history starts at its first step: every pair begins there.
                want.iter_mut().for_each(|p| p.4 = true);
            }
            assert_eq!(got, want, "seed {seed}, frame {frame}");
            if frame > 0 {
                assert_eq!(copy.ended().len(), original.ended().len());
            }
        }
    }
}

#[test]
fn damaged_world_files_are_typed_errors() {
    let w = edited_world(5);
    let bytes = w.to_bytes();
    // Cut anywhere: truncated (or, cut inside the header, not a kdop file at all).
    for cut in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
        match World::<18>::from_bytes(&bytes[..cut]) {
            Err(Error::Format(FormatError::Truncated | FormatError::NotKdopFile)) => {}
            other => panic!("cut at {cut}: {:?}", other.map(|_| ())),
        }
    }
    // Any byte flipped past the magic, version, k and length: the checksum.
    for at in (24..bytes.len()).step_by(31) {
        let mut b = bytes.clone();
        b[at] ^= 0x40;
        assert!(
            matches!(
                World::<18>::from_bytes(&b),
                Err(Error::Format(FormatError::ChecksumMismatch))
            ),
            "flipped byte {at}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        World::<18>::from_bytes(&longer),
        Err(Error::Format(FormatError::Corrupt(_)))
    ));
    assert!(matches!(
        World::<14>::from_bytes(&bytes),
        Err(Error::Format(FormatError::WrongK {
            found: 18,
            expected: 14
        }))
    ));
    // An environment file is another kind of file.
    let env = Environment::<18>::build(vec![], &kdop::BuildOptions::ENVIRONMENT).unwrap();
    assert!(matches!(
        World::<18>::from_bytes(&env.to_bytes()),
        Err(Error::Format(FormatError::NotKdopFile))
    ));
    // Consistent checksums over inconsistent content: a shape index past the shapes, an
    // unknown mode, a NaN vertex (named by its shape).
    let mut w = World::<18>::new();
    let s = w.add_shape(cluster(&mut Rng::new(1), 3, 1.0, 0.5)).unwrap();
    w.add_object(s, Pose::IDENTITY, ObjectDesc::default())
        .unwrap();
    let good = w.to_bytes();
    let object_at = good.len() - 4 - (4 + 96 + 4 + 16);
    let mut bad_shape = good.clone();
    bad_shape[object_at..object_at + 4].copy_from_slice(&7u32.to_le_bytes());
    assert!(matches!(
        World::<18>::from_bytes(&reseal(bad_shape)),
        Err(Error::Format(FormatError::Corrupt(_)))
    ));
    let mut bad_mode = good.clone();
    bad_mode[object_at + 100] = 9;
    assert!(matches!(
        World::<18>::from_bytes(&reseal(bad_mode)),
        Err(Error::Format(FormatError::Corrupt("unknown object mode")))
    ));
    // The first vertex's x: after the header (24), options (16 + 32 + 8 + 4), the shape
    // count, the shape's build options and its two counts.
    let first_vertex = 24 + 60 + 8 + 8 + 16;
    let mut nan = good.clone();
    nan[first_vertex..first_vertex + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    let err = World::<18>::from_bytes(&reseal(nan)).err().unwrap();
    assert!(err.to_string().contains("shape 0"), "{err}");
    assert!(
        matches!(err.root(), Error::NonFiniteCoordinate { .. }),
        "{err}"
    );
}

/// The bytes of an older version of a current file: without the shapes' own build
/// options (version 2), and without `renew_budget` too (version 1), with the version,
/// length and checksum set. What the older code wrote for a world whose shapes were all
/// built with `shape_build`.
fn older(v3: &[u8], version: u32) -> Vec<u8> {
    let u64_at = |at: usize| u64::from_le_bytes(v3[at..at + 8].try_into().unwrap()) as usize;
    // The header's 24 bytes, the options' 56 and `renew_budget`'s 4, then the shapes.
    let mut out = if version >= 2 {
        v3[..24 + 60].to_vec()
    } else {
        v3[..24 + 56].to_vec()
    };
    let mut at = 24 + 60;
    let shapes = u64_at(at);
    out.extend_from_slice(&v3[at..at + 8]);
    at += 8;
    for _ in 0..shapes {
        at += 8; // the shape's own build options
        let (nv, nt) = (u64_at(at), u64_at(at + 8));
        let end = at + 16 + nv * 24 + nt * 12;
        out.extend_from_slice(&v3[at..end]);
        at = end;
    }
    out.extend_from_slice(&v3[at..]);
    out[8..12].copy_from_slice(&version.to_le_bytes());
    let len = out.len() as u64;
    out[16..24].copy_from_slice(&len.to_le_bytes());
    reseal(out)
}

/// `b` with its checksum (the last four bytes) made right for the bytes before it.
fn reseal(mut b: Vec<u8>) -> Vec<u8> {
    let n = b.len() - 4;
    let crc = crc32fast::hash(&b[..n]);
    b[n..].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Files of versions 1 (before `renew_budget`) and 2 (before each shape's own build
/// options) still load: version 1 as a world that renews no subtrees (the behaviour of
/// the code that wrote it), both with every shape built with `shape_build`, and both
/// answer as the saved world.
#[test]
fn older_files_load() {
    let w = edited_world(5);
    let v3 = w.to_bytes();
    let mut new = World::<18>::from_bytes(&v3).unwrap().world;
    new.step().unwrap();
    assert!(!new.pairs().is_empty(), "no pairs to compare");
    for version in [1, 2] {
        let loaded = World::<18>::from_bytes(&older(&v3, version)).unwrap();
        let mut old = loaded.world;
        let renew = if version == 1 {
            0
        } else {
            w.options().renew_budget
        };
        assert_eq!(old.options().renew_budget, renew);
        assert_eq!(
            kdop::WorldOptions {
                renew_budget: w.options().renew_budget,
                ..*old.options()
            },
            *w.options()
        );
        for &s in &loaded.shapes {
            assert_eq!(old.shape_build(s).unwrap(), w.options().shape_build);
        }
        old.step().unwrap();
        assert_eq!(old.pairs().len(), new.pairs().len(), "version {version}");
        for (a, b) in old.pairs().iter().zip(new.pairs()) {
            assert_eq!(old.contacts(a).unwrap(), new.contacts(b).unwrap());
        }
    }
}

/// A shape built with options of its own (here for deforming) keeps them through a save,
/// and the loaded world answers as the saved one. Report mode: a deformed shape is built
/// afresh on load, so a detect pair may name another of its contacts.
#[test]
fn a_shape_keeps_its_own_build_options() {
    let mut rng = Rng::new(17);
    let mut w = World::<18>::new();
    let rigid = w.add_shape(cluster(&mut rng, 40, 1.0, 0.4)).unwrap();
    let sheet = cluster(&mut rng, 300, 1.5, 0.3);
    let soft = w
        .add_shape_with(sheet.clone(), &BuildOptions::DEFORMING)
        .unwrap();
    assert_eq!(w.shape_build(rigid).unwrap(), BuildOptions::FLYING);
    assert_eq!(w.shape_build(soft).unwrap(), BuildOptions::DEFORMING);
    // A binary tree's leaves.
    let leaves = |w: &World<18>, s| w.shape_object(s).unwrap().bvh().node_count().div_ceil(2);
    assert!(
        leaves(&w, soft) * 3 < sheet.triangle_count(),
        "leaves of up to 16"
    );
    for i in 0..12u64 {
        let shape = [rigid, soft][(i % 2) as usize];
        let desc = ObjectDesc {
            mode: Mode::Report,
            user: i,
            ..ObjectDesc::default()
        };
        w.add_object(shape, random_pose(&mut rng, 2.0, false), desc)
            .unwrap();
    }
    w.add_part(soft, random_pose(&mut rng, 1.0, false), PartDesc::default())
        .unwrap();
    let grown: Vec<_> = sheet.vertices().iter().map(|&v| v * 1.2).collect();
    w.deform_shape(soft, &grown).unwrap();
    w.step().unwrap();
    let loaded = World::<18>::from_bytes(&w.to_bytes()).unwrap();
    let mut copy = loaded.world;
    assert_eq!(
        copy.shape_build(loaded.shapes[0]).unwrap(),
        BuildOptions::FLYING
    );
    assert_eq!(
        copy.shape_build(loaded.shapes[1]).unwrap(),
        BuildOptions::DEFORMING
    );
    for _ in 0..2 {
        w.step().unwrap();
        copy.step().unwrap();
        let (a, b) = (seen(&w), seen(&copy));
        assert!(!a.is_empty(), "no pairs to compare");
        // Events start afresh in the loaded world.
        let drop_events = |s: Seen| -> Vec<_> {
            s.into_iter()
                .map(|(a, b, x, y, _, c)| (a, b, x, y, c))
                .collect()
        };
        assert_eq!(drop_events(a), drop_events(b));
    }
}

#[test]
fn files_are_written_whole_and_errors_name_them() {
    let dir = std::env::temp_dir().join(format!("kdop-world-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scene.kdopw");
    let w = edited_world(8);
    w.save_to_file(&path).unwrap();
    let back = World::<18>::load_from_file(&path).unwrap();
    assert_eq!(back.world.to_bytes(), w.to_bytes());
    let missing = dir.join("missing.kdopw");
    let err = World::<18>::load_from_file(&missing).err().unwrap();
    assert!(err.to_string().contains("missing.kdopw"), "{err}");
    std::fs::write(&path, b"KDOPWLD\0").unwrap();
    let err = World::<18>::load_from_file(&path).err().unwrap();
    assert!(err.to_string().contains("scene.kdopw"), "{err}");
    assert!(matches!(err.root(), Error::Format(FormatError::Truncated)));
    std::fs::remove_dir_all(&dir).unwrap();
}
