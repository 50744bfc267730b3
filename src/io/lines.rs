//! Bounded line reading for the text mesh formats (OBJ, ASCII STL, PLY headers and ASCII
//! payloads).
//!
//! The crates we read with take lines with `BufRead::read_line`, which grows a string until
//! it meets a newline: a file of gigabytes without one is held whole before anything is
//! refused. [`LineSource`] hands them the same bytes one line at a time, refuses a line
//! longer than [`MAX_LINE_BYTES`] as soon as it gets there, skips a UTF-8 byte-order mark
//! at the start of the file, counts lines, and lets the format rewrite a line before the
//! crate sees it.

use std::io::{self, BufRead, Read};

/// The longest line the text readers accept, in bytes (4 MiB; an OBJ polygon of half a
/// million corners fits).
pub const MAX_LINE_BYTES: usize = 4 << 20;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A `BufRead` that serves its source line by line, each at most `limit` bytes.
pub(crate) struct LineSource<R, F> {
    inner: R,
    /// The current line, with its newline if it had one.
    line: Vec<u8>,
    /// How much of `line` has been served.
    served: usize,
    /// The 1-based number of the line in `line` (0 before the first).
    line_no: u64,
    /// Bytes consumed from the source so far (so the offset of the next line).
    offset: u64,
    limit: usize,
    /// Why reading stopped, where it was this reader's own refusal: the error returned says
    /// so too, but `tobj` and `ply-rs-bw`, reading through it, drop or rewrap that error.
    failure: Option<String>,
    /// Called with each line (and its number) before it is served; may rewrite it.
    hook: F,
}

impl<R: BufRead, F: FnMut(&mut Vec<u8>, u64)> LineSource<R, F> {
    /// Lines of `inner`, each passed through `hook` before it is served.
    pub fn with_hook(inner: R, limit: usize, hook: F) -> Self {
        LineSource {
            inner,
            line: Vec::new(),
            served: 0,
            line_no: 0,
            offset: 0,
            limit,
            failure: None,
            hook,
        }
    }

    /// Reads the next line into the buffer (its newline kept); `false` at the end.
    ///
    /// # Errors
    /// The source's I/O errors, and `InvalidData` for a line longer than the limit (the
    /// reason is kept for [`LineSource::failure`]).
    pub fn advance(&mut self) -> io::Result<bool> {
        self.line.clear();
        self.served = 0;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            let (take, ends) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            // The limit counts the line's bytes without its newline.
            if self.line.len() + take - usize::from(ends) > self.limit {
                let why = format!(
                    "line {} is longer than {} bytes, the longest line read here (is it a text file?)",
                    self.line_no + 1,
                    self.limit
                );
                self.failure = Some(why.clone());
                return Err(io::Error::new(io::ErrorKind::InvalidData, why));
            }
            if self.line.len() + take > self.line.capacity() {
                // Grow by doubling up to half the limit, then to the limit at once: a
                // refused line costs at most one and a half limits, not the next power of two
                // above it and a copy.
                let cap = self.limit.saturating_add(1);
                let doubled = self.line.capacity() * 2;
                let want = if doubled > self.limit / 2 {
                    cap
                } else {
                    doubled
                }
                .max(self.line.len() + take)
                .min(cap);
                self.line.reserve_exact(want - self.line.len());
            }
            self.line.extend_from_slice(&available[..take]);
            self.inner.consume(take);
            self.offset += take as u64;
            if ends {
                break;
            }
        }
        if self.line.is_empty() {
            return Ok(false);
        }
        self.line_no += 1;
        if self.line_no == 1 && self.line.starts_with(BOM) {
            self.line.drain(..BOM.len());
        }
        (self.hook)(&mut self.line, self.line_no);
        Ok(true)
    }

    /// Changes the longest line accepted from the next line on.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// The current line (after the hook), newline included.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// The 1-based number of the current line.
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// Bytes read from the source so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// This reader's own reason for an error it returned, if it was one.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// The source, positioned just after the last line read.
    pub fn inner_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: BufRead> LineSource<R, fn(&mut Vec<u8>, u64)> {
    /// Lines of `inner`, served as they are.
    pub fn new(inner: R, limit: usize) -> Self {
        fn keep(_: &mut Vec<u8>, _: u64) {}
        LineSource::with_hook(inner, limit, keep)
    }
}

impl<R: BufRead, F: FnMut(&mut Vec<u8>, u64)> Read for LineSource<R, F> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead, F: FnMut(&mut Vec<u8>, u64)> BufRead for LineSource<R, F> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.served == self.line.len() && !self.advance()? {
            return Ok(&[]);
        }
        Ok(&self.line[self.served..])
    }

    fn consume(&mut self, amount: usize) {
        self.served = (self.served + amount).min(self.line.len());
    }
}

/// The first white-space-separated token of a line.
pub(crate) fn first_token(line: &[u8]) -> &[u8] {
    let t = line.trim_ascii();
    let end = t
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(t.len());
    &t[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(src: &[u8], limit: usize) -> (Vec<Vec<u8>>, Option<String>) {
        let mut s = LineSource::new(src, limit);
        let mut out = Vec::new();
        loop {
            match s.advance() {
                Ok(true) => out.push(s.line().to_vec()),
                Ok(false) => return (out, None),
                Err(_) => return (out, s.failure().map(str::to_owned)),
            }
        }
    }

    #[test]
    fn splits_keeps_endings_and_skips_only_a_leading_bom() {
        let (l, e) = lines(b"\xEF\xBB\xBFa\r\nb\n\xEF\xBB\xBFc", 16);
        assert_eq!(e, None);
        assert_eq!(
            l,
            vec![
                b"a\r\n".to_vec(),
                b"b\n".to_vec(),
                b"\xEF\xBB\xBFc".to_vec()
            ]
        );
    }

    #[test]
    fn a_long_line_is_refused_where_it_passes_the_limit() {
        // A line of exactly the limit (plus its newline) passes; one byte more does not.
        let ok = [vec![b'x'; 8], b"\n".to_vec()].concat();
        assert_eq!(lines(&ok, 8).0.len(), 1);
        let long = [vec![b'y'; 3], b"\n".to_vec(), vec![b'x'; 9]].concat();
        let (l, e) = lines(&long, 8);
        assert_eq!(l.len(), 1);
        assert!(e.unwrap().contains("line 2 is longer than 8 bytes"));
    }

    #[test]
    fn serves_the_same_bytes_through_bufread() {
        let src = b"one\ntwo\r\n\nthree";
        let mut s = LineSource::with_hook(&src[..], 64, |l: &mut Vec<u8>, n| {
            if n == 2 {
                l.insert(0, b'#');
            }
        });
        let mut all = String::new();
        s.read_to_string(&mut all).unwrap();
        assert_eq!(all, "one\n#two\r\n\nthree");
        assert_eq!(s.line_no(), 4);
        assert_eq!(s.offset(), src.len() as u64);
    }
}
