//! The envelope every saved kdop file shares: magic bytes, a format version, k, the whole
//! file's length (so that a cut file reads as truncated, not as damaged) and a CRC-32 of
//! every byte before it; and a bounds-checked little-endian reader for the body, so that
//! decoding untrusted bytes can fail only with a [`FormatError`].

use crate::error::{Error, FormatError, Result};
use crate::hierarchy::{AxisRule, BuildOptions, SplitPoint};
use std::path::Path;

/// Appends build options in 8 bytes: rule, split point, two reserved bytes, leaf size.
pub(crate) fn put_build_options(b: &mut Vec<u8>, options: &BuildOptions) {
    b.push(match options.rule {
        AxisRule::LongestSide => 0,
        AxisRule::MinSum => 1,
        AxisRule::MinMax => 2,
        AxisRule::Splatter => 3,
        AxisRule::SurfaceArea => 4,
    });
    b.push(match options.split {
        SplitPoint::Mean => 0,
        SplitPoint::Median => 1,
    });
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&options.leaf_size.to_le_bytes());
}

/// Starts a file: magic, version, k and a length to be filled in by [`seal`]. Returns the
/// bytes and where the length goes.
pub(crate) fn begin(magic: &[u8; 8], version: u32, k: usize, capacity: usize) -> (Vec<u8>, usize) {
    let mut b = Vec::with_capacity(capacity + 32);
    b.extend_from_slice(magic);
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&(k as u32).to_le_bytes());
    let length_at = b.len();
    b.extend_from_slice(&0u64.to_le_bytes());
    (b, length_at)
}

/// Ends a file begun by [`begin`]: its length, then the checksum.
pub(crate) fn seal(mut b: Vec<u8>, length_at: usize) -> Vec<u8> {
    let length = (b.len() + 4) as u64;
    b[length_at..length_at + 8].copy_from_slice(&length.to_le_bytes());
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Checks a file's envelope: magic, a version in `versions`, k, the length (from version
/// `length_since` on) and the checksum. Returns the version and a reader at the body, which
/// ends before the checksum.
pub(crate) fn open<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    versions: std::ops::RangeInclusive<u32>,
    length_since: u32,
    k: usize,
) -> Result<(u32, Cursor<'a>)> {
    if bytes.len() < magic.len() || &bytes[..magic.len()] != magic {
        return Err(FormatError::NotKdopFile.into());
    }
    let mut c = Cursor {
        b: bytes,
        pos: magic.len(),
    };
    let version = c.u32()?;
    if !versions.contains(&version) {
        return Err(FormatError::UnsupportedVersion { found: version }.into());
    }
    let found = c.u32()?;
    if found as usize != k {
        return Err(FormatError::WrongK {
            found,
            expected: k as u32,
        }
        .into());
    }
    if version >= length_since {
        let length = c.u64()?;
        if (bytes.len() as u64) < length {
            return Err(FormatError::Truncated.into());
        }
        if (bytes.len() as u64) > length {
            return Err(FormatError::Corrupt("bytes after the end of the file").into());
        }
    }
    if bytes.len() < c.pos + 4 {
        return Err(FormatError::Truncated.into());
    }
    let body = &bytes[..bytes.len() - 4];
    let stored = le_u32(&bytes[bytes.len() - 4..]);
    if crc32fast::hash(body) != stored {
        return Err(FormatError::ChecksumMismatch.into());
    }
    Ok((
        version,
        Cursor {
            b: body,
            pos: c.pos,
        },
    ))
}

/// Writes `bytes` to `path` through a temporary file beside it, which then replaces it, so
/// a failed write leaves whatever was there whole. Errors name the file as `what`.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], what: &str) -> Result<()> {
    let named = |e: std::io::Error| Error::from(e).context(format!("{what} {}", path.display()));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(named(e));
    }
    Ok(())
}

/// A bounds-checked little-endian reader over untrusted bytes.
pub(crate) struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

/// The little-endian `u32` at the start of `b` (at least 4 bytes).
#[inline]
pub(crate) fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The little-endian `f64` at the start of `b` (at least 8 bytes).
#[inline]
pub(crate) fn le_f64(b: &[u8]) -> f64 {
    f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

impl<'a> Cursor<'a> {
    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(FormatError::Truncated)?;
        let s = self.b.get(self.pos..end).ok_or(FormatError::Truncated)?;
        self.pos = end;
        Ok(s)
    }
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let end = self.pos.checked_add(N).ok_or(FormatError::Truncated)?;
        let s = self.b.get(self.pos..end).ok_or(FormatError::Truncated)?;
        self.pos = end;
        s.try_into()
            .map_err(|_| Error::Format(FormatError::Truncated))
    }
    pub(crate) fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take()?))
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    pub(crate) fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take()?))
    }
    /// Build options as [`put_build_options`] wrote them, checked.
    pub(crate) fn build_options(&mut self) -> Result<BuildOptions> {
        let rule = match self.u8()? {
            0 => AxisRule::LongestSide,
            1 => AxisRule::MinSum,
            2 => AxisRule::MinMax,
            3 => AxisRule::Splatter,
            4 => AxisRule::SurfaceArea,
            _ => return Err(FormatError::Corrupt("unknown axis rule").into()),
        };
        let split = match self.u8()? {
            0 => SplitPoint::Mean,
            1 => SplitPoint::Median,
            _ => return Err(FormatError::Corrupt("unknown split point").into()),
        };
        let _reserved = self.u16()?;
        let options = BuildOptions {
            rule,
            split,
            leaf_size: self.u32()?,
        };
        options
            .check()
            .map_err(|_| FormatError::Corrupt("leaf size out of range"))?;
        Ok(options)
    }

    /// A pose as 12 `f64` (row-major 3×4), checked.
    pub(crate) fn pose(&mut self) -> Result<crate::pose::Pose> {
        let mut rows = [0.0; 12];
        for v in rows.iter_mut() {
            *v = self.f64()?;
        }
        crate::pose::Pose::from_rows(rows)
            .map_err(|_| FormatError::Corrupt("invalid placement").into())
    }

    /// A count of records of at least `min_size` bytes each, checked against what remains.
    pub(crate) fn count(&mut self, min_size: usize) -> Result<usize> {
        let n = self.u64()?;
        if n.saturating_mul(min_size as u64) > self.remaining() as u64 {
            return Err(FormatError::Truncated.into());
        }
        Ok(n as usize)
    }
}
