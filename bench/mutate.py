"""docs/guide/internals.md's mutation scores: does a test fail when the code of a core module is wrong?

    nice -n 15 python3 -m bench.mutate --module stats --max 50          # one module, 50 sampled mutants
    nice -n 15 python3 -m bench.mutate --max 50 --json > mutants.json    # every module in MODULES

A small runner of the project's own over Python's ``ast``.  Each mutant is one change of one
node of a module's source:

    compare   flip a comparison at its boundary or its sense (< <=, > >=, == !=, in / not in, is / is not)
    number    an integer constant (an index, a count, a bound) +1 or -1
    term      drop a term of a + or - (a + b -> a, a + b -> b, a - b -> a)
    boolop    swap `and` / `or`
    negate    negate the condition of an if / while / conditional expression / comprehension filter
    return    return None instead of the value
    call      remove a call statement (`f(x)` on a line of its own)

Docstrings, annotations and decorators are left alone.  A Rust file (the symdiff helper's,
``native/symdiff/src``) is mutated by text, never inside a string or a comment:

    binop     flip a binary operator written with a space on each side (< <=, > >=, == !=, && ||, + -)
    const     a decimal literal +1
    bool      swap true / false
    negate    negate the condition of an if / while (not an `if let`)

and each mutant is built (cargo, offline) before its tests run; one that does not build is not
counted.  The mutants of a module are listed in
source order; ``--max N`` samples N of them with a fixed seed (``--seed``, default 24), so two
runs over the same source try the same mutants.  Each mutant is written into a temporary copy
of the checkout (the working tree is never touched) and the module's chosen fast tests
(``MODULES`` below) run against it with a timeout (``--timeout``, default: 4x the unmutated
run + 20 s): a failing, erroring or hanging run kills the mutant, a passing one lets it survive.

Mutants that cannot be killed because they do not change behaviour are listed with a reason in
``bench/mutants-equivalent.toml`` and left out of the score::

    [[equivalent]]
    file = "layoutbench/stats/summary.py"
    line = 120
    col = 8                                    # optional: the column, when the line has two such mutants
    mutation = "compare: a < b -> a <= b"     # as this script prints it
    reason = "equal values take the same branch either way: both give 0"

Prints, per module: killed/total and the score, then every surviving mutant (file:line:col, the
mutation).  ``--json`` prints the same as one JSON object (the table goes to stderr);
``--table FILE...`` prints the table of such saved results again (survivors that
``bench/mutants-equivalent.toml`` now names count as equivalent); ``--recheck FILE`` runs the
survivors of such a result again against the tests as they are now (a test added for a survivor
kills it there; a survivor whose place in the source changed is marked gone: score the module
again).  CPU heavy: run it under ``nice``
(it lowers its own priority to 15 anyway), on demand, not in CI.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = ROOT / "bench" / "mutants-equivalent.toml"

#: module -> the files mutated and the fast tests run against each mutant (pytest arguments)
#: ``workdir``: the tests share one layoutbench work directory across the mutants (compiled objects
#: are reused), for modules that neither compile nor link; every other module's tests start empty.
#: ``functions``: only the mutants inside these top-level functions of the files (one job of a module)
#: ``native``: the tests run the symdiff helper (copied with the tree; a Rust mutant is built before its run)
MODULES: dict[str, dict] = {
    "stats": {"files": [f"layoutbench/stats/{m}.py" for m in ("base", "summary", "noise", "comparison", "family")], "tests": ["tests/test_stats.py", "tests/test_directions.py"]},
    "layout": {"files": ["layoutbench/layout.py"], "tests": ["tests/test_layout_registry.py", "tests/test_layout_units.py"]},
    "placement": {"files": ["layoutbench/placement.py"],
                  "tests": ["tests/test_layout_registry.py", "tests/test_layout_units.py"]},
    "linkscript": {"files": ["layoutbench/linkscript.py"],
                   "tests": ["tests/test_layout_registry.py", "tests/test_layout_units.py"]},
    "measure": {"files": ["layoutbench/measure.py"], "tests": ["tests/test_resume.py", "tests/test_measure.py"],
                "workdir": True},
    "store": {"files": ["layoutbench/store.py"],
              "tests": ["tests/test_store_units.py", "tests/test_store_faults.py", "tests/test_resume.py",
                        "tests/test_measure.py", "tests/test_store_filters.py", "-k", "store or older or resume"],
              "workdir": True},
    "history": {"files": ["layoutbench/history/sweeping.py", "layoutbench/history/analysis.py"],
                "tests": ["tests/test_history_points.py", "tests/test_history_analysis.py"], "workdir": True},
    "quirks": {"files": ["layoutbench/quirks.py"],
               "tests": ["tests/test_quirks.py", "-k", "prepare or from_until or naming or errors_and"]},
    "symdiff": {"files": [f"native/symdiff/src/{m}.rs" for m in ("main", "samecode", "plan", "image", "elf",
                                                                  "archives", "planfile", "json")],
                "tests": ["tests/test_symdiff_rules.py", "tests/test_native_symdiff.py", "tests/test_symdiff.py"],
                "workdir": True, "native": True},
    "cacheview": {"files": [f"layoutbench/cacheview/{m}.py" for m in ("sides", "view", "counts", "runs")],
                  "tests": ["tests/test_symdiff_cache.py"], "workdir": True},
    "symdiff_files": {"files": ["layoutbench/symdiff/files.py", "layoutbench/specs.py"],
                      "tests": ["tests/test_native_symdiff.py", "tests/test_symdiff_text.py", "-k",
                                "build_specs or every_diff or own_only or full_disk"],
                      "workdir": True, "native": True},
    "symdiff_text": {"files": ["layoutbench/symdiff/render.py", "layoutbench/symdiff/model.py"],
                     "tests": ["tests/test_symdiff_text.py"]},
    "decide": {"files": [f"layoutbench/decide/{m}.py" for m in ("plan", "model", "tracked", "sequential", "outcome",
                                                                   "search", "power", "rounds", "baseline")],
               "tests": ["tests/test_decide_units.py", "tests/test_probe_judging.py", "tests/test_residual_ranges.py",
                         "tests/test_budget_notes.py", "tests/test_confirmation_rules.py", "tests/test_decide_rules.py",
                         "tests/test_decide_paired.py",
                         "tests/test_decide_near.py", "tests/test_calibration.py", "tests/test_interval.py",
                         "tests/test_directions.py::test_the_repeated_p_is_at_most_the_level_exactly_when_the_interval"
                         "_excludes_the_null", "-k",
                         "(not coverage and not calibrated and not whole_bisection and not minimum_effect "
                         "and not unequal and not 2_sigma and not foretells) or said_at_once"]},
    "costs": {"files": ["layoutbench/costs.py"], "tests": ["tests/test_costs.py", "-k", "not refuses and not bad_cost"]},
    "report": {"files": ["layoutbench/owned.py"],
               "tests": ["tests/test_report_output.py", "-k",
                         "error_while or stops_being or meanwhile or replaced_whole or swap or check_refuses or marker"]},
    "reuse": {"files": ["layoutbench/reuse.py"], "tests": ["tests/test_reuse.py"]},
    "validate": {"files": ["layoutbench/validate.py"],
                 "tests": ["tests/test_hostile_cli.py", "-k", "not every_hostile_cli_input"]},
    "verdict": {"files": [f"layoutbench/verdict/{m}.py" for m in ("__init__", "record", "text")],
                "tests": ["tests/test_verdict_record.py", "tests/test_verdict.py", "tests/test_directions.py"],
                "workdir": True},
    "commands": {"files": [f"layoutbench/commands/{m}.py" for m in ("__init__", "builds", "comparing", "symdiffs",
                                                                       "histories", "bisecting")],
                 "tests": ["tests/test_hostile_cli.py", "tests/test_structure.py"]},
    "bisect": {"files": [f"layoutbench/bisect/{m}.py" for m in ("settings", "prober", "state", "runner", "budget",
                                                                   "render", "judge_script")],
               "tests": ["tests/test_bisect_units.py", "tests/test_costs.py", "tests/test_bisect_window.py", "-k",
                         "bisect or bisection or budget or cost or runs_per_layout or noise_split or run_takes"],
               "workdir": True},
}

FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
        ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


@dataclass
class Mutant:
    file: str
    line: int
    col: int
    node: int  #: index of the node in ast.walk order
    op: str
    arg: int  #: which variant of the operator (which comparison of a chain, +1 or -1, which term)
    mutation: str  #: "op: before -> after", as printed and as the equivalents file names it
    code: str = ""  #: the source line it is on, stripped (how the equivalents file finds it when lines move)

    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def _short(node: ast.AST, width: int = 70) -> str:
    s = " ".join(ast.unparse(node).split())
    return s if len(s) <= width else s[: width - 3] + "..."


def _skipped(tree: ast.AST) -> set[int]:
    """ids of nodes not to mutate: docstrings, annotations, decorators."""
    skip: set[int] = set()

    def all_of(n):
        skip.update(id(x) for x in ast.walk(n))

    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = n.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                all_of(body[0])
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in n.decorator_list:
                all_of(d)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            all_of(n.returns)
        if isinstance(n, ast.arg) and n.annotation is not None:
            all_of(n.annotation)
        if isinstance(n, ast.AnnAssign):
            all_of(n.annotation)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant):
            all_of(n)
    return skip


def _candidates(node: ast.AST) -> list[tuple[str, int]]:
    """(op, arg) pairs that apply to this node."""
    out = []
    if isinstance(node, ast.Compare):
        out += [("compare", j) for j, op in enumerate(node.ops) if type(op) in FLIP]
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out += [("number", +1), ("number", -1)]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        out += [("term", 0), ("term", 1)]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        out += [("term", 0)]
    elif isinstance(node, ast.BoolOp):
        out += [("boolop", 0)]
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
        out += [("negate", 0)]
    elif isinstance(node, ast.comprehension):
        out += [("negate", j) for j in range(len(node.ifs))]
    elif isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        out += [("return", 0)]
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        out += [("call", 0)]
    return out


def _apply(node: ast.AST, op: str, arg: int) -> tuple[ast.AST, ast.AST, ast.AST]:
    """Mutate ``node``; return (the node as it was, the node it becomes, what replaces it in its parent)."""
    before = copy.deepcopy(node)
    if op == "compare":
        node.ops[arg] = FLIP[type(node.ops[arg])]()
        return before, node, node
    if op == "number":
        node.value = node.value + arg
        return before, node, node
    if op == "term":
        new = node.left if arg == 0 else node.right
        return before, new, new
    if op == "boolop":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return before, node, node
    if op == "negate":
        if isinstance(node, ast.comprehension):
            node.ifs[arg] = ast.UnaryOp(ast.Not(), node.ifs[arg])
            return before.ifs[arg], node.ifs[arg], node
        node.test = ast.UnaryOp(ast.Not(), node.test)
        return before.test, node.test, node
    if op == "return":
        node.value = ast.Constant(None)
        return before, node, node
    if op == "call":
        new = ast.Pass()
        return before, new, new
    raise ValueError(op)


def _replace(parent_of: dict[int, tuple[ast.AST, str, int | None]], node: ast.AST, new: ast.AST) -> None:
    if new is node:
        return
    parent, field, idx = parent_of[id(node)]
    if idx is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[idx] = new


def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    out = {}
    for p in ast.walk(tree):
        for field, value in ast.iter_fields(p):
            if isinstance(value, list):
                for i, v in enumerate(value):
                    if isinstance(v, ast.AST):
                        out[id(v)] = (p, field, i)
            elif isinstance(value, ast.AST):
                out[id(value)] = (p, field, None)
    return out


#: Rust's binary operators written with a space on each side (rustfmt's style: generics, arrows, shifts
#: and closures are not), and what each becomes
RUST_OPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "&&": "||", "||": "&&", "+": "-",
            "-": "+"}
_RUST_TOKEN = re.compile(r"(?<= )(<=|>=|==|!=|&&|\|\||<|>|\+|-)(?= )|(?<![\w.])(\d+)(?![\w.])|\b(true|false)\b")
_RUST_IF = re.compile(r"^(\s*(?:\} else )?(?:if|while) )(?!let )(.+)( \{)$")


def _rust_code(line: str) -> str:
    """The line with its string and char literals and its // comment blanked out (same length)."""
    out, i, quote = [], 0, None
    while i < len(line):
        c = line[i]
        if quote:
            out.append(" ")
            if c == "\\":
                out.append(" ")
                i += 1
            elif c == quote:
                quote = None
        elif c == '"' or (c == "'" and i + 2 < len(line) and (line[i + 2] == "'" or line[i + 1] == "\\")):
            quote = c
            out.append(" ")
        elif line.startswith("//", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).ljust(len(line))


def _rust_mutants(relpath: str, root: Path) -> list[tuple[int, int, str, str, str]]:
    """(line, col, op, before, after) of every mutant of a Rust file: a spaced binary operator flipped
    (RUST_OPS), an integer literal plus one, true/false swapped, an if/while condition negated."""
    out = []
    for n, line in enumerate((root / relpath).read_text().splitlines(), 1):
        code = _rust_code(line)
        if code.lstrip().startswith(("#", "use ", "const ", "static ", "pub const ")) or not code.strip():
            continue
        for m in _RUST_TOKEN.finditer(code):
            tok = m.group(0)
            if m.group(1):
                out.append((n, m.start(), "binop", tok, RUST_OPS[tok]))
            elif m.group(2):
                out.append((n, m.start(), "const", tok, str(int(tok) + 1)))
            else:
                out.append((n, m.start(), "bool", tok, "false" if tok == "true" else "true"))
        cond = _RUST_IF.match(code.rstrip())
        if cond:  # the condition as written (a string in it is blanked in ``code`` only)
            text = line[cond.start(2):cond.end(2)]
            out.append((n, cond.start(2), "negate", text, f"!({text})"))
    return out


def _rust_source(relpath: str, index: int, root: Path) -> str:
    """The Rust file's text with its ``index``-th mutant (in :func:`_rust_mutants` order) applied."""
    n, col, _, before, after = _rust_mutants(relpath, root)[index]
    lines = (root / relpath).read_text().split("\n")
    line = lines[n - 1]
    assert line[col:col + len(before)] == before, (relpath, n, col, before)
    lines[n - 1] = line[:col] + after + line[col + len(before):]
    return "\n".join(lines)


def mutants_of(relpath: str, root: Path = ROOT, functions: list[str] | None = None) -> list[Mutant]:
    """The mutants of a file, in source order (with ``functions``: those inside these top-level functions
    of a Python file).  A Rust file's are :func:`_rust_mutants`."""
    if relpath.endswith(".rs"):
        lines = (root / relpath).read_text().splitlines()
        return [Mutant(relpath, n, col, i, op, 0, f"{op}: {before} -> {after}", lines[n - 1].strip())
                for i, (n, col, op, before, after) in enumerate(_rust_mutants(relpath, root))]
    text = (root / relpath).read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    skip = _skipped(tree)
    if functions is not None:
        inside = {id(x) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in functions
                  for x in ast.walk(f)}
        skip |= {id(x) for x in ast.walk(tree) if id(x) not in inside}
    out = []
    for i, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        for op, arg in _candidates(node):
            before, after, _ = _apply(copy.deepcopy(node), op, arg)
            b, a = _short(before), _short(after)
            if b == a:
                continue
            at = node.ifs[arg] if isinstance(node, ast.comprehension) else node  # a comprehension has no line
            line = getattr(at, "lineno", 0)
            out.append(Mutant(relpath, line, getattr(at, "col_offset", 0), i, op, arg, f"{op}: {b} -> {a}",
                              lines[line - 1].strip() if 0 < line <= len(lines) else ""))
    return out


def mutant_source(relpath: str, index: int, op: str, arg: int, root: Path = ROOT) -> str | None:
    """The mutated module's text; None when it does not compile (a Rust file: see :func:`_compiles`)."""
    if relpath.endswith(".rs"):
        return _rust_source(relpath, index, root)
    tree = ast.parse((root / relpath).read_text())
    nodes = list(ast.walk(tree))
    parents = _parents(tree)
    node = nodes[index]
    _, _, new = _apply(node, op, arg)
    _replace(parents, node, new)
    text = ast.unparse(ast.fix_missing_locations(tree))
    try:
        compile(text, relpath, "exec")
    except SyntaxError:
        return None
    return text


def load_equivalent(path: Path = EQUIVALENT) -> list[dict]:
    if not path.is_file():
        return []
    return tomllib.loads(path.read_text()).get("equivalent", [])


def _is_equivalent(m: Mutant, eqs: list[dict]) -> dict | None:
    """The entry of the equivalents file that names ``m``: its file, its mutation, its column (when the
    entry gives one) and its source line's text (``code``; an entry without one: its line number)."""
    for e in eqs:
        if e.get("file") == m.file and e.get("mutation") == m.mutation and int(e.get("col", m.col)) == m.col \
                and (e["code"] == m.code if "code" in e and m.code else int(e.get("line", -1)) == m.line):
            return e
    return None


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in files:
        if not f or not (ROOT / f).is_file():
            continue
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)
    # the built symdiff helper (not tracked): as new as the sources copied beside it (copy2 keeps times)
    helper = Path("native/symdiff/target/release/layoutbench-symdiff")
    if (ROOT / helper).is_file():
        (dest / helper).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / helper, dest / helper)


def _run_tests(tree: Path, tests: list[str], timeout: float, basetemp: Path,
               workdir: Path | None = None, native: bool = False) -> tuple[str, float]:
    """'pass', 'fail' or 'timeout', and the seconds it took (the copy's symdiff helper runs:
    :func:`_copy_tree`; ``native`` is kept for the record of which modules need it)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("LAYOUTBENCH_TEST_WORKDIR", None)
    if workdir is not None:
        env["LAYOUTBENCH_TEST_WORKDIR"] = str(workdir)
    env.pop("CI", None)
    if basetemp.exists():
        shutil.rmtree(basetemp, ignore_errors=True)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", f"--basetemp={basetemp}", *tests]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return "timeout", time.monotonic() - t0
    return {0: "pass", 5: "none"}.get(rc, "fail"), time.monotonic() - t0


def _compiles(tree: Path, file: str) -> bool:
    """A Rust mutant builds (the helper in the copy ``tree``, cargo offline); a Python file always does
    here (:func:`mutant_source` compiled it)."""
    if not file.endswith(".rs"):
        return True
    crate = tree / "native" / "symdiff"
    return subprocess.run(["cargo", "build", "--release", "--offline", "--quiet"], cwd=crate,
                          capture_output=True).returncode == 0


def _with_mutant(tree: Path, file: str, src: str, run):
    """``run()`` with ``file`` of the copy ``tree`` holding the mutant's source, put back after; None
    when the mutant does not build (a Rust one), without running."""
    original = (tree / file).read_text()
    try:
        (tree / file).write_text(src)
        return run() if _compiles(tree, file) else None
    finally:
        (tree / file).write_text(original)


def run_module(name: str, spec: dict, tree: Path, args, eqs: list[dict], say) -> dict:
    tests = [t for t in spec["tests"] if not t.startswith("tests/") or (tree / t.split("::")[0]).exists()]
    spec = {**spec, "tests": tests}
    mutants = [m for f in spec["files"] for m in mutants_of(f, tree, spec.get("functions"))]
    n_all = len(mutants)
    if args.max and len(mutants) > args.max:
        rng = random.Random(f"{args.seed}:{name}")
        mutants = sorted(rng.sample(mutants, args.max), key=lambda m: (m.file, m.line, m.col, m.op, m.arg))
    basetemp = tree.parent / "pytest"
    has_files = any(t.startswith("tests/") for t in tests)
    work = tree.parent / "work" if spec.get("workdir") else None
    status, base_s = _run_tests(tree, tests, args.timeout or 1800, basetemp, work, spec.get("native", False)) if has_files else ("none", 0.0)
    if status == "none":
        say(f"{name}: no test of {' '.join(spec['tests'])} in this checkout: all {len(mutants)} mutants survive")
        return _result(name, spec, n_all, mutants, [], [{**asdict(m), "result": "no test"} for m in mutants], [])
    if status != "pass":
        raise SystemExit(f"mutate.py: the tests of {name} fail without any mutant ({' '.join(spec['tests'])}); "
                         "fix them first")
    timeout = args.timeout or 4 * base_s + 20
    say(f"{name}: {len(mutants)} of {n_all} mutants, tests {base_s:.1f}s unmutated, timeout {timeout:.0f}s")
    killed, survived, equivalent = [], [], []
    for k, m in enumerate(mutants, 1):
        e = _is_equivalent(m, eqs)
        if e is not None:
            equivalent.append({**asdict(m), "reason": e.get("reason", "")})
            continue
        src = mutant_source(m.file, m.node, m.op, m.arg, tree)
        if src is None:  # does not compile: not a program, not counted
            continue
        ran = _with_mutant(tree, m.file, src, lambda: _run_tests(tree, spec["tests"], timeout, basetemp, work, spec.get("native", False)))
        if ran is None:  # does not build: not a program, not counted
            continue
        result, secs = ran
        (survived if result == "pass" else killed).append({**asdict(m), "result": result})
        say(f"  [{k}/{len(mutants)}] {'SURVIVED' if result == 'pass' else result:8} {m.where()}  {m.mutation}"
            f"  ({secs:.1f}s)")
    return _result(name, spec, n_all, mutants, killed, survived, equivalent)


def recheck_module(r: dict, tree: Path, args, eqs: list[dict], say) -> dict:
    """A saved module result with its survivors run again against the tests as they are now (tests
    added since): a survivor whose test run fails now counts as killed.  The killed ones stay killed
    (their tests are still there).  A survivor is found again by its place and its mutation text;
    one that is not there any more (the source changed at that place) stays a survivor, marked
    ``gone``: score the module again then."""
    spec = {**MODULES[r["module"]]}
    r = _reapply(r, eqs)
    basetemp = tree.parent / "pytest"
    work = tree.parent / "work" if spec.get("workdir") else None
    status, base_s = _run_tests(tree, spec["tests"], args.timeout or 1800, basetemp, work, spec.get("native", False))
    if status != "pass":
        raise SystemExit(f"mutate.py: the tests of {r['module']} fail without any mutant; fix them first")
    timeout = args.timeout or 4 * base_s + 20
    killed, survived = list(r["killed_mutants"]), []
    fields = set(Mutant.__dataclass_fields__) - {"node", "line"}
    for k, s in enumerate(r["survived"], 1):
        same = [m for m in mutants_of(s["file"], tree)
                if all(getattr(m, f) == s[f] for f in fields if f in s) and ("code" in s or m.line == s["line"])]
        if len(same) != 1:
            survived.append({**s, "result": "gone"})
            say(f"  [{k}/{len(r['survived'])}] GONE     {s['file']}:{s['line']}:{s['col']}  {s['mutation']}"
                "  (not in the source any more: score the module again)")
            continue
        m = same[0]
        result, secs = _with_mutant(tree, m.file, mutant_source(m.file, m.node, m.op, m.arg, tree),
                                    lambda: _run_tests(tree, spec["tests"], timeout, basetemp, work, spec.get("native", False))
                                    ) or ("fail", 0.0)
        (survived if result == "pass" else killed).append({**s, "result": result})
        say(f"  [{k}/{len(r['survived'])}] {'SURVIVED' if result == 'pass' else result:8} {m.where()}  {m.mutation}"
            f"  ({secs:.1f}s)")
    total = len(killed) + len(survived)
    return {**r, "killed": len(killed), "total": total, "score": round(len(killed) / total, 4) if total else None,
            "survived": survived, "killed_mutants": killed}


def _result(name, spec, n_all, mutants, killed, survived, equivalent) -> dict:
    total = len(killed) + len(survived)
    return {"module": name, "files": spec["files"], "tests": spec["tests"], "mutants_in_module": n_all,
            "sampled": len(mutants), "killed": len(killed), "total": total,
            "score": round(len(killed) / total, 4) if total else None, "equivalent": equivalent,
            "survived": survived, "killed_mutants": killed}


def _reapply(r: dict, eqs: list[dict]) -> dict:
    """A saved module result with the current equivalents file: survivors it names move to equivalent."""
    fields = set(Mutant.__dataclass_fields__)
    keep, eq = [], list(r["equivalent"])
    for s in r["survived"]:
        e = _is_equivalent(Mutant(**{k: s.get(k, "") for k in fields}), eqs)
        (keep if e is None else eq).append(s if e is None else {**s, "reason": e.get("reason", "")})
    total = r["killed"] + len(keep)
    return {**r, "survived": keep, "equivalent": eq, "total": total,
            "score": round(r["killed"] / total, 4) if total else None}


def table(results: list[dict], cmd: str | None = None) -> str:
    """The score per module and the surviving mutants, as text."""
    out = [f"\n{cmd}"] if cmd else [""]
    out.append(f"{'module':11} {'killed/total':>13} {'score':>6}  {'equivalent':>10}  {'sampled/mutants':>15}")
    for r in results:
        score = f"{100 * r['score']:.0f}%" if r["score"] is not None else "-"
        out.append(f"{r['module']:11} {r['killed']:>6}/{r['total']:<6} {score:>6}  {len(r['equivalent']):>10}  "
                   f"{r['sampled']:>7}/{r['mutants_in_module']:<7}")
    for r in results:
        for s in r["survived"]:
            gone = "  (gone from the source: score the module again)" if s.get("result") == "gone" else ""
            out.append(f"survived  {s['file']}:{s['line']}:{s['col']}  {s['mutation']}{gone}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m {__spec__.name}", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", action="append", choices=sorted(MODULES),
                    help="module to mutate (repeatable; default: all of them)")
    ap.add_argument("--max", type=int, default=0, help="sample at most N mutants per module (fixed seed)")
    ap.add_argument("--seed", type=int, default=24, help="the sampling seed (default 24)")
    ap.add_argument("--timeout", type=float, default=0, help="seconds per mutant (default: 4x the unmutated run + 20)")
    ap.add_argument("--list", action="store_true", help="list the mutants (sampled with --max) without running them")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument("--table", nargs="+", metavar="JSON",
                    help="print the table of results saved with --json (with the current equivalents file)")
    ap.add_argument("--recheck", metavar="JSON",
                    help="run the survivors of results saved with --json again against the tests as they are now")
    args = ap.parse_args(argv)
    if args.table:
        eqs = load_equivalent()
        for f in args.table:
            d = json.loads(Path(f).read_text())
            print(table([_reapply(r, eqs) for r in d["modules"]], d["command"]))
        return 0
    if os.nice(0) < 15:
        os.nice(15 - os.nice(0))
    names = args.module or list(MODULES)
    eqs = load_equivalent()

    def say(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.recheck:
        d = json.loads(Path(args.recheck).read_text())
        with tempfile.TemporaryDirectory(prefix="lb-mutate-") as tmp:
            tree = Path(tmp) / "tree"
            _copy_tree(tree)
            results = [recheck_module(r, tree, args, eqs, say) for r in d["modules"]]
        cmd = f"{d['command']}; python3 -m bench.mutate --recheck {args.recheck}"
        if args.json:
            print(json.dumps({**d, "command": cmd, "modules": results}, indent=1))
            print(table(results, cmd), file=sys.stderr)
        else:
            print(table(results, cmd))
        return 0

    if args.list:
        for name in names:
            ms = [m for f in MODULES[name]["files"] for m in mutants_of(f, functions=MODULES[name].get("functions"))]
            if args.max and len(ms) > args.max:
                ms = sorted(random.Random(f"{args.seed}:{name}").sample(ms, args.max),
                            key=lambda m: (m.file, m.line, m.col, m.op, m.arg))
            for m in ms:
                print(f"{name:10} {m.where():40} {m.mutation}")
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="lb-mutate-") as tmp:
        tree = Path(tmp) / "tree"
        _copy_tree(tree)
        for name in names:
            r = run_module(name, MODULES[name], tree, args, eqs, say)
            results.append(r)
            say(f"{name}: {r['killed']}/{r['total']} killed, {len(r['equivalent'])} equivalent")
    cmd = "python3 -m bench.mutate" + "".join(f" --module {n}" for n in (args.module or [])) + \
        (f" --max {args.max} --seed {args.seed}" if args.max else "")
    if args.json:
        print(json.dumps({"command": cmd, "seed": args.seed, "max": args.max, "modules": results}, indent=1))
        print(table(results, cmd), file=sys.stderr)  # the table too, for the one reading the terminal
    else:
        print(table(results, cmd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
