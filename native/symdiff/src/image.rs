//! One side of a diff: sections, symbols, markers, and what an address names
//! (the front end's ELF reader is layoutbench/elfinfo.py; the plan's, layoutbench/layout.py).

use std::cell::RefCell;
use std::rc::Rc;

use crate::elf::{self, Elf, SHF_ALLOC, SHF_EXECINSTR, SHN_ABS, SHT_NOBITS};
use crate::basics::leak;
use crate::planfile::Plan;

pub const PAGE: i128 = 4096;
const NO_TWIN: i64 = i64::MIN;

/// FxHash (rustc's hasher): the maps here are keyed by addresses, ids and symbol names, none
/// chosen by an adversary, so SipHash's protection is not worth its cost.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut c = bytes.chunks_exact(8);
        for w in &mut c {
            self.write_u64(u64::from_le_bytes(w.try_into().unwrap()));
        }
        let mut last = 0u64;
        for (i, &b) in c.remainder().iter().enumerate() {
            last |= (b as u64) << (8 * i);
        }
        self.write_u64(last ^ (bytes.len() as u64) << 56);
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        // the multiply carries only upwards: fold the high bits down (hashbrown indexes by the low ones)
        let h = self.0;
        (h ^ (h >> 32)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (h >> 29)
    }
}

pub type Map<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;
pub type Set<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<Fx>>;

pub struct Section {
    pub index: usize,
    pub name: &'static str,
    pub addr: u64,
    pub size: u64,
    pub offset: u64,
    pub nobits: bool,
    pub executable: bool,
}

pub struct Sym {
    pub name: &'static str,
    pub addr: u64,
    pub size: u64,
    pub kind: &'static str,
    pub bind: &'static str,
    pub sec: usize, //: position in Image.sections
    pub file: &'static str,
    pub obj: &'static str,
    pub key: u32,
    pub tls: bool, //: STT_TLS: addr is its offset in the TLS block, not an address
}

/// A key is a tuple of strings (and a count); each distinct tuple gets one id,
/// shared by both images (so that equal tuples are equal ids).  A tuple is (parts, strings, count):
/// 2 or 3 strings, then the count when it is not the first of its kind (0: no count).
#[derive(Default)]
pub struct Keys {
    ids: Map<(u8, &'static str, &'static str, &'static str, u64), u32>,
}

impl Keys {
    pub fn reserve(&mut self, n: usize) {
        self.ids.reserve(n);
    }

    pub fn id(&mut self, t: (u8, &'static str, &'static str, &'static str, u64)) -> u32 {
        let n = self.ids.len() as u32;
        *self.ids.entry(t).or_insert(n)
    }
}

/// key id → index of the symbol with that key (ids are dense: a vector, not a map)
#[derive(Default)]
pub struct ByKey(Vec<usize>);

impl ByKey {
    pub fn get(&self, k: &u32) -> Option<&usize> {
        self.0.get(*k as usize).filter(|&&v| v != usize::MAX)
    }
    pub fn contains_key(&self, k: &u32) -> bool {
        self.get(k).is_some()
    }
    pub fn insert(&mut self, k: u32, i: usize) {
        let k = k as usize;
        if k >= self.0.len() {
            self.0.resize(k + 1, usize::MAX);
        }
        self.0[k] = i;
    }
}

#[derive(Clone, PartialEq, Debug)]
pub enum Ent {
    Sym(u32, u64),
    Val(u64),
}

#[derive(Clone, PartialEq, Debug)]
pub enum Tok {
    Key(u32, u64),
    Abs(String),
    End(bool),
    SecNobits(&'static str),
    SecBytes(&'static str, Vec<u8>),
    SecTable(&'static str, Vec<Ent>),
    /// A symbol (or marker) at the nearest address at or before, + offset
    Label(u32, u64),
    /// ... or, when no symbol is before it in its section, the section + offset
    SecLabel(&'static str, u64),
}

pub type Resolved = Option<Rc<Vec<Tok>>>;

thread_local! {
    /// What resolve() found, per side and address: each thread keeps its own (an Image is shared
    /// read-only between the threads that compare code).
    static CACHE: RefCell<[Map<u64, Resolved>; 2]> = RefCell::new([Map::default(), Map::default()]);
}

pub struct Image {
    pub path: String,
    pub label: String,
    pub sections: Vec<Section>, //: sorted by (addr, index)
    pub syms: Vec<Sym>,
    pub data: &'static [u8],
    pub strtab: &'static [u8], //: the symbol names' table (names are slices of it, unless leaked)
    pub plan: Option<Plan>,
    pub mapping: &'static str,
    pub notes: Vec<String>,
    pub markers: Vec<(String, u64, usize)>, //: name, address, section position (dict order)
    pub absolute: Map<u64, String>,
    pub lo: u64,
    pub hi: u64,
    pub tls_base: u64, //: where the TLS initialization image starts
    pub little: bool,  //: the file's byte order: how an address in its bytes is read
    alloc: Vec<usize>,
    sec_starts: Vec<u64>,
    pub sized: Vec<usize>,
    pub sized_addr: Vec<u64>,
    /// per 4 KiB page from lo (when the image spans fewer than 2**20 pages): the first sized
    /// symbol at or above the page; bisect_right over sized_addr then looks at one page only
    pages: Vec<u32>,
    at: Vec<(u64, u32)>, //: (address, key) of every symbol and marker, by address
    pub by_key: ByKey,
    /// per sized symbol (same order): its end, and its twin's shift when the twin has its size
    /// (NO_TWIN otherwise: no twin, another size, or a shift beyond an i64)
    twins: Vec<(u64, i64)>,
    /// which side (0 old, 1 new): the index of its resolve cache (one per thread, see CACHE)
    pub side: usize,
}

const STT_FILE: u8 = 4;

fn stt(t: u8) -> Option<&'static str> {
    match t {
        0 => Some("label"),
        1 | 6 => Some("object"),
        2 | 10 => Some("func"),
        _ => None,
    }
}

pub fn bind(b: u8) -> &'static str {
    match b {
        0 => "local",
        2 => "weak",
        _ => "global",
    }
}

/// Python's str(Path(p)): repeated slashes and "." parts dropped (a leading "//" kept).
pub fn py_path(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let root = if p.starts_with("//") && !p.starts_with("///") {
        "//"
    } else if p.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    let s = format!("{}{}", root, parts.join("/"));
    if s.is_empty() {
        ".".into()
    } else {
        s
    }
}

pub fn read_image(path: &str) -> Result<Image, String> {
    let e: Elf = elf::read(path, true)?;
    let mut sections: Vec<Section> = Vec::new();
    let mut tls_base: Option<u64> = None; // the lowest SHF_TLS section (= PT_TLS p_vaddr)
    for (i, s) in e.sh.iter().enumerate() {
        if s.flags & SHF_ALLOC != 0 && s.flags & 0x400 != 0 {
            tls_base = Some(tls_base.map_or(s.addr, |b| b.min(s.addr)));
        }
        if s.flags & SHF_ALLOC != 0 {
            sections.push(Section {
                index: i,
                name: e.names[i],
                addr: s.addr,
                size: s.size,
                offset: s.offset,
                nobits: s.typ == SHT_NOBITS,
                executable: s.flags & SHF_EXECINSTR != 0,
            });
        }
    }
    sections.sort_by_key(|s| (s.addr, s.index));
    let mut by_index: Map<usize, usize> = Map::default();
    for (p, s) in sections.iter().enumerate() {
        by_index.insert(s.index, p);
    }
    let (raw, strtab) = match e.symtab()? {
        Some(t) => t,
        None => return Err("no symbol table".into()),
    };
    let mut syms = Vec::with_capacity(raw.len());
    let mut markers: Vec<(String, u64, usize)> = Vec::new();
    let mut absval: Map<u64, Vec<&'static str>> = Map::default();
    let mut absorder: Vec<u64> = Vec::new();
    let mut file: &'static str = "";
    let ascii = strtab.is_ascii();
    let name_of = |off: u32| -> &'static str {
        if ascii {
            let off = off as usize;
            if off >= strtab.len() {
                return "";
            }
            let end = strtab[off..].iter().position(|&c| c == 0).map_or(strtab.len(), |p| off + p);
            unsafe { std::str::from_utf8_unchecked(&strtab[off..end]) }
        } else {
            leak(elf::string_at(strtab, off as usize))
        }
    };
    for r in raw.iter().skip(1) {
        let t = r.info & 0xF;
        if t == STT_FILE {
            file = name_of(r.name);
            continue;
        }
        let kind = match stt(t) {
            Some(k) if r.name != 0 => k,
            _ => continue,
        };
        if r.shndx == SHN_ABS {
            if r.value >= 0x1000 {
                let n = name_of(r.name);
                let v = absval.entry(r.value).or_default();
                if v.is_empty() {
                    absorder.push(r.value);
                }
                if !v.contains(&n) {
                    v.push(n);
                }
            }
            continue;
        }
        let sec = match by_index.get(&(r.shndx as usize)) {
            Some(&p) => p,
            None => continue,
        };
        let n = name_of(r.name);
        if n.is_empty() || n.starts_with(".L") || n.starts_with('$') {
            continue;
        }
        if n.starts_with("__lb_") {
            if let Some(m) = markers.iter_mut().find(|m| m.0 == n) {
                m.1 = r.value;
                m.2 = sec;
            } else {
                markers.push((n.to_string(), r.value, sec));
            }
            continue;
        }
        let b = bind(r.info >> 4);
        syms.push(Sym {
            name: n,
            addr: r.value,
            size: r.size,
            kind,
            bind: b,
            sec,
            file: if b == "local" { file } else { "" },
            obj: "",
            key: 0,
            tls: t == 6,
        });
    }
    let mut absolute = Map::default();
    for v in absorder {
        let names = &absval[&v];
        if names.len() == 1 {
            absolute.insert(v, names[0].to_string());
        }
    }
    let path = py_path(path);
    let mut img = Image {
        label: path.clone(),
        path,
        sections,
        syms,
        data: e.data,
        strtab,
        plan: None,
        mapping: "file",
        notes: Vec::new(),
        markers,
        absolute,
        lo: 0,
        hi: 0,
        tls_base: tls_base.unwrap_or(0),
        little: e.form.little,
        alloc: Vec::new(),
        sec_starts: Vec::new(),
        sized: Vec::new(),
        sized_addr: Vec::new(),
        pages: Vec::new(),
        at: Vec::new(),
        by_key: ByKey::default(),
        twins: Vec::new(),
        side: 0,
    };
    img.post_init();
    Ok(img)
}

impl Image {
    pub fn post_init(&mut self) {
        let alloc: Vec<usize> = (0..self.sections.len()).filter(|&i| self.sections[i].size != 0).collect();
        self.lo = alloc.iter().map(|&i| self.sections[i].addr).min().unwrap_or(0);
        self.hi = alloc.iter().map(|&i| self.sections[i].addr + self.sections[i].size).max().unwrap_or(0);
        self.sec_starts = alloc.iter().map(|&i| self.sections[i].addr).collect();
        self.alloc = alloc;
        // a TLS symbol's value is no address: it names none
        let mut sized: Vec<usize> = (0..self.syms.len()).filter(|&i| self.syms[i].size != 0 && !self.syms[i].tls).collect();
        let syms = &self.syms;
        sized.sort_unstable_by(|&a, &b| {
            let (x, y) = (&syms[a], &syms[b]);
            (x.addr, std::cmp::Reverse(x.size), x.name, a).cmp(&(y.addr, std::cmp::Reverse(y.size), y.name, b))
        });
        self.sized_addr = sized.iter().map(|&i| self.syms[i].addr).collect();
        self.sized = sized;
        if self.hi >= self.lo && (self.hi - self.lo) >> 12 < 1 << 20 {
            let n = ((self.hi - self.lo) >> 12) as usize + 2;
            let mut pages = Vec::with_capacity(n);
            let mut k = 0usize;
            for p in 0..n {
                let start = self.lo as u128 + ((p as u128) << 12);
                while k < self.sized_addr.len() && (self.sized_addr[k] as u128) < start {
                    k += 1;
                }
                pages.push(k as u32);
            }
            self.pages = pages;
        }
    }

    pub fn sec(&self, s: &Sym) -> &Section {
        &self.sections[s.sec]
    }

    /// The bytes of a symbol, or None when they are not all in the file.
    pub fn bytes_of(&self, s: &Sym) -> Option<&'static [u8]> {
        let off = self.offset_of(s);
        if off < 0 || off + s.size as i128 > self.data.len() as i128 {
            return None;
        }
        Some(&self.data[off as usize..(off as usize + s.size as usize)])
    }

    /// The bytes of a symbol that runs past the end of the file, as far as the file goes (None when it
    /// starts outside it).
    pub fn bytes_cut_short(&self, s: &Sym) -> Option<&'static [u8]> {
        let off = self.offset_of(s);
        if off < 0 || off > self.data.len() as i128 {
            return None;
        }
        let end = (off + s.size as i128).min(self.data.len() as i128);
        Some(&self.data[off as usize..end as usize])
    }

    pub fn in_file(&self, s: &Sym) -> bool {
        let off = self.offset_of(s);
        off >= 0 && off + s.size as i128 <= self.data.len() as i128
    }

    /// Where a symbol's bytes start in the file: a TLS symbol's value is its
    /// offset in the TLS block, whose initialization image starts at tls_base.
    pub fn offset_of(&self, s: &Sym) -> i128 {
        let sec = self.sec(s);
        let at = if s.tls { s.addr as i128 + self.tls_base as i128 } else { s.addr as i128 };
        sec.offset as i128 + at - sec.addr as i128
    }

    pub fn section_at(&self, addr: u64) -> Option<usize> {
        let i = self.sec_starts.partition_point(|&a| a <= addr);
        if i >= 1 {
            let s = self.alloc[i - 1];
            if addr < self.sections[s].addr + self.sections[s].size {
                return Some(s);
            }
        }
        None
    }

    /// Build the lookups once keys are assigned.
    pub fn index(&mut self, keys: &mut Keys) {
        self.at.clear();
        for (i, s) in self.syms.iter().enumerate() {
            if !s.tls {
                self.at.push((s.addr, s.key));
            }
            self.by_key.insert(s.key, i);
        }
        for (n, a, _) in &self.markers {
            let k = keys.id((2, "@marker", leak(n.clone()), "", 0));
            self.at.push((*a, k));
        }
        self.at.sort_unstable();
        CACHE.with(|c| c.borrow_mut()[self.side].clear());
    }

    /// The fast path of same_target (old image: self), over arrays.
    pub fn set_twins(&mut self, new: &Image) {
        self.twins = self
            .sized
            .iter()
            .map(|&i| {
                let s = &self.syms[i];
                let end = s.addr.saturating_add(s.size); // u64::MAX: ends at or past 2**64, holds every x
                let delta = match new.by_key.get(&s.key) {
                    Some(&n) if new.syms[n].size == s.size => {
                        i64::try_from(new.syms[n].addr as i128 - s.addr as i128).unwrap_or(NO_TWIN)
                    }
                    _ => NO_TWIN,
                };
                (end, delta)
            })
            .collect();
    }

    /// bisect_right(sized_addr, addr)
    pub fn upper(&self, addr: u64) -> usize {
        if addr >= self.lo && !self.pages.is_empty() {
            let p = ((addr - self.lo) >> 12) as usize;
            if p + 1 < self.pages.len() {
                let (a, b) = (self.pages[p] as usize, self.pages[p + 1] as usize);
                return a + self.sized_addr[a..b].partition_point(|&x| x <= addr);
            }
        }
        self.sized_addr.partition_point(|&a| a <= addr)
    }

    fn sized_at(&self, addr: u64) -> Option<&Sym> {
        let i = self.upper(addr);
        if i >= 1 {
            Some(&self.syms[self.sized[i - 1]])
        } else {
            None
        }
    }

    pub fn resolve(&self, addr: i128) -> Resolved {
        if addr < 0 || addr > u64::MAX as i128 {
            return None;
        }
        let addr = addr as u64;
        if (addr < self.lo || addr > self.hi) && (self.absolute.is_empty() || !self.absolute.contains_key(&addr)) {
            return None;
        }
        if let Some(hit) = CACHE.with(|c| c.borrow()[self.side].get(&addr).cloned()) {
            return hit;
        }
        let out = if let Some(n) = self.absolute.get(&addr) {
            Some(Rc::new(vec![Tok::Abs(n.clone())]))
        } else if self.lo <= addr && addr <= self.hi {
            let mut toks: Vec<Tok> = Vec::new();
            let from = self.at.partition_point(|e| e.0 < addr);
            for &(a, k) in &self.at[from..] {
                if a != addr {
                    break;
                }
                toks.push(Tok::Key(k, 0));
            }
            let s = self.sized_at(addr);
            if let Some(s) = s {
                if addr as u128 <= s.addr as u128 + s.size as u128 {
                    toks.push(Tok::Key(s.key, addr - s.addr));
                }
            }
            if s.map_or(true, |s| addr as u128 >= s.addr as u128 + s.size as u128) {
                match self.section_at(addr) {
                    None => toks.push(Tok::End(addr == self.hi)),
                    Some(p) => {
                        let sec = &self.sections[p];
                        if sec.nobits {
                            toks.push(Tok::SecNobits(sec.name));
                        } else {
                            toks.push(self.content(p, addr));
                            if sec.executable {
                                self.label(p, addr, &mut toks); // data: named by its bytes only
                            }
                        }
                    }
                }
            }
            Some(Rc::new(toks))
        } else {
            None
        };
        CACHE.with(|c| c.borrow_mut()[self.side].insert(addr, out.clone()));
        out
    }

    /// Bytes at an unlabelled address (merged strings, constants, jump tables), addresses resolved.
    /// An nm-style name for an address in no symbol.
    fn label(&self, p: usize, addr: u64, toks: &mut Vec<Tok>) {
        let sec = &self.sections[p];
        let i = self.at.partition_point(|e| e.0 <= addr);
        if i >= 1 && self.at[i - 1].0 >= sec.addr {
            let a = self.at[i - 1].0;
            let from = self.at.partition_point(|e| e.0 < a);
            for &(_, k) in &self.at[from..i] {
                let t = Tok::Label(k, addr - a);
                if !toks.contains(&t) {
                    toks.push(t);
                }
            }
        } else {
            toks.push(Tok::SecLabel(sec.name, addr - sec.addr));
        }
    }

    fn content(&self, p: usize, addr: u64) -> Tok {
        let sec = &self.sections[p];
        let off = (sec.offset + addr - sec.addr) as usize;
        let end = (off + 32).min(self.data.len());
        let chunk: &[u8] = if off < self.data.len() { &self.data[off..end] } else { &[] };
        if chunk.len() >= 8 {
            let v = elf::u64at(chunk, 0, self.little);
            if self.lo <= v && v <= self.hi {
                let mut out = Vec::new();
                let mut j = 0;
                while j + 8 <= chunk.len() {
                    let v = elf::u64at(chunk, j, self.little);
                    match self.sized_at(v) {
                        Some(s) if (v as u128) < s.addr as u128 + s.size as u128 => out.push(Ent::Sym(s.key, v - s.addr)),
                        _ => out.push(Ent::Val(v)),
                    }
                    j += 8;
                }
                return Tok::SecTable(sec.name, out);
            }
        }
        let b = match chunk.iter().position(|&c| c == 0) {
            Some(n) => chunk[..n + 1].to_vec(),
            None => chunk.to_vec(),
        };
        Tok::SecBytes(sec.name, b)
    }

    /// The sized symbols around an address: two on each side, or (wide) all within a page.
    pub fn near(&self, addr: u64, wide: bool) -> &[usize] {
        if !wide {
            let i = self.upper(addr);
            let lo = i.saturating_sub(2);
            let hi = (i + 2).min(self.sized.len());
            return &self.sized[lo..hi];
        }
        let a = addr.saturating_sub(PAGE as u64);
        let i = if (addr as i128) - PAGE < 0 { 0 } else { self.sized_addr.partition_point(|&x| x < a) };
        let b = addr as u128 + PAGE as u128;
        let j = self.sized_addr.partition_point(|&x| (x as u128) <= b);
        if i >= j {
            return &[];
        }
        &self.sized[i..j]
    }
}

/// Do address x of the old image and y of the new one name the same thing?
pub fn same_target(old: &Image, x: i128, new: &Image, y: i128, wide: bool) -> bool {
    if x >= 0 && x <= u64::MAX as i128 {
        let i = old.upper(x as u64);
        if i >= 1 {
            let (end, delta) = old.twins[i - 1];
            let inside = (x as u64) < end || (end == u64::MAX && {
                let s = &old.syms[old.sized[i - 1]];
                s.addr as u128 + s.size as u128 > x as u128
            });
            if inside && delta != NO_TWIN && y - x == delta as i128 {
                return true;
            }
        }
    }
    let t = match old.resolve(x) {
        Some(t) => t,
        None => return false,
    };
    let u = match new.resolve(y) {
        Some(u) => u,
        None => return false,
    };
    if t.iter().any(|a| u.contains(a)) {
        return true;
    }
    for &si in old.near(x as u64, wide) {
        let s = &old.syms[si];
        if let Some(&ni) = new.by_key.get(&s.key) {
            let n = &new.syms[ni];
            if y - x == n.addr as i128 - s.addr as i128 && (x - s.addr as i128).abs() <= PAGE {
                return true;
            }
        }
    }
    false
}
