//! Typed errors for everything that can fail on user input.

use std::fmt;

/// Everything that can go wrong when building or querying with bad input.
///
/// No public function of this crate panics on bad input; it returns one of these.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The mesh has no triangles (or no vertices).
    EmptyMesh,
    /// A vertex coordinate is NaN or infinite.
    NonFiniteCoordinate {
        /// Index of the offending vertex.
        vertex: usize,
    },
    /// A vertex coordinate is larger in magnitude than [`crate::MAX_COORDINATE`].
    CoordinateOutOfRange {
        /// Index of the offending vertex.
        vertex: usize,
        /// The offending value.
        value: f64,
    },
    /// A triangle refers to a vertex that does not exist.
    IndexOutOfRange {
        /// Index of the offending triangle.
        triangle: usize,
        /// The vertex index it used.
        index: u32,
        /// Number of vertices in the mesh.
        vertex_count: usize,
    },
    /// The mesh has more triangles or vertices than the hierarchy can address (2^31 - 1).
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// How many there were.
        count: usize,
    },
    /// A pose has a NaN or infinite entry, or an entry beyond the documented limits
    /// ([`crate::MAX_POSE_LINEAR`], [`crate::MAX_POSE_TRANSLATION`]).
    InvalidPose {
        /// Why the pose was refused.
        reason: &'static str,
    },
    /// A build or query parameter is out of its range.
    InvalidParameter {
        /// Which parameter.
        name: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// A saved-hierarchy file could not be read.
    Format(FormatError),
    /// A mesh file could not be parsed (`formats` feature).
    MeshFile {
        /// File name or description.
        source_name: String,
        /// What went wrong.
        reason: String,
    },
    /// An operating-system I/O error (the message of [`std::io::Error`]).
    Io(String),
    /// A handle whose object, shape, part or tree leaf was removed, or a contact pair of
    /// an earlier step.
    StaleHandle {
        /// What the handle named ("object", "shape", "part", "tree leaf", "contact pair").
        what: &'static str,
    },
    /// A handle of another world.
    ForeignHandle {
        /// What the handle named.
        what: &'static str,
    },
    /// A shape cannot be removed while objects or parts use it.
    ShapeInUse {
        /// How many objects and parts use it.
        users: u32,
    },
    /// An error in a named input: a file, the environment or the object of a query, a
    /// handle. [`Error::root`] gives the error inside.
    Context {
        /// What the error is about ("mesh part.obj", "ENV", ...).
        context: String,
        /// The error.
        error: Box<Error>,
    },
}

impl Error {
    /// The error inside any [`Error::Context`] layers.
    #[must_use]
    pub fn root(&self) -> &Error {
        match self {
            Error::Context { error, .. } => error.root(),
            e => e,
        }
    }

    /// This error about `context` (a file, a role, a handle).
    #[must_use]
    pub fn context(self, context: impl Into<String>) -> Error {
        Error::Context {
            context: context.into(),
            error: Box::new(self),
        }
    }
}

/// Why a saved hierarchy file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The file does not start with the kdop magic bytes: not one of our files.
    NotKdopFile,
    /// The file was written by a format version this build cannot read.
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
    },
    /// The file holds a hierarchy for another k than the one asked for.
    WrongK {
        /// k in the file.
        found: u32,
        /// k asked for.
        expected: u32,
    },
    /// The file ends before its header says it should.
    Truncated,
    /// The checksum does not match: the file was damaged.
    ChecksumMismatch,
    /// The content is inconsistent (bad index, bound that does not contain its geometry, ...).
    Corrupt(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::EmptyMesh => write!(f, "the mesh has no triangles"),
            Error::NonFiniteCoordinate { vertex } => {
                write!(f, "vertex {vertex} has a NaN or infinite coordinate")
            }
            Error::CoordinateOutOfRange { vertex, value } => write!(
                f,
                "vertex {vertex} has coordinate {value:e}, beyond the supported magnitude 2^40 = {:e}",
                crate::MAX_COORDINATE
            ),
            Error::IndexOutOfRange {
                triangle,
                index,
                vertex_count,
            } => write!(
                f,
                "triangle {triangle} uses vertex {index}, but the mesh has {vertex_count} vertices"
            ),
            Error::TooLarge { what, count } => {
                write!(
                    f,
                    "too many {what} ({count}); at most 2^31 - 1 are supported"
                )
            }
            Error::InvalidPose { reason } => write!(f, "invalid pose: {reason}"),
            Error::InvalidParameter { name, reason } => write!(f, "invalid {name}: {reason}"),
            Error::Format(e) => write!(f, "cannot load hierarchy file: {e}"),
            Error::MeshFile {
                source_name,
                reason,
            } => write!(f, "cannot read mesh {source_name}: {reason}"),
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::StaleHandle { what } => write!(f, "the {what} of this handle is gone"),
            Error::ForeignHandle { what } => {
                write!(f, "this {what} handle belongs to another world")
            }
            Error::ShapeInUse { users } => {
                write!(f, "the shape is used by {users} objects and parts")
            }
            Error::Context { context, error } => write!(f, "{context}: {error}"),
        }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::NotKdopFile => write!(f, "not a kdop hierarchy file"),
            FormatError::UnsupportedVersion { found } => {
                write!(f, "format version {found} is not supported")
            }
            FormatError::WrongK { found, expected } => {
                write!(f, "file holds {found}-DOPs, expected {expected}-DOPs")
            }
            FormatError::Truncated => write!(f, "file is truncated"),
            FormatError::ChecksumMismatch => write!(f, "checksum mismatch (file damaged)"),
            FormatError::Corrupt(what) => write!(f, "corrupt content: {what}"),
        }
    }
}

impl std::error::Error for Error {}
impl std::error::Error for FormatError {}

impl From<FormatError> for Error {
    fn from(e: FormatError) -> Self {
        Error::Format(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::Format(FormatError::Truncated)
        } else {
            Error::Io(e.to_string())
        }
    }
}

/// Shorthand for `Result<T, kdop::Error>`.
pub type Result<T> = std::result::Result<T, Error>;
