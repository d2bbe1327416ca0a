//! The layout plan beside an image (its plan.json, as layoutbench/layout.py writes it): its units,
//! its id (the one linked into the image as __lb_plan_id).

use crate::json::{self, Value};

pub const KINDS: [&str; 4] = ["text", "rodata", "data", "bss"];

#[derive(Clone, PartialEq)]
pub struct Unit {
    pub object: &'static str,
    pub sections: Option<Vec<&'static str>>,
    pub align: i64,
    pub gap: i64,
}

pub struct Plan {
    pub kernel: String,
    pub image: String,
    pub commit: String,
    pub layout: String,
    pub seed: i64,
    pub groups: Vec<(String, Vec<Unit>)>,
    pub pinned: Vec<String>,
    pub format: i64,
    pub stored_id: Option<String>, //: the "plan_id" layoutbench wrote into plan.json
}

fn s(v: Option<&Value>) -> Result<&'static str, String> {
    match v {
        Some(Value::Str(s)) => Ok(s),
        _ => Err(String::from("a field is not a string")),
    }
}
fn i(v: Option<&Value>) -> Result<i64, String> {
    match v {
        Some(Value::Int(i)) => i64::try_from(*i).map_err(|_| String::from("an integer out of range")),
        _ => Err(String::from("a field is not an integer")),
    }
}
fn strs(v: &Value) -> Result<Vec<&'static str>, String> {
    match v {
        Value::List(l) => l.iter().map(|x| s(Some(x))).collect(),
        _ => Err(String::from("a field is not a list")),
    }
}
fn keys_are(v: &Value, want: &[&str]) -> bool {
    match v {
        Value::Obj(kv) => kv.len() == want.len() && want.iter().all(|w| kv.iter().any(|(k, _)| k == w)),
        _ => false,
    }
}

impl Plan {
    /// A plan.json as layoutbench writes it; any other shape is an error (the caller notes it).
    pub fn parse(text: &'static str) -> Result<Plan, String> {
        let v = json::parse(text)?;
        let top = ["kernel", "image", "commit", "layout", "seed", "groups", "pinned", "format"];
        let with_id = ["kernel", "image", "commit", "layout", "seed", "groups", "pinned", "format", "plan_id"];
        if !keys_are(&v, &top) && !keys_are(&v, &with_id) {
            return Err(String::from("not the fields of a layoutbench plan"));
        }
        let mut groups = Vec::new();
        match v.get("groups") {
            Some(Value::Obj(kv)) => {
                for (kind, units) in kv {
                    if groups.iter().any(|(k, _): &(String, Vec<Unit>)| k == kind) {
                        return Err(String::from("a group named twice"));
                    }
                    let mut out = Vec::new();
                    let l = match units {
                        Value::List(l) => l,
                        _ => return Err(String::from("a group's units are not a list")),
                    };
                    for u in l {
                        if !keys_are(u, &["object", "sections", "align", "gap"]) {
                            return Err(String::from("a unit without the fields object, sections, align, gap"));
                        }
                        let sections = match u.get("sections") {
                            Some(Value::Null) => None,
                            Some(x) => Some(strs(x)?),
                            None => None,
                        };
                        out.push(Unit { object: s(u.get("object"))?, sections, align: i(u.get("align"))?, gap: i(u.get("gap"))? });
                    }
                    groups.push((kind.to_string(), out));
                }
            }
            _ => return Err(String::from("its groups are not an object")),
        }
        Ok(Plan {
            kernel: s(v.get("kernel"))?.to_string(),
            image: s(v.get("image"))?.to_string(),
            commit: s(v.get("commit"))?.to_string(),
            layout: s(v.get("layout"))?.to_string(),
            seed: i(v.get("seed"))?,
            groups,
            pinned: strs(v.get("pinned").unwrap())?.into_iter().map(str::to_string).collect(),
            format: i(v.get("format"))?,
            stored_id: match v.get("plan_id") {
                Some(Value::Str(t))
                    if t.len() == 9 && t.starts_with("0x") && t[2..].bytes().all(|c| b"0123456789abcdef".contains(&c)) =>
                {
                    Some(t.to_string())
                }
                _ => None,
            },
        })
    }

    pub fn group(&self, kind: &str) -> Option<&Vec<Unit>> {
        self.groups.iter().find(|(k, _)| k == kind).map(|(_, u)| u)
    }

    /// json.dumps(asdict(plan), sort_keys=True, separators=(",", ":"))
    fn canonical(&self) -> String {
        let mut o = String::new();
        o.push_str("{\"commit\":");
        json::quote(&mut o, &self.commit);
        o.push_str(&format!(",\"format\":{},\"groups\":{{", self.format));
        let mut g: Vec<&(String, Vec<Unit>)> = self.groups.iter().collect();
        g.sort_by(|a, b| cmp_py(&a.0, &b.0));
        for (n, (kind, units)) in g.iter().enumerate() {
            if n > 0 {
                o.push(',');
            }
            json::quote(&mut o, kind);
            o.push_str(":[");
            for (m, u) in units.iter().enumerate() {
                if m > 0 {
                    o.push(',');
                }
                o.push_str(&format!("{{\"align\":{},\"gap\":{},\"object\":", u.align, u.gap));
                json::quote(&mut o, &u.object);
                o.push_str(",\"sections\":");
                match &u.sections {
                    None => o.push_str("null"),
                    Some(l) => {
                        o.push('[');
                        for (k, x) in l.iter().enumerate() {
                            if k > 0 {
                                o.push(',');
                            }
                            json::quote(&mut o, x);
                        }
                        o.push(']');
                    }
                }
                o.push('}');
            }
            o.push(']');
        }
        o.push_str("},\"image\":");
        json::quote(&mut o, &self.image);
        o.push_str(",\"kernel\":");
        json::quote(&mut o, &self.kernel);
        o.push_str(",\"layout\":");
        json::quote(&mut o, &self.layout);
        o.push_str(",\"pinned\":[");
        for (k, x) in self.pinned.iter().enumerate() {
            if k > 0 {
                o.push(',');
            }
            json::quote(&mut o, x);
        }
        o.push_str(&format!("],\"seed\":{}}}", self.seed));
        o
    }

    /// The 28-bit id linked into the image as __lb_plan_id.
    pub fn plan_id(&self) -> u32 {
        let h = json::sha256(self.canonical().as_bytes());
        (u32::from_be_bytes([h[0], h[1], h[2], h[3]])) >> 4
    }

    /// The id layoutbench stored in plan.json, or the plan's own: "0x1234abc" (hashing a plan that lists every
    /// function section costs more than the rest of reading it)
    pub fn plan_id_text(&self) -> String {
        self.stored_id.clone().unwrap_or_else(|| format!("0x{:07x}", self.plan_id()))
    }
}

/// Python's str ordering (code points; the same as UTF-8 byte order).
fn cmp_py(a: &str, b: &str) -> std::cmp::Ordering {
    a.cmp(b)
}
