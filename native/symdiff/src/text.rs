//! The diff as text, as symdiff/render.py prints it through rich on a console that is not a
//! terminal (160 columns, soft wrap): the summary lines, then the per-object table.  Whatever rich
//! would print differently from plain text is handed back: a line that is not printable ASCII,
//! an emoji code (":smile:", which rich replaces), a table wider than 160 columns.

use crate::image::{Image, PAGE};
use crate::{Result_, STATUSES};

extern "C" {
    fn isatty(fd: i32) -> i32;
}

pub fn stdout_is_terminal() -> bool {
    unsafe { isatty(1) == 1 }
}

const WIDTH: usize = 160;

/// render._hexd: a shift in bytes, signed, whole pages said so.
fn hexd(d: i128) -> String {
    let a = d.abs();
    let pages = if d != 0 && d % PAGE == 0 {
        format!(" ({} page{})", a / PAGE, if a != PAGE { "s" } else { "" })
    } else {
        String::new()
    };
    format!("{}{}{}", if d >= 0 { "+" } else { "-" }, a, pages)
}

/// Would rich replace an emoji code in this text?  (its regex `:(\S*?)(?:-(emoji|text))?:`,
/// scanned left to right; the name looked up lower-cased)
fn has_emoji(text: &str) -> bool {
    static NAMES: &str = include_str!("emoji.txt");
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b':' {
            i += 1;
            continue;
        }
        let mut end = None; // (name end, match end)
        let mut l = i + 1;
        while l <= b.len() {
            let rest = &b[l..];
            if rest.starts_with(b"-emoji:") {
                end = Some((l, l + 7));
                break;
            }
            if rest.starts_with(b"-text:") {
                end = Some((l, l + 6));
                break;
            }
            if rest.first() == Some(&b':') {
                end = Some((l, l + 1));
                break;
            }
            if rest.is_empty() || rest[0] == b' ' {
                break;
            }
            l += 1;
        }
        match end {
            Some((n, m)) => {
                let name = text[i + 1..n].to_ascii_lowercase();
                if !name.is_empty() && NAMES.lines().any(|k| k == name) {
                    return true;
                }
                i = m;
            }
            None => i += 1,
        }
    }
    false
}

fn summary_lines(r: &Result_, old: &Image, new: &Image) -> Vec<String> {
    let c = &r.counts;
    let side = |img: &Image, what: &str| match &img.plan {
        Some(p) => format!("{what}: {}  [{}:{}, plan {}]", img.label, p.layout, p.seed, p.plan_id_text()),
        None => format!("{what}: {}", img.label),
    };
    let mut lines = vec![side(old, "old"), side(new, "new")];
    let identical = c[1] + c[3] + c[4] + c[5] == 0;
    let counts: Vec<String> = STATUSES.iter().enumerate().map(|(i, k)| format!("{} {}", c[i], k)).collect();
    lines.push(format!(
        "{}: {} -> {} symbols: {}",
        if identical { "placement identical" } else { "placement differs" },
        old.syms.len(),
        new.syms.len(),
        counts.join(", ")
    ));
    if c[1] != 0 {
        let mut common: Vec<(i128, u64)> = r.moved_by.iter().map(|(&d, &n)| (d, n)).collect();
        common.sort_by_key(|&(d, n)| (std::cmp::Reverse(n), d));
        common.truncate(4);
        let lo = *r.moved_by.keys().next().unwrap();
        let hi = *r.moved_by.keys().last().unwrap();
        let pages = if r.text_moved_by.is_empty() {
            "no code moved"
        } else if r.page_quantized {
            "code moved by whole pages only"
        } else {
            "code not page-quantized"
        };
        let rng = if lo == hi { hexd(lo) } else { format!("{} .. {}", hexd(lo), hexd(hi)) };
        let most: Vec<String> = common.iter().map(|&(d, n)| format!("{} x{}", hexd(d), n)).collect();
        lines.push(format!("moved: {} symbols by {} bytes ({}); most: {}", c[1], rng, pages, most.join(", ")));
    }
    for (i, g) in r.origins.iter().take(4).enumerate() {
        let head = if i == 0 { "shift origin" } else { "  also in" };
        let obj = if g.object.is_empty() { String::new() } else { format!("{}:", g.object) };
        lines.push(format!("{head} {} at {:#x} ({obj}{}): {}: {}", g.section, g.address, g.symbol, g.cause, g.detail));
    }
    if r.origins.len() > 4 {
        lines.push(format!("  ... and {} more sections", r.origins.len() - 4));
    }
    if let Some(p) = &r.prop {
        if p.to_end {
            lines.push(format!(
                "propagation: every symbol above the origin in {} moved ({}), up to {:#x}",
                p.section, p.moved, p.last
            ));
        } else {
            let back = p.absorbed_at.map_or(String::new(), |a| format!("; back in place from {a}"));
            lines.push(format!(
                "propagation: {} of {} symbols above the origin in {} moved, up to {:#x}{}",
                p.moved,
                p.moved + p.stayed,
                p.section,
                p.last,
                back
            ));
        }
    }
    if r.text_bytes != 0 {
        let share = r.text_unchanged_bytes as f64 / r.text_bytes as f64;
        lines.push(format!(
            "text unchanged: {:.1}% of function bytes ({} of {} functions in place with the same code)",
            100.0 * share,
            r.text_unchanged_functions,
            r.text_functions
        ));
    }
    let k = &r.st;
    lines.push(format!(
        "code compared: {} identical, {} same after masking {} address fields, {} by llvm-objdump; objects from {}",
        k.identical,
        k.masked,
        k.fields,
        k.objdump,
        if r.mapping == "plan" { "the layout plans" } else { "STT_FILE symbols" }
    ));
    for n in &r.notes {
        lines.push(format!("note: {n}"));
    }
    lines
}

/// The whole text, or why rich would print it differently.
pub fn render(r: &Result_, old: &Image, new: &Image) -> Result<String, String> {
    let mut out = String::new();
    let plain = |s: &str| s.bytes().all(|c| (0x20..0x7f).contains(&c));
    for line in summary_lines(r, old, new) {
        if !plain(&line) || has_emoji(&line) {
            return Err("a summary line rich would print differently".into());
        }
        out.push_str(&line);
        out.push('\n');
    }
    // per object: object, symbols, the six statuses, shift; columns two spaces apart, numbers
    // right-justified, every cell padded to its column (the last one too)
    let mut header: Vec<String> = vec!["object".into(), "symbols".into()];
    header.extend(STATUSES.iter().map(|s| s.to_string()));
    header.push("shift".into());
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(r.objects.len());
    for o in &r.objects {
        let mut order: Vec<(i128, u64)> = o.delta_order.iter().map(|d| (*d, o.deltas[d])).collect();
        order.sort_by_key(|&(_, n)| std::cmp::Reverse(n)); // stable: ties in the order first seen
        let mut shift: Vec<String> = order.iter().take(2).map(|&(d, _)| hexd(d)).collect::<Vec<_>>();
        let mut shift = shift.drain(..).collect::<Vec<_>>().join(", ");
        if order.len() > 2 {
            shift.push_str(" ...");
        }
        let mut row = vec![o.object.to_string(), o.counts.iter().sum::<u64>().to_string()];
        row.extend(o.counts.iter().map(|&n| if n != 0 { n.to_string() } else { String::new() }));
        row.push(shift);
        rows.push(row);
    }
    let ncol = header.len();
    let mut width = vec![0usize; ncol];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (w, cell) in width.iter_mut().zip(row) {
            if !plain(cell) || has_emoji(cell) || cell.contains('[') {
                return Err("a table cell rich would print differently".into());
            }
            *w = (*w).max(cell.len());
        }
    }
    if width.iter().sum::<usize>() + 2 * (ncol - 1) > WIDTH {
        return Err("a table wider than the console".into());
    }
    out.push_str("per object\n");
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                out.push_str("  ");
            }
            let pad = " ".repeat(width[c] - cell.len());
            if c == 0 || c == ncol - 1 {
                out.push_str(cell);
                out.push_str(&pad);
            } else {
                out.push_str(&pad);
                out.push_str(cell);
            }
        }
        out.push('\n');
    }
    Ok(out)
}
