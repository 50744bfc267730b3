//! PLY, ASCII and binary, through `ply-rs-bw`, with the header bounded and the counts
//! checked here.
//!
//! `ply-rs-bw` reads the magic line with `read_line` (a file of gigabytes without a newline
//! is read whole before "not a PLY file"), reads exactly the counts the header declares and
//! stops (faces beyond `element face N` were dropped without a word), and keeps each element
//! in a hash map of its properties. kdop checks the magic bytes first, reads a header of at
//! most [`MAX_HEADER_BYTES`], refuses counts the file is too short to hold before reading
//! any, reads vertices and faces into small structs of their own, and refuses data after
//! the last declared element: in PLY the counts are the only framing, so data beyond them
//! cannot be told from garbage. Elements other than `vertex` and `face`, and properties
//! other than `x`, `y`, `z` and the face's `vertex_indices` (or `vertex_index`), are read
//! and ignored; an ignored element is named in a warning.

use super::formats::{Location, Raw, TriangleAt, Warnings, mesh_error};
use super::lines::{LineSource, MAX_LINE_BYTES};
use crate::error::Result;
use glam::DVec3;
use ply_rs_bw::parser::{Parser, Reader};
use ply_rs_bw::ply::{
    ElementDef, Encoding, Header, Property, PropertyAccess, PropertyType, ScalarType,
};
use smallvec::SmallVec;
use std::io::{BufRead, BufReader, Cursor, Read, Seek, SeekFrom};

/// The longest PLY header read, in bytes.
pub const MAX_HEADER_BYTES: usize = 1 << 20;

/// A vertex: its position, from whichever scalar type the file uses.
#[derive(Default)]
struct Vertex {
    p: [f64; 3],
}

/// A face: its corners' vertex indices (`None` for a negative or non-integer list).
#[derive(Default)]
struct Face {
    corners: Option<SmallVec<[u32; 4]>>,
}

/// Any other element: read and dropped.
struct Skip;

fn scalar(p: &Property) -> Option<f64> {
    Some(match *p {
        Property::Float(v) => f64::from(v),
        Property::Double(v) => v,
        Property::Int(v) => f64::from(v),
        Property::UInt(v) => f64::from(v),
        Property::Short(v) => f64::from(v),
        Property::UShort(v) => f64::from(v),
        Property::Char(v) => f64::from(v),
        Property::UChar(v) => f64::from(v),
        _ => return None,
    })
}

fn indices<T: Copy>(l: &[T], f: impl Fn(T) -> i64) -> Option<SmallVec<[u32; 4]>> {
    l.iter().map(|&v| u32::try_from(f(v)).ok()).collect()
}

impl PropertyAccess for Vertex {
    fn new() -> Self {
        Vertex::default()
    }
    fn set_property(&mut self, name: &str, p: Property) -> ply_rs_bw::ply::PropertyAccessResult {
        let axis = match name {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            _ => return ply_rs_bw::ply::PropertyAccessResult::Ignored,
        };
        // The header check guarantees scalar x, y, z.
        self.p[axis] = scalar(&p).unwrap_or(f64::NAN);
        ply_rs_bw::ply::PropertyAccessResult::Set
    }
}

impl PropertyAccess for Face {
    fn new() -> Self {
        Face::default()
    }
    fn set_property(&mut self, name: &str, p: Property) -> ply_rs_bw::ply::PropertyAccessResult {
        if name != "vertex_indices" && name != "vertex_index" {
            return ply_rs_bw::ply::PropertyAccessResult::Ignored;
        }
        self.corners = match &p {
            Property::ListChar(l) => indices(l, i64::from),
            Property::ListUChar(l) => indices(l, i64::from),
            Property::ListShort(l) => indices(l, i64::from),
            Property::ListUShort(l) => indices(l, i64::from),
            Property::ListInt(l) => indices(l, i64::from),
            Property::ListUInt(l) => indices(l, i64::from),
            _ => None,
        };
        ply_rs_bw::ply::PropertyAccessResult::Set
    }
}

impl PropertyAccess for Skip {
    fn new() -> Self {
        Skip
    }
}

/// Bytes one element takes at the least: binary, the scalars and list counts; ASCII, a
/// one-character token and a separator per property.
fn min_bytes(e: &ElementDef, encoding: Encoding) -> u64 {
    let size = |t: &ScalarType| match t {
        ScalarType::Char | ScalarType::UChar => 1,
        ScalarType::Short | ScalarType::UShort => 2,
        ScalarType::Int | ScalarType::UInt | ScalarType::Float => 4,
        ScalarType::Double => 8,
    };
    e.properties
        .values()
        .map(|p| match (encoding, &p.data_type) {
            (Encoding::Ascii, _) => 2,
            (_, PropertyType::Scalar(t)) => size(t),
            (_, PropertyType::List(count, _)) => size(count),
        })
        .sum()
}

/// Reads a PLY file: faces in file order, polygons fanned from their first corner.
pub(crate) fn read<R: Read + Seek>(mut source: R, name: &str) -> Result<Raw> {
    let size = source.seek(SeekFrom::End(0))?;
    source.seek(SeekFrom::Start(0))?;
    // The magic line is read with a limit of a few bytes: a file that is not PLY is
    // refused at once, whatever its size.
    let mut lines = LineSource::new(BufReader::new(source), 16);
    if !matches!(lines.advance(), Ok(true)) || lines.line().trim_ascii() != b"ply" {
        return Err(mesh_error(
            name,
            "not a PLY file: it does not begin with the line 'ply'",
        ));
    }
    lines.set_limit(MAX_LINE_BYTES);
    let mut header_text = b"ply\n".to_vec();
    loop {
        match lines.advance() {
            Ok(true) => {}
            Ok(false) => {
                return Err(mesh_error(
                    name,
                    "the header has no 'end_header' line: the file is cut short",
                ));
            }
            Err(e) => {
                return Err(mesh_error(name, e));
            }
        }
        header_text.extend_from_slice(lines.line().trim_ascii());
        header_text.push(b'\n');
        if header_text.len() > MAX_HEADER_BYTES {
            return Err(mesh_error(
                name,
                format!("the header is longer than {MAX_HEADER_BYTES} bytes (no 'end_header')"),
            ));
        }
        if lines.line().trim_ascii() == b"end_header" {
            break;
        }
    }
    let header_lines = lines.line_no();
    let payload_at = lines.offset();
    let header: Header = Parser::<Skip>::new()
        .read_header(&mut Reader::new(Cursor::new(&header_text)))
        .map_err(|e| mesh_error(name, format!("header: {e}")))?;
    check_header(&header, size.saturating_sub(payload_at), name)?;

    let inner = lines.inner_mut();
    if header.encoding == Encoding::Ascii {
        let mut reader = Reader::new(LineSource::new(inner, MAX_LINE_BYTES));
        let read = read_elements(&mut reader, &header, name, Some(header_lines));
        let text = reader.get_mut();
        let line = header_lines + text.line_no();
        let content: String = String::from_utf8_lossy(text.line().trim_ascii())
            .chars()
            .take(80)
            .collect();
        let content = if content.is_empty() {
            content
        } else {
            format!(" ('{content}')")
        };
        let read = read.map_err(|e| match (text.failure(), e) {
            (Some(why), _) => mesh_error(name, format!("line {}: {why}", line + 1)),
            (None, crate::Error::MeshFile { reason, .. }) => {
                mesh_error(name, format!("line {line}: {reason}{content}"))
            }
            (None, e) => e,
        })?;
        // Data after the declared elements: the counts are wrong, and the rest cannot be
        // told from garbage.
        while text.advance()? {
            if !text.line().trim_ascii().is_empty() {
                return Err(mesh_error(
                    name,
                    format!(
                        "line {}: data after the last element the header declares (its counts \
                         are lower than the data)",
                        header_lines + text.line_no()
                    ),
                ));
            }
        }
        Ok(read)
    } else {
        let mut reader = Reader::new(&mut *inner);
        let read = read_elements(&mut reader, &header, name, None)?;
        let rest = std::io::copy(inner, &mut std::io::sink())?;
        if rest > 0 {
            return Err(mesh_error(
                name,
                format!(
                    "{rest} bytes after the last element the header declares (its counts are \
                     lower than the data, or the file has trailing bytes)"
                ),
            ));
        }
        Ok(read)
    }
}

/// The first line of a parser's message, without its own (payload-relative) line number.
fn first_line(message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    let first = first
        .strip_prefix("Line ")
        .and_then(|rest| rest.split_once(": "))
        .map_or(first, |(_, what)| what);
    first.trim_end_matches(['.', ' ']).to_owned()
}

/// Refuses headers without a numeric position, and counts the file is too short to hold
/// (before anything is allocated for them).
fn check_header(header: &Header, payload_bytes: u64, name: &str) -> Result<()> {
    let mut need = 0u64;
    for e in header.elements.values() {
        need = need.saturating_add(min_bytes(e, header.encoding).saturating_mul(e.count as u64));
    }
    if need > payload_bytes {
        return Err(mesh_error(
            name,
            format!(
                "the header declares elements that take at least {need} bytes, but {payload_bytes} \
                 bytes follow it: the file is cut short or its counts are wrong"
            ),
        ));
    }
    let vertex = header.elements.get("vertex");
    for axis in ["x", "y", "z"] {
        let numeric = vertex
            .and_then(|v| v.properties.get(axis))
            .is_some_and(|p| matches!(p.data_type, PropertyType::Scalar(_)));
        if !numeric {
            return Err(mesh_error(
                name,
                format!("the vertex element has no numeric '{axis}' property"),
            ));
        }
    }
    Ok(())
}

/// Reads every element the header declares, in its order; fans the faces.
fn read_elements<B: BufRead>(
    reader: &mut Reader<B>,
    header: &Header,
    name: &str,
    header_lines: Option<u64>,
) -> Result<Raw> {
    let mut warnings = Warnings::default();
    let mut vertices: Vec<DVec3> = Vec::new();
    let mut faces: Vec<Face> = Vec::new();
    let mut face_line = None;
    let mut lines_before = header_lines;
    for (key, def) in &header.elements {
        let failed = |e: ply_rs_bw::parser::ParseError| {
            mesh_error(
                name,
                format!("element '{key}': {}", first_line(&e.to_string())),
            )
        };
        match key.as_str() {
            "vertex" => {
                let v: Vec<Vertex> = Parser::<Vertex>::new()
                    .read_payload_for_element(reader, def, header)
                    .map_err(failed)?;
                vertices = v.into_iter().map(|v| DVec3::from_array(v.p)).collect();
            }
            "face" => {
                face_line = lines_before.map(|l| l + 1);
                faces = Parser::<Face>::new()
                    .read_payload_for_element(reader, def, header)
                    .map_err(failed)?;
            }
            _ => {
                Parser::<Skip>::new()
                    .read_payload_for_element(reader, def, header)
                    .map_err(failed)?;
                warnings.note(
                    format!("element '{key}' ({} items) ignored", def.count),
                    Location::File,
                );
            }
        }
        lines_before = lines_before.map(|l| l + def.count as u64);
    }
    let mut triangles = Vec::new();
    let mut face_of = Vec::new();
    for (f, face) in faces.iter().enumerate() {
        let Some(c) = &face.corners else {
            return Err(mesh_error(
                name,
                format!(
                    "face {f}{}: a negative or non-integer vertex index",
                    face_line.map_or(String::new(), |l| format!(" (line {})", l + f as u64))
                ),
            ));
        };
        if c.len() < 3 {
            warnings.note(
                "faces with fewer than three corners ignored".into(),
                face_line.map_or(Location::File, |l| Location::Line(l + f as u64)),
            );
            continue;
        }
        for k in 1..c.len() - 1 {
            triangles.push([c[0], c[k], c[k + 1]]);
            face_of.push(f as u32);
        }
    }
    Ok(Raw {
        vertices,
        triangles,
        warnings: warnings.into_list(name),
        groups: Vec::new(),
        at: TriangleAt::PlyFaces { face_of, face_line },
    })
}
