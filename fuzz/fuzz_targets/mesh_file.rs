//! Arbitrary bytes as an OBJ, STL or PLY file: never a panic, never more memory than a
//! bound linear in the input's size, and whatever is accepted is a valid mesh.
//!
//! The first byte picks the format (modulo 3) and, from its value divided by 3 (modulo 4),
//! a prefix that gets mutations past the first checks: nothing, a few OBJ vertices, an
//! ASCII STL `solid` line, or a PLY header (ASCII or binary) declaring a few vertices and
//! faces.
#![no_main]

use kdop::Mesh;
use kdop::io::formats::{MeshFormat, read_mesh};
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;

#[path = "../../tests/support/counting_alloc.rs"]
mod counting;

#[global_allocator]
static A: counting::Counting = counting::Counting;

const PREFIXES: [[&[u8]; 3]; 4] = [
    [b"", b"", b""],
    [b"v 0 0 0\nv 1 0 0\nv 0 1 0\n", b"solid fuzz\n", b"ply\nformat ascii 1.0\n"],
    [
        b"o part\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n",
        b"solid a\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid a\n",
        b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n",
    ],
    [
        b"\xEF\xBB\xBFv 0 0 0\r\n",
        b"\xEF\xBB\xBFsolid\r\n",
        b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty double x\nproperty double y\nproperty double z\nelement face 1\nproperty list uchar uint vertex_indices\nend_header\n",
    ],
];

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let format = MeshFormat::ALL[usize::from(choice) % 3];
    let prefix = PREFIXES[usize::from(choice / 3) % 4][usize::from(choice) % 3];
    let bytes = [prefix, rest].concat();

    let (read, peak) =
        counting::peak_during(|| read_mesh(Cursor::new(&bytes), format, "fuzz-input"));
    // One line buffer (at most one and a half line limits) plus a linear share of the input.
    let bound = 7 * kdop::io::formats::MAX_LINE_BYTES + 256 * bytes.len();
    assert!(
        peak <= bound,
        "{peak} bytes at the peak for {} input bytes",
        bytes.len()
    );

    match read {
        Ok(m) => {
            let mesh = &m.mesh;
            Mesh::new(mesh.vertices().to_vec(), mesh.triangles().to_vec())
                .expect("an accepted mesh passes Mesh validation");
            for w in &m.warnings {
                assert_eq!(w.source_name, "fuzz-input");
                assert!(w.count >= 1);
            }
            let mut end = 0;
            for g in &m.groups {
                assert!(g.triangles.start >= end && g.triangles.end <= mesh.triangle_count());
                end = g.triangles.end;
            }
        }
        Err(e) => {
            assert!(e.to_string().contains("fuzz-input"), "unnamed error: {e}");
        }
    }
});
