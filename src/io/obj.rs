//! Wavefront OBJ through `tobj`, with what `tobj` does not do at our boundary.
//!
//! `tobj` skips every statement it does not know without a word, reads a line whole before
//! looking at it, and takes a UTF-8 byte-order mark as part of the first statement (so a
//! file written by a Windows tool lost its first vertex, and every face after it pointed at
//! the wrong one). Lines reach it through [`LineSource`], which skips the mark, bounds the
//! line length, strips `#` comments (also after a statement, where `tobj` would misread a
//! vertex), turns the old face keyword `fo` into `f`, and notes every statement that is not
//! read, for a warning:
//!
//! | statements | what kdop does |
//! |---|---|
//! | `v`, `f`, `fo` | read |
//! | `vt`, `vn`, `o`, `g`, `s`, `mg`, `usemtl`, `mtllib`, render attributes | ignored silently: they do not change the surface |
//! | `l`, `p`, faces of one or two corners | ignored with a warning: lines and points are not surfaces |
//! | free-form geometry (`vp`, `curv`, `surf`, `cstype`, ...), `call` | ignored with a warning: that geometry is not read |
//! | anything else | ignored with a warning naming the statement and its line |

use super::formats::{Group, Location, Raw, TriangleAt, Warnings, mesh_error};
use super::lines::{LineSource, MAX_LINE_BYTES, first_token};
use crate::error::Result;
use glam::DVec3;
use std::io::{BufReader, Read, Seek, SeekFrom};

/// Statements that do not change the surface: skipped without a word.
const SILENT: &[&[u8]] = &[
    b"vt",
    b"vn",
    b"o",
    b"g",
    b"s",
    b"mg",
    b"usemtl",
    b"mtllib",
    b"usemap",
    b"maplib",
    b"lod",
    b"bevel",
    b"c_interp",
    b"d_interp",
    b"shadow_obj",
    b"trace_obj",
    b"ctech",
    b"stech",
];

/// Free-form geometry and references to other files: geometry kdop does not read.
const UNREAD_GEOMETRY: &[&[u8]] = &[
    b"vp", b"cstype", b"deg", b"bmat", b"step", b"curv", b"curv2", b"surf", b"parm", b"trim",
    b"hole", b"scrv", b"sp", b"end", b"con", b"call", b"csh",
];

/// What a statement keyword means to the reader.
fn warning_for(keyword: &[u8], corners: usize) -> Option<String> {
    let name = String::from_utf8_lossy(keyword);
    match keyword {
        b"v" => None,
        b"f" | b"fo" if corners >= 3 => None,
        b"f" | b"fo" => Some("faces with fewer than three corners ignored".into()),
        b"l" | b"p" => Some(format!(
            "'{name}' statements ignored (lines and points are not surfaces)"
        )),
        k if SILENT.contains(&k) => None,
        k if UNREAD_GEOMETRY.contains(&k) => Some(format!(
            "'{name}' statements ignored (free-form geometry and 'call' are not read)"
        )),
        _ => Some(format!("unknown statement '{name}' ignored")),
    }
}

/// Rewrites one line for `tobj` and notes what it will not read.
fn prepare_line(line: &mut Vec<u8>, line_no: u64, warnings: &mut Warnings) {
    // One pass finds what needs work: a comment, or bytes outside ASCII.
    if let Some(at) = line.iter().position(|&b| b == b'#' || b >= 0x80) {
        // A comment runs from '#' to the end of the line, here as in the README's pose files.
        if let Some(hash) = line[at..].iter().position(|&b| b == b'#') {
            line.truncate(at + hash);
            line.push(b'\n');
        }
        if std::str::from_utf8(&line[at..]).is_err() {
            // Names in other encodings; no number or keyword the reader uses has such bytes.
            *line = String::from_utf8_lossy(line).into_owned().into_bytes();
        }
    }
    let keyword = first_token(line);
    if matches!(keyword, b"" | b"v" | b"vt" | b"vn") {
        return;
    }
    // Whether a face has three corners is all that matters here: count at most three.
    let corners = if matches!(keyword, b"f" | b"fo") {
        line.split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
            .skip(1)
            .take(3)
            .count()
    } else {
        0
    };
    if let Some(w) = warning_for(keyword, corners) {
        warnings.note(w, Location::Line(line_no));
    }
    if keyword == b"fo" {
        let at = line.iter().position(|&b| b == b'f').unwrap_or(0);
        line[at..at + 2].copy_from_slice(b" f");
    }
}

/// Reads an OBJ file: triangles in file order (polygons fanned from their first corner),
/// one group per `tobj` model (`o`/`g` name).
pub(crate) fn read<R: Read + Seek>(mut source: R, name: &str) -> Result<Raw> {
    let opts = tobj::LoadOptions {
        single_index: true,
        triangulate: true,
        ignore_points: true,
        ignore_lines: true,
    };
    let mut warnings = Warnings::default();
    let loaded = {
        let mut lines = LineSource::with_hook(
            BufReader::new(&mut source),
            MAX_LINE_BYTES,
            |l: &mut Vec<u8>, n| prepare_line(l, n, &mut warnings),
        );
        // Materials are not needed; a missing .mtl file must not fail the load.
        let r = tobj::load_obj_buf(&mut lines, &opts, |_| Err(tobj::LoadError::OpenFileFailed));
        r.map_err(|e| (e, lines.failure().map(str::to_owned), lines.line_no()))
    };
    let models = match loaded {
        Ok((models, _)) => models,
        Err((_, Some(why), _)) => return Err(mesh_error(name, why)),
        Err((tobj::LoadError::FaceVertexOutOfBounds, None, _)) => {
            source.seek(SeekFrom::Start(0))?;
            let why = match first_bad_face(&mut source)? {
                Some((line, index, count)) => format!(
                    "line {line}: a face uses vertex {index}, but the file has {count} vertices"
                ),
                None => "a face uses a vertex that does not exist".into(),
            };
            return Err(mesh_error(name, why));
        }
        Err((e, None, line)) => return Err(mesh_error(name, format!("line {line}: {e}"))),
    };
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    let mut groups = Vec::new();
    for m in models {
        let base =
            u32::try_from(vertices.len()).map_err(|_| mesh_error(name, "too many vertices"))?;
        vertices.extend(
            m.mesh
                .positions
                .chunks_exact(3)
                .map(|c| DVec3::new(c[0], c[1], c[2])),
        );
        let first = triangles.len();
        for f in m.mesh.indices.chunks_exact(3) {
            triangles.push([base + f[0], base + f[1], base + f[2]]);
        }
        groups.push(Group {
            name: m.name,
            triangles: first..triangles.len(),
        });
    }
    Ok(Raw {
        vertices,
        triangles,
        warnings: warnings.into_list(name),
        groups,
        at: TriangleAt::ObjFaces,
    })
}

/// Visits the face lines of a file with their numbers, their corners' vertex indices as
/// written (the part before the first '/'), and the number of vertices defined before them;
/// returns how many vertices the file defines (to the end, or to where `visit` stopped).
fn for_each_face<R: Read>(
    source: R,
    mut visit: impl FnMut(u64, &mut dyn Iterator<Item = Option<i64>>, u64) -> bool,
) -> Result<u64> {
    let mut lines = LineSource::new(BufReader::new(source), MAX_LINE_BYTES);
    let mut vertex_count = 0u64;
    while lines.advance()? {
        let line = lines.line();
        let line = &line[..line.iter().position(|&b| b == b'#').unwrap_or(line.len())];
        match first_token(line) {
            b"v" => vertex_count += 1,
            b"f" | b"fo" => {
                let mut corners = line
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|t| !t.is_empty())
                    .skip(1)
                    .map(|t| {
                        let v = t.split(|&b| b == b'/').next().unwrap_or(t);
                        std::str::from_utf8(v).ok()?.parse::<i64>().ok()
                    });
                if !visit(lines.line_no(), &mut corners, vertex_count) {
                    break;
                }
            }
            _ => {}
        }
    }
    Ok(vertex_count)
}

/// The first face that names a vertex the file does not have: its line, the index as
/// written, and how many vertices the file has.
fn first_bad_face<R: Read + Seek>(source: &mut R) -> Result<Option<(u64, i64, u64)>> {
    // Count the vertices first: a positive index may point forward, as `tobj` allows.
    let total = for_each_face(&mut *source, |_, _, _| true)?;
    source.seek(SeekFrom::Start(0))?;
    let mut bad = None;
    for_each_face(&mut *source, |line, corners, before| {
        for index in corners.flatten() {
            let fine = if index > 0 {
                index as u64 <= total
            } else {
                index.unsigned_abs() <= before && index != 0
            };
            if !fine {
                bad = Some((line, index, total));
                return false;
            }
        }
        true
    })?;
    Ok(bad)
}

/// The line of the face that triangle `t` (in file order) was fanned from.
pub(crate) fn line_of_triangle<R: Read + Seek>(mut source: R, t: usize) -> Result<Option<u64>> {
    source.seek(SeekFrom::Start(0))?;
    let mut seen = 0usize;
    let mut found = None;
    for_each_face(source, |line, corners, _| {
        let n = corners.count();
        if n >= 3 {
            seen += n - 2;
            if seen > t {
                found = Some(line);
                return false;
            }
        }
        true
    })?;
    Ok(found)
}
