//! Mesh files: OBJ (`tobj`), STL binary and ASCII (`stl_io`), PLY ASCII and binary
//! (`ply-rs-bw`). Behind the `formats` feature.
//!
//! Triangles are numbered in file order. A polygon with n > 3 corners becomes the fan
//! `(v0, v1, v2), (v0, v2, v3), ...`; degenerate triangles are kept, so they keep their
//! numbers. Vertices of bit-identical position are welded (triangles and their order are
//! unchanged). OBJ and PLY `double` coordinates are read as `f64`; STL holds `f32`.
//!
//! **Nothing is lost without a word.** Every reader either reads all the geometry a file
//! holds, or refuses the file with an [`Error::MeshFile`] that names it and the line or
//! byte offset, or reads it and returns a [`ReadWarning`] for what it ignored. What each
//! format does with byte-order marks, unknown statements, several solids, counts that do
//! not match the data and trailing bytes is listed in the docs of [`read_mesh`]. Lines are
//! at most [`MAX_LINE_BYTES`] long and a PLY header at most 1 MiB, so a file without line
//! breaks is refused after that much, not read whole; nothing else is allocated beyond what
//! the file's size holds.

use crate::error::{Error, Result};
use crate::mesh::Mesh;
use glam::DVec3;
use std::fmt;
use std::io::{Read, Seek};
use std::ops::Range;
use std::path::Path;

pub use super::lines::MAX_LINE_BYTES;

/// The mesh file formats kdop reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeshFormat {
    /// Wavefront OBJ (text).
    Obj,
    /// STL, binary or ASCII (told apart by the content).
    Stl,
    /// PLY, ASCII or binary (either byte order).
    Ply,
}

impl MeshFormat {
    /// Every format.
    pub const ALL: [MeshFormat; 3] = [MeshFormat::Obj, MeshFormat::Stl, MeshFormat::Ply];

    /// The format a file name's extension names (`.obj`, `.stl`, `.ply`, any case).
    #[must_use]
    pub fn from_path(path: &Path) -> Option<MeshFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "obj" => Some(MeshFormat::Obj),
            "stl" => Some(MeshFormat::Stl),
            "ply" => Some(MeshFormat::Ply),
            _ => None,
        }
    }
}

/// Where in a file a warning applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A 1-based line number.
    Line(u64),
    /// A 0-based byte offset.
    Byte(u64),
    /// The file as a whole (its header, say).
    File,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Byte(n) => write!(f, "byte offset {n}"),
            Location::File => write!(f, "header"),
        }
    }
}

/// Something a reader ignored, and where it first met it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadWarning {
    /// The file (or the name given to [`read_mesh`]).
    pub source_name: String,
    /// Where it was met first.
    pub location: Location,
    /// What was ignored.
    pub message: String,
    /// How many times it was met.
    pub count: u64,
}

impl fmt::Display for ReadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, {}: {}",
            self.source_name, self.location, self.message
        )?;
        if self.count > 1 {
            write!(f, " ({} times, first here)", self.count)?;
        }
        Ok(())
    }
}

/// A named run of triangles: an ASCII STL solid, or an OBJ object or group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The name the file gives it (may be empty).
    pub name: String,
    /// Its triangles, by number in the mesh.
    pub triangles: Range<usize>,
}

/// A mesh read from a file, with what the reader ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedMesh {
    /// The mesh, vertices welded.
    pub mesh: Mesh,
    /// What was ignored, one entry per kind of thing, in the order first met.
    pub warnings: Vec<ReadWarning>,
    /// Named runs of triangles, in file order (ASCII STL solids, OBJ objects and groups).
    pub groups: Vec<Group>,
}

/// Reads a mesh file, choosing the format by extension (`.obj`, `.stl`, `.ply`, any case).
/// What it ignored is dropped; [`read_mesh_file`] returns it.
///
/// # Errors
/// As [`read_mesh_file`].
pub fn load_mesh(path: impl AsRef<Path>) -> Result<Mesh> {
    read_mesh_file(path).map(|l| l.mesh)
}

/// Reads a mesh file, choosing the format by extension, and says what it ignored.
///
/// # Errors
/// [`Error::MeshFile`] naming the file for a missing or unreadable file, an unknown
/// extension, and everything [`read_mesh`] refuses.
pub fn read_mesh_file(path: impl AsRef<Path>) -> Result<LoadedMesh> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let Some(format) = MeshFormat::from_path(path) else {
        return Err(mesh_error(
            &name,
            "unknown extension (expected .obj, .stl or .ply)",
        ));
    };
    let file = std::fs::File::open(path).map_err(|e| mesh_error(&name, e))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(mesh_error(&name, "it is a directory"));
    }
    read_mesh(file, format, &name)
}

/// Reads a mesh in `format` from `source`; `source_name` names it in errors and warnings.
///
/// What each format does where files go wrong (every case is tested):
///
/// | case | OBJ | STL | PLY |
/// |---|---|---|---|
/// | UTF-8 byte-order mark | skipped | skipped | skipped |
/// | CRLF line ends | read | read | read |
/// | `#` comment after a statement | stripped | — | — |
/// | statement or element not read | warning (see below) | — | element ignored, warning |
/// | several `solid … endsolid` blocks | — | all read, in order, one [`Group`] each | — |
/// | text outside the solids | — | warning | — |
/// | count lower than the data | — | binary: all whole records read, warning | refused |
/// | count higher than the data | — | binary: refused (cut file) | refused, before reading |
/// | trailing bytes | — | binary: warning | refused |
/// | line over [`MAX_LINE_BYTES`] | refused | refused | refused |
/// | face index out of range or negative | refused, with the line | — | refused, with the face |
/// | NaN, infinite or huge coordinate | refused, with the triangle and its line or offset | same | same |
///
/// OBJ statements: `v` and `f` (and the old `fo`) are read; texture coordinates,
/// normals, groups, smoothing and materials are ignored silently (they do not change the
/// surface); lines and points (`l`, `p`, faces of fewer than three corners), free-form
/// geometry (`curv`, `surf`, ...) and `call` are ignored with a warning; anything else is
/// ignored with a warning naming the statement.
///
/// # Errors
/// [`Error::MeshFile`] for what the reader refuses, with the source's name and where;
/// [`Error::Context`] around [`Mesh::new`]'s errors (no triangles, a bad coordinate or
/// index) naming the source and, where there is one, the triangle and its line or offset.
pub fn read_mesh<R: Read + Seek>(
    mut source: R,
    format: MeshFormat,
    source_name: &str,
) -> Result<LoadedMesh> {
    let raw = match format {
        MeshFormat::Obj => super::obj::read(&mut source, source_name),
        MeshFormat::Stl => super::stl::read(&mut source, source_name),
        MeshFormat::Ply => super::ply::read(&mut source, source_name),
    }
    .map_err(|e| match e {
        Error::Io(why) => mesh_error(source_name, why),
        Error::Format(crate::FormatError::Truncated) => {
            mesh_error(source_name, "the file ends in the middle of its data")
        }
        e => e,
    })?;
    if let Err(e) = crate::mesh::validate(&raw.vertices, &raw.triangles) {
        // Say where: the refused triangle, or the first triangle using the refused vertex.
        let triangle = match e {
            Error::IndexOutOfRange { triangle, .. } => Some(triangle),
            Error::NonFiniteCoordinate { vertex } | Error::CoordinateOutOfRange { vertex, .. } => {
                raw.triangles
                    .iter()
                    .position(|t| t.contains(&(vertex as u32)))
            }
            _ => None,
        };
        let context = match triangle {
            Some(t) => format!("mesh {source_name}, {}", where_is(&raw, t, &mut source)),
            None => format!("mesh {source_name}"),
        };
        return Err(e.context(context));
    }
    Ok(LoadedMesh {
        mesh: Mesh::from_valid(raw.vertices, raw.triangles).welded(),
        warnings: raw.warnings,
        groups: raw.groups,
    })
}

/// What a format reader hands back: triangles in file order and how to find them.
pub(crate) struct Raw {
    pub vertices: Vec<DVec3>,
    pub triangles: Vec<[u32; 3]>,
    pub warnings: Vec<ReadWarning>,
    pub groups: Vec<Group>,
    pub at: TriangleAt,
}

/// How to find a triangle in its file, for messages.
pub(crate) enum TriangleAt {
    /// OBJ: the file is scanned again for the face the triangle was fanned from.
    ObjFaces,
    /// The line of each triangle (ASCII STL: its `facet` line).
    Lines(Vec<u64>),
    /// Binary STL: 50-byte records after an 84-byte header.
    StlRecords,
    /// PLY: each triangle's face, and the line of face 0 in an ASCII file.
    PlyFaces {
        face_of: Vec<u32>,
        face_line: Option<u64>,
    },
}

/// Where triangle `t` is in the file, as words for a message.
fn where_is<R: Read + Seek>(raw: &Raw, t: usize, source: &mut R) -> String {
    match &raw.at {
        TriangleAt::ObjFaces => match super::obj::line_of_triangle(source, t) {
            Ok(Some(line)) => format!("triangle {t} (line {line})"),
            _ => format!("triangle {t}"),
        },
        TriangleAt::Lines(lines) => match lines.get(t) {
            Some(line) => format!("triangle {t} (line {line})"),
            None => format!("triangle {t}"),
        },
        TriangleAt::StlRecords => format!("triangle {t} (byte offset {})", 84 + 50 * t as u64),
        TriangleAt::PlyFaces { face_of, face_line } => {
            let f = face_of.get(t).copied().unwrap_or(0);
            match face_line {
                Some(l) => format!("triangle {t} (face {f}, line {})", l + u64::from(f)),
                None => format!("triangle {t} (face {f})"),
            }
        }
    }
}

/// An error in the named mesh file.
pub(crate) fn mesh_error(name: &str, reason: impl ToString) -> Error {
    Error::MeshFile {
        source_name: name.to_owned(),
        reason: reason.to_string(),
    }
}

/// Warnings gathered while reading: one entry per message, with its first place and how
/// often it came; at most [`Warnings::KINDS`] kinds, the rest counted together.
#[derive(Default)]
pub(crate) struct Warnings {
    kinds: Vec<(String, Location, u64)>,
    others: Option<(Location, u64)>,
}

impl Warnings {
    const KINDS: usize = 32;

    /// Notes that `message` applies at `at`.
    pub fn note(&mut self, message: String, at: Location) {
        if let Some(k) = self.kinds.iter_mut().find(|k| k.0 == message) {
            k.2 += 1;
        } else if self.kinds.len() < Self::KINDS {
            self.kinds.push((message, at, 1));
        } else {
            let o = self.others.get_or_insert((at, 0));
            o.1 += 1;
        }
    }

    /// The warnings, for the named source.
    pub fn into_list(self, name: &str) -> Vec<ReadWarning> {
        let mut list: Vec<ReadWarning> = self
            .kinds
            .into_iter()
            .map(|(message, location, count)| ReadWarning {
                source_name: name.to_owned(),
                location,
                message,
                count,
            })
            .collect();
        if let Some((location, count)) = self.others {
            list.push(ReadWarning {
                source_name: name.to_owned(),
                location,
                message: "other ignored statements".into(),
                count,
            });
        }
        list
    }
}
