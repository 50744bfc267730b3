//! Arbitrary bytes as a saved hierarchy or a saved world: a typed error, or an environment
//! that validates, or a world that steps and saves to bytes that read back alike.
//!
//! By the first byte's value modulo 8 (4 to 7: the same as 0 to 3 for world files, a
//! real world of one shape as a part and an object for 6):
//! - 0: the rest as a whole file;
//! - 1 or 3: the rest as a file body of format version 1 or 2, given a correct header and
//!   checksum, as a hostile file would have, so that mutations reach the decoder and the
//!   validation behind the checksum;
//! - 2: a real file (triangles from the first bytes, saved at k = 18) with byte edits from
//!   the rest and its checksum recomputed, so that edits land in well-formed parts
//!   (leaf codes included).
#![no_main]

use glam::DVec3;
use kdop::{BuildOptions, Environment, Mesh, ObjectDesc, PartDesc, Pose, World};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let world = mode % 8 >= 4;
    let bytes = match mode % 4 {
        0 => rest.to_vec(),
        2 => match edited_file(rest, world) {
            Some(b) => b,
            None => return,
        },
        m => {
            let mut v = if world { b"KDOPWLD\0" } else { b"KDOPENV\0" }.to_vec();
            v.extend_from_slice(&(if m == 1 || world { 1u32 } else { 2 }).to_le_bytes());
            v.extend_from_slice(&18u32.to_le_bytes());
            if world {
                // The length: the whole file, checksum included.
                v.extend_from_slice(&((v.len() + 8 + rest.len() + 4) as u64).to_le_bytes());
            }
            v.extend_from_slice(rest);
            let crc = crc32(&v);
            v.extend_from_slice(&crc.to_le_bytes());
            v
        }
    };
    if world {
        if let Ok(loaded) = World::<18>::from_bytes(&bytes) {
            let mut w = loaded.world;
            let saved = w.to_bytes();
            let _ = w.step();
            let again = World::<18>::from_bytes(&saved).expect("a saved world reads back");
            assert_eq!(again.world.to_bytes(), saved);
        }
        return;
    }
    if let Ok(env) = Environment::<18>::from_bytes(&bytes) {
        assert_eq!(env.validate(), Ok(()));
    }
    let _ = Environment::<6>::from_bytes(&bytes);
});

/// A saved k = 18 environment (or world: the mesh as a shape, with the rigid default's
/// build options or the deforming ones, placed once as a part and once as an object) of
/// the triangles in `data`'s first bytes (a count byte, then nine coordinate bytes per
/// triangle), edited by the rest (three bytes per edit: a position in the body,
/// little-endian u16 scaled to its length, and the new value), checksum recomputed.
fn edited_file(data: &[u8], world: bool) -> Option<Vec<u8>> {
    let (&count, rest) = data.split_first()?;
    let n = usize::from(count % 64) + 1;
    let (coords, edits) = rest.split_at_checked(9 * n)?;
    let tris: Vec<[DVec3; 3]> = coords
        .chunks_exact(9)
        .map(|c| {
            let p = |i: usize| {
                DVec3::new(f64::from(c[i]), f64::from(c[i + 1]), f64::from(c[i + 2])) / 16.0
            };
            [p(0), p(3), p(6)]
        })
        .collect();
    let mesh = Mesh::from_triangles(&tris).ok()?;
    let saved = if world {
        let mut w = World::<18>::new();
        // The count's high bit: the shape built with options of its own.
        let s = if count & 0x80 != 0 {
            w.add_shape_with(mesh, &BuildOptions::DEFORMING).ok()?
        } else {
            w.add_shape(mesh).ok()?
        };
        w.add_part(s, Pose::IDENTITY, PartDesc::default()).ok()?;
        w.add_object(s, Pose::IDENTITY, ObjectDesc::default())
            .ok()?;
        w.to_bytes()
    } else {
        Environment::<18>::build(vec![(mesh, Pose::IDENTITY)], &BuildOptions::ENVIRONMENT)
            .ok()?
            .to_bytes()
    };
    let mut body = saved[..saved.len() - 4].to_vec();
    for e in edits.chunks_exact(3) {
        let at = usize::from(u16::from_le_bytes([e[0], e[1]])) * body.len() / 65536;
        body[at] = e[2];
    }
    let crc = crc32(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    Some(body)
}

/// CRC-32 (IEEE), bitwise.
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
