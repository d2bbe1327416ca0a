"""Checkable facts about the package's shape: no function takes more than about
eight parameters (option bundles are small frozen dataclasses), no module is a house of several
jobs (none over MAX_LINES lines) and no function does several things (none over MAX_FUNCTION lines), no module takes another's private names, and every SQL statement lives
in store.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "layoutbench"
MAX_PARAMS = 8
#: a module longer than this holds more than one job: split it along its seams
MAX_LINES = 600
#: a function longer than this does several things: name each (a reader should see a function whole)
MAX_FUNCTION = 80

#: (module, function) pairs allowed more parameters; empty, and kept so: slim the function instead
KNOWN: set[tuple[str, str]] = set()


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return names + ([a.vararg.arg] if a.vararg else []) + ([a.kwarg.arg] if a.kwarg else [])


def too_many(root: Path = PKG) -> list[str]:
    out = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (rel, node.name) not in KNOWN:
                n = len(_params(node))
                if n > MAX_PARAMS:
                    out.append(f"{rel}:{node.lineno} {node.name}() takes {n} parameters")
    return out


def test_no_function_takes_more_than_eight_parameters():
    assert too_many() == []


def test_the_check_sees_a_long_signature(tmp_path):
    (tmp_path / "m.py").write_text("def f(a, b, c, d, e, f, g, h, i):\n    pass\n"
                                   "class C:\n    def ok(self, a, b, c, d, e, f, g, h):\n        pass\n")
    assert too_many(tmp_path) == ["m.py:1 f() takes 9 parameters"]


def commands_taking_keywords() -> list[str]:
    """Every command of the ``layoutbench`` tree whose function takes ``**kwargs``, and every one built by
    ``options_of`` whose options class is not exactly its parameters."""
    import dataclasses
    import inspect

    import click

    from layoutbench.commands import main

    out = []

    def walk(group, prefix):
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group):
                walk(cmd, f"{prefix}{name} ")
                continue
            fn = inspect.unwrap(cmd.callback)
            if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()):
                out.append(f"{prefix}{name}: takes **{fn.__name__}'s keywords")
            cls = getattr(cmd.callback, "options_class", None)
            if cls is not None:
                fields, params = {f.name for f in dataclasses.fields(cls)}, {p.name for p in cmd.params}
                if fields != params:
                    out.append(f"{prefix}{name}: {cls.__name__} differs from its parameters: {sorted(fields ^ params)}")

    walk(main, "")
    return out


def test_every_command_takes_named_parameters_or_one_options_object():
    """No command function takes ``**kwargs``: each takes its parameters by name, or one frozen options
    object (``options_of``) whose fields are exactly the command's parameters, so a renamed or added option
    that the object lacks fails here, not at a user's first call."""
    assert commands_taking_keywords() == []


def test_the_command_check_sees_a_keywords_command_and_a_missing_field(monkeypatch):
    import dataclasses

    import click

    from layoutbench.commands import main, options_of

    @dataclasses.dataclass(frozen=True)
    class Two:
        a: str

    @click.command("probe-kw")
    @click.option("--a")
    def kw(**o):
        pass

    @click.command("probe-cls")
    @click.option("--a")
    @click.option("--b")
    @options_of(Two)
    def cls(opts):
        pass

    monkeypatch.setitem(main.commands, "probe-kw", kw)
    monkeypatch.setitem(main.commands, "probe-cls", cls)
    assert commands_taking_keywords() == ["probe-kw: takes **kw's keywords",
                                          "probe-cls: Two differs from its parameters: ['b']"]


def long_modules(root: Path = PKG) -> list[str]:
    return [f"{f.relative_to(root).as_posix()}: {n} lines" for f in sorted(root.rglob("*.py"))
            if (n := len(f.read_text().splitlines())) > MAX_LINES]


def test_no_module_is_longer_than_the_limit(tmp_path):
    assert long_modules() == []
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "small.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path) == [f"big.py: {MAX_LINES + 1} lines"]


def long_functions(root: Path = PKG) -> list[str]:
    return [f"{f.relative_to(root).as_posix()}:{node.lineno} {node.name}() is {n} lines"
            for f in sorted(root.rglob("*.py")) for node in ast.walk(ast.parse(f.read_text(), str(f)))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION]


def test_no_function_is_longer_than_the_limit(tmp_path):
    assert long_functions() == []
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION - 1))
    (tmp_path / "m.py").write_text(f"def ok():\n{body}\n\ndef big():\n{body}    return x0\n")
    assert long_functions(tmp_path) == [f"m.py:{MAX_FUNCTION + 3} big() is {MAX_FUNCTION + 1} lines"]


#: a statement's keyword, not a keyword on its own in quotes (postgres.py tells a read by its first word)
SQL = re.compile(r"\b(SELECT|INSERT)\b(?![\"'])")


def test_only_the_store_speaks_sql():
    hits = [f"{f.relative_to(PKG)}:{i}" for f in sorted(PKG.rglob("*.py")) if f.name != "store.py"
            for i, line in enumerate(f.read_text().splitlines(), 1) if SQL.search(line)]
    assert hits == []
    assert SQL.search('db.execute("SELECT id FROM runs")') and SQL.search("INSERT INTO builds")
    assert not SQL.search('startswith("SELECT")')


def test_a_command_starts_without_the_heavy_libraries_it_does_not_need():
    """Every command imports the command line first: scipy (scipy.stats about a second of imports,
    scipy.special a tenth), GitPython and matplotlib are imported where they are used, not at its start
    (the exit codes of its help are exits.py's, not the verdict's)."""
    import subprocess
    import sys

    code = ("import sys; from layoutbench.cli import main; "
            "print(' '.join(m for m in ('scipy', 'git', 'matplotlib') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "", p.stdout


def private_reach(root: Path = PKG) -> list[str]:
    """Every place a module takes another module's private name: ``from m import _x``, or ``m._x`` on a
    name the module imported (a private name is its module's own; what another needs is public)."""
    out = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        tree = ast.parse(f.read_text(), str(f))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    name = a.asname or a.name.split(".")[0]
                    imported.add(name)
                    if isinstance(node, ast.ImportFrom) and a.name.startswith("_") and not a.name.startswith("__"):
                        out.append(f"{rel}:{node.lineno} imports {a.name} from {node.module or '.'}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in imported:
                    out.append(f"{rel}:{node.lineno} reads {ast.unparse(node)}")
    return out


def test_no_module_takes_another_modules_private_names(tmp_path):
    assert private_reach() == []
    (tmp_path / "a.py").write_text("from .b import _x, y\nfrom . import c\n\ndef f(self):\n    return c._z, c.d._v, self._w\n")
    assert private_reach(tmp_path) == ["a.py:1 imports _x from b", "a.py:5 reads c._z", "a.py:5 reads c.d._v"]


def reaches_tests(root: Path, tests: Path) -> list[str]:
    """Where a module under ``root`` imports one of the test suite's modules (a file of ``tests``),
    or puts a tests folder on ``sys.path``."""
    names = {p.stem for p in tests.glob("*.py")}
    out = []
    for f in sorted(root.rglob("*.py")):
        text = f.read_text()
        for node in ast.walk(ast.parse(text)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            out += [f"{f.relative_to(root)}:{node.lineno}: {m}" for m in mods if m.split(".")[0] in names]
        if re.search(r"sys\.path.*\btests\b", text):
            out.append(f"{f.relative_to(root)}: puts the tests on sys.path")
    return out


def test_bench_imports_no_test(tmp_path):
    """bench/ is a package the tests import (its labs, its hostile inputs); it imports none of them."""
    root = PKG.parent
    assert reaches_tests(root / "bench", root / "tests") == []
    (tmp_path / "b").mkdir()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "_lab.py").write_text("")
    (tmp_path / "b" / "x.py").write_text("import os\nfrom _lab import thing\n")
    (tmp_path / "b" / "y.py").write_text("import sys\nsys.path.insert(0, str(ROOT / 'tests'))\n")
    assert reaches_tests(tmp_path / "b", tmp_path / "t") == ["x.py:2: _lab", "y.py: puts the tests on sys.path"]


def edits_sys_path(root: Path) -> list[str]:
    """Every line of a module under ``root`` that puts a folder on ``sys.path`` (``sys.path.insert`` or
    ``sys.path.append``)."""
    return [f"{f.relative_to(root).as_posix()}:{i}" for f in sorted(root.rglob("*.py"))
            for i, line in enumerate(f.read_text().splitlines(), 1)
            if "sys.path.insert" in line or "sys.path.append" in line]


def test_no_bench_script_edits_sys_path(tmp_path):
    """A bench script runs as a module from the checkout's top (``python3 -m bench.simulate``), which puts
    that checkout first on sys.path: none adds a folder of its own (a child's code in a string included)."""
    assert edits_sys_path(PKG.parent / "bench") == []
    (tmp_path / "a.py").write_text("import sys\nsys.path.insert(0, '.')\n")
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "b.py").write_text('CHILD = """\nimport sys\nsys.path.append(root)\n"""\n')
    (tmp_path / "c.py").write_text("import sys\nprint(sys.path[0])\n")
    assert edits_sys_path(tmp_path) == ["a.py:2", "s/b.py:3"]
