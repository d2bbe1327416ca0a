//! ELF files of either class (32- or 64-bit) and either byte order, read (never mapped: a mapped
//! file cut short while it is read kills the process with SIGBUS): section headers, names, the
//! symbol table.  Anything else (extended numbering, a truncated or corrupt file) is refused, and
//! the front end words it with the package's reader (elfinfo.py `read_elf`, `Elf.symtab`,
//! `check_strings`); what that reader refuses is refused here too, so that the helper never answers
//! for it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

pub const SHF_ALLOC: u64 = 2;
pub const SHF_EXECINSTR: u64 = 4;
pub const SHF_MERGE: u64 = 0x10;
pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_NOBITS: u32 = 8;
pub const SHN_ABS: u16 = 0xFFF1;

pub struct Shdr {
    pub name: u32,
    pub typ: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub align: u64,
}

pub struct RawSym {
    pub name: u32,
    pub info: u8,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

/// How a file's numbers are written: its class (64-bit: `wide`) and byte order.
#[derive(Clone, Copy)]
pub struct Form {
    pub wide: bool,
    pub little: bool,
}

impl Form {
    /// N bytes at o, little-endian first (a big-endian file's reversed): read as a little-endian number
    fn le<const N: usize>(self, d: &[u8], o: usize) -> [u8; N] {
        let mut b: [u8; N] = d[o..o + N].try_into().unwrap();
        if !self.little {
            b.reverse();
        }
        b
    }
    fn u16(self, d: &[u8], o: usize) -> u16 {
        u16::from_le_bytes(self.le(d, o))
    }
    fn u32(self, d: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(self.le(d, o))
    }
    fn u64(self, d: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(self.le(d, o))
    }
    /// an address or a size: 8 bytes in a 64-bit file, 4 in a 32-bit one
    fn word(self, d: &[u8], o: usize) -> u64 {
        if self.wide {
            self.u64(d, o)
        } else {
            self.u32(d, o) as u64
        }
    }
    /// the size of a section header
    fn shent(self) -> usize {
        if self.wide {
            64
        } else {
            40
        }
    }
    /// the size of a symbol table entry
    fn syment(self) -> usize {
        if self.wide {
            24
        } else {
            16
        }
    }
}

pub struct Elf {
    /// the whole file (read with `whole`), else empty: sections are then read one by one from `file`
    pub data: &'static [u8],
    pub form: Form,
    file: Option<File>,
    size: u64,
    pub sh: Vec<Shdr>,
    pub names: Vec<&'static str>,
}

pub const SHT_STRTAB: u32 = 3;
/// elfinfo.NAME_SLACK: what a string table's names may add up to beyond twice its size
const NAME_SLACK: u64 = 64 << 20;

/// 8 bytes of code or data, in the file's byte order
pub fn u64at(d: &[u8], o: usize, little: bool) -> u64 {
    Form { wide: true, little }.u64(d, o)
}

/// 4 bytes of code or data, in the file's byte order, sign-extended
pub fn i32at(d: &[u8], o: usize, little: bool) -> i32 {
    Form { wide: true, little }.u32(d, o) as i32
}

/// A regular file opened for reading (a FIFO would block, a device never end): the file and its size.
pub fn open(path: &str) -> Result<(File, u64), String> {
    const O_NONBLOCK: i32 = 0o4000; // the open itself must not wait for a FIFO's writer
    let f = std::fs::OpenOptions::new().read(true).custom_flags(O_NONBLOCK).open(path).map_err(|e| format!("{path}: {e}"))?;
    let m = f.metadata().map_err(|e| format!("{path}: {e}"))?;
    if !m.is_file() {
        return Err(format!("{path}: not a regular file"));
    }
    Ok((f, m.len()))
}

/// (class, byte order, machine, kind) of a file's ELF header, as symdiff/files.py `kind_of` reads it (kind
/// 1: a relocatable object, 4: a core dump, 2: anything else, a linked image); None when the file
/// cannot be opened or has no ELF header (then the reading of the file says why).
pub fn kind(path: &str) -> Option<(u8, u8, u16, u16)> {
    let (f, len) = open(path).ok()?;
    let mut h = [0u8; 20];
    if len < 20 || f.read_exact_at(&mut h, 0).is_err() || &h[..4] != b"\x7fELF" {
        return None;
    }
    let half = |o: usize| if h[5] == 1 { u16::from_le_bytes([h[o], h[o + 1]]) } else { u16::from_be_bytes([h[o], h[o + 1]]) };
    let kind = match half(16) {
        1 => 1,
        4 => 4,
        _ => 2,
    };
    Some((h[4], h[5], half(18), kind))
}

extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
}

/// The bytes of a file, as many as it had when opened, kept for the life of the process.  Read
/// into anonymous memory (which a file cut short cannot take away) asked to be backed by huge
/// pages: a fault per 2 MiB, not per 4 KiB, which keeps reading near mapping's cost.
fn read_all(f: File, len: u64) -> Result<&'static [u8], String> {
    let n = len as usize;
    if n == 0 {
        return Ok(&[]);
    }
    // PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS
    let p = unsafe { mmap(std::ptr::null_mut(), n, 3, 0x02 | 0x20, -1, 0) };
    if p as isize == -1 {
        let mut v = Vec::with_capacity(n);
        f.take(len).read_to_end(&mut v).map_err(|e| e.to_string())?;
        return Ok(Box::leak(v.into_boxed_slice()));
    }
    unsafe { madvise(p, n, 14) }; // MADV_HUGEPAGE (advice only)
    let buf: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(p, n) };
    let mut got = 0;
    while got < n {
        match f.read_at(&mut buf[got..], got as u64) {
            Ok(0) => break, // cut short since it was opened: what was read is the file
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(&buf[..got])
}

/// elfinfo.check_strings: a table that is not empty ends with a NUL, every name (offset not 0)
/// starts in it, and the names add up to at most twice its size + NAME_SLACK.
pub fn check_strings(tab: &[u8], offsets: impl Iterator<Item = u32>) -> Result<(), String> {
    let n = tab.len();
    if n > 0 && tab[n - 1] != 0 {
        return Err("string table without a final NUL".into());
    }
    let limit = 2 * n as u64 + NAME_SLACK;
    let mut total = 0u64;
    for off in offsets {
        let off = off as usize;
        if off == 0 {
            continue;
        }
        if off >= n {
            return Err("a name past its string table".into());
        }
        // the scan stops at the table's final NUL; all scans together stop once past the limit
        total += tab[off..].iter().position(|&c| c == 0).unwrap_or(0) as u64;
        if total > limit {
            return Err("names that add up to more than their table can hold".into());
        }
    }
    Ok(())
}

/// The bytes at off up to the next NUL, decoded (invalid UTF-8 replaced), as elfinfo.py `string_at`.
pub fn string_at(tab: &[u8], off: usize) -> String {
    if off >= tab.len() {
        return String::new();
    }
    let end = tab[off..].iter().position(|&c| c == 0).map_or(tab.len(), |p| off + p);
    String::from_utf8_lossy(&tab[off..end]).into_owned()
}

/// string_at for a table that lives as long as the process: borrowed when it is valid UTF-8.
pub fn str_at(tab: &'static [u8], off: usize) -> &'static str {
    if off >= tab.len() {
        return "";
    }
    let end = tab[off..].iter().position(|&c| c == 0).map_or(tab.len(), |p| off + p);
    match std::str::from_utf8(&tab[off..end]) {
        Ok(s) => s,
        Err(_) => Box::leak(String::from_utf8_lossy(&tab[off..end]).into_owned().into_boxed_str()),
    }
}

/// An ELF file: `whole` reads all of it (an image: its code is compared), else only its headers
/// now and the sections asked for later (an object: its symbols).
pub fn read(path: &str, whole: bool) -> Result<Elf, String> {
    let (f, len) = open(path)?;
    let (data, file): (&'static [u8], Option<File>) = if whole {
        (read_all(f, len)?, None)
    } else {
        let mut head = vec![0u8; len.min(64) as usize];
        f.read_exact_at(&mut head, 0).map_err(|e| e.to_string())?;
        (Box::leak(head.into_boxed_slice()), Some(f))
    };
    let len = if whole { data.len() as u64 } else { len }; // a file cut short since: what was read
    let mut e = parse(data, file, len)?;
    if !whole {
        e.data = &[];
    }
    Ok(e)
}

fn parse(data: &'static [u8], file: Option<File>, len: u64) -> Result<Elf, String> {
    let size = len as usize;
    if data.len() < 4 || &data[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if data.len() < 0x34 || !(1..=2).contains(&data[4]) || !(1..=2).contains(&data[5]) {
        return Err("truncated or corrupt ELF header".into());
    }
    let form = Form { wide: data[4] == 2, little: data[5] == 1 };
    if form.wide && data.len() < 0x40 {
        return Err("truncated ELF header".into());
    }
    let (shoff, at) = if form.wide { (form.u64(data, 0x28), 0x3A) } else { (form.u32(data, 0x20) as u64, 0x2E) };
    let shoff = usize::try_from(shoff).map_err(|_| "truncated section headers".to_string())?;
    let shentsize = form.u16(data, at) as usize;
    let mut shnum = form.u16(data, at + 2) as usize;
    let shstrndx = form.u16(data, at + 4) as usize;
    let ent = form.shent();
    if shoff == 0 {
        shnum = 0;
    } else if shnum == 0 || shstrndx == 0xFFFF {
        return Err("unsupported: extended section numbering".into());
    }
    if shnum != 0 && shentsize != ent {
        return Err("section header size".into());
    }
    if shoff.checked_add(shnum * ent).map_or(true, |e| e > size) {
        return Err("truncated section headers".into());
    }
    let table: &[u8] = match &file {
        None => &data[shoff..shoff + shnum * ent],
        Some(f) => {
            let mut v = vec![0u8; shnum * ent];
            f.read_exact_at(&mut v, shoff as u64).map_err(|e| e.to_string())?;
            Box::leak(v.into_boxed_slice())
        }
    };
    let mut sh = Vec::with_capacity(shnum);
    // the fields after sh_type: flags, addr, offset, size are words; then link (4 bytes), info, align
    let (w, f) = (if form.wide { 8 } else { 4 }, form);
    for i in 0..shnum {
        let (o, d) = (ent * i, table);
        sh.push(Shdr {
            name: f.u32(d, o),
            typ: f.u32(d, o + 4),
            flags: f.word(d, o + 8),
            addr: f.word(d, o + 8 + w),
            offset: f.word(d, o + 8 + 2 * w),
            size: f.word(d, o + 8 + 3 * w),
            link: f.u32(d, o + 8 + 4 * w),
            align: f.word(d, o + 16 + 4 * w),
        });
    }
    let names: Vec<&'static str> = vec![""; shnum];
    if shnum > 0 {
        if shstrndx >= shnum {
            return Err("section names index".into());
        }
        for s in &sh {
            if s.typ != SHT_NOBITS && s.typ != 0 && s.offset.checked_add(s.size).map_or(true, |e| e > size as u64) {
                return Err("truncated section".into());
            }
            if s.addr.checked_add(s.size).is_none() {
                return Err("a section past the end of the address space".into());
            }
        }
        if sh[shstrndx].typ != SHT_STRTAB {
            return Err("section names table".into());
        }
    }
    let mut e = Elf { data, form, file, size: len, sh, names };
    if shnum > 0 {
        let tab = e.section(shstrndx)?;
        check_strings(tab, e.sh.iter().map(|s| s.name))?;
        for i in 0..shnum {
            e.names[i] = str_at(tab, e.sh[i].name as usize);
        }
    }
    Ok(e)
}

impl Elf {
    /// The bytes of section i (empty for SHT_NOBITS and SHT_NULL); in the file (parse checked).
    pub fn section(&self, i: usize) -> Result<&'static [u8], String> {
        let s = &self.sh[i];
        if s.typ == SHT_NOBITS || s.typ == 0 {
            return Ok(&[]);
        }
        debug_assert!(s.offset + s.size <= self.size);
        match &self.file {
            None => Ok(&self.data[s.offset as usize..(s.offset + s.size) as usize]),
            Some(f) => {
                let mut v = vec![0u8; s.size as usize];
                f.read_exact_at(&mut v, s.offset).map_err(|e| e.to_string())?;
                Ok(Box::leak(v.into_boxed_slice()))
            }
        }
    }

    /// The entries of the last SHT_SYMTAB (entry 0 included) and its string table.
    pub fn symtab(&self) -> Result<Option<(Vec<RawSym>, &'static [u8])>, String> {
        let i = match self.sh.iter().rposition(|s| s.typ == SHT_SYMTAB) {
            Some(i) => i,
            None => return Ok(None),
        };
        let raw = self.section(i)?;
        let link = self.sh[i].link as usize;
        if link >= self.names.len() || self.sh[link].typ != SHT_STRTAB {
            return Err("symbol string table index".into());
        }
        let f = self.form;
        let mut out = Vec::with_capacity(raw.len() / f.syment());
        for e in raw.chunks_exact(f.syment()) {
            out.push(if f.wide {
                RawSym { name: f.u32(e, 0), info: e[4], shndx: f.u16(e, 6), value: f.u64(e, 8), size: f.u64(e, 16) }
            } else {
                RawSym { name: f.u32(e, 0), value: f.u32(e, 4) as u64, size: f.u32(e, 8) as u64, info: e[12], shndx: f.u16(e, 14) }
            });
        }
        let strtab = self.section(link)?;
        check_strings(strtab, out.iter().map(|r| r.name))?;
        if out.iter().any(|r| r.value.checked_add(r.size).is_none()) {
            return Err("a symbol past the end of the address space".into());
        }
        Ok(Some((out, strtab)))
    }
}
