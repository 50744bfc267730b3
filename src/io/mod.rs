//! Reading and writing: mesh files (feature `formats`) and saved hierarchies.

#[cfg(feature = "formats")]
pub mod formats;
pub mod saved;
