//! Just enough JSON: a reader for plan.json, a writer that prints what Python's json.dumps prints
//! (ensure_ascii, the default separators or the compact ones), and SHA-256 for the plan id.

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float,
    Str(&'static str), //: a slice of the text, or (with escapes) a leaked string
    List(Vec<Value>),
    Obj(Vec<(&'static str, Value)>),
}

impl Value {
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(kv) => kv.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Parse a text that lives as long as the program (leak it first): strings are slices of it.
pub fn parse(text: &'static str) -> Result<Value, String> {
    let b = text.as_bytes();
    let mut p = 0usize;
    let v = value(text, b, &mut p)?;
    ws(b, &mut p);
    if p != b.len() {
        return Err("trailing data".into());
    }
    Ok(v)
}

fn ws(b: &[u8], p: &mut usize) {
    while *p < b.len() && matches!(b[*p], b' ' | b'\t' | b'\n' | b'\r') {
        *p += 1;
    }
}

fn value(t: &'static str, b: &[u8], p: &mut usize) -> Result<Value, String> {
    ws(b, p);
    if *p >= b.len() {
        return Err("unexpected end".into());
    }
    match b[*p] {
        b'{' => {
            *p += 1;
            let mut kv = Vec::new();
            ws(b, p);
            if *p < b.len() && b[*p] == b'}' {
                *p += 1;
                return Ok(Value::Obj(kv));
            }
            loop {
                ws(b, p);
                let k = match value(t, b, p)? {
                    Value::Str(s) => s,
                    _ => return Err("key".into()),
                };
                ws(b, p);
                if *p >= b.len() || b[*p] != b':' {
                    return Err("colon".into());
                }
                *p += 1;
                let v = value(t, b, p)?;
                kv.push((k, v));
                ws(b, p);
                if *p < b.len() && b[*p] == b',' {
                    *p += 1;
                } else if *p < b.len() && b[*p] == b'}' {
                    *p += 1;
                    return Ok(Value::Obj(kv));
                } else {
                    return Err("object".into());
                }
            }
        }
        b'[' => {
            *p += 1;
            let mut out = Vec::new();
            ws(b, p);
            if *p < b.len() && b[*p] == b']' {
                *p += 1;
                return Ok(Value::List(out));
            }
            loop {
                out.push(value(t, b, p)?);
                ws(b, p);
                if *p < b.len() && b[*p] == b',' {
                    *p += 1;
                } else if *p < b.len() && b[*p] == b']' {
                    *p += 1;
                    return Ok(Value::List(out));
                } else {
                    return Err("list".into());
                }
            }
        }
        b'"' => {
            *p += 1;
            // most strings have no escape: a slice of the text
            let start = *p;
            let mut end = start;
            while end < b.len() && b[end] != b'"' && b[end] != b'\\' && b[end] >= 0x20 {
                end += 1;
            }
            if end < b.len() && b[end] == b'"' {
                *p = end + 1;
                return Ok(Value::Str(&t[start..end]));
            }
            let mut s: Vec<u16> = Vec::new();
            let mut out = String::new();
            loop {
                if *p >= b.len() {
                    return Err("string".into());
                }
                let c = b[*p];
                if c == b'"' {
                    *p += 1;
                    break;
                }
                if c == b'\\' {
                    *p += 1;
                    if *p >= b.len() {
                        return Err("escape".into());
                    }
                    let e = b[*p];
                    *p += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            if *p + 4 > b.len() {
                                return Err("escape".into());
                            }
                            let h = std::str::from_utf8(&b[*p..*p + 4]).map_err(|_| "escape")?;
                            let u = u16::from_str_radix(h, 16).map_err(|_| "escape")?;
                            *p += 4;
                            s.push(u);
                            continue;
                        }
                        _ => return Err("escape".into()),
                    };
                    flush(&mut s, &mut out)?;
                    out.push(ch);
                    continue;
                }
                if c < 0x20 {
                    return Err("control character".into());
                }
                flush(&mut s, &mut out)?;
                // a run of plain characters at once (the text is a &str: already valid UTF-8,
                // and a run never ends inside a character, as '"', '\\' and controls are ASCII)
                let start = *p;
                let mut end = start + 1;
                while end < b.len() && b[end] != b'"' && b[end] != b'\\' && b[end] >= 0x20 {
                    end += 1;
                }
                out.push_str(std::str::from_utf8(&b[start..end]).map_err(|_| "utf-8")?);
                *p = end;
            }
            flush(&mut s, &mut out)?;
            Ok(Value::Str(crate::basics::leak(out)))
        }
        b't' if b[*p..].starts_with(b"true") => {
            *p += 4;
            Ok(Value::Bool(true))
        }
        b'f' if b[*p..].starts_with(b"false") => {
            *p += 5;
            Ok(Value::Bool(false))
        }
        b'n' if b[*p..].starts_with(b"null") => {
            *p += 4;
            Ok(Value::Null)
        }
        b'-' | b'0'..=b'9' => {
            let start = *p;
            if b[*p] == b'-' {
                *p += 1;
            }
            let mut float = false;
            while *p < b.len() && matches!(b[*p], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                if !b[*p].is_ascii_digit() {
                    float = true;
                }
                *p += 1;
            }
            if float {
                return Ok(Value::Float);
            }
            let t = std::str::from_utf8(&b[start..*p]).unwrap();
            t.parse::<i128>().map(Value::Int).map_err(|_| "integer".into())
        }
        _ => Err("value".into()),
    }
}

fn flush(s: &mut Vec<u16>, out: &mut String) -> Result<(), String> {
    if !s.is_empty() {
        // lone surrogates: not a plan layoutbench wrote
        out.push_str(&String::from_utf16(s).map_err(|_| "surrogate")?);
        s.clear();
    }
    Ok(())
}

/// A string as Python's json.dumps writes it (ensure_ascii=True).
pub fn quote(out: &mut String, s: &str) {
    out.push('"');
    if s.bytes().all(|c| (b' '..=b'~').contains(&c) && c != b'"' && c != b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04x}", u));
                }
            }
        }
    }
    out.push('"');
}

/// Python's repr of a float.
pub fn float_repr(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let e = format!("{:e}", x); // shortest round-trip digits: "-1.2345e-5"
    let (mant, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let s = if exp < 0 {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        } else if exp + 1 >= n {
            format!("{}{}.0", digits, "0".repeat((exp + 1 - n) as usize))
        } else {
            format!("{}.{}", &digits[..(exp + 1) as usize], &digits[(exp + 1) as usize..])
        };
        format!("{}{}", sign, s)
    } else {
        let m = if digits.len() > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits };
        format!("{}{}e{}{:02}", sign, m, if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

/// Python's round(x, 6) (correctly rounded, ties to even on the exact binary value).
pub fn round6(x: f64) -> f64 {
    format!("{:.6}", x).parse().unwrap()
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([chunk[4 * i], chunk[4 * i + 1], chunk[4 * i + 2], chunk[4 * i + 3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7].wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), v[0], v[1], v[2], v[3].wrapping_add(t1), v[4], v[5], v[6]];
        }
        for i in 0..8 {
            h[i] = h[i].wrapping_add(v[i]);
        }
    }
    let mut out = [0u8; 32];
    for i in 0..8 {
        out[4 * i..4 * i + 4].copy_from_slice(&h[i].to_be_bytes());
    }
    out
}
