//! `layoutbench symdiff OLD NEW --json` for two ELF files: the diff's one implementation (the
//! docstring of the Python package layoutbench/symdiff explains the algorithm).  It prints JSON
//! only: the text is rendered by the Python front end from this JSON
//! (layoutbench/symdiff/render.py), which runs this program for it.  An error is one line
//! (`layoutbench: error: ...`, exit 2); a file it cannot diff as a file (not ELF, cut short,
//! corrupt, no symbol table, another machine, or a panic while reading it) is worded by the front
//! end with the package's ELF reader: this program runs `$LAYOUTBENCH_PYTHON -m layoutbench.cli
//! symdiff ...` in its place before printing anything, or exits 125 when no LAYOUTBENCH_PYTHON is
//! set.  A plan.json it cannot read, or objects it cannot find, are a note.

mod archives;
mod basics;
mod elf;
mod image;
mod json;
mod plan;
mod planfile;
mod samecode;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use image::{Image, Keys, Map, Set, Sym, PAGE};
use basics::Stop;
use planfile::Plan;
use samecode::Stats;

const STATUSES: [&str; 6] = ["unchanged", "moved", "changed", "resized", "added", "removed"];
/// OLD or NEW cannot be diffed as a file: the front end words the error (basics::Stop::Files)
const FILES_EXIT: i32 = 125;
static START: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);

fn elapsed() -> std::time::Duration {
    START.lock().unwrap().get_or_insert_with(std::time::Instant::now).elapsed()
}

pub fn mark(what: &str) {
    if trace() {
        eprintln!("layoutbench-symdiff: {what} at {:?}", elapsed());
    }
}

fn trace() -> bool {
    std::env::var("LAYOUTBENCH_NATIVE_TRACE").map_or(false, |v| !v.is_empty() && v != "0")
}

/// Stop without a diff: an error is one line (exit 2); a file that cannot be diffed is worded by the
/// front end (`python -m layoutbench.cli`, run in this process's place when it ran this one: exit
/// 125 otherwise).
fn stop(why: Stop, args: &[String]) -> ! {
    match why {
        Stop::Error(line) => {
            eprintln!("layoutbench: error: {line}");
            std::process::exit(2);
        }
        Stop::Files(reason) => {
            if trace() {
                eprintln!("layoutbench-symdiff: the front end words it: {reason}");
            }
            if let Ok(py) = std::env::var("LAYOUTBENCH_PYTHON") {
                if !py.is_empty() {
                    let err = std::process::Command::new(&py)
                        .args(["-m", "layoutbench.cli", "symdiff"])
                        .args(args)
                        .env("LAYOUTBENCH_NATIVE_EXEC", "0")
                        .exec();
                    eprintln!("layoutbench: error: cannot run {py}: {err}");
                    std::process::exit(2);
                }
            }
            eprintln!("layoutbench-symdiff: {reason}");
            std::process::exit(FILES_EXIT);
        }
    }
}

fn root() -> PathBuf {
    if let Ok(r) = std::env::var("LAYOUTBENCH_ROOT") {
        if !r.is_empty() {
            return PathBuf::from(r);
        }
    }
    // ROOT/native/symdiff/target/release/layoutbench-symdiff
    let exe = std::env::current_exe().unwrap_or_default();
    exe.ancestors().nth(5).map(Path::to_path_buf).unwrap_or_default()
}

fn load_side(side: &str, root: &Path, which: usize) -> Result<Image, Stop> {
    let mut img = image::read_image(side).map_err(|e| Stop::Files(format!("{side}: {e}")))?;
    img.side = which;
    mark(&format!("{which} image read"));
    let p = Path::new(side);
    let plan_path = p.parent().unwrap_or(Path::new("")).join("plan.json");
    let mut objects = None;
    let mut starts = None;
    if plan_path.is_file() {
        let read = std::fs::read(&plan_path).map_err(|e| e.to_string()).and_then(|b| {
            String::from_utf8(b).map_err(|_| "not UTF-8".to_string()).and_then(|t| Plan::parse(basics::leak(t)))
        });
        match read {
            Ok(plan) => {
                mark(&format!("{which} plan parsed"));
                starts = plan::recorded(p, &plan.plan_id_text(), &img.markers);
                if starts.is_none() {
                    objects = plan::find_objects(side, &plan, root, which == 1);
                    mark(&format!("{which} objects read"));
                } else {
                    mark(&format!("{which} units recorded beside it"));
                }
                img.plan = Some(plan);
            }
            Err(e) => img.notes.push(format!("{}: unreadable plan ({e}); objects from STT_FILE symbols", plan_path.display())),
        }
    }
    plan::map_objects(&mut img, objects.as_ref(), starts);
    mark(&format!("{which} mapped"));
    Ok(img)
}

pub struct Row {
    name: &'static str,
    object: &'static str,
    kind: &'static str,
    status: &'static str,
    old_addr: Option<u64>,
    new_addr: Option<u64>,
    old_size: Option<u64>,
    new_size: Option<u64>,
    section: &'static str,
}

pub struct Origin {
    section: &'static str,
    address: u64,
    symbol: &'static str,
    object: &'static str,
    cause: &'static str,
    responsible: String,
    detail: String,
}

pub struct Prop {
    section: &'static str,
    moved: usize,
    stayed: usize,
    first: u64,
    last: u64,
    to_end: bool,
    absorbed_at: Option<&'static str>,
}

pub struct ObjDiff {
    object: &'static str,
    counts: [u64; 6],
    deltas: BTreeMap<i128, u64>,
    delta_order: Vec<i128>, //: the shifts in the order first seen (the text's ties)
}

pub struct Result_ {
    counts: [u64; 6],
    moved_by: BTreeMap<i128, u64>,
    text_moved_by: BTreeMap<i128, u64>,
    page_quantized: bool,
    origins: Vec<Origin>,
    prop: Option<Prop>,
    text_bytes: u64,
    text_unchanged_bytes: u64,
    text_functions: u64,
    text_unchanged_functions: u64,
    objects: Vec<ObjDiff>,
    rows: Vec<Row>,
    st: Stats,
    notes: Vec<String>,
    mapping: &'static str,
}

fn sidx(s: &str) -> usize {
    STATUSES.iter().position(|&x| is(s, x)).unwrap()
}

/// a == b for the program's own constant strings (statuses, kinds, section names of one image),
/// which mostly are the same pointer: a length and a pointer compared before any bytes.
#[inline]
pub fn is(a: &str, b: &str) -> bool {
    a.len() == b.len() && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || a == b)
}

/// The diff of two sides: each symbol's class, the rows, the counts, the shift origins.
fn diff(old: &mut Image, new: &mut Image, objdump_tool: &str) -> Result<Result_, Stop> {
    let plan_mode = old.mapping == "plan" && new.mapping == "plan";
    let mut keys = Keys::default();
    plan::assign_keys(old, plan_mode, &mut keys);
    if !plan::copy_keys(old, new, plan_mode, &mut keys) {
        plan::assign_keys(new, plan_mode, &mut keys);
    }
    old.set_twins(new);
    mark("keys");
    let (old, new) = (&*old, &*new);
    let mut st = Stats::default();
    let mut status: Vec<(u32, &'static str)> = Vec::new();
    let mut pending: Vec<(usize, usize)> = Vec::new();
    enum Dec {
        Is(&'static str),
        Same(Option<bool>),
        Explain(usize),
    }
    let mut decs: Vec<(usize, usize, Dec)> = Vec::with_capacity(old.syms.len());
    let mut work: Vec<(usize, usize)> = Vec::new();
    for (oi, o) in old.syms.iter().enumerate() {
        let ni = match new.by_key.get(&o.key) {
            Some(&ni) => ni,
            None => {
                decs.push((oi, 0, Dec::Is("removed")));
                continue;
            }
        };
        let n = &new.syms[ni];
        if o.size != n.size {
            decs.push((oi, ni, Dec::Is("resized")));
            continue;
        }
        let (os, ns) = (old.sec(o), new.sec(n));
        if o.size != 0 && !os.nobits && !ns.nobits {
            if old.in_file(o) && new.in_file(n) {
                decs.push((oi, ni, Dec::Explain(work.len())));
                work.push((oi, ni));
            } else {
                // bytes cut short by the end of the file: the same only when what is there is identical
                let (a, b) = (old.bytes_cut_short(o), new.bytes_cut_short(n));
                decs.push((oi, ni, Dec::Same(Some(a.is_some() && a == b))));
            }
        } else if o.size != 0 && os.nobits != ns.nobits {
            decs.push((oi, ni, Dec::Same(Some(false))));
        } else {
            decs.push((oi, ni, Dec::Same(Some(true))));
        }
    }
    // the same-size pairs with bytes, compared in two halves (by bytes) on two threads
    let explain = |part: &[(usize, usize)]| {
        let mut st = Stats::default();
        let out: Vec<Option<bool>> = part
            .iter()
            .map(|&(oi, ni)| {
                let (o, n) = (&old.syms[oi], &new.syms[ni]);
                samecode::explain(old, o, new, n, old.bytes_of(o).unwrap(), new.bytes_of(n).unwrap(), &mut st)
            })
            .collect();
        (out, st)
    };
    let total: u64 = work.iter().map(|&(oi, _)| old.syms[oi].size).sum();
    let mut half = 0;
    let mut acc = 0u64;
    while half < work.len() && acc < total / 2 {
        acc += old.syms[work[half].0].size;
        half += 1;
    }
    let ((mut same, s1), (same2, s2)) = std::thread::scope(|sc| {
        let h = sc.spawn(|| explain(&work[half..]));
        let a = explain(&work[..half]);
        (a, h.join().unwrap())
    });
    same.extend(same2);
    for s in [s1, s2] {
        st.identical += s.identical;
        st.masked += s.masked;
        st.fields += s.fields;
    }
    for (oi, ni, d) in decs {
        let o = &old.syms[oi];
        let verdict = match d {
            Dec::Is(s) => {
                status.push((o.key, s));
                continue;
            }
            Dec::Same(v) => v,
            Dec::Explain(i) => same[i],
        };
        let n = &new.syms[ni];
        match verdict {
            None => pending.push((oi, ni)),
            Some(s) => status.push((o.key, if s { if o.addr == n.addr { "unchanged" } else { "moved" } } else { "changed" })),
        }
    }
    for n in &new.syms {
        if !old.by_key.contains_key(&n.key) {
            status.push((n.key, "added"));
        }
    }
    if trace() {
        eprintln!("layoutbench-symdiff: bytes compared and explained at {:?}, {} left for llvm-objdump",
                  elapsed(), pending.len());
    }
    if !pending.is_empty() {
        let po: Vec<&Sym> = pending.iter().map(|&(o, _)| &old.syms[o]).collect();
        let pn: Vec<&Sym> = pending.iter().map(|&(_, n)| &new.syms[n]).collect();
        let a = samecode::objdump(old, &po, objdump_tool)?;
        let b = samecode::objdump(new, &pn, objdump_tool)?;
        // both outputs read at once (a pipe not read stops its llvm-objdump)
        let (ti, tn) = std::thread::scope(|sc| {
            let h = sc.spawn(|| samecode::instructions(old, &po, a));
            let tn = samecode::instructions(new, &pn, b);
            (h.join().unwrap(), tn)
        });
        let (ti, tn) = (ti?, tn?);
        if trace() {
            eprintln!("layoutbench-symdiff: llvm-objdump done at {:?}", elapsed());
        }
        for (o, n) in po.iter().zip(&pn) {
            st.objdump += 1;
            let same = samecode::same_instructions(old, ti.get(&o.addr), new, tn.get(&n.addr));
            status.push((o.key, if same { if o.addr == n.addr { "unchanged" } else { "moved" } } else { "changed" }));
        }
    }
    let stat_of: Map<u32, &'static str> = status.iter().cloned().collect();
    mark("classified");

    let mut rows: Vec<Row> = Vec::with_capacity(status.len()); // sorted below
    for &(k, s) in &status {
        let o = old.by_key.get(&k).map(|&i| &old.syms[i]);
        let n = new.by_key.get(&k).map(|&i| &new.syms[i]);
        let (rimg, r) = if let Some(n) = n { (new, n) } else { (old, o.unwrap()) };
        let object = if !r.obj.is_empty() { r.obj } else { o.map_or("", |o| o.obj) };
        rows.push(Row {
            name: r.name,
            object,
            kind: r.kind,
            status: s,
            old_addr: o.map(|o| o.addr),
            new_addr: n.map(|n| n.addr),
            old_size: o.map(|o| o.size),
            new_size: n.map(|n| n.size),
            section: rimg.sec(r).name,
        });
    }
    // a stable sort by (address, name), of small keys (moving whole rows costs more than comparing)
    let mut order: Vec<(u64, &'static str, u32)> =
        rows.iter().enumerate().map(|(i, r)| (r.new_addr.or(r.old_addr).unwrap(), r.name, i as u32)).collect();
    order.sort_unstable();
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    let rows: Vec<Row> = order.iter().map(|&(_, _, i)| slots[i as usize].take().unwrap()).collect();
    let mut counts = [0u64; 6];
    let mut moved_by: BTreeMap<i128, u64> = BTreeMap::new();
    let mut per_obj: Vec<ObjDiff> = Vec::new();
    let mut obj_at: Map<&str, usize> = Map::default();
    let mut first_addr: Map<&str, u64> = Map::default();
    let mut last: (*const u8, usize, usize) = (std::ptr::null(), usize::MAX, 0);
    for r in &rows {
        let si = sidx(r.status);
        counts[si] += 1;
        // rows of one object mostly follow each other: the same string, no hashing
        let at = if last.0 == r.object.as_ptr() && last.1 == r.object.len() {
            last.2
        } else {
            let key = if r.object.is_empty() { "(global)" } else { r.object };
            first_addr.entry(key).or_insert(r.new_addr.or(r.old_addr).unwrap());
            *obj_at.entry(r.object).or_insert_with(|| {
                per_obj.push(ObjDiff { object: key, counts: [0; 6], deltas: BTreeMap::new(), delta_order: Vec::new() });
                per_obj.len() - 1
            })
        };
        last = (r.object.as_ptr(), r.object.len(), at);
        per_obj[at].counts[si] += 1;
        if is(r.status, "moved") {
            let d = r.new_addr.unwrap() as i128 - r.old_addr.unwrap() as i128;
            *moved_by.entry(d).or_default() += 1;
            let od = &mut per_obj[at];
            let e = od.deltas.entry(d).or_default();
            if *e == 0 {
                od.delta_order.push(d);
            }
            *e += 1;
        }
    }
    per_obj.sort_by_key(|d| first_addr.get(d.object).copied().unwrap_or(0));
    mark("rows");

    let exec_new: Vec<&str> = new.sections.iter().filter(|s| s.executable).map(|s| s.name).collect();
    let mut text_moved: BTreeMap<i128, u64> = BTreeMap::new();
    let (mut tb, mut tub, mut tf, mut tuf) = (0u64, 0u64, 0u64, 0u64);
    for r in &rows {
        let ex = exec_new.iter().any(|&x| is(x, r.section));
        if is(r.kind, "func") && r.new_addr.is_some() && ex {
            tf += 1;
            tb = tb.saturating_add(r.new_size.unwrap_or(0));
            if is(r.status, "unchanged") {
                tuf += 1;
                tub = tub.saturating_add(r.new_size.unwrap_or(0));
            }
        }
        if is(r.status, "moved") && ex {
            *text_moved.entry(r.new_addr.unwrap() as i128 - r.old_addr.unwrap() as i128).or_default() += 1;
        }
    }
    let (origins, prop) = origins(old, new, &status, &stat_of);
    mark("origins");
    let mut notes: Vec<String> = old.notes.iter().chain(&new.notes).cloned().collect();
    if old.mapping != new.mapping {
        notes.push("objects from the plan on one side only: symbols matched by STT_FILE on both".into());
    }
    Ok(Result_ {
        counts,
        page_quantized: !text_moved.is_empty() && text_moved.keys().all(|d| d % PAGE == 0),
        moved_by,
        text_moved_by: text_moved,
        origins,
        prop,
        text_bytes: tb,
        text_unchanged_bytes: tub,
        text_functions: tf,
        text_unchanged_functions: tuf,
        objects: per_obj,
        rows,
        st,
        notes,
        mapping: if plan_mode { "plan" } else { "file" },
    })
}

fn kind_of(section: &str) -> Option<&'static str> {
    planfile::KINDS.into_iter().find(|k| section == format!(".{k}") || section.starts_with(&format!(".{k}.")))
}

/// How the two plans place `obj` in `section` differently (order, alignment, gap), if they do.
fn layout_cause(old: &Image, new: &Image, section: &str, obj: &str) -> Option<String> {
    let (op, np) = (old.plan.as_ref()?, new.plan.as_ref()?);
    let kind = kind_of(section);
    let what = if op.layout != np.layout || op.seed != np.seed {
        format!("layout {}:{} -> {}:{}", op.layout, op.seed, np.layout, np.seed)
    } else {
        "plan".to_string()
    };
    let unit = |p: &Plan| {
        let units = p.group(kind?)?;
        let i = units.iter().position(|u| u.object == obj)?;
        Some((units[i].clone(), if i > 0 { Some(units[i - 1].object) } else { None }))
    };
    let (ua, pa) = unit(op)?;
    let (ub, pb) = unit(np)?;
    if ua.align != ub.align {
        return Some(format!("{what}: {obj} aligned to {} (was {})", ub.align, ua.align));
    }
    if ua.gap != ub.gap {
        return Some(format!("{what}: gap before {obj} is {} bytes (was {})", ub.gap, ua.gap));
    }
    if pa != pb {
        let now = match pb.filter(|s| !s.is_empty()) {
            Some(b) => format!("now follows {b}"),
            None => "is now first in its section".to_string(),
        };
        let was = match pa.filter(|s| !s.is_empty()) {
            Some(a) => format!("was after {a}"),
            None => "was first in its section".to_string(),
        };
        return Some(format!("{what}: {obj} {now} ({was})"));
    }
    let k = kind.unwrap();
    if op.group(k) != np.group(k) {
        return Some(format!("{what}: the {k} units before {obj} differ"));
    }
    None
}

/// Per output section, the lowest address where placement differs and its cause; and how far the
/// shift that starts .text's propagates.
fn origins(old: &Image, new: &Image, status: &[(u32, &'static str)], stat_of: &Map<u32, &'static str>)
           -> (Vec<Origin>, Option<Prop>) {
    let oget = |k: u32| old.by_key.get(&k).map(|&i| &old.syms[i]);
    let nget = |k: u32| new.by_key.get(&k).map(|&i| &new.syms[i]);
    type Cand<'a> = (u64, &'static str, Option<&'a Sym>, Option<&'a Sym>);
    let mut cands: Vec<(&'static str, Vec<Cand>)> = Vec::new();
    let mut cat: Map<&'static str, usize> = Map::default();
    fn push<'a>(sec: &'static str, c: Cand<'a>, cands: &mut Vec<(&'static str, Vec<Cand<'a>>)>, cat: &mut Map<&'static str, usize>) {
        let i = *cat.entry(sec).or_insert_with(|| {
            cands.push((sec, Vec::new()));
            cands.len() - 1
        });
        cands[i].1.push(c);
    }
    for &(k, s) in status {
        let (o, n) = (oget(k), nget(k));
        if s == "added" {
            let n = n.unwrap();
            push(new.sec(n).name, (n.addr, s, None, Some(n)), &mut cands, &mut cat);
        } else if s == "removed" {
            let o = o.unwrap();
            push(old.sec(o).name, (o.addr, s, Some(o), None), &mut cands, &mut cat);
        } else {
            let (o, n) = (o.unwrap(), n.unwrap());
            if o.addr != n.addr {
                push(new.sec(n).name, (o.addr.min(n.addr), s, Some(o), Some(n)), &mut cands, &mut cat);
            }
        }
    }
    // {s.obj for s in old.syms} (and new): asked only for added and removed symbols
    let has_obj = |img: &Image, obj: &str| img.syms.iter().any(|s| s.obj == obj);
    let exec: Set<&str> =
        new.sections.iter().chain(&old.sections).filter(|s| s.executable).map(|s| s.name).collect();
    let rank = |s: &str| match s {
        "added" => 0,
        "removed" => 1,
        _ => 2,
    };
    let mut out = Vec::new();
    for (sec, lst) in &cands {
        let mut best = &lst[0];
        for c in &lst[1..] {
            if (c.0, rank(c.1)) < (best.0, rank(best.1)) {
                best = c;
            }
        }
        let &(addr, s, o, n) = best;
        let (rimg, r) = if let Some(n) = n { (new, n) } else { (old, o.unwrap()) };
        let _ = rimg;
        let obj = r.obj;
        let (cause, resp, detail): (&'static str, String, String);
        let named = |obj: &str, name: &str| if obj.is_empty() { name.to_string() } else { format!("{obj}:{name}") };
        if s == "added" {
            if !obj.is_empty() && !has_obj(old, obj) {
                let size: u64 = new.syms.iter().filter(|x| x.obj == obj && new.sec(x).name == *sec).map(|x| x.size).sum();
                cause = "added-object";
                resp = obj.to_string();
                detail = format!("object {obj} is new ({size} bytes of symbols in {sec})");
            } else {
                cause = "added-symbol";
                resp = named(obj, r.name);
                detail = format!("new {} {} ({} bytes)", r.kind, r.name, r.size);
            }
        } else if s == "removed" {
            if !obj.is_empty() && !has_obj(new, obj) {
                cause = "removed-object";
                resp = obj.to_string();
                detail = format!("object {obj} is gone");
            } else {
                cause = "removed-symbol";
                resp = named(obj, r.name);
                detail = format!("{} {} ({} bytes) is gone", r.kind, r.name, r.size);
            }
        } else {
            let o = o.unwrap();
            let oname = old.sec(o).name;
            let same: Vec<bool> = old.sections.iter().map(|x| x.name == oname).collect();
            // the sized symbols of that section by address (a stable sort): the last one below
            // addr (the last in symbol-table order among equals), and the lowest address
            let mut prev: Option<&Sym> = None;
            let mut first: Option<u64> = None;
            for x in old.syms.iter().filter(|x| x.size != 0 && same[x.sec]) {
                first = Some(first.map_or(x.addr, |f| f.min(x.addr)));
                if x.addr < addr && prev.map_or(true, |p| x.addr >= p.addr) {
                    prev = Some(x);
                }
            }
            let ps = prev.and_then(|p| stat_of.get(&p.key).copied());
            let layout = layout_cause(old, new, sec, obj);
            let osec = old.sections.iter().find(|x| x.name == *sec);
            let nsec = new.sections.iter().find(|x| x.name == *sec);
            let ref_or = if obj.is_empty() { r.name.to_string() } else { obj.to_string() };
            match (osec, nsec) {
                (Some(os), Some(ns)) if os.addr != ns.addr && first.map_or(true, |f| addr <= f) => {
                    cause = "section";
                    resp = sec.to_string();
                    detail = format!("{sec} starts at {:#x} (was {:#x}): what is placed before it changed size", ns.addr, os.addr);
                }
                _ if ps == Some("resized") => {
                    let prev = prev.unwrap();
                    let pn = nget(prev.key).unwrap();
                    let grew = pn.size as i128 - prev.size as i128;
                    cause = "resized";
                    resp = named(prev.obj, prev.name);
                    detail = format!("{} {} by {} bytes ({} -> {})", prev.name, if grew > 0 { "grew" } else { "shrank" },
                                     grew.abs(), prev.size, pn.size);
                }
                _ if layout.is_some() => {
                    cause = "layout";
                    resp = ref_or;
                    detail = layout.unwrap();
                }
                _ => {
                    cause = "padding";
                    resp = ref_or;
                    detail = format!("the bytes before {} changed (alignment, padding or unlabelled code/data)", r.name);
                }
            }
        }
        out.push(Origin { section: sec, address: addr, symbol: r.name, object: obj, cause, responsible: resp, detail });
    }
    // the sections' rank: .text (and .text.*) first, then other code, then data
    out.sort_by_key(|g| {
        let rank = if g.section == ".text" || g.section.starts_with(".text.") {
            0
        } else if exec.contains(g.section) {
            1
        } else {
            2
        };
        (rank, g.address)
    });
    let mut prop = None;
    if let Some(g) = out.first() {
        let mut matched: Vec<(&Sym, &Sym)> = Vec::new();
        for &(k, s) in status {
            if s != "added" && s != "removed" {
                let n = nget(k).unwrap();
                let o = oget(k).unwrap();
                if new.sec(n).name == g.section && (n.addr >= g.address || o.addr >= g.address) {
                    matched.push((o, n));
                }
            }
        }
        // by old address (a stable sort): the first moved pair, the first pair after it that stayed
        let moved = matched.iter().filter(|(o, n)| o.addr != n.addr).count();
        let stayed = matched.len() - moved;
        let mut m0: Option<u64> = None;
        for (o, n) in &matched {
            if o.addr != n.addr && m0.map_or(true, |m| o.addr < m) {
                m0 = Some(o.addr);
            }
        }
        let mut absorbed: Option<&Sym> = None;
        if let Some(m0) = m0 {
            for (o, n) in &matched {
                if o.addr == n.addr && o.addr > m0 && absorbed.map_or(true, |a| o.addr < a.addr) {
                    absorbed = Some(o);
                }
            }
        }
        let absorbed = absorbed.map(|o| o.name);
        prop = Some(Prop {
            section: g.section,
            moved,
            stayed,
            first: g.address,
            last: matched.iter().filter(|(o, n)| o.addr != n.addr).map(|(_, n)| n.addr).max().unwrap_or(g.address),
            to_end: stayed == 0,
            absorbed_at: absorbed,
        });
    }
    (out, prop)
}

// -- JSON, as SymdiffResult.to_json prints it ---------------------------------------------------

fn q(o: &mut String, s: &str) {
    json::quote(o, s);
}

/// The decimal digits of v (what `write!(o, "{v}")` writes, without the formatting machinery:
/// a vmlinux diff writes ~100k numbers).
fn push_u64(o: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    o.push_str(std::str::from_utf8(&buf[i..]).unwrap());
}

/// The difference b - a of two u64 addresses (its magnitude fits a u64).
fn push_delta(o: &mut String, a: u64, b: u64) {
    if b < a {
        o.push('-');
    }
    push_u64(o, b.abs_diff(a));
}

fn opt_u(o: &mut String, v: Option<u64>) {
    match v {
        Some(v) => push_u64(o, v),
        None => o.push_str("null"),
    }
}

fn side_json(o: &mut String, img: &Image) {
    o.push_str("{\"path\": ");
    q(o, &img.path);
    o.push_str(", \"label\": ");
    q(o, &img.label);
    let _ = write!(o, ", \"symbols\": {}, \"mapping\": ", img.syms.len());
    q(o, img.mapping);
    o.push_str(", \"layout\": ");
    match &img.plan {
        Some(p) => {
            q(o, &format!("{}:{}", p.layout, p.seed));
            o.push_str(", \"plan_id\": ");
            q(o, &p.plan_id_text());
        }
        None => o.push_str("null, \"plan_id\": null"),
    }
    o.push('}');
}

fn by_json(o: &mut String, m: &BTreeMap<i128, u64>) {
    o.push('{');
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        let _ = write!(o, "\"{k}\": {v}");
    }
    o.push('}');
}

fn origin_json(o: &mut String, g: &Origin) {
    o.push_str("{\"section\": ");
    q(o, &g.section);
    let _ = write!(o, ", \"address\": {}, \"symbol\": ", g.address);
    q(o, &g.symbol);
    o.push_str(", \"object\": ");
    q(o, &g.object);
    o.push_str(", \"cause\": ");
    q(o, g.cause);
    o.push_str(", \"responsible\": ");
    q(o, &g.responsible);
    o.push_str(", \"detail\": ");
    q(o, &g.detail);
    o.push('}');
}

/// The diff as `SymdiffResult.to_json()` prints it; without `symbols` its list of symbols is empty
/// (`--no-symbols`: what the front end renders its summary and per-object table from).
fn to_json(r: &Result_, old: &Image, new: &Image, symbols: bool) -> String {
    let mut o = String::with_capacity(256 * r.rows.len() + 4096);
    o.push_str("{\"old\": ");
    side_json(&mut o, old);
    o.push_str(", \"new\": ");
    side_json(&mut o, new);
    o.push_str(", \"mapping\": ");
    q(&mut o, r.mapping);
    let identical = r.counts[1] + r.counts[3] + r.counts[4] + r.counts[5] == 0;
    let _ = write!(o, ", \"placement_identical\": {}, \"counts\": {{", identical);
    for (i, k) in STATUSES.iter().enumerate() {
        let _ = write!(o, "{}\"{}\": {}", if i > 0 { ", " } else { "" }, k, r.counts[i]);
    }
    let _ = write!(o, "}}, \"moved\": {{\"symbols\": {}, \"by\": ", r.counts[1]);
    by_json(&mut o, &r.moved_by);
    let mm = |v: Option<&i128>| v.map_or("null".to_string(), |v| v.to_string());
    let _ = write!(o, ", \"min\": {}, \"max\": {}, \"text_by\": ", mm(r.moved_by.keys().next()), mm(r.moved_by.keys().last()));
    by_json(&mut o, &r.text_moved_by);
    let _ = write!(o, ", \"text_whole_pages\": {}}}, \"shift_origin\": ", r.page_quantized);
    match r.origins.first() {
        Some(g) => origin_json(&mut o, g),
        None => o.push_str("null"),
    }
    o.push_str(", \"shift_origins\": [");
    for (i, g) in r.origins.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        origin_json(&mut o, g);
    }
    o.push_str("], \"propagation\": ");
    match &r.prop {
        Some(p) => {
            o.push_str("{\"section\": ");
            q(&mut o, &p.section);
            let _ = write!(o, ", \"moved\": {}, \"stayed\": {}, \"first\": {}, \"last\": {}, \"to_end\": {}, \"absorbed_at\": ",
                                p.moved, p.stayed, p.first, p.last, p.to_end);
            match &p.absorbed_at {
                Some(a) => q(&mut o, a),
                None => o.push_str("null"),
            }
            o.push('}');
        }
        None => o.push_str("null"),
    }
    let share = if r.text_bytes > 0 { r.text_unchanged_bytes as f64 / r.text_bytes as f64 } else { 1.0 };
    let _ = write!(o, ", \"text\": {{\"bytes\": {}, \"unchanged_bytes\": {}, \"unchanged_share\": {}, \"functions\": {}, \"unchanged_functions\": {}}}",
                        r.text_bytes, r.text_unchanged_bytes, json::float_repr(json::round6(share)), r.text_functions,
                        r.text_unchanged_functions);
    o.push_str(", \"objects\": [");
    for (i, d) in r.objects.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        o.push_str("{\"object\": ");
        q(&mut o, &d.object);
        let _ = write!(o, ", \"total\": {}", d.counts.iter().sum::<u64>());
        for (j, k) in STATUSES.iter().enumerate() {
            let _ = write!(o, ", \"{}\": {}", k, d.counts[j]);
        }
        o.push_str(", \"deltas\": ");
        by_json(&mut o, &d.deltas);
        o.push('}');
    }
    o.push_str("], \"symbols\": [");
    for (i, s) in r.rows.iter().enumerate().filter(|_| symbols) {
        if i > 0 {
            o.push_str(", ");
        }
        o.push_str("{\"name\": ");
        q(&mut o, &s.name);
        o.push_str(", \"object\": ");
        q(&mut o, &s.object);
        o.push_str(", \"kind\": ");
        q(&mut o, s.kind);
        o.push_str(", \"status\": ");
        q(&mut o, s.status);
        o.push_str(", \"old_addr\": ");
        opt_u(&mut o, s.old_addr);
        o.push_str(", \"new_addr\": ");
        opt_u(&mut o, s.new_addr);
        o.push_str(", \"old_size\": ");
        opt_u(&mut o, s.old_size);
        o.push_str(", \"new_size\": ");
        opt_u(&mut o, s.new_size);
        o.push_str(", \"section\": ");
        q(&mut o, &s.section);
        o.push_str(", \"delta\": ");
        match (s.old_addr, s.new_addr) {
            (Some(a), Some(b)) => push_delta(&mut o, a, b),
            _ => o.push_str("null"),
        }
        o.push('}');
    }
    let _ = write!(o, 
        "], \"compared\": {{\"identical_bytes\": {}, \"same_after_masking\": {}, \"address_fields\": {}, \"llvm_objdump\": {}}}, \"notes\": [",
        r.st.identical, r.st.masked, r.st.fields, r.st.objdump
    );
    for (i, n) in r.notes.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        q(&mut o, n);
    }
    o.push_str("]}\n");
    o
}

/// --own-only: both images without the symbols of the toolchain's archives and crt files (a static
/// program's C library), a note on the new side saying how many.  What is
/// left is looked up as if the image held nothing else (post_init: what an address names).
fn leave_the_toolchain_out(old: &mut Image, new: &mut Image) {
    let before = (old.syms.len(), new.syms.len());
    for img in [&mut *old, &mut *new] {
        img.syms.retain(|s| !archives::foreign_name(s.obj));
        img.post_init();
    }
    new.notes.push(format!(
        "--own-only: {} and {} symbol(s) of the toolchain's archives and crt files left out",
        before.0 - old.syms.len(),
        before.1 - new.syms.len()
    ));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut pos: Vec<&String> = Vec::new();
    let mut as_json = false;
    let mut symbols = true;
    let mut own_only = false;
    let mut options = true;
    for a in &args {
        if !options {
            pos.push(a);
        } else if a == "--" {
            options = false; // what follows is OLD and NEW, whatever they start with
        } else if a == "--json" {
            as_json = true;
        } else if a == "--no-symbols" {
            symbols = false;
        } else if a == "--own-only" {
            own_only = true;
        } else if a.starts_with('-') {
            stop(Stop::Error(format!("symdiff helper: no option {a}; run `layoutbench symdiff --help`")), &args);
        } else {
            pos.push(a);
        }
    }
    if pos.len() != 2 {
        stop(Stop::Error("symdiff helper: usage: --json [--no-symbols] [--own-only] [--] OLD NEW".into()), &args);
    }
    if !as_json {
        // the text is the front end's (layoutbench/symdiff/render.py), rendered from this JSON
        stop(Stop::Error("symdiff helper: it prints --json only (`layoutbench symdiff` renders the text)".into()), &args);
    }
    if !Path::new(pos[0]).is_file() || !Path::new(pos[1]).is_file() {
        stop(Stop::Files("OLD and NEW must be files".into()), &args);
    }
    if let (Some(a), Some(b)) = (elf::kind(pos[0]), elf::kind(pos[1])) {
        if a != b {
            // images of two machines or kinds (a .o beside an executable): the front end words it
            stop(Stop::Files("OLD and NEW are images of different machines or kinds".into()), &args);
        }
    }
    if trace() {
        eprintln!("layoutbench-symdiff: native");
    }
    let root = root();
    let run = || -> Result<(String, bool), Stop> {
        elapsed();
        let (a, b) = std::thread::scope(|sc| {
            let h = sc.spawn(|| load_side(pos[0], &root, 0));
            let b = load_side(pos[1], &root, 1);
            (h.join().unwrap(), b)
        });
        let (mut a, mut b) = (a?, b?);
        mark("both sides read");
        if own_only {
            leave_the_toolchain_out(&mut a, &mut b);
        }
        let r = diff(&mut a, &mut b, "llvm-objdump-19")?;
        mark("diff done");
        let identical = r.counts[1] + r.counts[3] + r.counts[4] + r.counts[5] == 0;
        let text = to_json(&r, &a, &b, symbols);
        mark("json");
        std::mem::forget((a, b, r)); // the process ends now: no point freeing
        Ok((text, identical))
    };
    // a panic is a bug here, or a file corrupt in a way nothing checked: the front end reads both
    // files with the package's ELF reader and says which (or that the helper failed, and where)
    static PANIC: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        let what = info.payload().downcast_ref::<&str>().map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned()).unwrap_or_default();
        *PANIC.lock().unwrap_or_else(|e| e.into_inner()) = format!("internal error{at}: {what}");
    }));
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(r) => r,
        Err(_) => Err(Stop::Files(PANIC.lock().unwrap_or_else(|e| e.into_inner()).clone())),
    };
    match result {
        Ok((text, identical)) => {
            let mut out = std::io::stdout().lock();
            let code = if identical { 0 } else { 1 };
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                // a reader that stopped reading is no error; a full disk is one line
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    std::process::exit(code);
                }
                if e.raw_os_error() == Some(28) {
                    eprintln!("layoutbench: error: No space left on device; free some space and run the same command again");
                } else {
                    eprintln!("layoutbench: error: cannot write the diff ({e})");
                }
                std::process::exit(2);
            }
            std::process::exit(code);
        }
        Err(why) => stop(why, &args),
    }
}
