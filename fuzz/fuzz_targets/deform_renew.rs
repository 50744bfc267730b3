//! A deforming sheet (leaves of the rigid default or of the deforming one) renewed within
//! fuzzed budgets: fuzzed deformations (swirls, positions dealt out, noise of any
//! amplitude, collapses, non-finite vertices) and thresholds, given whole or as the
//! changed vertices alone (`deform_some`, with decoys and bad indices). A refused
//! deformation changes nothing; after every call the hierarchy is valid, and every answer
//! against a small environment equals brute force on a fresh build of the current
//! vertices. Built with `--cfg fuzzing`, the library cuts small trees into pieces, so
//! subtree renewals run here as well as whole rebuilds in slices.
#![no_main]

mod decode;

use decode::Bytes;
use glam::DVec3;
use kdop::oracle::brute_force_contacts;
use kdop::scene::Rng;
use kdop::{BuildOptions, Environment, FlyingObject, Mesh, Pose, QueryOptions, QueryState};
use libfuzzer_sys::fuzz_target;

/// An `m` × `m` grid of cells of two triangles over the unit square.
fn sheet(m: usize) -> Mesh {
    let at = |i: usize, j: usize| (i * (m + 1) + j) as u32;
    let mut v = Vec::new();
    for i in 0..=m {
        for j in 0..=m {
            v.push(DVec3::new(i as f64, j as f64, 0.0) / m as f64);
        }
    }
    let mut t = Vec::new();
    for i in 0..m {
        for j in 0..m {
            t.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
            t.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
        }
    }
    Mesh::new(v, t).expect("a valid grid")
}

/// The next frame's vertices from `rest` and `now`, as the bytes say.
fn deformed(b: &mut Bytes, rest: &[DVec3], now: &[DVec3]) -> Vec<DVec3> {
    let mut rng = Rng::new(u64::from(b.byte()) * 977 + 1);
    match b.byte() % 6 {
        0 => {
            // A swirl about a fuzzed centre.
            let c = DVec3::new(
                f64::from(b.byte()) / 255.0,
                f64::from(b.byte()) / 255.0,
                0.0,
            );
            let turn = f64::from(b.byte() as i8) / 8.0;
            rest.iter()
                .map(|&p| {
                    let q = p - c;
                    let a = turn * (1.0 - q.length()).max(0.0).powi(2);
                    let (s, co) = a.sin_cos();
                    c + DVec3::new(q.x * co - q.y * s, q.x * s + q.y * co, q.z)
                })
                .collect()
        }
        1 => {
            // The positions dealt out to other vertices.
            let mut v = now.to_vec();
            for i in (1..v.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                v.swap(i, j);
            }
            v
        }
        2 => {
            // Noise of a fuzzed amplitude (huge ones are refused as out of range).
            let amp = b.f64();
            now.iter()
                .map(|&p| p + (rng.in_box(DVec3::ZERO, DVec3::ONE) - 0.5) * amp)
                .collect()
        }
        3 => vec![now[0]; now.len()],
        4 => {
            // One fuzzed vertex (NaN, infinite or huge ones are refused).
            let mut v = now.to_vec();
            let i = usize::from(b.byte()) % v.len();
            v[i] = b.point();
            v
        }
        _ => rest.to_vec(),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let first = b.byte();
    let m = 2 + usize::from(first % 12);
    let rest = sheet(m);
    let tris = rest.triangles().to_vec();
    // Leaves of the rigid default or of the deforming one.
    let build = if first & 0x80 == 0 {
        BuildOptions::FLYING
    } else {
        BuildOptions::DEFORMING
    };
    let Ok(mut obj) = FlyingObject::<18>::new(rest.clone(), &build) else {
        return;
    };
    let mut rng = Rng::new(5);
    let soup: Vec<[DVec3; 3]> = (0..20)
        .map(|_| {
            let c = rng.in_box(DVec3::new(-0.1, -0.1, -0.7), DVec3::new(1.1, 1.1, 0.5));
            let d = |rng: &mut Rng| rng.in_box(DVec3::splat(-0.2), DVec3::splat(0.2));
            [c, c + d(&mut rng), c + d(&mut rng)]
        })
        .collect();
    let env = Environment::<18>::from_mesh(
        Mesh::from_triangles(&soup).expect("finite"),
        &BuildOptions::ENVIRONMENT,
    )
    .expect("a valid soup");
    let mut state = QueryState::new();
    let mut now = rest.vertices().to_vec();
    for _ in 0..1 + b.byte() % 8 {
        let verts = deformed(&mut b, rest.vertices(), &now);
        let margin = f64::from(b.byte()) / 255.0;
        let before = obj.bvh().clone();
        let how = b.byte();
        let done = if how % 2 == 0 {
            obj.deform(&verts, margin)
        } else {
            // Only the changed vertices, by the sparse call: perhaps after a decoy position
            // for vertex 0 that a later entry overrides, perhaps with an index past the end
            // (refused).
            let (mut indices, mut positions) = (Vec::new(), Vec::new());
            if how & 2 != 0 {
                indices.extend([0, 0]);
                positions.extend([b.point(), verts[0]]);
            }
            let bits = |p: &DVec3| p.to_array().map(f64::to_bits);
            for (i, (v, was)) in verts.iter().zip(&now).enumerate() {
                if bits(v) != bits(was) {
                    indices.push(i as u32);
                    positions.push(*v);
                }
            }
            if how & 4 != 0 {
                indices.push(now.len() as u32 + u32::from(b.byte()));
                positions.push(DVec3::ZERO);
            }
            obj.deform_some(&indices, &positions, margin)
        };
        match done {
            Ok(_) => now = verts,
            Err(_) => assert!(
                obj.bvh() == &before,
                "a refused deformation changed the tree"
            ),
        }
        let at = 1.0 + f64::from(b.byte()) / 64.0;
        let budget = u64::from(b.byte()) * 97;
        obj.renew(at, budget);
        assert_eq!(obj.bvh().validate(), Ok(()));
        let fresh = FlyingObject::<18>::new(
            Mesh::new(now.clone(), tris.clone()).expect("checked vertices"),
            &BuildOptions::FLYING,
        )
        .expect("a valid mesh");
        let pose = Pose::IDENTITY;
        let want = brute_force_contacts(&env, &fresh, &pose, 0.0);
        let got = env
            .collide(&obj, &pose, &QueryOptions::REPORT, &mut state)
            .unwrap();
        assert_eq!(got.contacts, want.as_slice());
        let d = env
            .collide(&obj, &pose, &QueryOptions::DETECT, &mut state)
            .unwrap();
        assert_eq!(d.collides, !want.is_empty());
    }
});
