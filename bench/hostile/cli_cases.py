"""The hostile-input table for the command line and profiles: every bad option,
profile setting, store and sample a careful user or an attacker tried, each judged by
:mod:`_hostile` (one clean error line, or the right behaviour).

``cases(tmp)`` is the interface ``python3 -m bench.hostile`` and ``tests/test_hostile_cli.py`` use.
Most inputs are refused before anything is built; those that need a build use ``tiny``, a
two-file C program (compiled once, linked per layout in a fraction of a second) whose
``echo`` target prints the value given with ``--args`` as its metric.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bench import hostile as H

MAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
unsigned long hot(unsigned long x);
int main(int argc, char **argv) {
    unsigned long h = 0;
    for (long i = 0; i < 1000; i++) h = hot(h + i);
    printf("LAYOUTBENCH metric name=t value=%lu unit=x better=lower\n", 1000 + (h & 7));
    printf("LAYOUTBENCH end status=ok\n");
    return 0;
}
"""
HOT_C = r"""
unsigned long hot(unsigned long x) { return x * 2654435761ul ^ (x >> 7); }
unsigned long cold(unsigned long x) { return x + 1; }
"""
MAKEFILE = """\
OBJS := $(OBJDIR)/main.o $(OBJDIR)/hot.o
all: $(OBJS)
\tprintf '%s\\n' main.o hot.o > $(OBJDIR)/tiny.objs
$(OBJDIR)/%.o: %.c
\t$(CC) -O1 -ffunction-sections -c $< -o $@
"""

#: the echo target: prints the first word of --args as metric t
ECHO = ('["sh", "-c", "echo LAYOUTBENCH metric name=t value=$1 unit=x better=lower; '
        'echo LAYOUTBENCH end status=ok", "sh"]')


def tiny_profile(name: str = "tiny", build: str | None = None, extra: str = "", build_timeout: int = 120,
                 targets: str = "") -> str:
    build = build or "make -s OBJDIR={objdir} CC={cc} && awk '{print $1}' {objdir}/tiny.objs > /dev/null"
    return f"""\
name = "{name}"
description = "hostile-input test program"
default_target = "echo"
{extra}
[source]
tree = "src"

[build]
command = {json.dumps(build)}
cc = "clang-19"
ld = "ld.lld-19"
timeout = {build_timeout}

[images.tiny]
kind = "program"
objects = "tiny.objs"

[targets.echo]
kind = "local"
image = "tiny"
timeout = 30
command = {ECHO}

[targets.prog]
kind = "local"
image = "tiny"
timeout = 30

[targets.cg]
kind = "cachegrind"
image = "tiny"
timeout = 60
{targets}
[metrics]
default = "t"
"""


def as_from_a_terminal(ignored: tuple = ()):
    """A ``preexec_fn``: the child starts with SIGHUP, SIGINT and SIGTERM at their default, as from a
    terminal, whatever this process was started with (under ``nohup`` SIGHUP is ignored and a child
    inherits that); the signals in ``ignored`` ignored, as ``nohup`` or ``&`` leave them."""
    def signals() -> None:
        for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)
    return signals


def write_tiny(d: Path, **kw) -> Path:
    """A profile folder ``d`` holding the tiny program; its kernel.toml."""
    (d / "src").mkdir(parents=True, exist_ok=True)
    for n, text in {"main.c": MAIN_C, "hot.c": HOT_C, "Makefile": MAKEFILE}.items():
        (d / "src" / n).write_text(text)
    (d / "kernel.toml").write_text(tiny_profile(**kw))
    return d / "kernel.toml"


def write_tiny_history(d: Path, git) -> Path:
    """The tiny program in a git repository ``d`` of four commits, the third twice as slow (its SCALE
    doubles; the others change cold code); its kernel.toml.  ``git(repo, *args)`` runs git."""
    write_tiny(d)
    main = MAIN_C.replace("1000 + (h & 7)", "SCALE * (1000 + (((unsigned long)&hot >> 4) & 15))") \
        .replace("#include <stdlib.h>", '#include <stdlib.h>\n#include "scale.h"')
    (d / "src" / "main.c").write_text(main)
    (d / "src" / "scale.h").write_text("#define SCALE 1\n")
    (d / "kernel.toml").write_text((d / "kernel.toml").read_text().replace('tree = "src"', 'repo = "."\nsubdir = "src"'))
    git(d, "init", "-q", "-b", "main")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "one")
    (d / "src" / "hot.c").write_text(HOT_C + "unsigned long c2(unsigned long x) { return x + 2; }\n")
    git(d, "commit", "-qam", "two")
    (d / "src" / "scale.h").write_text("#define SCALE 2\n")
    git(d, "commit", "-qam", "three: twice as slow")
    (d / "src" / "hot.c").write_text(HOT_C + "unsigned long c2(unsigned long x) { return x + 3; }\n")
    git(d, "commit", "-qam", "four")
    return d / "kernel.toml"


#: a valid profile that only this table loads (its paths are never built): the base of the
#: profile mutations below.  Source and template need not exist for loading.
BASE = tiny_profile()

#: (label, text replaced, replacement): profile mutations that must be refused in one line
PROFILE_MUTATIONS = [
    ("name traversal", 'name = "tiny"', 'name = "../../../x"'),
    ("name with slash", 'name = "tiny"', 'name = "a/b"'),
    ("name hidden", 'name = "tiny"', 'name = ".hidden"'),
    ("name empty", 'name = "tiny"', 'name = ""'),
    ("name dotdot", 'name = "tiny"', 'name = ".."'),
    ("name not a string", 'name = "tiny"', "name = 5"),
    ("name too long", 'name = "tiny"', f'name = "{"x" * 200}"'),
    ("name with space", 'name = "tiny"', 'name = "a b"'),
    ("name with newline", 'name = "tiny"', 'name = "a\\nb"'),
    ("name with NUL", 'name = "tiny"', 'name = "a\\u0000b"'),
    ("image name traversal", "[images.tiny]", '[images."../x"]'),
    ("target name traversal", "[targets.echo]", '[targets."../../x"]'),
    ("target name slash", "[targets.prog]", '[targets."a/b"]'),
    ("target name empty", "[targets.prog]", '[targets.""]'),
    ("args a string", "[targets.prog]\n", '[targets.prog]\nargs = "1000"\n'),
    ("args of booleans", "[targets.prog]\n", "[targets.prog]\nargs = [true]\n"),
    ("args nested", "[targets.prog]\n", "[targets.prog]\nargs = [[1]]\n"),
    ("args a table", "[targets.prog]\n", "[targets.prog]\nargs = {a = 1}\n"),
    ("command a string", "[targets.prog]\n", '[targets.prog]\ncommand = "ls"\n'),
    ("command empty", "[targets.prog]\n", "[targets.prog]\ncommand = []\n"),
    ("collect a string", "[targets.prog]\n", '[targets.prog]\ncollect = "dmesg"\n'),
    ("quirks missing file", 'default_target = "echo"', 'default_target = "echo"\nquirks = "missing.toml"'),
    ("quirks not a string", 'default_target = "echo"', 'default_target = "echo"\nquirks = 5'),
    ("miss_weight heavy", "[targets.cg]\n", '[targets.cg]\nmiss_weight = "heavy"\n'),
    ("miss_weight negative", "[targets.cg]\n", "[targets.cg]\nmiss_weight = -1\n"),
    ("miss_weight nan", "[targets.cg]\n", "[targets.cg]\nmiss_weight = nan\n"),
    ("miss_weight inf", "[targets.cg]\n", "[targets.cg]\nmiss_weight = inf\n"),
    ("miss_weight bool", "[targets.cg]\n", "[targets.cg]\nmiss_weight = true\n"),
    ("setting misspelt", "[targets.cg]\n", "[targets.cg]\nmis_weight = 5\n"),
    ("setting of another kind", "[targets.prog]\n", '[targets.prog]\ni1 = "4096,2,64"\n'),
    ("i1 word", "[targets.cg]\n", '[targets.cg]\ni1 = "big"\n'),
    ("i1 number", "[targets.cg]\n", "[targets.cg]\ni1 = 4096\n"),
    ("i1 two fields", "[targets.cg]\n", '[targets.cg]\ni1 = "4096,2"\n'),
    ("ll injection", "[targets.cg]\n", '[targets.cg]\nll = "1,1,1 --log-file=/tmp/x"\n'),
    ("success_exit zero", "[targets.prog]\n", '[targets.prog]\nsuccess_exit = "zero"\n'),
    ("success_exit float", "[targets.prog]\n", "[targets.prog]\nsuccess_exit = 1.5\n"),
    ("success_exit 300", "[targets.prog]\n", "[targets.prog]\nsuccess_exit = 300\n"),
    ("success_exit negative", "[targets.prog]\n", "[targets.prog]\nsuccess_exit = -1\n"),
    ("success_exit bool", "[targets.prog]\n", "[targets.prog]\nsuccess_exit = true\n"),
    ("target timeout nan", "timeout = 30\ncommand", "timeout = nan\ncommand"),
    ("target timeout -1", "timeout = 30\ncommand", "timeout = -1\ncommand"),
    ("target timeout 0", "timeout = 30\ncommand", "timeout = 0\ncommand"),
    ("target timeout inf", "timeout = 30\ncommand", "timeout = inf\ncommand"),
    ("target timeout string", "timeout = 30\ncommand", 'timeout = "30"\ncommand'),
    ("target timeout 1e300", "timeout = 30\ncommand", "timeout = 1e300\ncommand"),
    ("build timeout nan", "timeout = 120", "timeout = nan"),
    ("build timeout -1", "timeout = 120", "timeout = -1"),
    ("build timeout 0", "timeout = 120", "timeout = 0"),
    ("build timeout inf", "timeout = 120", "timeout = inf"),
    ("build timeout bool", "timeout = 120", "timeout = true"),
    ("perf a number", "[targets.prog]\n", "[targets.prog]\nperf = 5\n"),
    ("perf list of numbers", "[targets.prog]\n", "[targets.prog]\nperf = [1]\n"),
    ("perf event with space", "[targets.prog]\n", '[targets.prog]\nperf = "a b"\n'),
    ("pin word", "[targets.prog]\n", '[targets.prog]\npin = "abc"\n'),
    ("pin bool", "[targets.prog]\n", "[targets.prog]\npin = true\n"),
    ("pin backwards", "[targets.prog]\n", '[targets.prog]\npin = "3-1"\n'),
    ("unknown target kind", 'kind = "cachegrind"', 'kind = "nosuch"'),
    ("kind not a string", 'kind = "cachegrind"', "kind = 3"),
    ("target names missing image", 'kind = "cachegrind"\nimage = "tiny"', 'kind = "cachegrind"\nimage = "nope"'),
    ("default_target missing", 'default_target = "echo"', 'default_target = "nope"'),
    ("no build table", "[build]\n", "[buildx]\n"),
    ("build command missing", "command = \"make", "commandx = \"make"),
    ("build command a list", 'command = "make -s OBJDIR={objdir} CC={cc} && awk \'{print $1}\' {objdir}/tiny.objs > '
     '/dev/null"', 'command = ["make"]'),
    ("build env not a table", 'ld = "ld.lld-19"\n', 'ld = "ld.lld-19"\nenv = 5\n'),
    ("build inputs missing file", 'ld = "ld.lld-19"\n', 'ld = "ld.lld-19"\ninputs = ["nope.mk"]\n'),
    ("build inputs a string", 'ld = "ld.lld-19"\n', 'ld = "ld.lld-19"\ninputs = "a.mk"\n'),
    ("no images", '[images.tiny]\nkind = "program"\nobjects = "tiny.objs"\n', "[images]\n"),
    ("image kind unknown", 'kind = "program"', 'kind = "exe"'),
    ("image objects missing", 'objects = "tiny.objs"', 'objectsx = "tiny.objs"'),
    ("image template missing", 'kind = "program"\nobjects = "tiny.objs"',
     'kind = "script"\nobjects = "tiny.objs"\ntemplate = "nope.ld"\nentry = "x"\nbase = 0'),
    ("image base a string", 'kind = "program"\nobjects = "tiny.objs"',
     'kind = "script"\nobjects = "tiny.objs"\ntemplate = "elf-x86_64.ld.in"\nentry = "x"\nbase = "0x1000"'),
    ("source missing", "[source]\ntree = \"src\"", "[source]"),
    ("source repo a number", "[source]\ntree = \"src\"", "[source]\nrepo = 5"),
    ("ssh port a string", "[targets.cg]\n", '[targets.s]\nkind = "ssh"\nhost = "h"\nport = "22"\n\n[targets.cg]\n'),
    ("ssh remote_dir a number", "[targets.cg]\n",
     '[targets.s]\nkind = "ssh"\nhost = "h"\nremote_dir = 5\n\n[targets.cg]\n'),
    ("ssh remote_dir blank", "[targets.cg]\n",
     '[targets.s]\nkind = "ssh"\nhost = "h"\nremote_dir = " "\n\n[targets.cg]\n'),
    ("ssh connect_timeout -1", "[targets.cg]\n",
     '[targets.s]\nkind = "ssh"\nhost = "h"\nconnect_timeout = -1\n\n[targets.cg]\n'),
    ("ssh boot_timeout nan", "[targets.cg]\n",
     '[targets.s]\nkind = "ssh"\nhost = "h"\nboot_timeout = nan\n\n[targets.cg]\n'),
    ("ssh install a list", "[targets.cg]\n",
     '[targets.s]\nkind = "ssh"\nhost = "h"\ninstall = ["x"]\n\n[targets.cg]\n'),
    ("qemu append a list", "[targets.cg]\n", '[targets.q]\nkind = "qemu"\nappend = ["x"]\n\n[targets.cg]\n'),
    ("metrics prefix a number", "[metrics]\n", "[metrics]\nprefix = 5\n"),
    ("metrics default a number", '[metrics]\ndefault = "t"', '[metrics]\ndefault = 5'),
    # every setting of every kind typed at load, before any build or boot
    *[(f"qemu-icache {key} = {value}", "[targets.cg]\n", f'[targets.q]\nkind = "qemu-icache"\n{key} = {value}\n\n'
       "[targets.cg]\n") for key, value in (
        ("debug_exit", '"yes"'), ("guest_metrics", '"yes"'), ("rtc", "{ base = 1 }"), ("extra_args", '"-smp 2"'),
        ("plugin", '"missing-plugin.so"'), ("memory", '"999999T"'), ("memory", '"0"'), ("memory", "true"),
        ("memory", '"lots"'), ("i1", '"3000,2,64"'), ("accel", '"kvm"'), ("icount", "5"), ("miss_weight", '"x"'))],
    *[(f"qemu {key} = {value}", "[targets.cg]\n", f'[targets.q]\nkind = "qemu"\n{key} = {value}\n\n[targets.cg]\n')
      for key, value in (("accel", '"fast"'), ("machine", "5"), ("initrd", "[1]"), ("qemu", '""'),
                         ("debug_exit", "1"), ("extra_args", "[true]"))],
    *[(f"labgrid-places {key} = {value}", "[targets.cg]\n",
       f'[targets.lp]\nkind = "labgrid-places"\ncoordinator = "127.0.0.1:1"\n{key} = {value}\n\n[targets.cg]\n')
      for key, value in (("parallel", '"many"'), ("parallel", "0"), ("parallel", "-3"), ("parallel", "2.5"),
                         ("acquire_timeout", '"soon"'), ("acquire_timeout", "nan"), ("acquire_timeout", "-5"),
                         ("acquire_timeout", "inf"), ("places", "5"), ("places", "[]"), ("places", "[1]"),
                         ("tags", '"bench"'), ("tags", "{ pool = true }"), ("reboot", '"yes"'),
                         ("coordinator", "5"))],
    *[(f"labgrid {key} = {value}", "[targets.cg]\n", f'[targets.lg]\nkind = "labgrid"\n{key} = {value}\n\n'
       "[targets.cg]\n") for key, value in (("env", "5"), ("role", "[1]"), ("state", "true"), ("boot_args", "[1]"))],
    *[(f"ssh {key} = {value}", "[targets.cg]\n", f'[targets.s]\nkind = "ssh"\nhost = "h"\n{key} = {value}\n\n'
       "[targets.cg]\n") for key, value in (("port", "0"), ("port", "70000"), ("reboot", '"yes"'), ("user", "5"),
                                            ("boot_poll", "0"), ("connect_timeout", "1e300"))],
    *[(f"{key} = {value}", "[targets.prog]\n", f"[targets.prog]\n{key} = {value}\n")
      for key, value in (("run_cost", "1e-320"), ("layout_cost", "1e-320"), ("run_cost", "1e308"),
                         ("layout_cost", "1e308"), ("run_cost", '"1s"'))],
    ("untracked_inputs of a number and a flag", 'ld = "ld.lld-19"\n', 'ld = "ld.lld-19"\nuntracked_inputs = [1, true]\n'),
    ("untracked_inputs nested", 'ld = "ld.lld-19"\n', 'ld = "ld.lld-19"\nuntracked_inputs = [["a"]]\n'),
    ("build inputs of numbers", 'ld = "ld.lld-19"\n', 'ld = "ld.lld-19"\ninputs = [1]\n'),
    ("image libs of numbers", 'objects = "tiny.objs"\n', 'objects = "tiny.objs"\nlibs = [5]\n'),
]

#: raw profile texts that are not a profile at all
PROFILE_TEXTS = [
    ("not TOML", b"name = \n[[["),
    ("not UTF-8", b"name = \"\xff\xfe\"\n"),
    ("empty file", b""),
    ("binary garbage", bytes(range(256)) * 4),
    ("a list at top", b"x = [1, 2"),
    ("duplicate key", b'name = "a"\nname = "b"\n'),
]


def _store_with_inf(path: Path, good: Path) -> None:
    """A copy of a store holding samples, with one sample made +inf (a store written before the gate)."""
    shutil.copyfile(good, path)
    with sqlite3.connect(path) as c:
        c.execute("UPDATE samples SET value = 1e999 WHERE id = (SELECT min(id) FROM samples)")


def _corrupt(path: Path, good: Path) -> None:
    """A copy of a healthy store with garbage over its pages after the first (indexes and tables)."""
    shutil.copyfile(good, path)
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = c.execute("PRAGMA page_size").fetchone()[0]
        n = c.execute("PRAGMA page_count").fetchone()[0]
    data = bytearray(path.read_bytes())
    for p in range(1, n):
        if p % 2:  # every other page: some tables and indexes of every kind of query
            data[p * page + 8: p * page + page - 8] = bytes([0xA5]) * (page - 16)
    path.write_bytes(bytes(data))


class World:
    """The files every case of this table uses (written once per run, built lazily)."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.work = tmp / "work"
        self.profiles = tmp / "profiles"
        self.tiny = write_tiny(self.profiles / "tiny")
        self.store = tmp / "store.sqlite"
        self.env = {"LAYOUTBENCH_DIR": str(self.work), "LAYOUTBENCH_STORE": None,
                    "LAYOUTBENCH_PROFILES": str(self.profiles)}
        self._good_store: Path | None = None

    def good_store(self) -> Path:
        """A store holding two ok runs of tiny (built and measured once)."""
        if self._good_store is None:
            s = self.tmp / "good.sqlite"
            outcome = H.cli("compare", "tiny", "--layouts", "default,sorted", "--runs", "1", "--args", "5",
                            "--store", str(s), "--no-machine-check", env=self.env, expect_ok=True)
            if outcome != "clean":
                raise RuntimeError(f"could not measure tiny: {H.last_detail}")
            with sqlite3.connect(s) as c:
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._good_store = s
        return self._good_store

    def profile(self, label: str, text: str | bytes) -> Path:
        d = self.tmp / "bad" / label.replace(" ", "-").replace("/", "_")
        d.mkdir(parents=True, exist_ok=True)
        f = d / "kernel.toml"
        f.write_bytes(text if isinstance(text, bytes) else text.encode())
        return f


def _strict_json(out: str) -> bool:
    def bad(c):
        raise ValueError(c)
    try:
        json.loads(out, parse_constant=bad)
    except ValueError:
        return False
    return True


def cases(tmp: Path) -> list[tuple[str, object]]:
    w = World(tmp)
    env = w.env
    out: list[tuple[str, object]] = []

    def err(label: str, *args: str, **kw):
        """A refused input: the error line must name the last option given or its value (an error
        about something else, e.g. every run failing later, is not this input refused)."""
        words = label.split()
        opts = [i for i, a in enumerate(words) if a.startswith("-")]
        if "check" not in kw and opts and not kw.get("expect_ok"):
            i = opts[0]  # the option the label is about, as given on the command line
            values = [args[j + 1] for j, a in enumerate(args[:-1]) if a == words[i]]
            names = [words[i]] + [repr(p) for v in values[:1] for p in [v, *v.split(",")] if p.strip()]
            kw["check"] = lambda o, e, names=names: any(n in ln for ln in e.splitlines()
                                                        if ln.startswith(("layoutbench: error", "Error"))
                                                        for n in names)
        out.append((label, functools.partial(H.cli, *args, env=env, **kw)))

    def fn(label: str, f):
        out.append((label, f))

    # -- options of compare (refused before anything is built) ---------------------------------
    c = ("compare", "tiny", "--no-machine-check")
    for v in ("", ",", "a,,b", " "):
        err(f"compare --metric {v!r}", *c, "--metric", v)
    err("compare --baseline nosuch", *c, "--baseline", "nosuch")
    err("compare --baseline random (not compared)", *c, "--layouts", "default", "--baseline", "random")
    for v in ("nan", "-1", "inf", "-inf", "1e9", "abc", "NaN"):
        err(f"compare --min-effect {v}", *c, "--min-effect", v)
    for v in ("-1", str(2**63), str(10**47), "abc", "1.5", str(2**64 + 1)):
        err(f"compare --seed {v}", *c, "--seed", v)
    err("compare --seed 2^63-2 with random:8", *c, "--seed", str(2**63 - 2), "--layouts", "random:8")
    for v in ("0", "-1", "100000", "abc"):
        err(f"compare --runs {v}", *c, "--runs", v)
    for v in ("0", "-1", "nan", "inf", "1e12", "abc", "-inf", "0.0"):
        err(f"compare --timeout {v}", *c, "--timeout", v)
    for v in ("abc", "99", "3-1", "1,,2", "-1", "0-99999999"):
        err(f"compare --pin {v}", *c, "--pin", v)
    for v in ("", "a,,b", "x y", ",", "nosuchevent_xyz"):
        err(f"compare --perf-events {v!r}", *c, "--perf-events", v)
    for v in ("random:0", "random:-1", "random:50000000", "random:abc", "nosuch", "sorted:3", "", ",", "random:1e3",
              "random:", ":3", "../x", "random:8:9"):
        err(f"compare --layouts {v!r}", *c, "--layouts", v)
    for v in ("nosuch", "rerun,reboot"):
        err(f"compare --mode {v}", *c, "--mode", v)
    for v in ("0", "-1", "abc"):
        err(f"compare -j {v}", *c, "-j", v)
    for v in ("nosuch", "../../x", "echo,nosuch", "cg,cg,nosuch"):
        err(f"compare --target {v}", *c, "--target", v)
    for v in ("a", "a,b,c", ",", "HEAD,"):
        err(f"compare --commits {v!r}", *c, "--commits", v)
    err("compare --commits with --commit", *c, "--commits", "A,B", "--commit", "A")
    err("compare --commits with relink", *c, "--commits", "A,B", "--mode", "relink", "--layouts", "random:2")
    err("compare --commits with one seeded layout", *c, "--commits", "A,B", "--layouts", "random:1")
    err("compare unknown kernel", "compare", "nosuchkernel")
    err("compare kernel traversal", "compare", "../../../etc")
    err("compare --commit nosuch", *c, "--commit", "nosuchrev")
    err("compare --repo not a repo", *c, "--repo", str(tmp), "--commit", "HEAD")

    # -- stores ----------------------------------------------------------------------------------
    for url in ("mysql://u:pw@h/db", "sqlite:///x.db", "http://example.org/x", "redis://localhost:6379/0",
                "file:///tmp/x"):
        err(f"--store {url}", "results", "--store", url, check=lambda o, e: "pw" not in e)
    for conninfo in ("host=127.0.0.1 port=1 password=S3cretPq dbname=x", "password='S3cretPq x' host=h",
                     "dbname=x user=lb password=S3cretPq"):
        def libpq(conninfo=conninfo):
            d = tmp / f"libpq-{len(out)}"
            d.mkdir(exist_ok=True)
            o = H.cli("results", "--store", conninfo, env=env, cwd=d, secrets=("S3cretPq",),
                      check=lambda o, e: "connection string" in e)
            return "wrong-success" if o == "clean" and any(d.iterdir()) else o  # no file named after it
        fn(f"--store a libpq connection string ({conninfo.split()[0]}...)", libpq)
    (tmp / "notadb.sqlite").write_text("this is not a database\n" * 100)
    err("--store a text file", "results", "--store", str(tmp / "notadb.sqlite"),
        check=lambda o, e: "not a layoutbench store" in e)
    (tmp / "adir").mkdir(exist_ok=True)
    err("--store a folder", "results", "--store", str(tmp / "adir"))
    (tmp / "afile").write_text("x")
    err("--store under a file", "results", "--store", str(tmp / "afile" / "s.sqlite"))
    err("--store in /proc", "results", "--store", "/proc/self/nope/s.sqlite")
    for cmd in (("results",), ("results", "--runs"), ("results", "--configs"), ("results", "--format", "json"),
                ("history", "tiny", "--summary"), ("report", "tiny", "-o", str(tmp / "rep-corrupt")),
                ("bisect", "log"), ("compare", "tiny", "--layouts", "default", "--runs", "1", "--args", "5",
                                    "--no-machine-check")):
        def corrupt_case(cmd=cmd):
            s = tmp / f"corrupt-{len(out)}-{cmd[0]}.sqlite"
            _corrupt(s, w.good_store())
            return H.cli(*cmd, "--store", str(s), env=env, check=lambda o, e: "damaged" in e or "malformed" in e)
        fn(f"corrupt store: {' '.join(cmd[:2])}", corrupt_case)

    # -- the sample gate -------------------------------------------------------------------------
    for v in ("nan", "NaN", "inf", "-inf", "-1", "1e308", "1e19", "-0.5", "Infinity"):
        def gate(v=v):
            s = tmp / f"gate-{v}.sqlite"
            return H.cli("compare", "tiny", "--layouts", "default", "--runs", "1", "--args", v, "--store", str(s),
                         "--no-machine-check", env=env,
                         check=lambda o, e: "failed:" in e and "metric t printed" in e)
        fn(f"benchmark prints {v}", gate)

    for v in ("0", "1e-300", "1e17", "5e-324"):  # odd but allowed values: a table, no warning, no crash
        def odd(v=v):
            s = tmp / f"odd-{v}.sqlite"
            return H.cli("compare", "tiny", "--layouts", "default,sorted,random:2", "--runs", "2", "--args", v,
                         "--store", str(s), "--no-machine-check", "--json", env=env, expect_ok=True,
                         check=lambda o, e: _strict_json(o))
        fn(f"benchmark prints {v} (allowed)", odd)

    def gate_then_good():  # the refused run is stored as failed; the session and the next command go on
        s = tmp / "gate-mixed.sqlite"
        H.cli("compare", "tiny", "--layouts", "default,sorted", "--runs", "1", "--args", "nan", "--store", str(s),
              "--no-machine-check", env=env)
        with sqlite3.connect(s) as db:
            rows = db.execute("SELECT status, message FROM runs").fetchall()
        if len(rows) != 2 or any(r[0] != "failed" or "non-finite" not in r[1] for r in rows):
            return "wrong-success"
        return H.cli("compare", "tiny", "--layouts", "default,sorted", "--runs", "1", "--args", "nan", "--store",
                     str(s), "--retry-failed", "--no-machine-check", env=env,
                     check=lambda o, e: "non-finite" in e)
    fn("nan run stored as failed with its reason", gate_then_good)

    def inf_store(cmd):
        def case():
            s = tmp / f"inf-{len(cmd)}-{cmd[0]}-{cmd[-1]}.sqlite"
            _store_with_inf(s, w.good_store())
            return H.cli(*cmd, "--store", str(s), env=env, expect_ok=True,
                         check=(lambda o, e: _strict_json(o)) if "json" in cmd else None)
        return case
    fn("store with inf: compare does not crash", inf_store(("compare", "tiny", "--layouts", "default,sorted",
                                                            "--runs", "1", "--args", "5", "--no-machine-check")))
    fn("store with inf: compare --json is strict JSON", inf_store(
        ("compare", "tiny", "--layouts", "default,sorted", "--runs", "1", "--args", "5", "--no-machine-check",
         "--json")))
    fn("store with inf: results --format json is strict JSON", inf_store(("results", "--format", "json")))
    fn("store with inf: results csv", inf_store(("results", "--format", "csv")))

    def on_good_store(*args, expect_ok=False, check=None):
        def case():
            s = tmp / f"copy-{abs(hash(args))}.sqlite"
            shutil.copyfile(w.good_store(), s)
            return H.cli("compare", "tiny", "--layouts", "default,sorted", "--runs", "1", "--args", "5",
                         "--no-machine-check", "--store", str(s), *args, env=env, expect_ok=expect_ok, check=check)
        return case
    for v in ("nosuch", "t,nosuch", "cg_cost,cg_ir", "T"):
        fn(f"compare --metric {v} (measured)", on_good_store("--metric", v, check=lambda o, e: "they printed: t" in e))
    fn("compare --metric t,t (measured)", on_good_store("--metric", "t,t", expect_ok=True,
                                                        check=lambda o, e: o.count("t (x)") == 1))
    fn("compare --metric all (measured)", on_good_store("--metric", "all", expect_ok=True))
    fn("compare --baseline sorted (measured)", on_good_store("--baseline", "sorted", expect_ok=True,
                                                             check=lambda o, e: "sorted" in o))

    # -- braces in a build command: built, not a KeyError ----------------------------------------
    fn("braces in the build command build", lambda: H.cli(
        "build", "tiny", "--layout", "default", env=env, expect_ok=True, check=lambda o, e: "verified" in o))

    # -- history ---------------------------------------------------------------------------------
    h = ("history", "tiny")
    for v in ("0", "-1", "abc"):
        err(f"history --step {v}", *h, "A..B", "--step", v)
    for v in ("0d", "0s", "abc", "-1d", "", "1x", "0.0h", "d"):
        err(f"history --every {v!r}", *h, "A..B", "--every", v)
    err("history --runs 0", *h, "A..B", "--runs", "0")
    err("history --timeout nan", *h, "A..B", "--timeout", "nan")
    err("history --timeout -1", *h, "A..B", "--timeout", "-1")
    for v in ("nan", "-1", "inf"):
        err(f"history --min-effect {v}", *h, "--summary", "--min-effect", v)
    err("history --seed 2^64", *h, "A..B", "--seed", str(2**64), "--layouts", "random:2")
    err("history --layouts random:0", *h, "A..B", "--layouts", "random:0")
    err("history --step and --every", *h, "A..B", "--step", "2", "--every", "1d")
    err("history range and --refine", *h, "A..B", "--refine", "X..Y")
    err("history nothing to do", *h)
    err("history --summary on a missing store", *h, "--summary", "--store", str(tmp / "empty-h.sqlite"),
        check=lambda o, e: "no such store" in e and not (tmp / "empty-h.sqlite").exists())
    err("history --metric ''", *h, "--summary", "--metric", "")

    # -- report ----------------------------------------------------------------------------------
    for v in ("nan", "-1", "inf", "abc"):
        err(f"report --min-effect {v}", "report", "tiny", "--min-effect", v, "-o", str(tmp / "rep"))
    err("report --metric ''", "report", "tiny", "--metric", "", "-o", str(tmp / "rep"))
    err("report empty store", "report", "tiny", "-o", str(tmp / "rep"), "--store", str(tmp / "empty-r.sqlite"))
    (tmp / "outfile").write_text("x")
    err("report -o a file", "report", "tiny", "-o", str(tmp / "outfile"), "--store", str(tmp / "empty-r2.sqlite"))
    # an output folder that is not layoutbench's: refused before anything is read, and left as it was
    mine = tmp / "rep-mine"
    (mine / "files").mkdir(parents=True, exist_ok=True)
    (mine / "files" / "thesis.txt").write_text("thesis\n")
    err("report -o a folder holding a user's file", "report", "tiny", "-o", str(mine),
        check=lambda o, e: "did not write" in e and (mine / "files" / "thesis.txt").read_text() == "thesis\n"
        and sorted(os.listdir(mine)) == ["files"])
    (tmp / "rep-elsewhere").mkdir(exist_ok=True)
    if not (tmp / "rep-link").is_symlink():
        (tmp / "rep-link").symlink_to(tmp / "rep-elsewhere")
    err("report -o a symbolic link to an empty folder", "report", "tiny", "-o", str(tmp / "rep-link"),
        check=lambda o, e: "symbolic link" in e and os.listdir(tmp / "rep-elsewhere") == [])
    fn("report -o the home folder", lambda: H.cli(
        "report", "tiny", "-o", str(tmp / "rep-home"), env={**env, "HOME": str(tmp / "rep-home")},
        check=lambda o, e: "home folder" in e and not (tmp / "rep-home").exists()))

    # -- bisect ----------------------------------------------------------------------------------
    b = ("bisect", "tiny", "A..B", "--store", str(tmp / "bisect.sqlite"))
    for v in ("nan", "-1", "0", "100", "inf"):
        err(f"bisect --min-effect {v}", *b, "--min-effect", v)
    for v in ("nan", "0", "1", "2", "-0.5", "0.5", "1e-300", "1.5"):  # one rule, one message
        err(f"bisect --confidence {v}", *b, "--confidence", v, check=lambda o, e: "> 0.5 and <= 0.9999, e.g. 0.95" in e)
    for v in ("1", "0", "-1", "100000"):
        err(f"bisect --layouts {v}", *b, "--layouts", v)
    for v in ("0", "-3"):
        err(f"bisect --runs {v}", *b, "--runs", v)
    err("bisect --max-runs 0", *b, "--max-runs", "0")
    err("bisect --max-layouts 0", *b, "--max-layouts", "0")
    for v in ("-1", str(2**63), str(2**63 - 2)):
        err(f"bisect --seed {v}", *b, "--seed", v)
    for v in ("", "a,b", ","):
        err(f"bisect --metric {v!r}", *b, "--metric", v)
    err("bisect --layout sorted", *b, "--layout", "sorted")
    err("bisect --layout nosuch", *b, "--layout", "nosuch")
    err("bisect --mode relink", *b, "--mode", "relink")
    err("bisect range without ..", "bisect", "tiny", "AB", "--store", str(tmp / "bisect.sqlite"))
    err("bisect --target twice", *b, "--target", "echo,echo")
    for v in ("²", "٣x", "0", "-5", "1e3", "5d", "1h²", "none5"):
        err(f"bisect --budget {v}", *b, "--budget", v)
    err("bisect --first-only --thorough", *b, "--first-only", "--thorough")
    err("bisect --thorough --first-only", *b, "--thorough", "--first-only")
    err("bisect log without a bisection", "bisect", "log", "--store", str(tmp / "bisect-empty.sqlite"))
    err("bisect reset without a bisection", "bisect", "reset", "--store", str(tmp / "bisect-empty.sqlite"))
    err("bisect good without a bisection", "bisect", "good", "--store", str(tmp / "bisect-empty.sqlite"))
    j = ("judge", "tiny", "--store", str(tmp / "judge.sqlite"))
    err("judge --min-effect nan", *j, "--min-effect", "nan")
    err("judge --layouts 0", *j, "--layouts", "0")
    err("judge --seed 2^63", *j, "--seed", str(2**63))
    err("judge --confidence 2", *j, "--confidence", "2")
    # replay logs
    logs = {
        "not UTF-8": b"\xff\xfe\x00start tiny\n",
        "--layouts abc": b"start tiny --layouts abc\n",
        "--confidence x": b"start tiny --confidence x\n",
        "--seed 2^64": f"start tiny --seed {2**64}\n".encode(),
        "--min-effect nan": b"start tiny --min-effect nan\n",
        "unbalanced quote": b"start tiny 'A\n",
        "unknown verb": b"start tiny\nfrobnicate A\n",
        "good before start": b"good A\n",
        "empty": b"",
        "only comments": b"# nothing\n\n",
        "start without kernel": b"start\n",
        "start unknown kernel": b"start nosuchkernel\n",
        "start traversal kernel": b"start ../../../etc\n",
        "option without value": b"start tiny --layouts\n",
        "binary": bytes(range(256)),
    }
    for label, data in logs.items():
        f = tmp / f"replay-{label.replace(' ', '-').replace('/', '_')}.log"
        f.write_bytes(data)
        err(f"bisect replay {label}", "bisect", "replay", str(f), "--store", str(tmp / f"replay-{len(out)}.sqlite"))
    err("bisect replay missing file", "bisect", "replay", str(tmp / "nope.log"))

    # -- build and run ---------------------------------------------------------------------------
    for v in ("random:0", "nosuch", "random:1e3", "sorted:2", "random:50000000"):
        err(f"build --layout {v}", "build", "tiny", "--layout", v)
    for v in ("-5", str(2**63), str(10**47)):
        err(f"build --seed {v}", "build", "tiny", "--seed", v)
    err("build --image nosuch", "build", "tiny", "--image", "nosuch", "--layout", "default")
    err("build --jobs 0", "build", "tiny", "--jobs", "0")
    for v in ("nan", "0", "-1", "inf"):
        err(f"run --timeout {v}", "run", "tiny", "--timeout", v)
    err("run --layout nosuch", "run", "tiny", "--layout", "nosuch")
    err("run --seed 2^64", "run", "tiny", "--seed", str(2**64), "--layout", "random")
    err("run --target nosuch", "run", "tiny", "--target", "nosuch")
    err("quirks unknown kernel", "quirks", "nosuchkernel")
    err("results --format xml", "results", "--format", "xml")

    # -- profiles ----------------------------------------------------------------------------------
    for label, old, new in PROFILE_MUTATIONS:
        text = BASE.replace(old, new, 1)
        if text == BASE:
            raise AssertionError(f"profile mutation {label!r} changes nothing")
        err(f"profile: {label}", "quirks", str(w.profile(label, text)))
    for label, data in PROFILE_TEXTS:
        err(f"profile text: {label}", "quirks", str(w.profile(label, data)))

    def broken_in_profiles():  # one broken profile must not break `kernels`
        d = tmp / "mixed"
        write_tiny(d / "good")
        (d / "bad").mkdir(parents=True, exist_ok=True)
        (d / "bad" / "kernel.toml").write_text('name = "../../x"\n')
        (d / "worse").mkdir(exist_ok=True)
        (d / "worse" / "kernel.toml").write_bytes(b"\xff[[")
        return H.cli("kernels", env={**env, "LAYOUTBENCH_PROFILES": str(d)}, expect_ok=True,
                     check=lambda o, e: "tiny" in o and "BROKEN" in o and o.count("BROKEN") == 2
                     and "minikernel" in o)
    fn("kernels with a broken profile in LAYOUTBENCH_PROFILES", broken_in_profiles)

    # -- secrets ------------------------------------------------------------------------------------
    secret = "S3cr3tPw"
    urls = {
        "password": f"postgresql://lb:{secret}@127.0.0.1:1/db",
        "password with @": f"postgresql://lb:{secret}@Tail99@127.0.0.1:1/db",
        "password with /": f"postgresql://lb:{secret}/x@127.0.0.1:1/db",
        "password with ?": f"postgresql://lb:{secret}?x@127.0.0.1:1/db",
        "?password=": f"postgresql://lb@127.0.0.1:1/db?password={secret}",
        "&password=": f"postgres://lb@127.0.0.1:1/db?connect_timeout=2&password={secret}",
        "both": f"postgresql://lb:{secret}@127.0.0.1:1/db?sslmode=disable&password={secret}x",
        "sslpassword": f"postgresql://lb@127.0.0.1:1/db?sslpassword={secret}",
    }
    for label, url in urls.items():
        for cmd in (("results",), ("history", "tiny", "--summary")):
            err(f"secret in store URL ({label}): {cmd[0]}", *cmd, "--store", url, secrets=(secret, "Tail99"),
                check=lambda o, e: "***" in e)
    return out + process_cases(tmp, w) + server_cases(tmp, w)


# -- cases that need real processes: signals, kill -9, mounts ------------------------------------------

def process_cases(tmp: Path, w: World) -> list[tuple[str, object]]:
    """Work left running, store faults on real file systems (real processes, signals, mounts)."""
    out: list[tuple[str, object]] = []
    pidfile = tmp / "bench.pid"
    extra = f"""
[targets.bg]
kind = "local"
image = "tiny"
timeout = 30
command = ["sh", "-c", "sleep 300 & echo $! > {pidfile}; echo LAYOUTBENCH metric name=t value=1; echo LAYOUTBENCH end status=ok"]

[targets.hang]
kind = "local"
image = "tiny"
timeout = 300
command = ["sh", "-c", "sleep 300 & echo $! > {pidfile}; wait"]
"""
    write_tiny(w.profiles / "tinyp", name="tinyp", targets=extra)
    env = {**w.env, "LAYOUTBENCH_STORE": str(tmp / "p.sqlite")}

    def bg_child():
        pidfile.unlink(missing_ok=True)
        o = H.cli("compare", "tinyp", "--target", "bg", "--layouts", "default", "--runs", "1", "--no-machine-check",
                  env=env, expect_ok=True)
        pid = int(pidfile.read_text())
        return "leak" if H.survives(pid) else o
    out.append(("a benchmark's background child dies with the run", bg_child))

    def hang_timeout():
        pidfile.unlink(missing_ok=True)
        o = H.cli("compare", "tinyp", "--target", "hang", "--layouts", "default", "--runs", "1", "--timeout", "1",
                  "--store", str(tmp / "hang.sqlite"), "--no-machine-check", env=env,
                  check=lambda o, e: "timeout" in e)
        pid = int(pidfile.read_text())
        return "leak" if H.survives(pid) else o
    out.append(("a hanging benchmark's group is killed at its timeout", hang_timeout))

    def interrupted(sig):
        def case():
            pidfile.unlink(missing_ok=True)
            e = {**os.environ, **{k: v for k, v in env.items() if v is not None},
                 "PYTHONPATH": str(H.ROOT)}
            e.pop("LAYOUTBENCH_STORE", None)
            p = subprocess.Popen([sys.executable, "-m", "layoutbench.cli", "compare", "tinyp", "--target", "hang",
                                  "--layouts", "default", "--runs", "1", "--no-machine-check", "--store",
                                  str(tmp / f"int-{sig}.sqlite")], cwd=H.ROOT, env=e, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True,
                                 preexec_fn=as_from_a_terminal())
            t0 = time.monotonic()
            while not pidfile.exists() or not pidfile.read_text().strip():
                if time.monotonic() - t0 > 60 or p.poll() is not None:
                    p.kill()
                    return "hang" if p.poll() is None else "traceback"
                time.sleep(0.05)
            pid = int(pidfile.read_text())
            p.send_signal(sig)
            try:
                o, er = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                return "hang"
            H.last_detail.update(cmd=f"compare --target hang, then signal {sig}", code=str(p.returncode),
                                 stdout=o[-1500:], stderr=er[-3000:])
            if H.survives(pid):
                os.kill(pid, signal.SIGKILL)
                H.last_detail["stderr"] += f"\n(benchmark {pid} still runs)"
                return "leak"
            if "Traceback" in er or "internal error" in er:
                return "traceback"
            from layoutbench.verdict import EXIT_TABLE
            listed = p.returncode in {code for code, _ in EXIT_TABLE}  # the table in --help says what it means
            return "clean" if p.returncode == (130 if sig == signal.SIGINT else 128 + sig) and "interrupted" in er \
                and listed else "wrong-success"
        return case
    out.append(("Ctrl-C kills the running benchmark", interrupted(signal.SIGINT)))
    out.append(("SIGTERM kills the running benchmark", interrupted(signal.SIGTERM)))
    out.append(("SIGHUP (a closed terminal or ssh session) kills the running benchmark", interrupted(signal.SIGHUP)))

    def killed():
        pidfile.unlink(missing_ok=True)
        e = {**os.environ, **{k: v for k, v in env.items() if v is not None}, "PYTHONPATH": str(H.ROOT)}
        e.pop("LAYOUTBENCH_STORE", None)
        p = subprocess.Popen([sys.executable, "-m", "layoutbench.cli", "compare", "tinyp", "--target", "hang",
                              "--layouts", "default", "--runs", "1", "--no-machine-check", "--store",
                              str(tmp / "killed.sqlite")], cwd=H.ROOT, env=e, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        t0 = time.monotonic()
        while not pidfile.exists() or not pidfile.read_text().strip():
            if time.monotonic() - t0 > 60 or p.poll() is not None:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    return "hang"
                return "traceback"
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        p.kill()  # kill -9 of layoutbench alone
        p.wait()
        if H.survives(pid):
            os.kill(pid, signal.SIGKILL)
            H.last_detail.update(cmd="compare --target hang, then kill -9", stderr=f"benchmark {pid} still runs")
            return "wrong-success"
        return "clean"
    out.append(("kill -9 of layoutbench kills the running benchmark's group", killed))

    def build_timeout():
        bpid = tmp / "build.pid"
        bpid.unlink(missing_ok=True)
        write_tiny(w.profiles / "tinybt", name="tinybt", build_timeout=2,
                   build=f"sleep 300 & echo $! > {bpid}; sleep 300")
        o = H.cli("build", "tinybt", "--layout", "default", env=env, check=lambda o, e: "timed out" in e)
        return "leak" if H.survives(int(bpid.read_text())) else o
    out.append(("a build timeout kills the build's children", build_timeout))

    def orphaned_make():
        d = w.profiles / "tinyorph"
        log, mark, spid = tmp / "orph.txt", tmp / "orph.second", tmp / "orph.sleep"
        for f in (log, mark, spid):
            f.unlink(missing_ok=True)
        # the first build waits in a sleep of its own (its pid written) until it is killed, whatever
        # the machine's speed; the second one (the mark made) goes straight to make
        write_tiny(d, name="tinyorph", build=f"if [ ! -e {mark} ]; then touch {mark}; sleep 300 & echo $! > {spid}; "
                                             f"echo start >> {log}; wait; fi; "
                                             f"make -s OBJDIR={{objdir}} CC={{cc}}; echo done >> {log}")
        e = {**os.environ, **{k: v for k, v in env.items() if v is not None}, "PYTHONPATH": str(H.ROOT)}
        p = subprocess.Popen([sys.executable, "-m", "layoutbench.cli", "build", "tinyorph", "--layout", "default"],
                             cwd=H.ROOT, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while not log.exists():
            if time.monotonic() - t0 > 60:
                p.kill()
                return "hang"
            time.sleep(0.05)
        dog = H.watchdog_of(p.pid)
        if dog is None:
            p.kill()
            return "hang"
        os.kill(dog, signal.SIGKILL)  # its watchdog first, else it kills the build's group at once
        H.survives(dog, 60)
        p.kill()  # kill -9 layoutbench: what its build started goes on as an orphan
        p.wait()
        o = H.cli("build", "tinyorph", "--layout", "default", env=env, expect_ok=True,
                  check=lambda o, e: "killing the build left running" in e)
        # only the second build finished; the orphan's group was killed (its sleep with it), never ran make
        return o if log.read_text().count("done") == 1 and not H.survives(int(spid.read_text())) else "wrong-success"
    out.append(("kill -9 during a build: the next run kills the orphaned make", orphaned_make))

    # -- faults on real (tiny, read-only) file systems, in a private mount namespace ---------------
    def mounted(label: str, setup: str, cmd: tuple[str, ...], check, expect_ok: bool = False):
        def case():
            if not shutil.which("unshare"):
                return "traceback"
            d = tmp / f"mnt-{len(out)}"
            d.mkdir(exist_ok=True)
            good = w.good_store()
            script = setup.format(d=d, good=good)
            py = f"{sys.executable} -m layoutbench.cli " + " ".join(f"'{a}'" for a in cmd).format(d=d)
            return H.proc("-c", f"{script} && exec {py}", prefix=("unshare", "-m", "sh"),
                          env={k: v for k, v in env.items() if v is not None}, check=check, raw=True,
                          expect_ok=expect_ok)
        out.append((label, case))

    ro = "mount -t tmpfs tmpfs {d} && cp {good} {d}/s.sqlite && mount -o remount,ro {d}"
    mounted("read-only store: results reads it", ro, ("results", "--store", "{d}/s.sqlite"),
            lambda o, e: o.count("tiny") >= 2 and " ok " in o, expect_ok=True)
    mounted("read-only store: results --format json reads it", ro, ("results", "--format", "json", "--store",
                                                                     "{d}/s.sqlite"),
            lambda o, e: len(json.loads(o)) == 2, expect_ok=True)
    mounted("read-only store: bisect log says there is none", ro, ("bisect", "log", "--store", "{d}/s.sqlite"),
            lambda o, e: "no bisection in progress" in e)
    for cmd in (("compare", "tinyp", "--layouts", "default", "--runs", "1", "--args", "5", "--no-machine-check",
                 "--store", "{d}/s.sqlite"), ("history", "tinyp", "A..B", "--store", "{d}/s.sqlite")):
        mounted(f"read-only store: {cmd[0]} is refused before any build", ro, cmd,
                lambda o, e: "read-only file system" in e and "compil" not in e.lower() and "build" not in e.lower())
    full = "mount -t tmpfs -o size=12k tmpfs {d} && head -c 12288 /dev/zero > {d}/filler 2>/dev/null; true"
    mounted("store missing on a full disk: results (a command that only reads creates none)", full,
            ("results", "--store", "{d}/s.sqlite"), lambda o, e: "no such store" in e)
    mounted("store on a full disk: compare", full, ("compare", "tinyp", "--layouts", "default", "--runs", "1",
                                                    "--no-machine-check", "--store", "{d}/s.sqlite"),
            lambda o, e: "not a layoutbench store" not in e and ("full" in e or "space" in e))
    for size in ("40k", "400k"):  # the objects do not fit / the linked program does not fit
        mounted(f"work folder on a full disk ({size}): build", f"mount -t tmpfs -o size={size} tmpfs {{d}} && "
                f"export LAYOUTBENCH_DIR={{d}}/w", ("build", "tinyp", "--layout", "default"),
                lambda o, e: "full" in e or "No space left" in e)
    return out


# -- cases against real servers: an OpenSSH server (injection), a PostgreSQL server (secrets) ----------

def server_cases(tmp: Path, w: World) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []

    def ssh_remote_dir():
        """remote_dir is the user's text: pasted into a remote shell command, `;touch` must not run."""
        from bench.labs import sshd as _sshd

        if _sshd.available() is not None:
            return "traceback"
        lab = _sshd.Lab(tmp / "lab", 1)
        try:
            pwned = tmp / "PWNED"
            rdir = f"{tmp}/remote;touch {pwned};x"
            targets = f"""
[targets.s]
kind = "ssh"
image = "tiny"
timeout = 60
host = "bench0"
ssh_config = "{lab.config}"
remote_dir = {json.dumps(rdir)}
install = "test -x {{image}} && echo installed {{image}}"
"""
            write_tiny(w.profiles / "tinyssh", name="tinyssh", targets=targets)
            o = H.cli("compare", "tinyssh", "--target", "s", "--layouts", "default", "--runs", "1",
                      "--no-machine-check", "--store", str(tmp / "ssh.sqlite"), env=w.env, expect_ok=True)
            return "wrong-success" if pwned.exists() else o
        finally:
            lab.stop()
    out.append(("ssh remote_dir with ;touch runs nothing", ssh_remote_dir))

    def postgres_secrets():
        """The password of a PostgreSQL store URL in no error, no report page (the server trusts any)."""
        from bench.labs import postgres as _postgres

        if _postgres.bindir() is None:
            return "traceback"
        srv = _postgres.Server()
        base = srv.start()  # postgresql://lb@/layoutbench?host=DIR
        try:
            secret = "Pg5ecret@Half99"
            urls = [base.replace("lb@", f"lb:{secret}@"), base + f"&password={secret}"]
            repo = tmp / "pgrepo"
            write_tiny(repo)
            git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
            subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
            subprocess.run([*git, "add", "-A"], check=True)
            subprocess.run([*git, "commit", "-qm", "one"], check=True)
            (repo / "src" / "hot.c").write_text(HOT_C + "unsigned long colder(unsigned long x) { return x; }\n")
            subprocess.run([*git, "commit", "-qam", "two"], check=True)
            prof = str(repo / "kernel.toml")
            hidden = (secret, "Half99", "Pg5ecret")
            for url in urls:
                r = H.cli("history", prof, "--summary", "--store", url, env=w.env, secrets=hidden,
                          check=lambda o, e: "***" in e)
                if r != "clean":
                    return r
            r = H.cli("history", prof, "HEAD~1..HEAD", "--repo", str(repo), "--layouts", "sorted,random:2",
                      "--runs", "1", "--target", "echo", "--args", "5", "--store", urls[0], env=w.env,
                      expect_ok=True, secrets=hidden)
            if r != "clean":
                return r
            for i, url in enumerate(urls):
                site = tmp / f"pgsite{i}"
                r = H.cli("report", "tiny", "-o", str(site), "--store", url, env=w.env, expect_ok=True, secrets=hidden)
                pages = [f.read_text(errors="replace") for f in site.rglob("*.html")]
                if r != "clean":
                    return r
                if any(secret in t or "Half99" in t for t in pages):
                    return "leak"
                if not pages or not all("***" in t for t in pages):
                    return "wrong-success"
            return "clean"
        finally:
            srv.stop()
    out.append(("PostgreSQL password in no error and no report page", postgres_secrets))
    return out
