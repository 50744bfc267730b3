//! Saved environment hierarchies (Klosowski et al. 1998, §5: "our software has the option
//! to store the environment hierarchy to a binary file").
//!
//! # Format (version 2, little-endian)
//! ```text
//! magic      8 bytes  "KDOPENV\0"
//! version    u32      2
//! k          u32      6, 14, 18 or 26
//! length     u64      of the whole file, checksum included (so that a cut file reads
//!                     as truncated, not as damaged)
//! rule       u8       0 longest side, 1 min sum, 2 min max, 3 splatter
//! split      u8       0 mean, 1 median
//! reserved   u16      0
//! leaf_size  u32
//! parts      u64
//! per part:  placement 12 × f64 (row-major 3×4)
//!            vertices u64, triangles u64, nodes u64, codes u64 (0 or triangles)
//!            vertices × 3 f64, triangles × 3 u32 (leaf order),
//!            triangles × u32 ids (bit 31: last of its leaf),
//!            nodes × (k f32 bounds, u32 link),
//!            codes × k u8 (leaf codes, `hierarchy::codes`)
//! crc32      u32      of every byte before it
//! ```
//! Version 1 files (no length, no code count, no codes) still load: their codes are
//! encoded on load.
//! Every count is checked against the bytes that remain before anything is allocated, every
//! value is decoded with `from_le_bytes`, and the decoded hierarchies are validated in full
//! (tree shape, ranges, and that every bound contains its geometry) before use. The part
//! tree is rebuilt on load (it is small). A truncated, damaged or foreign file is a
//! [`FormatError`], never a panic.

use super::envelope::{self, le_f64, le_u32};
use crate::dop::Dop;
use crate::env::{Environment, Part};
use crate::error::{Error, FormatError, Result};
use crate::hierarchy::{Bvh, Node, codes};
use crate::pose::Pose;
use glam::DVec3;
use rayon::prelude::*;
use std::io::{Read, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"KDOPENV\0";
const VERSION: u32 = 2;
/// The oldest version still read: version 1 had no length field and no leaf codes.
const OLDEST_VERSION: u32 = 1;

impl<const K: usize> Environment<K> {
    /// Writes the environment (meshes, placements, hierarchies) in the versioned,
    /// checksummed format of [`crate::io::saved`].
    ///
    /// # Errors
    /// [`Error::Io`] if writing fails.
    pub fn save(&self, w: &mut impl Write) -> Result<()> {
        w.write_all(&self.to_bytes())?;
        Ok(())
    }

    /// [`Environment::save`] to a file. The bytes go to a temporary file beside it, which
    /// then replaces it, so a failed write leaves whatever was there whole.
    ///
    /// # Errors
    /// [`Error::Context`] naming the file around [`Error::Io`] if it cannot be written.
    pub fn save_to_file(&self, path: impl AsRef<Path>) -> Result<()> {
        envelope::write_atomically(path.as_ref(), &self.to_bytes(), "hierarchy file")
    }

    /// The saved form as bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let (mut b, length_at) = envelope::begin(MAGIC, VERSION, K, self.memory_bytes());
        envelope::put_build_options(&mut b, &self.options);
        b.extend_from_slice(&(self.parts.len() as u64).to_le_bytes());
        for p in &self.parts {
            for v in p.placement.to_rows() {
                b.extend_from_slice(&v.to_le_bytes());
            }
            let h = &p.bvh;
            for n in [h.vertices.len(), h.tris.len(), h.nodes.len()] {
                b.extend_from_slice(&(n as u64).to_le_bytes());
            }
            b.extend_from_slice(&(p.codes.len() as u64).to_le_bytes());
            for v in &h.vertices {
                for c in v.to_array() {
                    b.extend_from_slice(&c.to_le_bytes());
                }
            }
            for t in &h.tris {
                for i in t {
                    b.extend_from_slice(&i.to_le_bytes());
                }
            }
            for i in &h.ids {
                b.extend_from_slice(&i.to_le_bytes());
            }
            for n in &h.nodes {
                for f in n.dop.b {
                    b.extend_from_slice(&f.to_le_bytes());
                }
                b.extend_from_slice(&n.link.to_le_bytes());
            }
            for code in &p.codes {
                b.extend_from_slice(code);
            }
        }
        envelope::seal(b, length_at)
    }

    /// Reads an environment written by [`Environment::save`].
    ///
    /// # Errors
    /// [`Error::Format`] for anything but an intact file of this k; [`Error::Io`] if
    /// reading fails.
    pub fn load(r: &mut impl Read) -> Result<Self> {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes)?;
        Self::from_bytes(&bytes)
    }

    /// [`Environment::load`] from a file.
    ///
    /// # Errors
    /// As [`Environment::load`], inside an [`Error::Context`] that names the file.
    pub fn load_from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        std::fs::read(path)
            .map_err(Error::from)
            .and_then(|b| Self::from_bytes(&b))
            .map_err(|e| e.context(path.display().to_string()))
    }

    /// Decodes and validates the saved form.
    ///
    /// # Errors
    /// As [`Environment::load`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        zone!("Environment::from_bytes");
        let _ = Dop::<K>::AXES;
        let (version, mut c) = envelope::open(bytes, MAGIC, OLDEST_VERSION..=VERSION, 2, K)?;
        let options = c.build_options()?;
        let header = 12 * 8 + if version >= 2 { 32 } else { 24 };
        // No parts is an empty environment, as `Environment::build` makes.
        let part_count = c.count(header)?;
        // First the part headers, in order, which locate each part's arrays; then every
        // part decoded and validated in parallel (results in file order, so the error
        // reported for a damaged file is always that of its first damaged part).
        let mut raw = Vec::with_capacity(part_count);
        for _ in 0..part_count {
            let placement = c.pose()?;
            let nv = c.u64()?;
            let nt = c.u64()?;
            let nn = c.u64()?;
            let nc = if version >= 2 { c.u64()? } else { 0 };
            let need = nv
                .checked_mul(24)
                .and_then(|a| nt.checked_mul(16).and_then(|b| a.checked_add(b)))
                .and_then(|a| {
                    nn.checked_mul(Self::NODE_BYTES as u64)
                        .and_then(|b| a.checked_add(b))
                })
                .and_then(|a| nc.checked_mul(K as u64).and_then(|b| a.checked_add(b)))
                .ok_or(FormatError::Truncated)?;
            if need > c.remaining() as u64 {
                return Err(FormatError::Truncated.into());
            }
            let (nv, nt, nn, nc) = (nv as usize, nt as usize, nn as usize, nc as usize);
            if nt > crate::mesh::MAX_ELEMENTS || nv > crate::mesh::MAX_ELEMENTS {
                return Err(FormatError::Corrupt("too many elements").into());
            }
            raw.push(RawPart {
                placement,
                vertices: c.bytes(nv * 24)?,
                tris: c.bytes(nt * 12)?,
                ids: c.bytes(nt * 4)?,
                nodes: c.bytes(nn * Self::NODE_BYTES)?,
                codes: (version >= 2).then(|| c.bytes(nc * K)).transpose()?,
            });
        }
        if c.remaining() != 0 {
            return Err(FormatError::Corrupt("trailing bytes").into());
        }
        let decoded: Vec<Result<Part<K>>> = raw.par_iter().map(Self::decode_part).collect();
        let parts = decoded.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(Environment::assemble(parts, options))
    }

    /// Bytes of one saved node: `K` bounds and the link.
    const NODE_BYTES: usize = 4 * K + 4;

    /// Decodes one part's arrays (lengths already checked) and validates its hierarchy.
    fn decode_part(raw: &RawPart<'_>) -> Result<Part<K>> {
        let vertices: Vec<DVec3> = raw
            .vertices
            .chunks_exact(24)
            .map(|b| DVec3::new(le_f64(&b[0..8]), le_f64(&b[8..16]), le_f64(&b[16..24])))
            .collect();
        let tris: Vec<[u32; 3]> = raw
            .tris
            .chunks_exact(12)
            .map(|b| [le_u32(&b[0..4]), le_u32(&b[4..8]), le_u32(&b[8..12])])
            .collect();
        let ids: Vec<u32> = raw.ids.chunks_exact(4).map(le_u32).collect();
        let nodes: Vec<Node<K>> = raw
            .nodes
            .chunks_exact(Self::NODE_BYTES)
            .map(|b| {
                let mut dop = Dop::<K>::EMPTY;
                for (f, v) in dop.b.iter_mut().zip(b.chunks_exact(4)) {
                    *f = f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                }
                Node {
                    dop,
                    link: le_u32(&b[4 * K..]),
                }
            })
            .collect();
        let bvh = Bvh {
            nodes,
            vertices,
            tris,
            ids,
        };
        let codes = match raw.codes {
            Some(bytes) => {
                let codes: Vec<[u8; K]> = bytes
                    .chunks_exact(K)
                    .map(|b| std::array::from_fn(|i| b[i]))
                    .collect();
                bvh.validate_with_codes(&codes)
                    .map_err(FormatError::Corrupt)?;
                codes
            }
            None => {
                bvh.validate().map_err(FormatError::Corrupt)?;
                codes::encode(&bvh, |pos| codes::own_bound(&bvh, pos))
            }
        };
        Ok(Part {
            bvh,
            placement: raw.placement,
            codes,
        })
    }
}

/// One part's placement and the undecoded bytes of its arrays.
struct RawPart<'a> {
    placement: Pose,
    vertices: &'a [u8],
    tris: &'a [u8],
    ids: &'a [u8],
    nodes: &'a [u8],
    /// The leaf codes; `None` in a version 1 file, which has none.
    codes: Option<&'a [u8]>,
}
