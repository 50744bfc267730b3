//! Mesh file readers: nothing lost without a word, every refusal names its file and where.
//!
//! The files are written here, by writers that share no code with the readers, from the
//! cases of issue 17 and from random meshes (the round-trip property test).

use glam::DVec3;
use kdop::Error;
use kdop::io::formats::{LoadedMesh, Location, MeshFormat, read_mesh};
use kdop::scene::Rng;
use std::io::Cursor;

fn read(bytes: &[u8], format: MeshFormat) -> kdop::Result<LoadedMesh> {
    read_mesh(Cursor::new(bytes), format, "test-file")
}

/// The error's text, which must name the file.
fn refusal(bytes: &[u8], format: MeshFormat) -> String {
    let e = read(bytes, format).expect_err("the file should be refused");
    let text = e.to_string();
    assert!(
        text.contains("test-file"),
        "the error does not name the file: {text}"
    );
    text
}

/// Triangles as corner coordinates, in mesh order.
fn corners(m: &LoadedMesh) -> Vec<[DVec3; 3]> {
    (0..m.mesh.triangle_count())
        .map(|i| m.mesh.triangle(i).unwrap())
        .collect()
}

// --- A small mesh and writers for every format --------------------------------------------

/// Vertices and polygons (3 to 5 corners), coordinates exact in `f32` and in decimal.
struct Soup {
    vertices: Vec<DVec3>,
    faces: Vec<Vec<u32>>,
}

impl Soup {
    fn random(seed: u64) -> Soup {
        let mut rng = Rng::new(seed);
        let nv = 3 + (rng.next_u64() % 12) as usize;
        let coordinate = |rng: &mut Rng| (rng.next_u64() % 4001) as f64 / 8.0 - 250.0;
        let vertices = (0..nv)
            .map(|_| {
                DVec3::new(
                    coordinate(&mut rng),
                    coordinate(&mut rng),
                    coordinate(&mut rng),
                )
            })
            .collect();
        let nf = 1 + (rng.next_u64() % 10) as usize;
        let faces = (0..nf)
            .map(|_| {
                let n = (3 + rng.next_u64() % 3).min(nv as u64) as usize;
                // Distinct corners, in a random order.
                let mut pool: Vec<u32> = (0..nv as u32).collect();
                (0..n)
                    .map(|_| pool.swap_remove((rng.next_u64() % pool.len() as u64) as usize))
                    .collect()
            })
            .collect();
        Soup { vertices, faces }
    }

    /// The triangles a reader must produce: each polygon fanned from its first corner.
    fn fanned(&self) -> Vec<[DVec3; 3]> {
        let v = |i: u32| self.vertices[i as usize];
        self.faces
            .iter()
            .flat_map(|f| (1..f.len() - 1).map(move |k| [v(f[0]), v(f[k]), v(f[k + 1])]))
            .collect()
    }
}

fn line_end(crlf: bool) -> &'static str {
    if crlf { "\r\n" } else { "\n" }
}

fn with_bom(bom: bool, text: String) -> Vec<u8> {
    let mut out = if bom {
        b"\xEF\xBB\xBF".to_vec()
    } else {
        Vec::new()
    };
    out.extend_from_slice(text.as_bytes());
    out
}

fn obj(s: &Soup, bom: bool, crlf: bool) -> Vec<u8> {
    let nl = line_end(crlf);
    let mut t = format!("# written by the test{nl}");
    for p in &s.vertices {
        t += &format!("v {} {} {}{nl}", p.x, p.y, p.z);
    }
    for f in &s.faces {
        let idx: Vec<String> = f.iter().map(|i| (i + 1).to_string()).collect();
        t += &format!("f {}{nl}", idx.join(" "));
    }
    with_bom(bom, t)
}

fn stl_ascii(tris: &[[DVec3; 3]], solids: usize, bom: bool, crlf: bool) -> Vec<u8> {
    let nl = line_end(crlf);
    let per = tris.len().div_ceil(solids.max(1)).max(1);
    let mut t = String::new();
    for (k, chunk) in tris.chunks(per).enumerate() {
        t += &format!("solid part{k}{nl}");
        for tri in chunk {
            t += &format!("  facet normal 0 0 0{nl}    outer loop{nl}");
            for p in tri {
                t += &format!("      vertex {} {} {}{nl}", p.x, p.y, p.z);
            }
            t += &format!("    endloop{nl}  endfacet{nl}");
        }
        t += &format!("endsolid part{k}{nl}");
    }
    with_bom(bom, t)
}

fn stl_record(tri: &[DVec3; 3]) -> Vec<u8> {
    let mut b = Vec::with_capacity(50);
    for x in [0f32; 3] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    for p in tri {
        for x in p.to_array() {
            b.extend_from_slice(&(x as f32).to_le_bytes());
        }
    }
    b.extend_from_slice(&[0, 0]);
    b
}

fn stl_binary(tris: &[[DVec3; 3]], header: &[u8], count: u32) -> Vec<u8> {
    let mut b = header.to_vec();
    b.resize(80, b' ');
    b.extend_from_slice(&count.to_le_bytes());
    for t in tris {
        b.extend(stl_record(t));
    }
    b
}

fn ply_header(s: &Soup, format: &str, faces: usize, nl: &str) -> String {
    format!(
        "ply{nl}format {format} 1.0{nl}comment written by the test{nl}element vertex {}{nl}\
         property float x{nl}property float y{nl}property float z{nl}element face {faces}{nl}\
         property list uchar int vertex_indices{nl}end_header{nl}",
        s.vertices.len()
    )
}

fn ply_ascii(s: &Soup, declared_faces: usize, bom: bool, crlf: bool) -> Vec<u8> {
    let nl = line_end(crlf);
    let mut t = ply_header(s, "ascii", declared_faces, nl);
    for p in &s.vertices {
        t += &format!("{} {} {}{nl}", p.x, p.y, p.z);
    }
    for f in &s.faces {
        let idx: Vec<String> = f.iter().map(u32::to_string).collect();
        t += &format!("{} {}{nl}", f.len(), idx.join(" "));
    }
    with_bom(bom, t)
}

fn ply_binary(s: &Soup, declared_faces: usize) -> Vec<u8> {
    let mut b = ply_header(s, "binary_little_endian", declared_faces, "\n").into_bytes();
    for p in &s.vertices {
        for x in p.to_array() {
            b.extend_from_slice(&(x as f32).to_le_bytes());
        }
    }
    for f in &s.faces {
        b.push(f.len() as u8);
        for &i in f {
            b.extend_from_slice(&(i as i32).to_le_bytes());
        }
    }
    b
}

// --- The round trip ---------------------------------------------------------------------

#[test]
fn random_meshes_read_back_the_same_triangles_in_every_format_and_variant() {
    for seed in 0..300 {
        let s = Soup::random(seed);
        let want = s.fanned();
        let mut files: Vec<(String, Vec<u8>, MeshFormat)> = Vec::new();
        for bom in [false, true] {
            for crlf in [false, true] {
                files.push((
                    format!("obj bom={bom} crlf={crlf}"),
                    obj(&s, bom, crlf),
                    MeshFormat::Obj,
                ));
                for solids in [1, 2, 3] {
                    files.push((
                        format!("ascii stl solids={solids} bom={bom} crlf={crlf}"),
                        stl_ascii(&want, solids, bom, crlf),
                        MeshFormat::Stl,
                    ));
                }
                files.push((
                    format!("ascii ply bom={bom} crlf={crlf}"),
                    ply_ascii(&s, s.faces.len(), bom, crlf),
                    MeshFormat::Ply,
                ));
            }
        }
        files.push((
            "binary stl".into(),
            stl_binary(&want, b"kdop", want.len() as u32),
            MeshFormat::Stl,
        ));
        files.push((
            "binary stl, header begins with solid".into(),
            stl_binary(&want, b"solid kdop", want.len() as u32),
            MeshFormat::Stl,
        ));
        files.push((
            "binary ply".into(),
            ply_binary(&s, s.faces.len()),
            MeshFormat::Ply,
        ));
        for (what, bytes, format) in &files {
            let m = read(bytes, *format).unwrap_or_else(|e| panic!("seed {seed}, {what}: {e}"));
            assert_eq!(corners(&m), want, "seed {seed}, {what}");
            assert!(
                m.warnings.is_empty(),
                "seed {seed}, {what}: {:?}",
                m.warnings
            );
        }
    }
}

// --- OBJ ----------------------------------------------------------------------------------

const OBJ: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\n";

#[test]
fn obj_with_a_byte_order_mark_reads_as_without() {
    let plain = read(OBJ.as_bytes(), MeshFormat::Obj).unwrap();
    let marked = read(&with_bom(true, OBJ.into()), MeshFormat::Obj).unwrap();
    assert_eq!(corners(&plain), corners(&marked));
    assert_eq!(marked.mesh.triangle(0).unwrap()[0], DVec3::ZERO);
}

#[test]
fn obj_statements_not_read_are_warned_about_with_their_first_line_and_count() {
    let text = "v 0 0 0 # a comment after a vertex\n\
                vp 0.5 0.5\n\
                v 1 0 0\n\
                frobnicate 1 2\n\
                v 0 1 0\n\
                vt 0 0\nvn 0 0 1\ng part\ns 1\nusemtl steel\n\
                l 1 2\n\
                p 1\n\
                f 1 2\n\
                frobnicate 3\n\
                #comment without a space\n\
                fo 1 2 3\n\
                curv 0 1 1 2\n";
    let m = read(text.as_bytes(), MeshFormat::Obj).unwrap();
    // The old `fo` face is read; the vertex line with a trailing comment is read.
    assert_eq!(corners(&m), vec![[DVec3::ZERO, DVec3::X, DVec3::Y]]);
    let got: Vec<(String, Location, u64)> = m
        .warnings
        .iter()
        .map(|w| (w.message.clone(), w.location, w.count))
        .collect();
    let free_form = "(free-form geometry and 'call' are not read)";
    assert_eq!(
        got,
        vec![
            (
                format!("'vp' statements ignored {free_form}"),
                Location::Line(2),
                1
            ),
            (
                "unknown statement 'frobnicate' ignored".into(),
                Location::Line(4),
                2
            ),
            (
                "'l' statements ignored (lines and points are not surfaces)".into(),
                Location::Line(11),
                1
            ),
            (
                "'p' statements ignored (lines and points are not surfaces)".into(),
                Location::Line(12),
                1
            ),
            (
                "faces with fewer than three corners ignored".into(),
                Location::Line(13),
                1
            ),
            (
                format!("'curv' statements ignored {free_form}"),
                Location::Line(17),
                1
            ),
        ]
    );
    for w in &m.warnings {
        assert!(w.to_string().starts_with("test-file, line "), "{w}");
    }
}

#[test]
fn obj_names_in_another_encoding_do_not_fail_the_read() {
    let text = b"# Cr\xe9\xe9 par un outil\ng Pi\xe8ce\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";
    let m = read(text, MeshFormat::Obj).unwrap();
    assert_eq!(m.mesh.triangle_count(), 1);
}

#[test]
fn obj_face_with_a_missing_vertex_is_refused_with_its_line() {
    let e = refusal(
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 9\n",
        MeshFormat::Obj,
    );
    assert!(
        e.contains("line 5") && e.contains("vertex 9") && e.contains("3 vertices"),
        "{e}"
    );
}

#[test]
fn nan_and_huge_coordinates_are_refused_with_the_triangle_and_its_place() {
    let e = refusal(
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv nan 0 0\nf 1 2 3\n\nf 1 2 4\n",
        MeshFormat::Obj,
    );
    assert!(
        e.contains("triangle 1 (line 7)") && e.contains("NaN"),
        "{e}"
    );
    let e = refusal(b"v 0 0 0\nv 1 0 0\nv 0 1e13 0\nf 1 2 3\n", MeshFormat::Obj);
    assert!(
        e.contains("triangle 0 (line 4)") && e.contains("2^40"),
        "{e}"
    );

    let ok = [DVec3::ZERO, DVec3::X, DVec3::Y];
    let bad = [DVec3::ZERO, DVec3::new(f64::INFINITY, 0.0, 0.0), DVec3::Y];
    let e = refusal(&stl_binary(&[ok, bad], b"", 2), MeshFormat::Stl);
    assert!(e.contains("triangle 1 (byte offset 134)"), "{e}");

    let mut s = Soup::random(1);
    s.vertices[s.faces[0][1] as usize].y = 3e12;
    let e = refusal(&ply_binary(&s, s.faces.len()), MeshFormat::Ply);
    assert!(e.contains("triangle 0 (face 0)"), "{e}");
    let e = refusal(&ply_ascii(&s, s.faces.len(), false, false), MeshFormat::Ply);
    let face_line = 11 + s.vertices.len(); // after the 10 header lines and the vertices
    assert!(
        e.contains(&format!("triangle 0 (face 0, line {face_line})")),
        "{e}"
    );
}

// --- STL ----------------------------------------------------------------------------------

fn two_triangles() -> [[DVec3; 3]; 2] {
    [
        [DVec3::ZERO, DVec3::X, DVec3::Y],
        [
            DVec3::Z,
            DVec3::new(2.0, 0.0, 1.0),
            DVec3::new(0.0, 2.0, 1.0),
        ],
    ]
}

#[test]
fn ascii_stl_with_several_solids_loads_every_solid_in_file_order() {
    let tris = two_triangles();
    let mut three = tris.to_vec();
    three.push([DVec3::X, DVec3::Y, DVec3::Z]);
    let m = read(&stl_ascii(&three, 3, false, false), MeshFormat::Stl).unwrap();
    assert_eq!(corners(&m), three);
    let groups: Vec<(&str, std::ops::Range<usize>)> = m
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.triangles.clone()))
        .collect();
    assert_eq!(
        groups,
        vec![("part0", 0..1), ("part1", 1..2), ("part2", 2..3)]
    );
}

#[test]
fn ascii_stl_framing_errors_are_refused_and_stray_text_is_warned_about() {
    let one = String::from_utf8(stl_ascii(&two_triangles()[..1], 1, false, false)).unwrap();
    // Cut before its endsolid.
    let cut = &one[..one.find("endsolid").unwrap()];
    assert!(refusal(cut.as_bytes(), MeshFormat::Stl).contains("no 'endsolid'"));
    // A solid inside a solid.
    let nested = one.replacen("  facet", "solid inner\n  facet", 1);
    assert!(refusal(nested.as_bytes(), MeshFormat::Stl).contains("line 2: a new solid begins"));
    // A facet after the last endsolid is data, not noise.
    let facet_after = format!("{one}facet normal 0 0 1\n");
    assert!(refusal(facet_after.as_bytes(), MeshFormat::Stl).contains("outside any solid"));
    // Other text after it is ignored with a warning naming its line.
    let tail = format!("{one}\nexported by a tool\n");
    let m = read(tail.as_bytes(), MeshFormat::Stl).unwrap();
    assert_eq!(m.mesh.triangle_count(), 1);
    assert_eq!(m.warnings.len(), 1);
    assert_eq!(m.warnings[0].location, Location::Line(11));
    // A broken facet names its line.
    let broken = one.replace("outer loop", "outer lop");
    assert!(refusal(broken.as_bytes(), MeshFormat::Stl).contains("line 2:"));
}

#[test]
fn binary_stl_count_lower_than_the_records_reads_them_all_with_a_warning() {
    let tris = two_triangles();
    for header in [&b"kdop"[..], b"solid but binary"] {
        let m = read(&stl_binary(&tris, header, 1), MeshFormat::Stl).unwrap();
        assert_eq!(corners(&m), tris.to_vec());
        assert_eq!(m.warnings.len(), 1);
        assert_eq!(m.warnings[0].location, Location::Byte(80));
        assert!(
            m.warnings[0]
                .message
                .contains("declares 1 triangles, but 2")
        );
    }
}

#[test]
fn binary_stl_count_higher_than_the_records_is_refused_as_cut() {
    let e = refusal(&stl_binary(&two_triangles(), b"kdop", 3), MeshFormat::Stl);
    assert!(e.contains("declares 3 triangles, but only 2"), "{e}");
    assert!(refusal(b"short", MeshFormat::Stl).contains("84-byte header"));
}

#[test]
fn binary_stl_trailing_bytes_are_warned_about_at_their_offset() {
    let mut b = stl_binary(&two_triangles(), b"kdop", 2);
    b.extend_from_slice(b"xyz");
    let m = read(&b, MeshFormat::Stl).unwrap();
    assert_eq!(m.mesh.triangle_count(), 2);
    assert_eq!(m.warnings.len(), 1);
    assert_eq!(m.warnings[0].location, Location::Byte(184));
}

// --- PLY ----------------------------------------------------------------------------------

#[test]
fn ply_face_count_lower_than_the_faces_present_is_refused() {
    let s = (0..)
        .map(Soup::random)
        .find(|s| s.faces.len() >= 2)
        .unwrap();
    let e = refusal(
        &ply_ascii(&s, s.faces.len() - 1, false, false),
        MeshFormat::Ply,
    );
    let last = 10 + s.vertices.len() + s.faces.len(); // the last face line
    assert!(e.contains(&format!("line {last}: data after")), "{e}");
    let e = refusal(&ply_binary(&s, s.faces.len() - 1), MeshFormat::Ply);
    assert!(e.contains("bytes after the last element"), "{e}");
}

#[test]
fn ply_count_higher_than_the_data_is_refused() {
    let s = Soup::random(7);
    let e = refusal(
        &ply_ascii(&s, s.faces.len() + 1, false, false),
        MeshFormat::Ply,
    );
    assert!(e.contains("element 'face'"), "{e}");
    // Far more than the file can hold: refused from the header, before any reading.
    let e = refusal(&ply_binary(&s, 1 << 30), MeshFormat::Ply);
    assert!(
        e.contains("the file is cut short or its counts are wrong"),
        "{e}"
    );
}

#[test]
fn ply_other_elements_are_read_past_with_a_warning() {
    let s = Soup::random(3);
    let text = String::from_utf8(ply_ascii(&s, s.faces.len(), false, false)).unwrap();
    let text = text.replace(
        "end_header\n",
        "element edge 2\nproperty int vertex1\nproperty int vertex2\nend_header\n",
    ) + "0 1\n1 2\n";
    let m = read(text.as_bytes(), MeshFormat::Ply).unwrap();
    assert_eq!(corners(&m), s.fanned());
    assert_eq!(m.warnings.len(), 1);
    assert!(
        m.warnings[0]
            .message
            .contains("element 'edge' (2 items) ignored")
    );
}

#[test]
fn ply_header_without_positions_or_magic_is_refused() {
    let e = refusal(
        b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n0\n",
        MeshFormat::Ply,
    );
    assert!(e.contains("no numeric 'y'"), "{e}");
    assert!(refusal(b"plyx\n", MeshFormat::Ply).contains("not a PLY file"));
    assert!(refusal(b"ply\nformat ascii 1.0\n", MeshFormat::Ply).contains("no 'end_header'"));
}

// --- Files without line breaks ------------------------------------------------------------

#[test]
fn a_file_without_line_breaks_is_refused_after_one_line_limit() {
    let blob = vec![b'7'; kdop::io::formats::MAX_LINE_BYTES + 100];
    for (format, want) in [
        (MeshFormat::Obj, "line 1 is longer than"),
        (MeshFormat::Ply, "not a PLY file"),
    ] {
        let e = refusal(&blob, format);
        assert!(e.contains(want), "{format:?}: {e}");
    }
    let mut solid = b"solid x\n".to_vec();
    solid.extend_from_slice(&blob);
    assert!(refusal(&solid, MeshFormat::Stl).contains("line 2 is longer than"));
}

#[test]
fn empty_files_are_refused_in_every_format() {
    for format in MeshFormat::ALL {
        let e = read(b"", format).expect_err("empty");
        assert!(e.to_string().contains("test-file"), "{format:?}: {e}");
    }
    // An OBJ with vertices but no faces reaches the mesh check, which names the file too.
    let e = read(b"v 0 0 0\n", MeshFormat::Obj).unwrap_err();
    assert_eq!(e.root(), &Error::EmptyMesh);
    assert!(e.to_string().contains("test-file"));
}

#[test]
fn files_on_disk_name_themselves_in_errors() {
    let dir = std::env::temp_dir().join(format!("kdop-mesh-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.obj");
    let e = kdop::io::formats::load_mesh(&missing)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.obj"), "{e}");
    let odd = dir.join("mesh.xyz");
    std::fs::write(&odd, OBJ).unwrap();
    let e = kdop::io::formats::load_mesh(&odd).unwrap_err().to_string();
    assert!(
        e.contains("mesh.xyz") && e.contains("unknown extension"),
        "{e}"
    );
    // A directory with a mesh extension gets past the extension check to the file check.
    let folder = dir.join("folder.obj");
    std::fs::create_dir_all(&folder).unwrap();
    let e = kdop::io::formats::load_mesh(&folder)
        .unwrap_err()
        .to_string();
    assert!(e.contains("folder.obj") && e.contains("directory"), "{e}");
}
