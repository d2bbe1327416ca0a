"""bench/mutate.py, the mutation runner behind docs/guide/internals.md's scores: its equivalents file
names mutants of the source as it is, and ``--recheck`` runs a saved result's survivors again
against the tests as they are (real pytest runs of the quirks module's tests on a mutated copy)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from conftest import script

mutate = script("bench/mutate.py")
ROOT = Path(__file__).resolve().parent.parent


def test_every_equivalent_names_a_mutant_of_the_source_as_it_is():
    """An entry is found by its file, mutation, column and source line's text; one whose line was
    edited (or removed) names nothing, and its mutant would be scored without a reason being
    looked at again."""
    eqs = mutate.load_equivalent()
    assert len(eqs) > 50 and all("code" in e for e in eqs)
    by_file: dict[str, list] = {}
    stale = []
    for e in eqs:
        ms = by_file.setdefault(e["file"], mutate.mutants_of(e["file"]) if (ROOT / e["file"]).is_file() else [])
        if not any(mutate._is_equivalent(m, [e]) is e for m in ms):
            stale.append(f"{e['file']}:{e['line']} {e['mutation']} ({e['code']})")
    assert stale == []


def test_an_equivalent_follows_its_line_and_not_a_changed_one():
    m = mutate.Mutant("f.py", 10, 4, 0, "compare", 0, "compare: a < b -> a <= b", "if a < b:")
    e = {"file": "f.py", "line": 3, "col": 4, "mutation": "compare: a < b -> a <= b", "code": "if a < b:"}
    assert mutate._is_equivalent(m, [e]) is e  # moved from line 3 to line 10
    assert mutate._is_equivalent(m, [{**e, "code": "if a < c:"}]) is None  # its line edited
    assert mutate._is_equivalent(m, [{**e, "col": 8}]) is None
    assert mutate._is_equivalent(m, [{**e, "mutation": "compare: a < b -> a > b"}]) is None
    # a saved result without the source text (older JSON) is matched by its line
    old = mutate.Mutant("f.py", 3, 4, 0, "compare", 0, "compare: a < b -> a <= b", "")
    assert mutate._is_equivalent(old, [e]) is e and mutate._is_equivalent(mutate.Mutant(**{**asdict(old), "line": 4}),
                                                                       [e]) is None


def test_recheck_kills_a_survivor_a_test_now_catches_and_marks_a_gone_one(tmp_path):
    """A saved result with three survivors of quirks.py: a mutant the quirks tests kill (saved at a
    line it has since moved from: found by its source text), and one whose source text is not in
    the file any more (gone).  --recheck runs the tests on each mutant it finds and prints the
    score again."""
    ms = mutate.mutants_of("layoutbench/quirks.py")
    real = next(m for m in ms if m.op == "call" and "acts.append('skip')" in m.mutation)
    moved = {**asdict(real), "line": real.line + 40, "result": "pass"}
    gone = {**asdict(real), "code": "acts.append('skip')  # a line that is not there", "result": "pass"}
    saved = {"command": "python3 -m bench.mutate --module quirks --max 2", "seed": 1, "max": 2,
             "modules": [{"module": "quirks", "files": ["layoutbench/quirks.py"],
                          "tests": mutate.MODULES["quirks"]["tests"], "mutants_in_module": len(ms), "sampled": 3,
                          "killed": 1, "total": 3, "score": 0.3333, "equivalent": [],
                          "survived": [moved, gone], "killed_mutants": [{**asdict(ms[0]), "result": "fail"}]}]}
    f = tmp_path / "saved.json"
    f.write_text(json.dumps(saved))
    p = subprocess.run([sys.executable, "-m", "bench.mutate", "--recheck", str(f), "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout)["modules"][0]
    assert (r["killed"], r["total"]) == (2, 3), r
    assert [s["result"] for s in r["survived"]] == ["gone"]
    assert r["killed_mutants"][-1]["code"] == real.code and r["killed_mutants"][-1]["result"] == "fail"
    assert "gone from the source: score the module again" in p.stderr
    assert json.loads(p.stdout)["command"].endswith(f"--recheck {f}")


RUST = '''use std::collections::BTreeMap;
fn f(v: Vec<u64>, a: u64) -> Option<u64> {
    let s = "a < b && 1"; // a < b, 2 + 3 in a comment
    if a < 0x10 && v.len() >= 2 {
        return Some(a + 1);
    }
    if s == "x {" {
        return None;
    }
    if let Some(x) = v.first() {
        return Some(*x << 2);
    }
    let ok = true;
    None
}
'''


def test_rust_mutants_are_spaced_operators_literals_and_conditions_outside_strings(tmp_path):
    """A Rust file's mutants: a binary operator with a space on each side flipped, a decimal literal plus
    one, true/false swapped, an if condition negated (not an `if let`); nothing in a string, a comment,
    a generic, an arrow, a shift or a hex literal; each applied at its place."""
    (tmp_path / "m.rs").write_text(RUST)
    got = [(n, op, before, after) for n, _, op, before, after in mutate._rust_mutants("m.rs", tmp_path)]
    assert got == [(4, "binop", "<", "<="), (4, "binop", "&&", "||"), (4, "binop", ">=", ">"), (4, "const", "2", "3"),
                   (4, "negate", "a < 0x10 && v.len() >= 2", "!(a < 0x10 && v.len() >= 2)"),
                   (5, "binop", "+", "-"), (5, "const", "1", "2"), (7, "binop", "==", "!="),
                   (7, "negate", 's == "x {"', '!(s == "x {")'), (11, "const", "2", "3"), (13, "bool", "true", "false")]
    src = mutate._rust_source("m.rs", 4, tmp_path).splitlines()
    assert src[3] == "    if !(a < 0x10 && v.len() >= 2) {"
    assert src[:3] + src[4:] == RUST.splitlines()[:3] + RUST.splitlines()[4:]
    ms = mutate.mutants_of("m.rs", tmp_path)
    assert [m.mutation for m in ms][:2] == ["binop: < -> <=", "binop: && -> ||"] and ms[5].code == "return Some(a + 1);"
