//! Replay of real address traces.
//!
//! # Inputs
//!
//! **valgrind lackey text** (`valgrind --tool=lackey --trace-mem=yes --log-file=F PROG`):
//! ```text
//! ==12345== Lackey, an example Valgrind tool      <- valgrind's own output: skipped
//! I  04011a0,3                                    <- instruction fetch: skipped
//!  L 1ffefffd58,8                                 <- load   (address hex, size decimal)
//!  S 1ffefffd50,8                                 <- store
//!  M 0403e60,4                                    <- modify (load + store of one datum)
//! ```
//! Lines starting with `==` (and valgrind's `--PID--` notes) are skipped, as are empty
//! lines and lackey's `SB ADDR` superblock markers (`--trace-superblocks=yes`); anything else that is not one of the four record forms is an error naming the
//! file, the line number and the line. One record per L/S/M line; an access straddling a
//! page boundary is attributed to the page of its first byte.
//!
//! **tiermem binary** (`tiermem trace convert`), all integers little-endian:
//! ```text
//! offset  size  field
//!      0     8  magic "TMTRACE1"
//!      8     4  version (1)
//!     12     4  reserved (0)
//!     16     8  page_bytes: the page size the addresses were compacted to
//!     24     8  record count
//!     32     8  distinct pages touched
//!     40     …  records, one per access:
//!                 varint( zigzag(page - previous page) << 2 | flags )
//!               LEB128 varint (7 bits a byte, low first, high bit = more);
//!               zigzag maps d to 2d (d ≥ 0) or -2d-1 (d < 0); the first record's
//!               previous page is 0; flags: 1 = load, 2 = store, 3 = modify (0 invalid).
//!    end-8   8  FNV-1a 64 of the record bytes
//! ```
//! Consecutive accesses to one page cost one byte. Truncated or corrupt files are
//! `ErrorKind::Trace` errors naming the file and the byte offset.
//!
//! # Replay
//!
//! Distinct touched pages (at the machine's page size, a multiple of the trace's) are
//! mapped to a dense page space in address order; `next()` returns the records in order
//! (the rng is not used), looping at the end with `loop = true`, else `finished()` after
//! the last. `probabilities()` is `None`: a trace is ordered. One record is one operation
//! of one cache line; `written_lines_per_op` is the trace's fraction of S/M records.
//! Replay holds 4 bytes per record (12 while loading): 100 M records take 400 MB.

use super::{Access, OpShape, Workload};
use rand::rngs::SmallRng;
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use tiermem_core::{Error, ErrorKind, Result};

pub const MAGIC: [u8; 8] = *b"TMTRACE1";
pub const VERSION: u32 = 1;
pub const HEADER_BYTES: u64 = 40;
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// What a record does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    Load,
    Store,
    /// Load and store of the same datum (lackey `M`).
    Modify,
}

impl RecordKind {
    pub fn writes(self) -> bool {
        !matches!(self, RecordKind::Load)
    }
    fn flags(self) -> u64 {
        match self {
            RecordKind::Load => 1,
            RecordKind::Store => 2,
            RecordKind::Modify => 3,
        }
    }
    fn from_flags(f: u64) -> Option<RecordKind> {
        match f {
            1 => Some(RecordKind::Load),
            2 => Some(RecordKind::Store),
            3 => Some(RecordKind::Modify),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    Lackey,
    Binary,
}

/// The binary format's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    pub version: u32,
    pub page_bytes: u64,
    pub records: u64,
    pub distinct_pages: u64,
}

/// Counts over a trace, either format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceCounts {
    pub loads: u64,
    pub stores: u64,
    pub modifies: u64,
    /// Lackey only: instruction fetches skipped.
    pub instructions: u64,
}

impl TraceCounts {
    pub fn records(&self) -> u64 {
        self.loads + self.stores + self.modifies
    }
    fn add(&mut self, k: RecordKind) {
        match k {
            RecordKind::Load => self.loads += 1,
            RecordKind::Store => self.stores += 1,
            RecordKind::Modify => self.modifies += 1,
        }
    }
}

fn trace_err(msg: impl Into<String>) -> Error {
    Error::trace(msg)
}

fn open(path: &Path) -> Result<File> {
    if path.is_dir() {
        return Err(trace_err(format!(
            "{} is a directory; give a trace file (valgrind lackey text or a tiermem binary trace)",
            path.display()
        )));
    }
    File::open(path).map_err(|e| {
        trace_err(format!(
            "cannot open trace {}: {e}; give a readable trace file",
            path.display()
        ))
    })
}

/// At most `max` bytes of `bytes`, printable: ASCII as is, anything else escaped (`\x00`).
pub fn escaped_prefix(bytes: &[u8], max: usize) -> String {
    let mut s: String = bytes
        .iter()
        .take(max)
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect();
    if bytes.len() > max {
        s.push_str("...");
    }
    s
}

/// Binary if the file starts with the magic, else lackey text.
pub fn detect_format(path: &Path) -> Result<TraceFormat> {
    let mut f = open(path)?;
    let mut buf = [0u8; 8];
    let mut got = 0;
    while got < 8 {
        match f.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(Error::io(path.display(), e)),
        }
    }
    Ok(if got == 8 && buf == MAGIC {
        TraceFormat::Binary
    } else {
        TraceFormat::Lackey
    })
}

// ---------------------------------------------------------------- lackey text

/// Parse one lackey line: `Ok(None)` for lines that carry no data access (valgrind's own
/// output, instruction fetches, blank lines), `Err(why)` for a malformed line.
pub fn parse_lackey_line(
    line: &[u8],
) -> std::result::Result<Option<(RecordKind, u64, u32)>, &'static str> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.starts_with(b"==") || line.iter().all(|c| c.is_ascii_whitespace()) {
        return Ok(None);
    }
    if line.starts_with(b"--") && line[2..].iter().take_while(|c| c.is_ascii_digit()).count() > 0 {
        return Ok(None); // valgrind's "--PID-- note" lines
    }
    let rest = trim_start(line);
    if let Some(sb) = rest.strip_prefix(b"SB ") {
        // Superblock marker: `SB ADDR` (hex), not a data access.
        let a = trim_end(trim_start(sb));
        return if !a.is_empty() && a.iter().all(|c| c.is_ascii_hexdigit()) {
            Ok(None)
        } else {
            Err("bad superblock address")
        };
    }
    let (&kind, rest) = rest.split_first().ok_or("empty record")?;
    let kind = match kind {
        b'I' => None,
        b'L' => Some(RecordKind::Load),
        b'S' => Some(RecordKind::Store),
        b'M' => Some(RecordKind::Modify),
        _ => return Err("unknown record kind (expected I, L, S or M)"),
    };
    if !matches!(rest.first(), Some(b' ')) {
        return Err("expected a space after the record kind");
    }
    let rest = trim_start(rest);
    let comma = rest
        .iter()
        .position(|&c| c == b',')
        .ok_or("expected ADDR,SIZE")?;
    let (addr_s, size_s) = (&rest[..comma], trim_end(&rest[comma + 1..]));
    if addr_s.is_empty() || addr_s.len() > 16 {
        return Err("bad hex address");
    }
    let mut addr = 0u64;
    for &c in addr_s {
        let d = (c as char).to_digit(16).ok_or("bad hex address")?;
        addr = (addr << 4) | d as u64;
    }
    if size_s.is_empty() || size_s.len() > 9 {
        return Err("bad decimal size");
    }
    let mut size = 0u32;
    for &c in size_s {
        if !c.is_ascii_digit() {
            return Err("bad decimal size");
        }
        size = size * 10 + (c - b'0') as u32;
    }
    Ok(kind.map(|k| (k, addr, size)))
}

fn trim_start(s: &[u8]) -> &[u8] {
    let i = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    &s[i..]
}
fn trim_end(s: &[u8]) -> &[u8] {
    let i = s
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &s[..i]
}

/// Stream the data records of a lackey file: `f(kind, address, size)`.
pub fn read_lackey(path: &Path, mut f: impl FnMut(RecordKind, u64, u32)) -> Result<TraceCounts> {
    let mut r = BufReader::with_capacity(1 << 20, open(path)?);
    let mut line = Vec::with_capacity(128);
    let mut counts = TraceCounts::default();
    let mut lineno = 0u64;
    loop {
        line.clear();
        let n = r
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path.display(), e))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        match parse_lackey_line(&line) {
            Ok(Some((k, addr, size))) => {
                counts.add(k);
                f(k, addr, size);
            }
            Ok(None) => {
                if trim_start(&line).first() == Some(&b'I') {
                    counts.instructions += 1;
                }
            }
            Err(why) => {
                let body = line.strip_suffix(b"\n").unwrap_or(&line);
                let body = body.strip_suffix(b"\r").unwrap_or(body);
                let binary = body.contains(&0) || std::str::from_utf8(body).is_err();
                if binary {
                    return Err(trace_err(format!(
                        "{}:{lineno}: not a trace: binary data (starting \"{}\") without the TMTRACE1 magic of a tiermem binary trace; give a valgrind lackey text trace or a file written by `tiermem trace convert`",
                        path.display(),
                        escaped_prefix(body, 16)
                    )));
                }
                return Err(trace_err(format!(
                    "{}:{lineno}: malformed lackey line \"{}\": {why}; lackey records are `I  ADDR,SIZE`, ` L ADDR,SIZE`, ` S ADDR,SIZE` or ` M ADDR,SIZE` (hex address, decimal size)",
                    path.display(),
                    escaped_prefix(body, 60)
                )));
            }
        }
    }
    Ok(counts)
}

// ---------------------------------------------------------------- binary

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}
fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Writes the binary format; `finish` patches the header and appends the checksum.
pub struct BinaryWriter {
    out: BufWriter<File>,
    path: String,
    page_bytes: u64,
    prev: u64,
    records: u64,
    pages: HashSet<u64>,
    hash: u64,
}

impl BinaryWriter {
    pub fn create(path: &Path, page_bytes: u64) -> Result<BinaryWriter> {
        if page_bytes == 0 || !page_bytes.is_power_of_two() {
            return Err(Error::usage(format!(
                "page size {page_bytes} is not a power of two; use e.g. 4K"
            )));
        }
        if path.is_dir() {
            return Err(Error::usage(format!(
                "output {} is a directory; give a file path for the binary trace",
                path.display()
            )));
        }
        let f = File::create(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                Error::usage(format!(
                    "cannot create output {}: {e}; give a path in an existing, writable directory",
                    path.display()
                ))
            }
            _ => Error::io(format!("cannot create {}", path.display()), e),
        })?;
        let mut w = BinaryWriter {
            out: BufWriter::with_capacity(1 << 20, f),
            path: path.display().to_string(),
            page_bytes,
            prev: 0,
            records: 0,
            pages: HashSet::new(),
            hash: FNV_OFFSET,
        };
        w.write(&[0u8; HEADER_BYTES as usize])?;
        Ok(w)
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        self.out.write_all(b).map_err(|e| Error::io(&self.path, e))
    }

    /// Append one access by byte address.
    pub fn push_address(&mut self, addr: u64, kind: RecordKind) -> Result<()> {
        self.push_page(addr / self.page_bytes, kind)
    }

    /// Append one access by page number (in this file's page size).
    pub fn push_page(&mut self, page: u64, kind: RecordKind) -> Result<()> {
        let d = page.wrapping_sub(self.prev) as i64;
        let mut v = (zigzag(d) << 2) | kind.flags();
        let mut buf = [0u8; 10];
        let mut n = 0;
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                buf[n] = b;
                n += 1;
                break;
            }
            buf[n] = b | 0x80;
            n += 1;
        }
        for &b in &buf[..n] {
            self.hash = (self.hash ^ b as u64).wrapping_mul(FNV_PRIME);
        }
        self.write(&buf[..n])?;
        self.prev = page;
        self.records += 1;
        self.pages.insert(page);
        Ok(())
    }

    pub fn finish(mut self) -> Result<TraceHeader> {
        let h = TraceHeader {
            version: VERSION,
            page_bytes: self.page_bytes,
            records: self.records,
            distinct_pages: self.pages.len() as u64,
        };
        let sum = self.hash.to_le_bytes();
        self.write(&sum)?;
        let path = self.path.clone();
        let mut f = self
            .out
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        let mut head = Vec::with_capacity(HEADER_BYTES as usize);
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&h.version.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&h.page_bytes.to_le_bytes());
        head.extend_from_slice(&h.records.to_le_bytes());
        head.extend_from_slice(&h.distinct_pages.to_le_bytes());
        f.seek(SeekFrom::Start(0))
            .and_then(|_| f.write_all(&head))
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(&path, e))?;
        Ok(h)
    }
}

/// A byte source that knows its offset, for error messages.
struct Src {
    r: BufReader<File>,
    off: u64,
}

impl Src {
    #[inline]
    fn byte(&mut self) -> std::io::Result<Option<u8>> {
        let buf = self.r.fill_buf()?;
        match buf.first() {
            None => Ok(None),
            Some(&b) => {
                self.r.consume(1);
                self.off += 1;
                Ok(Some(b))
            }
        }
    }
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

fn read_header_from(src: &mut Src, p: &str) -> Result<TraceHeader> {
    let mut head = [0u8; HEADER_BYTES as usize];
    for (i, h) in head.iter_mut().enumerate() {
        match src.byte().map_err(|e| Error::io(p, e))? {
            Some(b) => *h = b,
            None => {
                return Err(trace_err(format!(
                    "{p}: truncated header at byte offset {i}: the header is {HEADER_BYTES} bytes"
                )))
            }
        }
    }
    if head[..8] != MAGIC {
        return Err(trace_err(format!(
            "{p}: not a tiermem binary trace: bad magic at byte offset 0 (expected \"TMTRACE1\")"
        )));
    }
    let version = u32_at(&head, 8);
    if version != VERSION {
        return Err(trace_err(format!("{p}: unsupported trace version {version} at byte offset 8 (this build reads version {VERSION})")));
    }
    let page_bytes = u64_at(&head, 16);
    if page_bytes == 0 || !page_bytes.is_power_of_two() {
        return Err(trace_err(format!(
            "{p}: corrupt header: page size {page_bytes} at byte offset 16 is not a power of two"
        )));
    }
    Ok(TraceHeader {
        version,
        page_bytes,
        records: u64_at(&head, 24),
        distinct_pages: u64_at(&head, 32),
    })
}

/// Read only the header of a binary trace.
pub fn read_header(path: &Path) -> Result<TraceHeader> {
    let mut src = Src {
        r: BufReader::new(open(path)?),
        off: 0,
    };
    read_header_from(&mut src, &path.display().to_string())
}

/// Stream the records of a binary trace: `f(page, kind)` with pages in the header's page
/// size. Verifies the record count, the checksum and that nothing follows it.
pub fn read_binary(path: &Path, mut f: impl FnMut(u64, RecordKind)) -> Result<TraceHeader> {
    let p = path.display().to_string();
    let mut src = Src {
        r: BufReader::with_capacity(1 << 20, open(path)?),
        off: 0,
    };
    let h = read_header_from(&mut src, &p)?;
    let mut prev = 0u64;
    let mut hash = FNV_OFFSET;
    for i in 0..h.records {
        let start = src.off;
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = match src.byte().map_err(|e| Error::io(&p, e))? {
                Some(b) => b,
                None => {
                    return Err(trace_err(format!(
                    "{p}: truncated at byte offset {}: record {i} of {} is incomplete or missing",
                    src.off, h.records
                )))
                }
            };
            hash = (hash ^ b as u64).wrapping_mul(FNV_PRIME);
            if shift >= 64 || (shift == 63 && b > 1) {
                return Err(trace_err(format!(
                    "{p}: corrupt record {i} at byte offset {start}: varint longer than 64 bits"
                )));
            }
            v |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        let kind = RecordKind::from_flags(v & 3).ok_or_else(|| {
            trace_err(format!(
                "{p}: corrupt record {i} at byte offset {start}: access flags 0"
            ))
        })?;
        let page = prev.wrapping_add(unzigzag(v >> 2) as u64);
        if page > u64::MAX / h.page_bytes {
            return Err(trace_err(format!("{p}: corrupt record {i} at byte offset {start}: page {page} is outside the address space")));
        }
        prev = page;
        f(page, kind);
    }
    let sum_at = src.off;
    let mut sum = [0u8; 8];
    for b in sum.iter_mut() {
        *b = src
            .byte()
            .map_err(|e| Error::io(&p, e))?
            .ok_or_else(|| trace_err(format!("{p}: truncated at byte offset {}: the 8-byte checksum after the records is missing", src.off)))?;
    }
    if u64::from_le_bytes(sum) != hash {
        return Err(trace_err(format!(
            "{p}: checksum mismatch at byte offset {sum_at}: the records are corrupt"
        )));
    }
    if src.byte().map_err(|e| Error::io(&p, e))?.is_some() {
        return Err(trace_err(format!("{p}: unexpected data at byte offset {} after the checksum (record count {} in the header)", sum_at + 8, h.records)));
    }
    Ok(h)
}

/// Summary of a conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvertStats {
    pub header: TraceHeader,
    pub counts: TraceCounts,
    pub bytes_out: u64,
}

/// Convert a lackey text trace to the binary format at `page_bytes` pages.
pub fn convert_lackey(input: &Path, output: &Path, page_bytes: u64) -> Result<ConvertStats> {
    let r = convert_inner(input, output, page_bytes);
    if r.is_err() {
        // Do not leave a half-written file that looks like a trace.
        let _ = std::fs::remove_file(output);
    }
    r
}

fn convert_inner(input: &Path, output: &Path, page_bytes: u64) -> Result<ConvertStats> {
    if input == output {
        return Err(Error::usage(format!(
            "input and output are the same file ({})",
            input.display()
        )));
    }
    let mut w = BinaryWriter::create(output, page_bytes)?;
    let mut err = None;
    let counts = read_lackey(input, |k, addr, _| {
        if err.is_none() {
            if let Err(e) = w.push_address(addr, k) {
                err = Some(e);
            }
        }
    })?;
    if let Some(e) = err {
        return Err(e);
    }
    let header = w.finish()?;
    let bytes_out = std::fs::metadata(output)
        .map_err(|e| Error::io(output.display(), e))?
        .len();
    Ok(ConvertStats {
        header,
        counts,
        bytes_out,
    })
}

/// What `tiermem trace info` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceInfo {
    pub format: TraceFormat,
    pub page_bytes: u64,
    pub counts: TraceCounts,
    pub distinct_pages: u64,
}

/// Count a trace's records and distinct pages (lackey pages at `lackey_page_bytes`).
pub fn info(path: &Path, lackey_page_bytes: u64) -> Result<TraceInfo> {
    let i = info_inner(path, lackey_page_bytes)?;
    if i.counts.records() == 0 {
        let empty = std::fs::metadata(path)
            .map(|m| m.len() == 0)
            .unwrap_or(false);
        return Err(trace_err(if empty {
            format!(
                "{}: empty trace (0 bytes); give a lackey text trace or a binary trace with records (`tiermem trace record`)",
                path.display()
            )
        } else {
            format!(
                "{}: no load/store/modify records ({} instruction fetches only); an empty trace cannot be replayed: record one with `valgrind --tool=lackey --trace-mem=yes` or `tiermem trace record`",
                path.display(),
                i.counts.instructions
            )
        }));
    }
    Ok(i)
}

fn info_inner(path: &Path, lackey_page_bytes: u64) -> Result<TraceInfo> {
    let mut counts = TraceCounts::default();
    let mut pages = HashSet::new();
    match detect_format(path)? {
        TraceFormat::Binary => {
            let h = read_binary(path, |page, k| {
                counts.add(k);
                pages.insert(page);
            })?;
            if pages.len() as u64 != h.distinct_pages {
                return Err(trace_err(format!(
                    "{}: header says {} distinct pages (byte offset 32) but the records touch {}",
                    path.display(),
                    h.distinct_pages,
                    pages.len()
                )));
            }
            Ok(TraceInfo {
                format: TraceFormat::Binary,
                page_bytes: h.page_bytes,
                counts,
                distinct_pages: h.distinct_pages,
            })
        }
        TraceFormat::Lackey => {
            let c = read_lackey(path, |_, addr, _| {
                pages.insert(addr / lackey_page_bytes);
            })?;
            Ok(TraceInfo {
                format: TraceFormat::Lackey,
                page_bytes: lackey_page_bytes,
                counts: c,
                distinct_pages: pages.len() as u64,
            })
        }
    }
}

/// Run `program` under valgrind lackey, writing its memory trace to `log`. Returns the
/// program's exit status (the trace is usable whatever it is).
pub fn record_lackey(program: &[String], log: &Path) -> Result<std::process::ExitStatus> {
    let (prog, args) = program
        .split_first()
        .ok_or_else(|| Error::usage("give the program to trace after `--`"))?;
    std::process::Command::new("valgrind")
        .arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg(format!("--log-file={}", log.display()))
        .arg(prog)
        .args(args)
        .status()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::new(ErrorKind::Unsupported, "valgrind is not installed (no `valgrind` on PATH); install it with `apt-get install valgrind`")
            } else {
                Error::io("cannot run valgrind", e)
            }
        })
}

// ---------------------------------------------------------------- replay

const WRITE_BIT: u32 = 1 << 31;

/// A trace replayed in order over a dense page space.
pub struct TraceReplay {
    label: String,
    /// Dense page, with `WRITE_BIT` for stores and modifies.
    recs: Vec<u32>,
    pos: usize,
    looping: bool,
    done: bool,
    n: u32,
    shape: OpShape,
}

impl TraceReplay {
    /// Load a trace (either format) for a machine with `page_bytes` pages.
    pub fn open(path: &Path, page_bytes: u64, looping: bool) -> Result<TraceReplay> {
        let mut raw: Vec<u64> = Vec::new();
        let p = path.display().to_string();
        match detect_format(path)? {
            TraceFormat::Lackey => {
                read_lackey(path, |k, addr, _| {
                    raw.push(((addr / page_bytes) << 1) | k.writes() as u64)
                })?;
            }
            TraceFormat::Binary => {
                let h = read_header(path)?;
                if page_bytes < h.page_bytes || page_bytes & (h.page_bytes - 1) != 0 {
                    return Err(Error::config(format!(
                        "{p} was compacted at {}-byte pages; machine.page_size ({page_bytes}) must be a multiple of that (or convert the lackey trace again with --page-size)",
                        h.page_bytes
                    )));
                }
                let ratio = page_bytes / h.page_bytes;
                raw.reserve(h.records.min(1 << 28) as usize);
                read_binary(path, |page, k| {
                    raw.push(((page / ratio) << 1) | k.writes() as u64)
                })?;
            }
        }
        if raw.is_empty() {
            return Err(trace_err(format!(
                "{p}: no load/store/modify records to replay"
            )));
        }
        let mut distinct: Vec<u64> = raw.iter().map(|r| r >> 1).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() as u64 >= WRITE_BIT as u64 {
            return Err(trace_err(format!(
                "{p}: {} distinct pages exceed the simulator's page space; use larger pages",
                distinct.len()
            )));
        }
        let mut writes = 0u64;
        let recs: Vec<u32> = raw
            .iter()
            .map(|&r| {
                let dense = distinct.binary_search(&(r >> 1)).expect("page listed") as u32;
                writes += r & 1;
                dense | if r & 1 == 1 { WRITE_BIT } else { 0 }
            })
            .collect();
        let name = path
            .file_name()
            .map_or(p.clone(), |n| n.to_string_lossy().into_owned());
        Ok(TraceReplay {
            label: format!(
                "trace({name}, {} records, {} pages{})",
                recs.len(),
                distinct.len(),
                if looping { ", loop" } else { "" }
            ),
            shape: OpShape {
                lines_per_op: 1,
                written_lines_per_op: writes as f64 / recs.len() as f64,
            },
            recs,
            pos: 0,
            looping,
            done: false,
            n: distinct.len() as u32,
        })
    }

    pub fn records(&self) -> usize {
        self.recs.len()
    }
}

impl Workload for TraceReplay {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn page_count(&self) -> u32 {
        self.n
    }
    fn op_shape(&self) -> OpShape {
        self.shape
    }
    fn advance_to(&mut self, _now_ns: u64) -> bool {
        false
    }
    fn probabilities(&self) -> Option<&[f64]> {
        None
    }
    #[inline]
    fn next(&mut self, _rng: &mut SmallRng) -> Access {
        let r = self.recs[self.pos];
        if self.pos + 1 < self.recs.len() {
            self.pos += 1;
        } else if self.looping {
            self.pos = 0;
        } else {
            self.done = true;
        }
        Access {
            page: r & !WRITE_BIT,
            write: r & WRITE_BIT != 0,
        }
    }
    fn finished(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lackey_lines_parse() {
        assert_eq!(parse_lackey_line(b"I  04011a0,3\n"), Ok(None));
        assert_eq!(
            parse_lackey_line(b" L 1ffefffd58,8\n"),
            Ok(Some((RecordKind::Load, 0x1ffefffd58, 8)))
        );
        assert_eq!(
            parse_lackey_line(b" S 1ffefffd50,8"),
            Ok(Some((RecordKind::Store, 0x1ffefffd50, 8)))
        );
        assert_eq!(
            parse_lackey_line(b" M 0403e60,4\r\n"),
            Ok(Some((RecordKind::Modify, 0x403e60, 4)))
        );
        assert_eq!(
            parse_lackey_line(b"==123== Lackey, an example Valgrind tool\n"),
            Ok(None)
        );
        assert_eq!(parse_lackey_line(b"--123-- warning\n"), Ok(None));
        assert_eq!(parse_lackey_line(b"\n"), Ok(None));
        assert_eq!(parse_lackey_line(b"SB 04011a0\n"), Ok(None));
        assert!(parse_lackey_line(b"SB zz\n").is_err());
        assert!(parse_lackey_line(b" X 0403e60,4").is_err());
        assert!(parse_lackey_line(b" L 04g3e60,4").is_err());
        assert!(parse_lackey_line(b" L 0403e60").is_err());
        assert!(parse_lackey_line(b" L 0403e60,x").is_err());
        assert!(parse_lackey_line(b" L0403e60,4").is_err());
        assert!(parse_lackey_line(b"hello").is_err());
    }

    #[test]
    fn zigzag_round_trips() {
        for d in [0i64, 1, -1, 2, -2, i64::MAX / 8, -(i64::MAX / 8)] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
    }
}
