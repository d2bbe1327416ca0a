//! Same code: bytes compared, differing runs explained as address fields naming the same targets
//! (`explain`), and llvm-objdump's instruction view for what remains.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Child, Command, Stdio};

use crate::image::{same_target, Image, Map, Sym};
use crate::basics::Stop;

#[derive(Default)]
pub struct Stats {
    pub identical: u64,
    pub masked: u64,
    pub fields: u64,
    pub objdump: u64,
}

fn i32at(b: &[u8], s: usize, little: bool) -> i128 {
    crate::elf::i32at(b, s, little) as i128
}

fn u64at(b: &[u8], s: usize, little: bool) -> i128 {
    crate::elf::u64at(b, s, little) as i128
}

/// Some(true): same code; Some(false): differs; None: undecided (the instruction view decides).
pub fn explain(old: &Image, o: &Sym, new: &Image, n: &Sym, ob: &[u8], nb: &[u8], st: &mut Stats) -> Option<bool> {
    let dl: Vec<usize> = (0..ob.len()).filter(|&i| ob[i] != nb[i]).collect();
    if dl.is_empty() {
        st.identical += 1;
        return Some(true);
    }
    let len = ob.len() as i128;
    let code = crate::is(o.kind, "func") || old.sec(o).executable;
    let ends: &[i128] = if code { &[0, 1, 2, 4] } else { &[0] };
    let (lo, hi) = (old.lo as i128, old.hi as i128);
    let mut covered: i128 = 0;
    let mut fields = 0u64;
    let m64 = |v: i128| -> i128 { v & 0xFFFF_FFFF_FFFF_FFFF };
    for (pos0, &i) in dl.iter().enumerate() {
        let i = i as i128;
        if i < covered {
            continue;
        }
        let mut j = i;
        let mut pos = pos0;
        while pos + 1 < dl.len() && dl[pos + 1] as i128 == j + 1 && j - i < 3 {
            pos += 1;
            j += 1;
        }
        let mut hit: i128 = 0;
        for s in [i, i - 1, i - 2, i - 3] {
            if s < 0 || s + 4 > len || s + 3 < j {
                continue;
            }
            let ro = i32at(ob, s as usize, old.little);
            let rn = i32at(nb, s as usize, old.little);
            let (xo, xn) = (m64(ro), m64(rn));
            if lo <= xo && xo <= hi && same_target(old, xo, new, xn, false) {
                hit = s + 4;
                break;
            }
            for &k in ends {
                if s + 4 + k > len && code {
                    break;
                }
                if same_target(old, o.addr as i128 + s + 4 + k + ro, new, n.addr as i128 + s + 4 + k + rn, false) {
                    hit = s + 4;
                    break;
                }
            }
            if hit == 0 && !(lo <= xo && xo <= hi) && same_target(old, xo, new, xn, false) {
                hit = s + 4;
            }
            if hit != 0 {
                break;
            }
        }
        if hit == 0 {
            let mut s = i;
            while s > i - 8 {
                if s >= 0 && s + 8 <= len {
                    let a = u64at(ob, s as usize, old.little);
                    let b = u64at(nb, s as usize, old.little);
                    if same_target(old, a, new, b, false) {
                        hit = s + 8;
                        break;
                    }
                }
                s -= 1;
            }
        }
        if hit == 0 {
            return if code { None } else { Some(false) };
        }
        covered = hit;
        fields += 1;
    }
    st.masked += 1;
    st.fields += fields;
    Some(true)
}

// -- the instruction view ---------------------------------------------------------------------

pub struct Objdump {
    child: Option<Child>,
    rsp: String,
}

impl Drop for Objdump {
    /// Whatever happened: llvm-objdump stopped, its response file removed.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.rsp);
    }
}

/// One argument as a response-file entry llvm-objdump reads back as that
/// argument (a backslash makes the next character literal): a name with a space or a quote stays
/// one argument, and ` @file` in it is no response file to read.
pub fn rsp_quote(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len() + 16);
    for c in arg.chars() {
        if !(c.is_ascii_alphanumeric() || "_.,=$-".contains(c) || !c.is_ascii()) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A path as llvm-objdump's operand, never an option or a response file.
pub fn file_arg(path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("./{path}")
    }
}

/// Start ONE llvm-objdump over the given functions (and any label inside them).
pub fn objdump(img: &Image, syms: &[&Sym], tool: &str) -> Result<Objdump, Stop> {
    let mut ranges: Vec<(u64, u64)> = syms.iter().map(|s| (s.addr, s.addr + s.size)).collect();
    ranges.sort();
    let starts: Vec<u64> = ranges.iter().map(|r| r.0).collect();
    let mut names: BTreeSet<&str> = syms.iter().map(|s| s.name).collect();
    for s in &img.syms {
        let i = starts.partition_point(|&a| a <= s.addr);
        if i >= 1 && s.addr < ranges[i - 1].1 {
            names.insert(s.name);
        }
    }
    let rsp = format!("{}/layoutbench-symdiff-{}-{}.rsp", std::env::temp_dir().display(), std::process::id(),
                      img.path.len() ^ (img as *const Image as usize));
    // a new file (not one someone placed there), removed when the Objdump is dropped
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&rsp)
        .map_err(|e| Stop::Error(format!("cannot write llvm-objdump's response file {rsp} ({e}); check {}", std::env::temp_dir().display())))?;
    let mut p = Objdump { child: None, rsp };
    let list: Vec<&str> = names.into_iter().collect();
    writeln!(f, "{}", rsp_quote(&format!("--disassemble-symbols={}", list.join(",")))).map_err(|e| Stop::Error(format!("cannot write llvm-objdump's response file ({e})")))?;
    drop(f);
    let child = Command::new(tool)
        .args(["-d", "--no-show-raw-insn", &format!("@{}", p.rsp), &file_arg(&img.path)])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    match child {
        Ok(child) => {
            p.child = Some(child);
            Ok(p)
        }
        Err(e) => Err(Stop::Error(format!("cannot run {tool} ({e}); install Debian's llvm-19 (./setup.sh does)"))),
    }
}

pub type Insns = Map<u64, Vec<(String, Vec<i128>)>>;

fn hex_at(b: &[u8], i: usize) -> Option<(usize, bool, &[u8])> {
    // -?0x[0-9a-f]+ starting at i: (end, negative, digits)
    let mut p = i;
    let neg = b.get(p) == Some(&b'-');
    if neg {
        p += 1;
    }
    if b.get(p) != Some(&b'0') || b.get(p + 1) != Some(&b'x') {
        return None;
    }
    let d0 = p + 2;
    let mut e = d0;
    while e < b.len() && matches!(b[e], b'0'..=b'9' | b'a'..=b'f') {
        e += 1;
    }
    if e == d0 {
        return None;
    }
    Some((e, neg, &b[d0..e]))
}

fn hexval(neg: bool, d: &[u8]) -> u64 {
    // int(text, 16) & MASK64: only the low 64 bits matter, so wrapping arithmetic is exact
    let mut v: u64 = 0;
    for &c in d {
        let x = if c.is_ascii_digit() { c - b'0' } else { c - b'a' + 10 } as u64;
        v = v.wrapping_mul(16).wrapping_add(x);
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

fn strip_annot(s: &str) -> String {
    // re.sub(r"\s*<[^>]*>", "", s)
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_whitespace() || matches!(b[j], 0x0b | 0x1c..=0x1f)) {
            j += 1;
        }
        if j < b.len() && b[j] == b'<' {
            if let Some(k) = b[j + 1..].iter().position(|&c| c == b'>') {
                i = j + 1 + k + 1;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Each function's instructions (by address) as (text with addresses taken out, [addresses]).
pub fn instructions(img: &Image, syms: &[&Sym], p: Objdump) -> Result<Insns, Stop> {
    let mut p = p;
    let out = p.child.take().unwrap().wait_with_output().map_err(|e| Stop::Error(format!("llvm-objdump on {}: {e}", img.path)));
    crate::mark("llvm-objdump exited");
    drop(p);
    let out = out?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().map(str::trim).find(|l| !l.is_empty()).map_or_else(|| format!("{}", out.status), str::to_string);
        return Err(Stop::Error(format!("llvm-objdump failed on {}: {first}", img.path)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ranges: Vec<(u64, u64)> = syms.iter().map(|s| (s.addr, s.addr + s.size)).collect();
    ranges.sort();
    let starts: Vec<u64> = ranges.iter().map(|r| r.0).collect();
    let mut res: Insns = Map::default();
    for r in &ranges {
        res.insert(r.0, Vec::new());
    }
    let mut lines: Vec<(u64, &str)> = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let t = line.trim_start();
        let hexlen = t.bytes().take_while(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')).count();
        if hexlen == 0 || t.as_bytes().get(hexlen) != Some(&b':') {
            continue;
        }
        if hexlen > 16 {
            continue; // not an address of a 64-bit image
        }
        let a = u64::from_str_radix(&t[..hexlen], 16).unwrap();
        lines.push((a, t[hexlen + 1..].trim_start()));
    }
    for (j, &(addr, body)) in lines.iter().enumerate() {
        let i = starts.partition_point(|&a| a <= addr);
        if i == 0 || addr >= ranges[i - 1].1 {
            continue;
        }
        let i = i - 1;
        let nxt = if j + 1 < lines.len() && lines[j + 1].0 > addr { lines[j + 1].0.min(ranges[i].1) } else { ranges[i].1 };
        let ins = strip_annot(body.split('#').next().unwrap());
        let ins = ins.trim();
        let mut addrs: Vec<i128> = Vec::new();
        // _RIP: -?0x[0-9a-f]+\(%rip\) → "@(%rip)"
        let b = ins.as_bytes();
        let mut s1: Vec<u8> = Vec::with_capacity(b.len());
        let mut k = 0;
        while k < b.len() {
            if let Some((e, neg, d)) = hex_at(b, k) {
                if b[e..].starts_with(b"(%rip)") {
                    addrs.push(nxt.wrapping_add(hexval(neg, d)) as i128);
                    s1.extend_from_slice(b"@(%rip)");
                    k = e + 6;
                    continue;
                }
            }
            s1.push(b[k]);
            k += 1;
        }
        // _HEX: -?0x[0-9a-f]+ → "@" when it is an address in the image
        let mut s2: Vec<u8> = Vec::with_capacity(s1.len());
        let mut k = 0;
        while k < s1.len() {
            if let Some((e, neg, d)) = hex_at(&s1, k) {
                let v = hexval(neg, d) as i128;
                if img.resolve(v).is_none() {
                    s2.extend_from_slice(&s1[k..e]);
                } else {
                    addrs.push(v);
                    s2.push(b'@');
                }
                k = e;
                continue;
            }
            s2.push(s1[k]);
            k += 1;
        }
        res.get_mut(&starts[i]).unwrap().push((String::from_utf8(s2).unwrap_or_default(), addrs));
    }
    Ok(res)
}

pub fn same_instructions(old: &Image, a: Option<&Vec<(String, Vec<i128>)>>, new: &Image,
                         b: Option<&Vec<(String, Vec<i128>)>>) -> bool {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        _ => return false,
    };
    if a.is_empty() || a.len() != b.len() {
        return false;
    }
    for ((ta, xa), (tb, xb)) in a.iter().zip(b) {
        if ta != tb || xa.len() != xb.len() {
            return false;
        }
        if !xa.iter().zip(xb).all(|(&x, &y)| x == y || same_target(old, x, new, y, true)) {
            return false;
        }
    }
    true
}
