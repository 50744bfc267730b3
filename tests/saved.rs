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

/// Every cut is an error; once the header's length field is there (24 bytes), it is
/// reported as truncation, not as damage.
#[test]
fn every_truncation_is_an_error() {
    let bytes = sample_bytes();
    let step = (bytes.len() / 400).max(1);
    for len in (0..bytes.len())
        .step_by(step)
        .chain(bytes.len() - 8..bytes.len())
    {
        let e = Environment::<14>::from_bytes(&bytes[..len]).unwrap_err();
        if len >= 24 {
            assert_eq!(
                e,
                Error::Format(FormatError::Truncated),
                "cut to {len} bytes"
            );
        } else {
            assert!(matches!(e, Error::Format(_)), "cut to {len} bytes");
        }
    }
}

/// Bytes appended to an intact file are refused.
#[test]
fn appended_bytes_are_refused() {
    let bytes = sample_bytes();
    let mut v = bytes.clone();
    v.extend_from_slice(&[0; 8]);
    assert_eq!(
        Environment::<14>::from_bytes(&v).unwrap_err(),
        Error::Format(FormatError::Corrupt("bytes after the end of the file"))
    );
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
    // A missing file is an I/O error, in a context that names the file.
    let missing = Environment::<6>::load_from_file(&path).unwrap_err();
    assert!(matches!(missing.root(), Error::Io(_)));
    assert!(missing.to_string().contains(&path.display().to_string()));
}

/// Where one part's code count and code bytes lie in a version-2 file.
struct PartCodes {
    /// Offset of the part's `codes u64` count.
    count_at: usize,
    /// The part's code bytes.
    codes: std::ops::Range<usize>,
}

/// Locates every part's codes in a version-2 file of k = `k`, reading the layout written
/// out in `kdop::io::saved`'s documentation (header of 40 bytes, the length at 16 and the
/// part count at 32; per part a placement of 12 f64, four u64 counts, then vertices,
/// triangles, ids, nodes and codes).
fn part_codes(bytes: &[u8], k: usize) -> Vec<PartCodes> {
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()) as usize;
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 2);
    assert_eq!(u64_at(16), bytes.len());
    let mut pos = 40;
    (0..u64_at(32))
        .map(|_| {
            pos += 12 * 8;
            let (nv, nt, nn, nc) = (
                u64_at(pos),
                u64_at(pos + 8),
                u64_at(pos + 16),
                u64_at(pos + 24),
            );
            let count_at = pos + 24;
            pos += 32 + nv * 24 + nt * 16 + nn * (4 * k + 4);
            let codes = pos..pos + nc * k;
            pos = codes.end;
            PartCodes { count_at, codes }
        })
        .collect()
}

/// A file of format version 1 (before leaf codes) still loads, and the codes computed on
/// load equal the ones the build wrote: saving it again gives the version-2 bytes.
#[test]
fn version_1_files_still_load() {
    let bytes = sample_bytes();
    let parts = part_codes(&bytes, 14);
    assert!(parts.iter().all(|p| !p.codes.is_empty()), "no leaf codes");
    // Version 1 had no length field (bytes 16..24 of version 2).
    let mut v1 = bytes[..16].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    v1.extend_from_slice(&bytes[24..40]);
    let mut from = 40;
    for p in &parts {
        v1.extend_from_slice(&bytes[from..p.count_at]);
        v1.extend_from_slice(&bytes[p.count_at + 8..p.codes.start]);
        from = p.codes.end;
    }
    assert_eq!(from, bytes.len() - 4);
    let crc = crc32(&v1);
    v1.extend_from_slice(&crc.to_le_bytes());
    let back = Environment::<14>::from_bytes(&v1).unwrap();
    assert_eq!(back.to_bytes(), bytes);
}

/// Hostile leaf codes (code bytes changed, checksum recomputed): a code that no longer
/// contains its triangle is refused; any file that loads answers every query with the
/// original's contacts, since codes only prune.
#[test]
fn hostile_leaf_codes_are_refused_or_harmless() {
    let mut rng = Rng::new(13);
    let (parts, obj_mesh) = scene(&mut rng);
    let env = Environment::<14>::build(parts, &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<14>::new(obj_mesh, &BuildOptions::FLYING).unwrap();
    let poses: Vec<Pose> = (0..12)
        .map(|_| Pose::from_translation(rng.vec(-2.0, 6.0)).unwrap())
        .collect();
    let mut state = QueryState::new();
    let answers = |e: &Environment<14>, state: &mut QueryState<14>| -> Vec<_> {
        poses
            .iter()
            .map(|p| {
                e.collide(&obj, p, &QueryOptions::REPORT, state)
                    .unwrap()
                    .contacts
                    .to_vec()
            })
            .collect()
    };
    let expect = answers(&env, &mut state);
    assert!(expect.iter().any(|c| !c.is_empty()));
    let bytes = env.to_bytes();
    let codes: Vec<usize> = part_codes(&bytes, 14)
        .into_iter()
        .flat_map(|p| p.codes)
        .collect();
    let (mut refused, mut loaded) = (0, 0);
    for _ in 0..300 {
        let mut v = bytes[..bytes.len() - 4].to_vec();
        for _ in 0..1 + rng.below(3) {
            v[codes[rng.below(codes.len() as u64) as usize]] = rng.next_u64() as u8;
        }
        let crc = crc32(&v);
        v.extend_from_slice(&crc.to_le_bytes());
        match Environment::<14>::from_bytes(&v) {
            Err(Error::Format(FormatError::Corrupt(_))) => refused += 1,
            Err(e) => panic!("unexpected error {e:?}"),
            Ok(back) => {
                loaded += 1;
                assert_eq!(back.validate(), Ok(()));
                assert_eq!(answers(&back, &mut state), expect);
            }
        }
    }
    // Random bytes mostly tighten a code past its triangle (refused); lower ones loosen it.
    assert!(
        refused > 100 && loaded > 10,
        "refused {refused}, loaded {loaded}"
    );
}

/// A code count other than 0 or the triangle count is refused.
#[test]
fn a_wrong_code_count_is_refused() {
    let bytes = sample_bytes();
    let p = &part_codes(&bytes, 14)[0];
    // Drop the part's codes and say so: the hierarchy has leaves of several triangles.
    let mut v = bytes[..p.codes.start].to_vec();
    v[p.count_at..p.count_at + 8].copy_from_slice(&0u64.to_le_bytes());
    v.extend_from_slice(&bytes[p.codes.end..bytes.len() - 4]);
    let length = (v.len() + 4) as u64;
    v[16..24].copy_from_slice(&length.to_le_bytes());
    let crc = crc32(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        Environment::<14>::from_bytes(&v).unwrap_err(),
        Error::Format(FormatError::Corrupt(
            "leaf codes missing or of the wrong count"
        ))
    );
}
