//! ELF64 little-endian files, mapped: section headers, names, the symbol table.  Anything else
//! (32-bit, big-endian, extended numbering, a truncated or corrupt file) is handed back to the
//! Python reader, which has the one-line error for it.

use std::fs::File;
use std::os::unix::io::AsRawFd;

extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
}

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

pub struct Elf {
    pub data: &'static [u8],
    pub sh: Vec<Shdr>,
    pub names: Vec<&'static str>,
}

fn u16at(d: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([d[o], d[o + 1]])
}
fn u32at(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(d[o..o + 4].try_into().unwrap())
}
pub fn u64at(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(d[o..o + 8].try_into().unwrap())
}

/// The whole file, mapped read-only for the life of the process.
pub fn map(path: &str, populate: bool) -> Result<&'static [u8], String> {
    let f = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let len = f.metadata().map_err(|e| format!("{path}: {e}"))?.len() as usize;
    if len == 0 {
        return Ok(&[]);
    }
    // PROT_READ, MAP_PRIVATE | MAP_POPULATE: the file is in the page cache, and mapping it all at
    // once costs less than a fault per page touched (symbol and string tables, then the code)
    // (an object is only read for its headers and symbols: no)
    let flags = if populate { 2 | 0x8000 } else { 2 };
    let p = unsafe { mmap(std::ptr::null_mut(), len, 1, flags, f.as_raw_fd(), 0) };
    if p as isize == -1 {
        let v = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        return Ok(Box::leak(v.into_boxed_slice()));
    }
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Python's string_at/strings: the bytes at off up to the next NUL, decoded (invalid UTF-8 replaced).
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

pub fn read(path: &str, populate: bool) -> Result<Elf, String> {
    let data = map(path, populate)?;
    let size = data.len();
    if size < 4 || &data[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if size < 0x40 || data[4] != 2 || data[5] != 1 {
        return Err("unsupported: not a 64-bit little-endian ELF file".into());
    }
    let shoff = u64at(data, 0x28) as usize;
    let shentsize = u16at(data, 0x3A) as usize;
    let mut shnum = u16at(data, 0x3C) as usize;
    let shstrndx = u16at(data, 0x3E) as usize;
    if shoff == 0 {
        shnum = 0;
    } else if shnum == 0 || shstrndx == 0xFFFF {
        return Err("unsupported: extended section numbering".into());
    }
    if shnum != 0 && shentsize != 64 {
        return Err("section header size".into());
    }
    if shoff.checked_add(shnum * 64).map_or(true, |e| e > size) {
        return Err("truncated section headers".into());
    }
    let mut sh = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let o = shoff + 64 * i;
        sh.push(Shdr {
            name: u32at(data, o),
            typ: u32at(data, o + 4),
            flags: u64at(data, o + 8),
            addr: u64at(data, o + 16),
            offset: u64at(data, o + 24),
            size: u64at(data, o + 32),
            link: u32at(data, o + 40),
            align: u64at(data, o + 48),
        });
    }
    let mut names: Vec<&'static str> = vec![""; shnum];
    if shnum > 0 {
        if shstrndx >= shnum {
            return Err("section names index".into());
        }
        for s in &sh {
            if s.typ != SHT_NOBITS && s.typ != 0 && s.offset.checked_add(s.size).map_or(true, |e| e > size as u64) {
                return Err("truncated section".into());
            }
        }
        let t = &sh[shstrndx];
        let tab = if t.typ == SHT_NOBITS || t.typ == 0 && t.offset + t.size > size as u64 {
            return Err("section names table".into());
        } else {
            &data[t.offset as usize..(t.offset + t.size) as usize]
        };
        for (i, s) in sh.iter().enumerate() {
            names[i] = str_at(tab, s.name as usize);
        }
    }
    Ok(Elf { data, sh, names })
}

impl Elf {
    pub fn section(&self, i: usize) -> &'static [u8] {
        let s = &self.sh[i];
        if s.typ == SHT_NOBITS {
            return &[];
        }
        &self.data[s.offset as usize..(s.offset + s.size) as usize]
    }

    /// The entries of the last SHT_SYMTAB (entry 0 included) and its string table.
    pub fn symtab(&self) -> Result<Option<(Vec<RawSym>, &'static [u8])>, String> {
        let i = match self.sh.iter().rposition(|s| s.typ == SHT_SYMTAB) {
            Some(i) => i,
            None => return Ok(None),
        };
        let raw = self.section(i);
        let link = self.sh[i].link as usize;
        if link >= self.names.len() {
            return Err("symbol string table index".into());
        }
        let mut out = Vec::with_capacity(raw.len() / 24);
        for e in raw.chunks_exact(24) {
            out.push(RawSym {
                name: u32at(e, 0),
                info: e[4],
                shndx: u16at(e, 6),
                value: u64at(e, 8),
                size: u64at(e, 16),
            });
        }
        Ok(Some((out, self.section(link))))
    }
}
