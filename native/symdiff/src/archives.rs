//! Which symbols of a static image came from the toolchain: the C library's and the compiler's
//! archives (libc.a, libgcc.a, libgcc_eh.a) and the crt files (crt1.o...), given to their members.
//!
//! A static image records no archive member names, and Debian's libc.a members carry no STT_FILE
//! symbol: ld.lld writes each input file's local symbols together, in input order, so an archive
//! member's locals follow the STT_FILE of whichever object came before it (the last user object,
//! or crtstuff.c).  The members are found again from the archives:
//!
//! * a symbol the image defines and an archive member defines as a global (most of libc's are
//!   hidden, so local in the image) (`llvm-nm` of the toolchain's archives, as `clang
//!   -print-file-name` finds them) belongs to that member: `libc.a(strcmp.o)`, unless the plan's
//!   units place it;
//! * the locals after an STT_FILE symbol belong to that file until the first one that shows it is
//!   not: one outside the plan's units in code (a plan places all code of its objects), a member's
//!   global, or a local whose name a linked member (one whose globals the image holds) defines as
//!   a local (of k locals of a name that j linked members define, the last j: the members come
//!   after the user's objects in the link).  Objects do not interleave in the symbol table, so
//!   every later local of that run is not the file's either.  These tests read names and the
//!   symbol table's order (the link command's order of input files), never addresses: a relink in
//!   another layout gives the same answer;
//! * such a local belongs to the one linked member that defines it as a local, else to the member
//!   of the nearest member global before it in its section (else after it), else to
//!   `(toolchain / archives)`; so do the crt files' (crtstuff.c);
//! * a global no archive defines keeps the object of the locals on both sides of it when that is a
//!   user's file, else it is shown as `(global)`.
//!
//! Only images that link a C library statically (they define `__libc_start_main`) are looked at.

use std::process::Command;
use std::sync::OnceLock;

use crate::basics::leak;
use crate::image::{Image, Map};

pub const TOOLCHAIN: &str = "(toolchain / archives)";
const ARCHIVES: [&str; 3] = ["libc.a", "libgcc.a", "libgcc_eh.a"];
const CRT: [&str; 5] = ["crt1.o", "crti.o", "crtbeginT.o", "crtend.o", "crtn.o"];

fn output(cands: &[&str], args: &[&str]) -> Option<String> {
    for c in cands {
        if let Ok(o) = Command::new(c).args(args).output() {
            return Some(String::from_utf8_lossy(&o.stdout).into_owned());
        }
    }
    None
}

/// archives._archive_paths: found in the compiler driver's library search directories.
fn archive_paths() -> Vec<String> {
    let text = match output(&["clang-19", "cc"], &["-print-search-dirs"]) {
        Some(t) => t,
        None => return Vec::new(),
    };
    let dirs: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("libraries:"))
        .and_then(|l| l.split_once('='))
        .map(|(_, d)| d.split(':').collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for name in CRT.iter().chain(ARCHIVES.iter()) {
        for d in &dirs {
            if d.is_empty() {
                continue;
            }
            let p = std::path::Path::new(d).join(name);
            if p.is_file() {
                if let Ok(r) = std::fs::canonicalize(&p) {
                    out.push(r.to_string_lossy().into_owned());
                }
                break;
            }
        }
    }
    out
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// archives._index: global name → archive(member) (or crt file) of its first definition, and
/// local name → the members that define it.
struct Index {
    globals: Map<String, &'static str>,
    locals: Map<String, Vec<&'static str>>,
}

/// archives._is_local: an nm type letter of a local symbol.
fn is_local(letter: char) -> bool {
    letter.is_ascii_lowercase() && !"iuvw".contains(letter)
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut idx = Index { globals: Map::default(), locals: Map::default() };
        let paths = archive_paths();
        if paths.is_empty() {
            return idx;
        }
        let mut args = vec!["-A", "--defined-only", "-P"];
        args.extend(paths.iter().map(|s| s.as_str()));
        let text = match output(&["llvm-nm-19", "llvm-nm", "nm"], &args) {
            Some(t) => t,
            None => return idx,
        };
        let mut names: Map<String, &'static str> = Map::default();
        for line in text.lines() {
            let (head, rest) = match line.split_once(": ") {
                Some(x) => x,
                None => continue,
            };
            if rest == "no symbols" {
                continue;
            }
            let where_ = if head.ends_with(']') && head.contains('[') {
                let (path, member) = head[..head.len() - 1].rsplit_once('[').unwrap();
                format!("{}({member})", basename(path))
            } else {
                basename(head).to_string()
            };
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            if name.is_empty() {
                continue;
            }
            let w = *names.entry(where_.clone()).or_insert_with(|| leak(where_));
            if kind.chars().next().map_or(false, is_local) {
                let ws = idx.locals.entry(name.to_string()).or_default();
                if !ws.contains(&w) {
                    ws.push(w);
                }
            } else if !idx.globals.contains_key(name) {
                idx.globals.insert(name.to_string(), w);
            }
        }
        idx
    })
}

pub fn foreign_name(o: &str) -> bool {
    o == TOOLCHAIN || o == "crtstuff.c" || o.ends_with(".o)") || CRT.contains(&o)
}

/// archives.attribute
pub fn attribute(img: &mut Image, placed: &[bool]) {
    if !img.syms.iter().any(|s| s.name == "__libc_start_main") {
        return;
    }
    let index = index();
    let n = img.syms.len();
    let mut member: Vec<Option<&'static str>> = vec![None; n];
    for (i, s) in img.syms.iter().enumerate() {
        if !placed[i] {
            member[i] = index.globals.get(s.name).copied();
        }
    }
    let linked: std::collections::HashSet<&'static str> = member.iter().flatten().copied().collect();
    let mut by_sec: Map<usize, Vec<usize>> = Map::default();
    for (i, s) in img.syms.iter().enumerate() {
        by_sec.entry(s.sec).or_default().push(i);
    }
    let mut pos = vec![(0usize, 0usize); n];
    let mut anchors: Map<usize, (Vec<u64>, Vec<&'static str>)> = Map::default();
    for (&sec, lst) in by_sec.iter_mut() {
        let syms = &img.syms;
        lst.sort_by(|&a, &b| {
            (syms[a].addr, syms[a].bind == "local", syms[a].name).cmp(&(syms[b].addr, syms[b].bind == "local", syms[b].name))
        });
        let mut addrs = Vec::new();
        let mut ms = Vec::new();
        for (k, &i) in lst.iter().enumerate() {
            pos[i] = (sec, k);
            if let Some(m) = member[i] {
                addrs.push(syms[i].addr);
                ms.push(m);
            }
        }
        anchors.insert(sec, (addrs, ms));
    }
    let plan = img.mapping == "plan";
    // the linked members (whose globals the image holds) that define a local of this name
    let local_of = |name: &str| -> Vec<&'static str> {
        index.locals.get(name).map(|ws| ws.iter().copied().filter(|w| linked.contains(w)).collect()).unwrap_or_default()
    };
    let member_near = |addr: u64, sec: usize| -> &'static str {
        let (addrs, ms) = &anchors[&sec];
        let k = addrs.partition_point(|&a| a <= addr);
        if k >= 1 {
            ms[k - 1]
        } else if let Some(m) = ms.first() {
            m
        } else {
            TOOLCHAIN
        }
    };
    // a user's file may define a local of the same name as a linked member: the members come after
    // the user's objects in the link, so of the k locals of a name that j members define, the first
    // k - j are not the members'
    let mut count: Map<&str, usize> = Map::default();
    for (i, s) in img.syms.iter().enumerate() {
        if s.bind == "local" && !placed[i] {
            *count.entry(s.name).or_default() += 1;
        }
    }
    let mut seen: Map<&str, usize> = Map::default();
    let mut set: Vec<(usize, &'static str)> = Vec::new();
    let mut run: Option<&str> = None;
    let mut foreign = false;
    for i in 0..n {
        let s = &img.syms[i];
        if s.bind != "local" {
            continue;
        }
        if run != Some(s.file) {
            run = Some(s.file);
            foreign = s.file == TOOLCHAIN || s.file == "crtstuff.c" || s.file.is_empty();
        }
        if placed[i] {
            continue;
        }
        let mut own = local_of(s.name);
        let k = seen.entry(s.name).or_default();
        *k += 1;
        if *k + own.len() <= count[s.name] {
            own.clear(); // a user's own local of a name a member also defines
        }
        if !foreign && ((plan && img.sections[s.sec].executable) || member[i].is_some() || !own.is_empty()) {
            foreign = true;
        }
        if foreign {
            let o = match (member[i], own.len()) {
                (Some(m), _) => m,
                (None, 1) => own[0],
                _ => member_near(s.addr, s.sec),
            };
            set.push((i, o));
        }
    }
    for (i, o) in set {
        img.syms[i].obj = o;
    }
    let mut set: Vec<(usize, &'static str)> = Vec::new();
    for i in 0..n {
        if placed[i] {
            continue;
        }
        if let Some(m) = member[i] {
            set.push((i, m));
            continue;
        }
        if img.syms[i].bind == "local" {
            continue;
        }
        let (sec, k) = pos[i];
        let lst = &by_sec[&sec];
        let before = (0..k).rev().map(|j| lst[j]).find(|&j| img.syms[j].bind == "local").map(|j| img.syms[j].obj);
        let after = (k + 1..lst.len()).map(|j| lst[j]).find(|&j| img.syms[j].bind == "local").map(|j| img.syms[j].obj);
        let o = match (before, after) {
            (Some(b), Some(a)) if b == a && !foreign_name(b) => b,
            _ => "",
        };
        set.push((i, o));
    }
    for (i, o) in set {
        img.syms[i].obj = o;
    }
}
