//! The objects an image was linked from, the replay of its plan (planfile.rs) over them
//! (as layoutbench/layout.py and placement.py define them), and the symbol keys.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::basics::leak;
use crate::elf::{self, SHF_ALLOC, SHF_EXECINSTR, SHF_MERGE, SHT_NOBITS, SHT_PROGBITS};
use crate::image::{Image, Keys, Map, Sym};
use crate::json::{self, Value};
use crate::planfile::{Plan, KINDS};

pub struct InSec {
    pub kind: Option<&'static str>, //: section_kind, once
    pub name: &'static str,
    pub size: u64,
    pub align: u64,
    pub flags: u64,
    pub symbols: Vec<(&'static str, u64, bool)>, //: name, value, weak
}

/// An object's allocatable sections (the Vec it derefs to) and its data globals: (name,
/// tentative) of each defined non-local STT_OBJECT/TLS/COMMON symbol outside code, or common
/// (elfinfo.ObjectInfo.data_globals; tentative: weak or common).
pub struct Obj {
    pub secs: Vec<InSec>,
    pub data: Vec<(&'static str, bool)>,
}

impl std::ops::Deref for Obj {
    type Target = Vec<InSec>;
    fn deref(&self) -> &Vec<InSec> {
        &self.secs
    }
}

pub type Objects = Map<String, Arc<Obj>>;

/// Data global name → the object that defines it (placement.data_owners / units.json "globals").
pub type Owners = Map<&'static str, &'static str>;

/// Objects read so far, by path: both sides of a diff are usually linked from the same objects,
/// and are read at once on two threads (one from each end of the list).
static OBJECTS: Mutex<Option<Map<PathBuf, Arc<Obj>>>> = Mutex::new(None);

/// Read an object (elfinfo.read_object); None when it cannot be read (the plan's objects are then
/// "not found").
fn read_object(path: &Path) -> Option<Obj> {
    let p = path.to_str()?;
    let e = elf::read(p, false).ok()?;
    let mut secs: Vec<(usize, InSec)> = Vec::new();
    let mut pos: Map<usize, usize> = Map::default();
    for (i, s) in e.sh.iter().enumerate() {
        if s.flags & SHF_ALLOC != 0 && (s.typ == SHT_PROGBITS || s.typ == SHT_NOBITS) {
            pos.insert(i, secs.len());
            secs.push((i, InSec { kind: None, name: e.names[i], size: s.size, align: s.align.max(1), flags: s.flags, symbols: Vec::new() }));
        }
    }
    let mut data = Vec::new();
    if let Some((raw, strtab)) = e.symtab().ok()? {
        for r in raw.iter().skip(1) {
            let t = r.info & 0xF;
            let (bind, common) = (r.info >> 4, r.shndx == SHN_COMMON);
            if matches!(t, 1 | 5 | 6) && matches!(bind, 1 | 2) && r.name != 0
                && (common || pos.get(&(r.shndx as usize)).is_some_and(|&k| secs[k].1.flags & SHF_EXECINSTR == 0))
            {
                let n = elf::str_at(strtab, r.name as usize);
                if !n.is_empty() {
                    data.push((n, bind == 2 || common));
                }
            }
            if t > 2 || r.name == 0 {
                continue;
            }
            if let Some(&k) = pos.get(&(r.shndx as usize)) {
                let n = elf::str_at(strtab, r.name as usize);
                if !n.is_empty() {
                    secs[k].1.symbols.push((n, r.value, r.info >> 4 == 2));
                }
            }
        }
    }
    for (_, s) in secs.iter_mut() {
        s.kind = section_kind(s);
    }
    Some(Obj { secs: secs.into_iter().map(|(_, s)| s).collect(), data })
}

const SHN_COMMON: u16 = 0xFFF2;

/// placement.data_owners: data global name → the one linked object that defines it (its only
/// definition, else its only tentative one); a name several objects define alike is left out.
fn data_owners(objects: &Objects) -> Owners {
    let mut strong: Map<&'static str, Vec<&str>> = Map::default();
    let mut tentative: Map<&'static str, Vec<&str>> = Map::default();
    for (name, obj) in objects {
        for &(sym, weak) in &obj.data {
            let m = if weak { &mut tentative } else { &mut strong };
            let e = m.entry(sym).or_default();
            if !e.contains(&name.as_str()) || !weak {
                e.push(name.as_str());
            }
        }
    }
    let owned: Map<&str, &'static str> = objects.keys().map(|n| (n.as_str(), leak(n.clone()))).collect();
    let mut out: Owners = Map::default();
    for (sym, objs) in &strong {
        if objs.len() == 1 {
            out.insert(sym, owned[objs[0]]);
        }
    }
    for (sym, objs) in &tentative {
        if objs.len() == 1 && !strong.contains_key(sym) {
            out.insert(sym, owned[objs[0]]);
        }
    }
    out
}

fn is_file(p: &Path) -> bool {
    p.is_file()
}

/// profile.find(kernel): the kernel.toml of a profile, or None.
fn find_profile(kernel: &str, root: &Path) -> Option<PathBuf> {
    let p = Path::new(kernel);
    if p.extension().map_or(false, |e| e == "toml") && is_file(p) {
        return Some(p.to_path_buf());
    }
    if is_file(&p.join("kernel.toml")) && (kernel.contains('/') || p.is_absolute()) {
        return Some(p.join("kernel.toml"));
    }
    if kernel.is_empty() || kernel.contains('/') || kernel == "." || kernel == ".." {
        return None;
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(env) = std::env::var("LAYOUTBENCH_PROFILES") {
        for d in env.split(':').filter(|d| !d.is_empty()) {
            dirs.push(PathBuf::from(d));
        }
    }
    dirs.push(root.join("kernels"));
    dirs.push(root.join("bench").join("real"));
    for d in dirs {
        if d.is_dir() && is_file(&d.join(kernel).join("kernel.toml")) {
            return Some(d.join(kernel).join("kernel.toml"));
        }
    }
    remembered(kernel)
}

/// profile._remembered: the kernel.toml a command was given by path for this name, as the work
/// folder's profiles.json ($LAYOUTBENCH_DIR, else ./.layoutbench) records it.
fn remembered(kernel: &str) -> Option<PathBuf> {
    let work = std::env::var("LAYOUTBENCH_DIR").unwrap_or_else(|_| ".layoutbench".to_string());
    let text = std::fs::read_to_string(Path::new(&work).join("profiles.json")).ok()?;
    match json::parse(leak(text)).ok()? {
        Value::Obj(items) => items.iter().find_map(|(k, v)| match v {
            Value::Str(path) if *k == kernel && is_file(Path::new(path)) => Some(PathBuf::from(path)),
            _ => None,
        }),
        _ => None,
    }
}

/// The `objects` key of `[images.NAME]` in a kernel.toml (the only key we need; the file is
/// otherwise the Python front end's business).
fn image_objects(toml: &str, image: &str) -> Option<String> {
    let head = format!("[images.{image}]");
    let mut inside = false;
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t.split('#').next().unwrap().trim() == head;
            continue;
        }
        if inside {
            if let Some((k, v)) = t.split_once('=') {
                if k.trim() == "objects" {
                    let v = v.trim();
                    let v = v.strip_prefix('"')?;
                    let end = v.find('"')?;
                    let val = &v[..end];
                    if val.contains('\\') {
                        return None;
                    }
                    return Some(val.to_string());
                }
            }
        }
    }
    None
}

/// find_objects: the objects an image in a layoutbench work dir was linked from, all of them (the
/// plan's first: their data globals too), None when not found.
pub fn find_objects(elf: &str, plan: &Plan, root: &Path, backwards: bool) -> Option<Objects> {
    let real = std::fs::canonicalize(elf).ok()?;
    let anc: Vec<&Path> = real.ancestors().skip(1).collect();
    if anc.len() < 6 {
        return None;
    }
    let (work, key) = (anc[5], anc[2].file_name()?);
    let objdir = work.join("objects").join(&plan.kernel).join(key).join("obj");
    let toml = find_profile(&plan.kernel, root)?;
    let text = std::fs::read_to_string(&toml).ok()?;
    let listing = objdir.join(image_objects(&text, &plan.image)?);
    let text = String::from_utf8(std::fs::read(&listing).ok()?).ok()?;
    let mut entries: Map<String, String> = Map::default();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if !w.is_empty() && !w[0].starts_with('#') {
            entries.insert(w[0].to_string(), w.get(1).unwrap_or(&w[0]).to_string());
        }
    }
    let mut names: Vec<&str> = Vec::new();
    let mut seen: Map<&str, ()> = Map::default();
    for (_, units) in &plan.groups {
        for u in units {
            if seen.insert(&u.object, ()).is_none() {
                names.push(&u.object);
            }
        }
    }
    // the plan's objects, then the others linked (their data globals: data_owners)
    for n in entries.keys() {
        if seen.insert(n, ()).is_none() {
            names.push(n);
        }
    }
    if backwards {
        names.reverse(); // the other side reads from the front: together each object is read once
    }
    // any object that cannot be read makes the whole answer None
    let mut out: Objects = Map::default();
    for n in names {
        let rel = entries.get(n).cloned().unwrap_or_else(|| n.to_string());
        let path = objdir.join(rel);
        let hit = OBJECTS.lock().unwrap().get_or_insert_with(Map::default).get(&path).cloned();
        let secs = match hit {
            Some(secs) => secs,
            None => match read_object(&path) {
                Some(secs) => {
                    let secs = Arc::new(secs);
                    OBJECTS.lock().unwrap().get_or_insert_with(Map::default).insert(path, secs.clone());
                    secs
                }
                None => return None,
            },
        };
        out.insert(n.to_string(), secs);
    }
    Some(out)
}

fn section_kind(s: &InSec) -> Option<&'static str> {
    // \.(text|rodata|data|bss)(\.[0-9A-Za-z_].*)?  (fullmatch; "." does not match a newline)
    let rest = s.name.strip_prefix('.')?;
    for k in KINDS {
        if let Some(tail) = rest.strip_prefix(k) {
            let ok = tail.is_empty()
                || (tail.starts_with('.')
                    && tail[1..].chars().next().map_or(false, |c| c.is_ascii_alphanumeric() || c == '_')
                    && !tail.contains('\n'));
            if ok {
                if k == "rodata" && s.flags & SHF_MERGE != 0 {
                    return None;
                }
                return Some(k);
            }
        }
    }
    None
}

fn align(x: i128, a: i128) -> i128 {
    (x + a - 1).div_euclid(a) * a
}

/// placement.replay: (kind, object) → start of its first section, in order, and the problems.
fn replay(img: &Image, plan: &Plan, objects: &Objects) -> Result<(Starts, Vec<String>), String> {
    // name → its addresses: the first in the map, any further ones in `more` (names rarely repeat)
    let mut addrs: Map<&str, (u64, usize)> = Map::default();
    let mut more: Vec<(u64, usize)> = Vec::new(); //: (address, next) chains, usize::MAX ends one
    let mut add = |n: &'static str, a: u64, addrs: &mut Map<&str, (u64, usize)>| match addrs.get_mut(n) {
        Some(e) => {
            more.push((a, e.1));
            e.1 = more.len() - 1;
        }
        None => {
            addrs.insert(n, (a, usize::MAX));
        }
    };
    addrs.reserve(img.syms.len() + img.markers.len());
    for s in &img.syms {
        add(s.name, s.addr, &mut addrs);
    }
    for (n, a, _) in &img.markers {
        add(leak(n.clone()), *a, &mut addrs);
    }
    let all = |e: &(u64, usize)| -> Vec<u64> {
        let mut out = vec![e.0];
        let mut k = e.1;
        while k != usize::MAX {
            out.push(more[k].0);
            k = more[k].1;
        }
        out
    };
    let symbol = |name: &str| -> Result<u64, String> {
        img.syms
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.addr)
            .or_else(|| img.markers.iter().find(|m| m.0 == name).map(|m| m.1))
            .ok_or_else(|| format!("{}: no symbol '{}'; was it linked with a layoutbench script?", img.path, name))
    };
    let mut problems = Vec::new();
    let mut starts: Vec<((String, String), i128)> = Vec::new();
    let mut seen: Map<(String, String), ()> = Map::default();
    for kind in KINDS {
        let units = match plan.group(kind) {
            Some(u) => u,
            None => continue,
        };
        if units.is_empty() {
            continue;
        }
        let mut pos = symbol(&format!("__lb_{kind}_units"))? as i128;
        for (i, u) in units.iter().enumerate() {
            let obj = match objects.get(u.object) {
                Some(o) => o,
                None => {
                    problems.push(format!("{kind} unit {i}: object {} is not among the linked objects", u.object));
                    continue;
                }
            };
            pos = align(pos, u.align as i128) + u.gap as i128;
            for s in obj.iter().filter(|s| {
                s.kind == Some(kind) && u.sections.as_ref().map_or(true, |l| l.iter().any(|x| *x == s.name))
            }) {
                pos = align(pos, s.align as i128);
                let k = (kind.to_string(), u.object.to_string());
                if !seen.contains_key(&k) {
                    seen.insert(k.clone(), ());
                    starts.push((k, pos));
                }
                for (name, value, weak) in &s.symbols {
                    if *weak {
                        continue;
                    }
                    let want = pos + *value as i128;
                    let hit = addrs.get(name).map_or(false, |e| {
                        e.0 as i128 == want || (e.1 != usize::MAX && all(e).iter().any(|&a| a as i128 == want))
                    });
                    if !hit {
                        let mut g: Vec<u64> = addrs.get(name).map(|e| all(e)).unwrap_or_default();
                        g.sort();
                        g.dedup();
                        let wh = if g.is_empty() {
                            "nowhere".to_string()
                        } else {
                            g.iter().map(|a| format!("0x{a:x}")).collect::<Vec<_>>().join(", ")
                        };
                        problems.push(format!(
                            "{} {}: {} should be at 0x{:x} by the plan ({kind} unit {i}), but is at {wh}",
                            u.object, s.name, name, want
                        ));
                        break;
                    }
                }
                pos += s.size as i128;
            }
        }
        if kind == "text" {
            let end = symbol("__lb_text_units_end")? as i128;
            if end != pos {
                problems.push(format!("text units end at 0x{end:x} in the image but at 0x{pos:x} by the plan"));
            }
        }
    }
    Ok((starts, problems))
}

pub type Starts = Vec<((String, String), i128)>;

/// placement.recorded: the unit starts recorded beside the image (units.json) when they belong
/// to it (format, plan id, size, every recorded marker where the image has it); None otherwise.
pub fn recorded(elf: &Path, plan_id: &str, markers: &[(String, u64, usize)]) -> Option<(Starts, Option<Owners>)> {
    let path = elf.parent().unwrap_or(Path::new("")).join("units.json");
    if !path.is_file() {
        return None; // none, or a FIFO (whose read would wait for a writer forever)
    }
    let text = leak(std::fs::read_to_string(&path).ok()?);
    let size = std::fs::metadata(elf).ok()?.len() as i128;
    let v = json::parse(&text).ok()?;
    let int = |v: Option<&Value>| match v {
        Some(Value::Int(i)) => Some(*i),
        _ => None,
    };
    if int(v.get("format"))? != 1 || !matches!(v.get("plan_id"), Some(Value::Str(t)) if *t == plan_id)
        || int(v.get("image_size"))? != size
    {
        return None;
    }
    match v.get("markers")? {
        Value::Obj(kv) => {
            for (i, (n, a)) in kv.iter().enumerate() {
                if kv[i + 1..].iter().any(|(k, _)| k == n) {
                    continue; // a name twice: Python's dict keeps the last value
                }
                let a = int(Some(a))?;
                if !markers.iter().any(|m| &m.0 == n && m.1 as i128 == a) {
                    return None;
                }
            }
        }
        _ => return None,
    }
    let mut starts: Starts = Vec::new();
    let mut seen: Map<(String, String), ()> = Map::default();
    match v.get("starts")? {
        Value::List(l) => {
            for u in l {
                match u {
                    Value::List(x) if x.len() == 3 => match (&x[0], &x[1], &x[2]) {
                        (Value::Str(k), Value::Str(o), Value::Int(a)) => {
                            let key = (k.to_string(), o.to_string());
                            if seen.insert(key.clone(), ()).is_some() {
                                return None;
                            }
                            starts.push((key, *a));
                        }
                        _ => return None,
                    },
                    _ => return None,
                }
            }
        }
        _ => return None,
    }
    Some((starts, owners(v.get("globals"))?))
}

/// placement._owners: "globals" of a record (object → names) as name → object: Some(None) when
/// absent (or null), None (a broken record) unless lists of names, each under one object.
fn owners(v: Option<&Value>) -> Option<Option<Owners>> {
    let kv = match v {
        None | Some(Value::Null) => return Some(None),
        Some(Value::Obj(kv)) => kv,
        _ => return None,
    };
    let mut out: Owners = Map::default();
    for (i, (obj, names)) in kv.iter().enumerate() {
        if kv[i + 1..].iter().any(|(k, _)| k == obj) {
            continue; // an object twice: Python's dict keeps the last value
        }
        match names {
            Value::List(l) => {
                for n in l {
                    match n {
                        Value::Str(n) if out.insert(n, obj).is_none() => {}
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
    }
    Some(Some(out))
}

/// map_objects: every symbol's object, from the plan's unit starts (recorded beside the image,
/// else replayed from the plan and its objects), else from STT_FILE symbols.
pub fn map_objects(img: &mut Image, objects: Option<&Objects>, recorded: Option<(Starts, Option<Owners>)>) {
    let mut by_sec: Map<usize, Vec<usize>> = Map::default();
    let mut order: Vec<usize> = Vec::new();
    for (i, s) in img.syms.iter().enumerate() {
        let e = by_sec.entry(s.sec).or_default();
        if e.is_empty() {
            order.push(s.sec);
        }
        e.push(i);
    }
    for lst in by_sec.values_mut() {
        let syms = &img.syms;
        lst.sort_unstable_by(|&a, &b| (syms[a].addr, syms[a].name, a).cmp(&(syms[b].addr, syms[b].name, b)));
    }
    for sec in &order {
        let lst = &by_sec[sec];
        let mut prev: &'static str = "";
        let mut pending: Vec<usize> = Vec::new();
        for &i in lst {
            if img.syms[i].bind == "local" {
                let f = img.syms[i].file;
                for &g in &pending {
                    img.syms[g].obj = if f == prev { f } else { "" };
                }
                pending.clear();
                img.syms[i].obj = f;
                prev = f;
            } else {
                pending.push(i);
            }
        }
    }
    let found = match recorded {
        Some(r) => Some(r),
        None => replayed(img, objects).map(|s| (s, objects.map(data_owners))),
    };
    let mut placed = vec![false; img.syms.len()];
    if let Some((starts, owners)) = found {
        place_units(img, starts, &by_sec, &mut placed);
        for (i, s) in img.syms.iter_mut().enumerate() {
            // a data global belongs to the object that defines it
            if let Some(&o) = owners.as_ref().and_then(|m| m.get(s.name)) {
                if s.bind != "local" && !placed[i] {
                    s.obj = o;
                    placed[i] = true;
                }
            }
        }
    }
    crate::archives::attribute(img, &placed);
    if img.mapping == "plan" {
        one_row_per_object(img, &placed);
    }
}

/// Symbols inside the plan's units belong to the unit's object.
fn place_units(img: &mut Image, starts: Starts, by_sec: &Map<usize, Vec<usize>>, placed: &mut [bool]) {
    let end = img.markers.iter().find(|m| m.0 == "__lb_text_units_end").map(|m| m.1);
    let mut rank: Map<&str, usize> = Map::default();
    for ((_, o), _) in &starts {
        let n = rank.len();
        rank.entry(o.as_str()).or_insert(n);
    }
    let mut ranges: Map<usize, Vec<(i128, usize, &'static str)>> = Map::default();
    for ((_, obj), addr) in &starts {
        if *addr < 0 || *addr > u64::MAX as i128 {
            continue;
        }
        if let Some(p) = img.section_at(*addr as u64) {
            ranges.entry(p).or_default().push((*addr, rank[obj.as_str()], leak(obj.clone())));
        }
    }
    let mut set: Vec<(usize, &'static str)> = Vec::new();
    for (p, lst) in ranges.iter_mut() {
        lst.sort();
        let members = match by_sec.get(p) {
            Some(m) => m,
            None => continue,
        };
        for &i in members {
            let s = &img.syms[i];
            let sec = &img.sections[s.sec];
            if let Some(end) = end {
                if sec.executable && s.addr >= end && sec.addr <= end {
                    continue;
                }
            }
            let k = lst.partition_point(|r| r.0 <= s.addr as i128);
            if k >= 1 {
                set.push((i, lst[k - 1].2));
            }
        }
    }
    for (i, o) in set {
        img.syms[i].obj = o;
        placed[i] = true;
    }
    img.mapping = "plan";
}

/// A file name without its extension.
fn stem(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    let head = &name[..name.len() - base.len()];
    match base.rfind('.') {
        Some(d) => format!("{head}{}", &base[..d]),
        None => name.to_string(),
    }
}

/// The names (without extension) of the files an object can be compiled
/// from: its own name's, and every tail of it after a '/' or ':'.
fn compiled_names(obj: &str) -> Vec<String> {
    let st = stem(obj);
    let mut out = vec![st.clone()];
    for (i, c) in st.char_indices() {
        if c == '/' || c == ':' {
            out.push(st[i + 1..].to_string());
        }
    }
    out
}

/// A symbol outside the units given to a source file by STT_FILE
/// symbols belongs to the one object, of those the units place symbols of, compiled from it.
fn one_row_per_object(img: &mut Image, placed: &[bool]) {
    if img.plan.is_none() {
        return;
    }
    let mut owners: Vec<&'static str> = img.syms.iter().enumerate().filter(|(i, _)| placed[*i]).map(|(_, s)| s.obj).collect();
    owners.sort_unstable();
    owners.dedup();
    let mut by_name: Map<String, Vec<&'static str>> = Map::default();
    for &o in &owners {
        for n in compiled_names(o) {
            by_name.entry(n).or_default().push(o);
        }
    }
    let mut found: Map<&'static str, Option<&'static str>> = Map::default();
    for (i, s) in img.syms.iter_mut().enumerate() {
        if placed[i] || s.obj.is_empty() || s.obj == "crtstuff.c" || s.obj == crate::archives::TOOLCHAIN {
            continue;
        }
        let f = *found.entry(s.obj).or_insert_with(|| match by_name.get(&stem(s.obj)) {
            Some(c) if c.len() == 1 => Some(c[0]),
            _ => None,
        });
        if let Some(o) = f {
            s.obj = o;
        }
    }
}

/// The unit starts by replaying the plan over its objects; None (and a note)
/// when it cannot.
fn replayed(img: &mut Image, objects: Option<&Objects>) -> Option<Starts> {
    let (plan, objects) = match (img.plan.as_ref(), objects) {
        (Some(p), Some(o)) => (p, o),
        _ => {
            if img.plan.is_some() {
                let n = format!("{}: the objects of its plan were not found; objects from STT_FILE symbols", img.path);
                img.notes.push(n);
            }
            return None;
        }
    };
    let (starts, problems) = match replay(img, plan, objects) {
        Ok(r) => r,
        Err(e) => {
            let n = format!("{}: plan does not replay ({e}); objects from STT_FILE symbols", img.path);
            img.notes.push(n);
            return None;
        }
    };
    if !problems.is_empty() {
        let n = format!("{}: image does not match its plan ({}); objects from STT_FILE symbols", img.path, problems[0]);
        img.notes.push(n);
        return None;
    }
    Some(starts)
}

/// A symbol's key before its count: a global by name, a local by (file, object, name) when the
/// plans map both sides and it has a size, else by (file, name).
fn base(s: &Sym, plan_mode: bool) -> (u8, &'static str, &'static str, &'static str, u64) {
    if s.bind != "local" {
        (2, "", s.name, "", 0)
    } else if plan_mode && s.size != 0 {
        (3, s.file, s.obj, s.name, 0)
    } else {
        (2, s.file, s.name, "", 0)
    }
}

/// When the new image lists the same symbols as the old one in the same order (two layouts of
/// the same objects: lld writes the symbol table in input order), every key is the old one's
/// (same base, same count so far): the keys are copied, no table lookups.  False: nothing done.
pub fn copy_keys(old: &Image, new: &mut Image, plan_mode: bool, keys: &mut Keys) -> bool {
    if old.syms.len() != new.syms.len() {
        return false;
    }
    // two links of the same objects usually write the same string table: then a name (or file)
    // at the same offset in both is the same string, and offsets are compared, not bytes
    let same_tab = old.strtab == new.strtab;
    let (ot, nt) = (old.strtab.as_ptr() as usize, new.strtab.as_ptr() as usize);
    let in_tab = |x: &str, t: usize, len: usize| {
        let p = x.as_ptr() as usize;
        p >= t && p + x.len() <= t + len
    };
    let same = |a: &'static str, b: &'static str| {
        if a.len() != b.len() {
            return false;
        }
        if same_tab && in_tab(a, ot, old.strtab.len()) && in_tab(b, nt, new.strtab.len())
            && a.as_ptr() as usize - ot == b.as_ptr() as usize - nt
        {
            return true;
        }
        crate::is(a, b)
    };
    let agree = old.syms.iter().zip(&new.syms).all(|(o, n)| {
        let (a, b) = (base(o, plan_mode), base(n, plan_mode));
        a.0 == b.0 && a.4 == b.4 && same(a.2, b.2) && same(a.1, b.1) && same(a.3, b.3)
    });
    if !agree {
        return false;
    }
    for (o, n) in old.syms.iter().zip(new.syms.iter_mut()) {
        n.key = o.key;
    }
    new.index(keys);
    true
}

pub fn assign_keys(img: &mut Image, plan_mode: bool, keys: &mut Keys) {
    let mut seen: Vec<u64> = Vec::with_capacity(2 * img.syms.len()); //: by key id: how many so far
    keys.reserve(img.syms.len());
    for s in img.syms.iter_mut() {
        let base = base(s, plan_mode);
        let b = keys.id(base);
        if b as usize >= seen.len() {
            seen.resize(b as usize + 1, 0);
        }
        seen[b as usize] += 1;
        let c = seen[b as usize];
        s.key = if c == 1 { b } else { keys.id((base.0, base.1, base.2, base.3, c)) };
    }
    crate::mark("keys assigned");
    img.index(keys);
    crate::mark("indexed");
}
