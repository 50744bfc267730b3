//! Reading a mesh never allocates more than the file's size justifies: a counting allocator
//! watches the peak of live heap bytes while files are read (its own test binary, so that
//! no other test's allocations are counted).

use kdop::io::formats::{MeshFormat, read_mesh};
use std::io::Cursor;
use std::sync::Mutex;

#[path = "support/counting_alloc.rs"]
mod counting;

#[global_allocator]
static A: counting::Counting = counting::Counting;

/// One test at a time: the counters are global, and a test running beside a measurement
/// would be counted in it. Each test holds this for its whole body.
static ONE: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Peak heap bytes above the live bytes at the start, while reading `bytes`.
fn peak_while_reading(bytes: &[u8], format: MeshFormat) -> (usize, bool) {
    let (read, peak) =
        counting::peak_during(|| read_mesh(Cursor::new(bytes), format, "memory-test"));
    (peak, read.is_ok())
}

#[test]
fn a_large_file_without_line_breaks_is_refused_in_bounded_memory() {
    let _alone = alone();
    // 64 MiB of one digit: each reader gives up after one line limit (4 MiB) at most.
    let blob = vec![b'7'; 64 << 20];
    let mut solid = b"solid x\n".to_vec();
    solid.extend_from_slice(&blob);
    let mut ply = b"ply\ncomment ".to_vec();
    ply.extend_from_slice(&blob);
    for (bytes, format) in [
        (&blob, MeshFormat::Obj),
        (&blob, MeshFormat::Stl),
        (&blob, MeshFormat::Ply),
        (&solid, MeshFormat::Stl),
        (&ply, MeshFormat::Ply),
    ] {
        let (peak, ok) = peak_while_reading(bytes, format);
        assert!(!ok, "{format:?}: accepted 64 MiB of digits");
        assert!(peak < 7 << 20, "{format:?}: {peak} bytes at the peak");
    }
}

#[test]
fn counts_that_the_file_cannot_hold_allocate_nothing_for_them() {
    let _alone = alone();
    // A binary STL and a PLY whose headers declare billions of triangles in a few bytes.
    let mut stl = vec![0u8; 80];
    stl.extend_from_slice(&u32::MAX.to_le_bytes());
    stl.extend_from_slice(&[0u8; 50]);
    let ply = b"ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\n\
                property float x\nproperty float y\nproperty float z\nelement face 4000000000\n\
                property list uchar uint vertex_indices\nend_header\n\0\0\0\0"
        .to_vec();
    for (bytes, format) in [(stl, MeshFormat::Stl), (ply, MeshFormat::Ply)] {
        let (peak, ok) = peak_while_reading(&bytes, format);
        assert!(!ok);
        assert!(peak < 1 << 20, "{format:?}: {peak} bytes at the peak");
    }
}

#[test]
fn real_meshes_take_a_small_multiple_of_their_size() {
    let _alone = alone();
    let dir = std::path::Path::new("../shared/data/meshes");
    if !dir.is_dir() {
        eprintln!("SKIPPED: {} is absent", dir.display());
        return;
    }
    for name in [
        "fcl_env.obj",
        "soccerball.obj",
        "diff_ring_gear.stl",
        "mountain.obj",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let format = MeshFormat::from_path(std::path::Path::new(name)).unwrap();
        let (peak, ok) = peak_while_reading(&bytes, format);
        assert!(ok, "{name}");
        // The mesh itself (24 bytes a vertex, 12 a triangle, twice while welding) and the
        // readers' per-vertex maps: a few times the file at most.
        assert!(
            peak < 8 * bytes.len(),
            "{name}: {peak} bytes at the peak for {} bytes",
            bytes.len()
        );
    }
}
