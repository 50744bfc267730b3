//! Reading and writing: mesh files (feature `formats`) and saved hierarchies.

pub(crate) mod envelope;
#[cfg(feature = "formats")]
pub mod formats;
#[cfg(feature = "formats")]
mod lines;
#[cfg(feature = "formats")]
mod obj;
#[cfg(feature = "formats")]
mod ply;
pub mod saved;
#[cfg(feature = "formats")]
mod stl;
