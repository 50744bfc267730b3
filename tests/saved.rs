//! Saved hierarchies: round trips answer exactly as the original; damaged, truncated,
//! hostile and foreign files give typed errors, never panics.

mod common;

use common::Rng;
use glam::DVec3;
use kdop::{
    BuildOptions, Environment, Error, FlyingObject, FormatError, Mesh, Pose, QueryOptions,
    QueryState,
};

fn scene(rng: &mut Rng) -> (Vec<(Mesh, Pose)>, Mesh) {
    let blob = |rng: &mut Rng, n: usize| {
        let tris: Vec<[DVec3; 3]> = (0..n)
            .map(|_| {
                let c = rng.vec(-3.0, 3.0);
                [c, c + rng.vec(-0.5, 0.5), c + rng.vec(-0.5, 0.5)]
            })
            .collect();
        Mesh::from_triangles(&tris).unwrap()
    };
    let parts = (0..3)
        .map(|i| {
            (
                blob(rng, 400),
                Pose::from_translation(DVec3::new(i as f64 * 2.0, 0.0, 0.0)).unwrap(),
            )
        })
        .collect();
    (parts, blob(rng, 50))
}

fn roundtrip<const K: usize>() {
    let mut rng = Rng::new(K as u64);
    let (parts, obj_mesh) = scene(&mut rng);
    let env = Environment::<K>::build(parts, &BuildOptions::ENVIRONMENT).unwrap();
    let bytes = env.to_bytes();
    let back = Environment::<K>::from_bytes(&bytes).unwrap();
    assert_eq!(
        back.to_bytes(),
        bytes,
        "saving the loaded environment gives the same bytes"
    );
    assert_eq!(back.part_count(), env.part_count());
    let obj = FlyingObject::<K>::new(obj_mesh, &BuildOptions::FLYING).unwrap();
    let (mut s1, mut s2) = (QueryState::new(), QueryState::new());
    let mut contacts = 0;
    for _ in 0..30 {
        let pose = Pose::from_translation(rng.vec(-2.0, 6.0)).unwrap();
        let a = env
            .collide(&obj, &pose, &QueryOptions::REPORT, &mut s1)
            .unwrap();
        let b = back
            .collide(&obj, &pose, &QueryOptions::REPORT, &mut s2)
            .unwrap();
        assert_eq!(a.contacts, b.contacts);
        assert_eq!(a.stats, b.stats);
        contacts += a.contacts.len();
    }
    assert!(contacts > 0);
}

#[test]
fn roundtrip_answers_exactly_as_the_original() {
    roundtrip::<6>();
    roundtrip::<14>();
    roundtrip::<18>();
    roundtrip::<26>();
}

fn sample_bytes() -> Vec<u8> {
    let mut rng = Rng::new(99);
    let (parts, _) = scene(&mut rng);
    Environment::<14>::build(parts, &BuildOptions::ENVIRONMENT)
        .unwrap()
        .to_bytes()
}

#[test]
fn foreign_version_and_k_are_recognised() {
    let bytes = sample_bytes();
    assert_eq!(
        Environment::<14>::from_bytes(b"solid cube\n").unwrap_err(),
        Error::Format(FormatError::NotKdopFile)
    );
    assert_eq!(
        Environment::<14>::from_bytes(&[]).unwrap_err(),
        Error::Format(FormatError::NotKdopFile)
    );
    assert_eq!(
        Environment::<18>::from_bytes(&bytes).unwrap_err(),
        Error::Format(FormatError::WrongK {
            found: 14,
            expected: 18
        })
    );
    let mut v = bytes.clone();
    v[8] = 9;
    assert_eq!(
        Environment::<14>::from_bytes(&v).unwrap_err(),
        Error::Format(FormatError::UnsupportedVersion { found: 9 })
    );
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample_bytes();
    let step = (bytes.len() / 400).max(1);
    for len in (0..bytes.len())
        .step_by(step)
        .chain(bytes.len() - 8..bytes.len())
    {
        assert!(
            matches!(
                Environment::<14>::from_bytes(&bytes[..len]),
                Err(Error::Format(_))
            ),
            "truncated to {len} bytes"
        );
    }
}

#[test]
fn damaged_bytes_fail_the_checksum() {
    let bytes = sample_bytes();
    let mut rng = Rng::new(5);
    for _ in 0..300 {
        let mut v = bytes.clone();
        let i = 24 + rng.below((bytes.len() - 24) as u64) as usize;
        v[i] ^= 1 << rng.below(8);
        let e = Environment::<14>::from_bytes(&v).unwrap_err();
        assert_eq!(e, Error::Format(FormatError::ChecksumMismatch), "byte {i}");
    }
}

/// A hostile file: bytes changed and the checksum recomputed. It must be refused or load
/// into a valid environment, never panic or hang.
#[test]
fn hostile_edits_with_valid_checksum_are_validated() {
    let bytes = sample_bytes();
    let mut rng = Rng::new(6);
    let mut refused = 0;
    for _ in 0..500 {
        let mut v = bytes[..bytes.len() - 4].to_vec();
        for _ in 0..1 + rng.below(3) {
            let i = 20 + rng.below((v.len() - 20) as u64) as usize;
            v[i] = rng.next_u64() as u8;
        }
        let crc = crc32(&v);
        v.extend_from_slice(&crc.to_le_bytes());
        match Environment::<14>::from_bytes(&v) {
            Err(Error::Format(_)) => refused += 1,
            Err(e) => panic!("unexpected error kind {e:?}"),
            Ok(env) => assert_eq!(env.validate(), Ok(())),
        }
    }
    assert!(
        refused > 100,
        "most random edits must be caught ({refused})"
    );
}

/// CRC-32 (IEEE), written out here so the test does not share the library's checksum code.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn file_roundtrip_and_missing_file() {
    let mut rng = Rng::new(3);
    let (parts, _) = scene(&mut rng);
    let env = Environment::<6>::build(parts, &BuildOptions::ENVIRONMENT).unwrap();
    let path = std::env::temp_dir().join(format!("kdop-saved-{}.kdop", std::process::id()));
    env.save_to_file(&path).unwrap();
    let back = Environment::<6>::load_from_file(&path).unwrap();
    assert_eq!(back.to_bytes(), env.to_bytes());
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        Environment::<6>::load_from_file(&path),
        Err(Error::Io(_))
    ));
}
