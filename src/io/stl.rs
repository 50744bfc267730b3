//! STL, binary and ASCII, through `stl_io`, with the framing decided here.
//!
//! `stl_io` reads one ASCII solid and stops, trusts a binary file's triangle count over its
//! size, takes a binary file whose 80-byte header begins with `solid ` for ASCII, and probes
//! for ASCII by reading a whole line (all of a binary file without a newline byte). So kdop
//! decides the framing and hands `stl_io` only what it reads well:
//!
//! - **Binary or ASCII**: binary when the size is exactly 84 + 50 × the header's count
//!   (whatever the header's first word), when the file does not begin with `solid`, or when
//!   its first kilobyte holds control bytes that text does not; ASCII otherwise. A UTF-8 byte-order mark and leading white space are skipped.
//! - **ASCII**: every `solid … endsolid` block is read, in file order (an assembly exported
//!   as one file), each a [`Group`] named by its `solid` line. A `facet` outside a solid, a
//!   `solid` inside one, and a solid without `endsolid` (a cut file) are refused; other text
//!   outside the solids is ignored with a warning.
//! - **Binary**: a header count larger than the whole 50-byte records present is refused (a
//!   cut file); a smaller one reads every whole record, with a warning (exporters that stream
//!   often leave the count at 0); bytes after the last whole record are ignored with a
//!   warning.

use super::formats::{Group, Location, Raw, TriangleAt, Warnings, mesh_error};
use super::lines::{LineSource, MAX_LINE_BYTES, first_token};
use crate::error::Result;
use glam::DVec3;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};

const HEADER: u64 = 84;
const RECORD: u64 = 50;

/// How many leading bytes are looked at to tell ASCII from binary.
const SNIFF: u64 = 1024;

/// Whether the first bytes read as the start of an ASCII STL: `solid` as a word, and no
/// control byte that text does not have (binary coordinates are full of them).
fn looks_ascii(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = head
        .iter()
        .all(|&b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c));
    let head = head.trim_ascii_start();
    text && head
        .strip_prefix(b"solid")
        .is_some_and(|rest| rest.first().is_none_or(u8::is_ascii_whitespace))
}

/// A name from the file, fit for a message: printable, at most 60 characters.
fn printable(name: &[u8]) -> String {
    let s: String = String::from_utf8_lossy(name)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(60)
        .collect();
    s
}

/// Reads an STL file, binary or ASCII.
pub(crate) fn read<R: Read + Seek>(mut source: R, name: &str) -> Result<Raw> {
    let size = source.seek(SeekFrom::End(0))?;
    source.seek(SeekFrom::Start(0))?;
    let mut head = Vec::with_capacity(SNIFF as usize);
    (&mut source).take(SNIFF).read_to_end(&mut head)?;
    source.seek(SeekFrom::Start(0))?;
    let exact_binary = head.len() >= HEADER as usize && {
        let count = u32::from_le_bytes([head[80], head[81], head[82], head[83]]);
        HEADER + RECORD * u64::from(count) == size
    };
    if exact_binary || !looks_ascii(&head) {
        return read_binary(source, size, name);
    }
    read_ascii(source, name).map_err(|e| match e {
        crate::Error::MeshFile {
            source_name,
            reason,
        } => crate::Error::MeshFile {
            source_name,
            reason: format!(
                "{reason} (read as ASCII STL because it begins with 'solid'; a binary STL \
                 whose header begins so must hold exactly the triangles its count declares)"
            ),
        },
        e => e,
    })
}

fn read_binary<R: Read + Seek>(source: R, size: u64, name: &str) -> Result<Raw> {
    if size < HEADER {
        return Err(mesh_error(
            name,
            format!(
                "not an STL file: a binary STL has an 84-byte header, and this file has {size} bytes \
                 (an ASCII STL begins with 'solid')"
            ),
        ));
    }
    let mut source = source;
    let mut count = [0u8; 4];
    source.seek(SeekFrom::Start(80))?;
    source.read_exact(&mut count)?;
    let declared = u64::from(u32::from_le_bytes(count));
    let records = (size - HEADER) / RECORD;
    let rest = (size - HEADER) % RECORD;
    let mut warnings = Warnings::default();
    if declared > records {
        return Err(mesh_error(
            name,
            format!(
                "the header declares {declared} triangles, but only {records} whole 50-byte \
                 triangles follow it: the file is cut short"
            ),
        ));
    }
    if declared < records {
        warnings.note(
            format!(
                "the header declares {declared} triangles, but {records} whole 50-byte triangles \
                 follow it; all {records} were read"
            ),
            Location::Byte(80),
        );
    }
    if rest > 0 {
        warnings.note(
            format!("{rest} bytes after the last whole triangle ignored"),
            Location::Byte(HEADER + RECORD * records),
        );
    }
    let records32 =
        u32::try_from(records).map_err(|_| mesh_error(name, "more than 2^32 triangles"))?;
    // `stl_io` reads as many records as the header says and probes for ASCII by reading a
    // line: it is handed a header with the count found here and a newline first.
    let mut header = [0u8; HEADER as usize];
    header[0] = b'\n';
    header[80..].copy_from_slice(&records32.to_le_bytes());
    let mut framed = Framed {
        header,
        pos: 0,
        inner: source,
    };
    // The record count comes from the file's size, so these are what the file holds.
    let mut vertices = Vec::with_capacity(3 * records as usize);
    let mut triangles = Vec::with_capacity(records as usize);
    let reader = stl_io::create_stl_reader(&mut framed).map_err(|e| mesh_error(name, e))?;
    for (t, tri) in reader.enumerate() {
        let tri = tri.map_err(|e| {
            mesh_error(
                name,
                format!("byte offset {}: {e}", HEADER + RECORD * t as u64),
            )
        })?;
        push_triangle(&mut vertices, &mut triangles, &tri);
    }
    Ok(Raw {
        vertices,
        triangles,
        warnings: warnings.into_list(name),
        groups: Vec::new(),
        at: TriangleAt::StlRecords,
    })
}

fn push_triangle(vertices: &mut Vec<DVec3>, triangles: &mut Vec<[u32; 3]>, t: &stl_io::Triangle) {
    // Counts are below 2^32 / 3 here: binary counts are checked above, ASCII facets take
    // far more than 3 bytes each of a file read through a bounded line source.
    let base = vertices.len() as u32;
    vertices.extend(
        t.vertices
            .iter()
            .map(|v| DVec3::new(v[0].into(), v[1].into(), v[2].into())),
    );
    triangles.push([base, base + 1, base + 2]);
}

/// A binary STL with its 84-byte header replaced.
struct Framed<R> {
    header: [u8; HEADER as usize],
    pos: u64,
    inner: R,
}

impl<R: Read + Seek> Read for Framed<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos < HEADER {
            let from = &self.header[self.pos as usize..];
            let n = from.len().min(out.len());
            out[..n].copy_from_slice(&from[..n]);
            self.pos += n as u64;
            if self.pos == HEADER {
                self.inner.seek(SeekFrom::Start(HEADER))?;
            }
            return Ok(n);
        }
        let n = self.inner.read(out)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for Framed<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match to {
            SeekFrom::Start(p) => {
                self.pos = p;
                if p >= HEADER {
                    self.inner.seek(SeekFrom::Start(p))?;
                }
                Ok(p)
            }
            SeekFrom::Current(0) => Ok(self.pos),
            _ => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "only absolute seeks in a framed STL",
            )),
        }
    }
}

/// A `solid` block being gathered.
struct Solid {
    name: String,
    line: u64,
    text: Vec<u8>,
    first_triangle: usize,
}

fn read_ascii<R: Read + Seek>(source: R, name: &str) -> Result<Raw> {
    let mut lines = LineSource::new(BufReader::new(source), MAX_LINE_BYTES);
    let mut warnings = Warnings::default();
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    let mut groups = Vec::new();
    let mut facet_lines: Vec<u64> = Vec::new();
    let mut open: Option<Solid> = None;
    loop {
        match lines.advance() {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                return Err(mesh_error(name, e));
            }
        }
        let n = lines.line_no();
        let line = lines.line();
        let keyword = first_token(line);
        match (&mut open, keyword) {
            (_, b"") => {}
            (None, b"solid") => {
                let title = line.trim_ascii()[5..].trim_ascii();
                let mut text = Vec::with_capacity(4096);
                text.extend_from_slice(b"solid kdop\n");
                open = Some(Solid {
                    name: printable(title),
                    line: n,
                    text,
                    first_triangle: triangles.len(),
                });
            }
            (None, b"facet") => {
                return Err(mesh_error(
                    name,
                    format!("line {n}: a facet outside any solid (no 'solid' line before it)"),
                ));
            }
            (None, _) => warnings.note("text outside any solid ignored".into(), Location::Line(n)),
            (Some(s), b"solid") => {
                return Err(mesh_error(
                    name,
                    format!(
                        "line {n}: a new solid begins inside solid '{}' (line {}) before its 'endsolid'",
                        s.name, s.line
                    ),
                ));
            }
            (Some(_), b"endsolid") => {
                let Some(mut s) = open.take() else { continue };
                s.text.extend_from_slice(b"endsolid kdop\n");
                let mut cursor = Cursor::new(&s.text);
                let reader =
                    stl_io::create_stl_reader(&mut cursor).map_err(|e| mesh_error(name, e))?;
                for (k, tri) in reader.enumerate() {
                    let tri = tri.map_err(|e| {
                        let at = facet_lines
                            .get(s.first_triangle + k)
                            .copied()
                            .unwrap_or(s.line);
                        mesh_error(name, format!("line {at}: {e}"))
                    })?;
                    push_triangle(&mut vertices, &mut triangles, &tri);
                }
                groups.push(Group {
                    name: s.name,
                    triangles: s.first_triangle..triangles.len(),
                });
            }
            (Some(s), word) => {
                if word == b"facet" {
                    facet_lines.push(n);
                }
                s.text.extend_from_slice(line);
                if !line.ends_with(b"\n") {
                    s.text.push(b'\n');
                }
            }
        }
    }
    if let Some(s) = open {
        return Err(mesh_error(
            name,
            format!(
                "solid '{}' (line {}) has no 'endsolid': the file is cut short",
                s.name, s.line
            ),
        ));
    }
    Ok(Raw {
        vertices,
        triangles,
        warnings: warnings.into_list(name),
        groups,
        at: TriangleAt::Lines(facet_lines),
    })
}
