"""The references of the guide, printed from the code: the profile keys (docs/guide/profile-keys.md,
from the code that reads profiles) and the commands (docs/guide/commands.md, click's own help).

The keys, their tables, types, defaults and whether they are required are read from
:func:`layoutbench.profile.load` itself (every ``TABLE.get("key", type, default, required=...)``
call in it and in the functions of profile.py it hands a table, through the variables and parameters
its tables are bound to); a key's meaning is the ``#:``
comment of the dataclass field it fills. The settings of a ``[targets.NAME]`` table, and the
kinds that take each one, come from the validation table (``target_kinds.COMMON_SETTINGS`` and
``target_kinds.SETTINGS``). What the code does not say in words is in :data:`TEXT` and
:data:`SETTING_TEXT`; a key or setting with no words there or in the code stops the generator,
so a new key cannot reach the reference undocumented.

    python3 -m layoutbench.reference > docs/guide/profile-keys.md
    python3 -m layoutbench.reference commands > docs/guide/commands.md

The command reference is every command's ``--help`` as click renders it (at 100 columns), in the
order ``layoutbench --help`` lists them, a group's subcommands after it.  ``tests/test_docs.py``
checks that both committed files are this module's output.
"""

from __future__ import annotations

import ast
import inspect
import re

from . import profile, target_kinds

#: a table's path in the TOML file → the dataclass of profile.py whose fields its keys fill
CLASSES = {"": "Profile", "source": "Source", "build": "Build", "images.NAME": "Image", "targets.NAME": "Target",
           "metrics": "Profile", "bisect": "Profile"}
#: keys whose field has another name than the key
FIELDS = {("metrics", "prefix"): "metric_prefix", ("metrics", "default"): "default_metric",
          ("bisect", "paired"): "bisect_paired"}

#: meanings the dataclass comments do not give
TEXT = {
    ("", "name"): "the profile's name (letters, digits, `_ . + -`: it names folders)",
    ("", "description"): "one line for `layoutbench kernels`",
    ("", "default_target"): "the target used when `--target` is not given",
    ("source", "repo"): "a git repository, relative to the kernel.toml (`--repo` overrides it)",
    ("build", "env"): "extra environment for the build (quirks may add more)",
    ("images.NAME", "kind"): "how the image is linked: `script` (ld.lld with a full template), `command` "
                             "(the kernel's own `link_command`), `program` (the compiler driver, crt files and libc)",
    ("images.NAME", "template"): "linker-script template, from `linker-scripts/` or the profile's folder",
    ("images.NAME", "entry"): "`ENTRY()` of the image",
    ("images.NAME", "ldflags"): "extra linker flags",
    ("images.NAME", "fragment"): "with `link_command`: the file in `{fragment_dir}` that holds the layout's "
                                 "text units, INCLUDEd by the kernel's own script",
    ("metrics", "default"): "the metric `bisect` and `judge` follow when `--metric` is not given, on a target "
                            "whose kind has no default of its own (`default_by_kind`; `cg_cost` on `cachegrind`, "
                            "`ic_cost` on `qemu-icache`); `compare` shows it where the runs print it, else all",
    ("targets.NAME", "image"): "which image it runs",
    ("targets.NAME", "kind"): "how it runs: " + ", ".join(f"`{k}`" for k in target_kinds.KINDS)
                              + "; its other keys are the settings below",
    ("targets.NAME", "timeout"): "seconds before a run is killed and stored as `timeout` (> 0, at most a week)",
}

#: what each ``[targets.NAME]`` setting means, with its default
SETTING_TEXT = {
    "perf": "run the benchmark under `perf stat`: `true` (default events) or a list of event names "
            "(`--perf` sets it)",
    "pin": "a CPU list for `taskset -c`, e.g. `\"2\"` or `\"0-3\"` (`--pin` sets it)",
    "success_exit": "the exit status of a good run (0; `qemu` 33, the isa-debug-exit code)",
    "layout_cost": "seconds a new layout costs (link, install, reboot); plans a bisection's runs per layout "
                   "and `--budget 8h` (default: measured)",
    "run_cost": "seconds a rerun on the same layout costs (default: measured)",
    "args": "list of words after the image (`local`, `cachegrind`, ssh's remote image); a word that is the "
            "absolute path of a file here (a benchmark script, an input) puts that file's content in the run "
            "configuration: edited, its old runs are not reused",
    "command": "the full command as a list of words, with `{image}`, instead of the image and `args` (files "
               "named by absolute path count as in `args`)",
    "append": "the kernel command line (`--args` adds to it)",
    "memory": "guest memory (`128M`)",
    "machine": "QEMU machine (`q35`)",
    "cpu": "QEMU CPU model (`host` under KVM, else `max`)",
    "accel": "`auto` (KVM only with `kvm_intel`/`kvm_amd`, never `kvm_pvm`; else TCG), `kvm` or `tcg`",
    "initrd": "an initrd; `{image_dir}` is the variant's folder",
    "debug_exit": "add isa-debug-exit at port 0xf4 (true)",
    "qemu": "the QEMU binary (`qemu-system-x86_64`)",
    "extra_args": "more QEMU arguments, a list of words",
    "i1": "the simulated I1 cache, `\"SIZE,ASSOC,LINE\"` (`\"4096,2,64\"`)",
    "d1": "cachegrind's D1 cache, `\"SIZE,ASSOC,LINE\"` (valgrind's default)",
    "ll": "cachegrind's last-level cache, `\"SIZE,ASSOC,LINE\"` (valgrind's default)",
    "miss_weight": "the cost of an I1 miss in instructions: cost = instructions + weight × misses (20)",
    "plugin": "a built cache-model plugin instead of `native/qemu-icache`'s",
    "icount": "QEMU's `-icount` (`shift=0,sleep=off`)",
    "rtc": "QEMU's `-rtc` (`base=2026-01-01T00:00:00,clock=vm`: the same clock in every boot)",
    "guest_metrics": "keep the guest's or program's own (timed) metric lines beside the counts (false): a "
                     "`--metric` it does not count is then checked at the first run, not before the build",
    "host": "host name or `~/.ssh/config` alias (required)",
    "port": "ssh port (the ssh config's)",
    "user": "ssh user (the ssh config's)",
    "identity": "ssh key file (the ssh config's)",
    "ssh_config": "the ssh config file (`~/.ssh/config`)",
    "known_hosts": "a known_hosts file, or `\"none\"` to accept any host key",
    "connect_timeout": "seconds to wait for a connection (15)",
    "remote_dir": "where images go on the machine (`/tmp/layoutbench`)",
    "install": "shell command run after the copy, e.g. `cp {image} /boot/bench.elf`",
    "reboot": "reboot before each run and wait for the new boot (false)",
    "reboot_command": "how to reboot (`reboot`)",
    "boot_id_command": "what names one boot (`/proc/sys/kernel/random/boot_id`, else `sysctl -n kern.boottime`)",
    "boot_timeout": "seconds to wait for the machine to come back (600)",
    "boot_poll": "seconds between tries while it reboots (5)",
    "collect": "commands whose output is added to the run's log afterwards",
    "host_id": "the host recorded with every run (default: from the connection or place)",
    "env": "the labgrid environment YAML",
    "role": "the target in that environment",
    "image_key": "the `images:` key set to each variant's image",
    "state": "the strategy state that boots it",
    "off_state": "the strategy state afterwards",
    "boot_args": "added to a QEMUDriver's kernel command line",
    "coordinator": "`HOST:PORT` of `labgrid-coordinator` (`$LG_COORDINATOR`)",
    "places": "names or shell patterns of the places it may use (all)",
    "tags": "tags a place must have, e.g. `{ pool = \"bench\" }`",
    "acquire_timeout": "seconds to wait for a place (3600)",
    "parallel": "a bisection's probes per round (one per usable place)",
}

_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "true/false", "list": "list",
          "dict": "table"}
#: defaults and conditions that are expressions in profile.load, in words
_WORDS = {
    "file.parent.name": "the folder's name",
    "next(iter(images))": "the first image",
    "next(iter(targets), '')": "the first target",
    "'command' if link_command is not None else 'script'": "`command` with `link_command`, else `script`",
    "PROGRAM_TEMPLATE if program else None": "`program-text.ld` for a program",
    "['text'] if program else ['text', 'rodata', 'data', 'bss']":
        "`[\"text\"]` for a program, else `[\"text\", \"rodata\", \"data\", \"bss\"]`",
    "b.get('cc', str, 'clang-19')": "`[build] cc`",
    "ikind == 'script'": "for kind `script`",
}


def _words(node: ast.AST | None) -> str:
    if node is None:
        return ""
    text = ast.unparse(node)
    if text in _WORDS:
        return _WORDS[text]
    try:
        value = ast.literal_eval(node)
    except ValueError:
        raise LookupError(f"profile.load: say in _WORDS what {text!r} means") from None
    if value is None or value == {} or value == [] or value == "":
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, int) and value >= 4096:
        return f"`{value:#x}`"
    return f"`{value!r}`".replace("'", '"')


def profile_keys() -> list[tuple[str, str, str, str, str]]:
    """(table, key, type, required, default) of every key :func:`profile.load` reads, in its order: its
    own reads, and at each call of another function of profile.py that it hands a table, that
    function's reads (the table bound to its parameter), and so on down."""
    funcs = {n.name: n for n in ast.parse(inspect.getsource(profile)).body if isinstance(n, ast.FunctionDef)}
    out: list[tuple[str, str, str, str, str]] = []
    _read_keys(funcs["load"], {}, funcs, out)
    return out


def _table_of(node: ast.AST, tables: dict[str, str]) -> str | None:
    """The table path an expression stands for: a variable bound to a table, or ``T.table("name")`` of
    one (a name that is not a constant: NAME); None for anything else."""
    if isinstance(node, ast.Name):
        return tables.get(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "table" \
            and isinstance(node.func.value, ast.Name) and node.func.value.id in tables and node.args:
        arg = node.args[0]
        sub = arg.value if isinstance(arg, ast.Constant) else "NAME"
        return ".".join(p for p in (tables[node.func.value.id], sub) if p)
    return None


def _read_keys(fn: ast.FunctionDef, tables: dict[str, str], funcs: dict, out: list) -> None:
    nodes = sorted((n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.Call))),
                   key=lambda n: (n.lineno, n.col_offset))
    tables = dict(tables)
    for n in nodes:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            call, target = n.value, n.targets[0]
            f = call.func
            if isinstance(f, ast.Name) and f.id == "_Table" and isinstance(target, ast.Name):
                tables[target.id] = ""
            elif isinstance(target, ast.Name) and (t := _table_of(call, tables)) is not None:
                tables[target.id] = t
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in funcs:
            callee = funcs[n.func.id]  # a function of profile.py handed tables: its reads, here
            params = [x.arg for x in callee.args.args]
            bound = {params[i]: t for i, a in enumerate(n.args)
                     if i < len(params) and (t := _table_of(a, tables)) is not None}
            if bound:
                _read_keys(callee, bound, funcs, out)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "strings") \
                and isinstance(n.func.value, ast.Name) and n.func.value.id in tables \
                and n.args and isinstance(n.args[0], ast.Constant):
            table, key = tables[n.func.value.id], n.args[0].value
            kw = {k.arg: k.value for k in n.keywords}
            if n.func.attr == "strings":  # _Table.strings(key, default): a list of strings
                typ, default = "list of strings", n.args[1]
            else:
                typ = " or ".join(_TYPES[t] for t in re.findall(r"\w+", ast.unparse(n.args[1])))
                default = n.args[2] if len(n.args) > 2 else kw.get("default")
            if isinstance(default, ast.Constant) and default.value is Ellipsis:
                default = None
            req = kw.get("required")
            required = "yes" if isinstance(req, ast.Constant) and req.value is True else \
                ("" if req is None or isinstance(req, ast.Constant) else _words(req))
            row = (table, key, typ, required, _words(default))
            if row[:2] not in [r[:2] for r in out]:
                out.append(row)


def field_comments(cls: str) -> dict[str, str]:
    """field → its ``#:`` comment (on the line, or on the lines just above it) in profile.py."""
    lines = inspect.getsource(profile).splitlines()
    node = next(n for n in ast.parse("\n".join(lines)).body if isinstance(n, ast.ClassDef) and n.name == cls)
    out = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            line = lines[stmt.lineno - 1]
            text = line.split("#:", 1)[1].strip() if "#:" in line else ""
            if not text:
                above, i = [], stmt.lineno - 2
                while i >= 0 and lines[i].strip().startswith("#"):
                    above.insert(0, lines[i].strip())
                    i -= 1
                if any(a.startswith("#:") for a in above):
                    text = " ".join(a.lstrip("#:").strip() for a in above)
            if text:
                out[stmt.target.id] = text
    return out


def _meaning(table: str, key: str) -> str:
    if (table, key) in TEXT:
        return TEXT[(table, key)]
    text = field_comments(CLASSES[table]).get(FIELDS.get((table, key), key))
    if not text:
        raise LookupError(f"[{table}] {key}: no #: comment on its field in profile.py and no entry in "
                          f"reference.TEXT; write one")
    text = text.replace("<", "&lt;").replace(">", "&gt;").replace("``", "`").replace("|", "\\|")
    return re.sub(r"\{(\w+)\}", r"`{\1}`", text)


def settings_table() -> list[tuple[str, str, str]]:
    """(setting, kinds that take it, meaning) for every ``[targets.NAME]`` setting."""
    names = list(dict.fromkeys([*target_kinds.COMMON_SETTINGS, *(s for v in target_kinds.SETTINGS.values() for s in v)]))
    rows = []
    for s in names:
        if s not in SETTING_TEXT:
            raise LookupError(f"target setting {s!r} has no entry in reference.SETTING_TEXT; write one")
        kinds = "every kind" if s in target_kinds.COMMON_SETTINGS else \
            ", ".join(f"`{k}`" for k, v in target_kinds.SETTINGS.items() if s in v)
        rows.append((s, kinds, SETTING_TEXT[s]))
    return rows


def _head(title: str, args: str, page: str, intro: str) -> list[str]:
    """A generated page's first lines: its title, how to make it again (``python3 -m layoutbench.reference``
    with ``args``, into ``page``) and its introduction."""
    return [f"# {title}", "",
            f"<!-- Generated by `python3 -m layoutbench.reference{args} > {page}`; "
            "do not edit (tests/test_docs.py checks it). -->", "", intro, ""]


def render() -> str:
    """The whole Markdown page."""
    out = _head("Profile keys", "", "docs/guide/profile-keys.md",
                "Every key of a `kernel.toml`, read from the code that loads it. How to write a profile: "
                "[kernels.md](kernels.md#writing-a-profile).")
    rows = profile_keys()
    for table in dict.fromkeys(r[0] for r in rows):
        out += [f"## `[{table}]`" if table else "## Top level", "",
                "| key | type | required | default | meaning |", "|---|---|---|---|---|"]
        for t, key, typ, req, default in rows:
            if t == table:
                out.append(f"| `{key}` | {typ} | {req} | {default} | {_meaning(t, key)} |")
        out.append("")
    out += ["## Target settings", "",
            "Beside `kind`, `image` and `timeout`, a `[targets.NAME]` table takes the settings of its kind; "
            "any other key is refused with one line naming the file, the table and the key.", "",
            "| setting | kinds | meaning (default) |", "|---|---|---|"]
    out += [f"| `{s}` | {kinds} | {text} |" for s, kinds, text in settings_table()]
    return "\n".join(out) + "\n"


def commands() -> list[tuple[str, str]]:
    """(command path, its --help text) for ``layoutbench`` and every command under it."""
    import click

    from .cli import main

    out: list[tuple[str, str]] = []

    def walk(cmd: click.Command, path: list[str], parent: click.Context | None) -> None:
        settings = {**cmd.context_settings, "terminal_width": 100, "max_content_width": 100}
        ctx = click.Context(cmd, info_name=path[-1], parent=parent, **settings)
        out.append((" ".join(path), cmd.get_help(ctx)))
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name], ctx)

    walk(main, ["layoutbench"], None)
    return out


def render_commands() -> str:
    """The command reference page."""
    out = _head("Commands", " commands", "docs/guide/commands.md",
                "Every command's `--help`, as it prints it. What the output means: [reading-output.md](reading-output.md).")
    for path, text in commands():
        out += [f"## {path}", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    print(render_commands() if sys.argv[1:] == ["commands"] else render(), end="")
