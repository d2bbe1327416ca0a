"""The hostile-input table of what layoutbench writes and keeps: nothing written where it is not
its own (a store where one was only read, a ``-journal`` beside a device, a report through a link,
over the current folder or over a user's files), no finished verdict lost to a later command, no
budget counted wrong, no count file trusted blindly (cut short, of another image, of another
cache), no wait on a FIFO.  Each case is judged by :mod:`_hostile`; ``outside-write`` and
``verdict-lost`` are this table's own outcomes.

The world: the tiny program of :mod:`hostile_cli` in a git repository of four commits (the third
doubles its metric, which also depends on where ``hot`` lands: a layout effect), a store holding
its history, one holding a finished bisection that found the third commit, and two small static
programs with a cachegrind run each.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from bench import hostile as H
from bench.hostile import cli_cases as hostile_cli


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout.strip()


def step_repo(d: Path) -> Path:
    """The tiny program in a git repository: commit 3 of 4 doubles its metric; the kernel.toml."""
    if (d / ".git").is_dir():
        return d / "kernel.toml"
    return hostile_cli.write_tiny_history(d, _git)


PROG_C = r"""
int f(int x) { return x * 3 + 1; }
int main(int argc, char **argv) { int s = 0; for (int i = 0; i < 1000 * argc; i++) s = f(s); return s == 5; }
"""


class World:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.env = {"LAYOUTBENCH_DIR": str(tmp / "work"), "LAYOUTBENCH_STORE": None,
                    "LAYOUTBENCH_PROFILES": str(tmp / "profiles")}
        self.kernel = step_repo(tmp / "repo")
        self.repo = self.kernel.parent

    @functools.cached_property
    def history_store(self) -> Path:
        s = self.tmp / "history.sqlite"
        o = H.cli("history", str(self.kernel), "HEAD~1..HEAD", "--layouts", "sorted,random:2", "--runs", "1",
                  "--target", "echo", "--args", "5", "--store", str(s), env=self.env, expect_ok=True)
        if o != "clean":
            raise RuntimeError(f"could not measure a history: {H.last_detail}")
        return s

    @functools.cached_property
    def found_store(self) -> Path:
        """A store holding a finished bisection that found commit three."""
        s = self.tmp / "found.sqlite"
        o = H.cli("bisect", str(self.kernel), "HEAD~3..HEAD", "--target", "prog", "--no-shadow", "--json",
                  "--store", str(s), env=self.env, expect_ok=True, check=lambda o, e: json.loads(o)["status"] == "found")
        if o != "clean":
            raise RuntimeError(f"could not bisect: {H.last_detail}")
        return s

    def copy(self, store: Path, name: str) -> Path:
        dst = self.tmp / f"{name}.sqlite"
        with sqlite3.connect(store) as src, sqlite3.connect(dst) as out:
            src.backup(out)
        return dst

    @functools.cached_property
    def programs(self) -> dict[str, tuple[Path, Path]]:
        """Two static programs (the second with its code elsewhere), each with its cachegrind run
        (I1 4096,2,64) and one under a 32 KiB I1: name → (program, its counts)."""
        d = self.tmp / "programs"
        d.mkdir(exist_ok=True)
        (d / "p.c").write_text(PROG_C)
        out = {}
        for name, extra, i1 in (("a", [], "4096,2,64"), ("b", ["-Wl,--section-start=.text=0x300000"], "4096,2,64"),
                                ("a32", [], "32768,8,64")):
            prog = d / name.rstrip("32")
            if not prog.exists():
                subprocess.run(["clang-19", "-O1", "-static", "-fuse-ld=lld", *extra, "-o", str(prog), str(d / "p.c")],
                               check=True)
            cg = d / f"{name}.cachegrind"
            subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--I1={i1}",
                            f"--cachegrind-out-file={cg}", str(prog)], check=True, capture_output=True, timeout=300)
            out[name] = (prog, cg)
        return out


def _untouched(roots: list[Path], run, verdict=None) -> str:
    """Run a case and judge it; what it created, replaced or deleted under ``roots`` (any of it) is
    ``outside-write``, whatever it printed."""
    before = H.tree(*roots)
    o = run()
    made = H.changes(before, H.tree(*roots))
    if made:
        H.last_detail["stderr"] = H.last_detail.get("stderr", "") + "\n" + "\n".join(made[:5])
        return "outside-write"
    return o


def cases(tmp: Path) -> list[tuple[str, object]]:
    w = World(Path(tmp))
    env = w.env
    out: list[tuple[str, object]] = []

    def add(label, fn):
        out.append((label, fn))

    # -- a command that only reads creates no store, nor its folders ------------------------------
    reads = [("results",), ("results", "--format", "json"), ("bisect", "log"), ("bisect", "reset"),
             ("bisect", "good"), ("history", str(w.kernel), "--summary"), ("report", str(w.kernel), "-o", "{d}/site")]
    for cmd in reads:
        def read_missing(cmd=cmd):
            d = w.tmp / f"reads-{'-'.join(c for c in cmd if '/' not in c)}"
            d.mkdir(exist_ok=True)
            args = [c.format(d=d) for c in cmd]
            return _untouched([d], lambda: H.cli(*args, "--store", str(d / "new" / "dir" / "s.sqlite"), env=env,
                                                 check=lambda o, e: "no such store" in e))
        add(f"{' '.join(c for c in cmd if '/' not in c)} on a store that does not exist (in folders that do not)",
            read_missing)

    def not_ours(kind: str, cmd: tuple):  # an empty file, another program's database: neither is written into
        def case():
            d = w.tmp / f"foreign-{kind}-{cmd[0]}"
            d.mkdir(exist_ok=True)
            s = d / "data.sqlite"
            s.unlink(missing_ok=True)
            if kind == "empty":
                s.write_bytes(b"")
            else:
                with sqlite3.connect(s) as db:
                    db.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
                db.close()
            words = "an empty file" if kind == "empty" else "not a layoutbench store (an SQLite database of something"
            return _untouched([d], lambda: H.cli(*cmd, "--store", str(s), env=env, check=lambda o, e: words in e))
        return case
    add("results --store an empty file", not_ours("empty", ("results",)))
    add("history --summary --store an empty file", not_ours("empty", ("history", str(w.kernel), "--summary")))
    add("results --store another program's SQLite database", not_ours("foreign", ("results",)))
    add("compare --store another program's SQLite database", not_ours("foreign", (
        "compare", str(w.kernel), "--layouts", "default", "--no-machine-check")))

    # -- a device or a FIFO as the store: nothing beside it, the real problem named --------------------
    for dev in ("/dev/null", "/dev/full"):
        for cmd in (("results",), ("bisect", "log"), ("compare", str(w.kernel), "--layouts", "default",
                                                      "--no-machine-check")):
            def device(dev=dev, cmd=cmd):
                side = [Path(dev + s) for s in ("-journal", "-wal", "-shm")]
                left = [p for p in side if p.exists()]
                o = H.cli(*cmd, "--store", dev, env=env, check=lambda o, e: "is a device, not a store" in e)
                made = [p for p in side if p.exists() and p not in left]
                for p in made:
                    p.unlink()
                return "outside-write" if made else o
            add(f"{cmd[0]} --store {dev}", device)

    def fifo_store():
        f = w.tmp / "store.fifo"
        if not f.exists():
            os.mkfifo(f)
        return _untouched([w.tmp / "store.fifo"], lambda: H.cli("results", "--store", str(f), env=env, timeout=30,
                                                                 check=lambda o, e: "is a FIFO" in e))
    add("results --store FIFO", fifo_store)

    def odd_store_name():  # a name a user gives is shown escaped: one line, no escape sent to the terminal
        d = w.tmp / "odd-name"
        d.mkdir(exist_ok=True)
        return _untouched([d], lambda: H.cli("results", "--store", str(d / "x\ny\x1b[2J.sqlite"), env=env,
                                              check=lambda o, e: "x\\ny\\x1b[2J.sqlite: no such store" in e
                                              and "\x1b" not in e))
    add("results --store NAME holding a newline and an escape sequence", odd_store_name)

    def fifo_log():
        f = w.tmp / "log.fifo"
        if not f.exists():
            os.mkfifo(f)
        return H.cli("bisect", "replay", str(f), "--store", str(w.tmp / "replay.sqlite"), env=env, timeout=30,
                     check=lambda o, e: "is a FIFO, not a bisection log" in e)
    add("bisect replay FIFO (a log that is never written)", fifo_log)

    # -- report -o: never through a link, never the current folder, never over a user's file -------------
    def through_link(depth: int):
        def case():
            d = w.tmp / f"link-{depth}"
            elsewhere = d / "elsewhere"
            elsewhere.mkdir(parents=True, exist_ok=True)
            if not (d / "parent").exists():
                (d / "parent").mkdir()
                (d / "parent" / "link").symlink_to(elsewhere)
            dest = d / "parent" / "link" / "/".join(["sub"] * (depth - 1) + ["site"])
            s = w.copy(w.history_store, f"link-{depth}")
            return _untouched([elsewhere], lambda: H.cli("report", str(w.kernel), "-o", str(dest), "--store", str(s),
                                                          env=env, check=lambda o, e: "symbolic link" in e))
        return case
    add("report -o parent/link/site (a link above the folder)", through_link(1))
    add("report -o parent/link/sub/site (a link two folders above)", through_link(2))

    def current_folder(sub: str):
        def case():
            d = w.tmp / f"cwd-{len(sub)}"
            cwd = d / "inner"  # empty: a report may take an empty folder, but not this one
            cwd.mkdir(parents=True, exist_ok=True)
            s = w.copy(w.history_store, f"cwd-{len(sub)}")
            return _untouched([d], lambda: H.cli("report", str(w.kernel), "-o", sub, "--store", str(s), env=env,
                                                  cwd=cwd, check=lambda o, e: "current folder" in e))
        return case
    add("report -o . in an empty current folder", current_folder("."))
    add("report -o .. (the folder holding the current one)", current_folder(".."))

    def users_file(legacy: bool):
        def case():
            d = w.tmp / f"marked-{legacy}"
            s = w.copy(w.history_store, f"marked-{legacy}")
            if not d.exists():
                o = H.cli("report", str(w.kernel), "-o", str(d), "--store", str(s), env=env, expect_ok=True)
                if o != "clean":
                    return o
                if legacy:  # a marker as an older layoutbench wrote it: no list of its files
                    from layoutbench import owned
                    (d / owned.MARKER).write_bytes(owned.MARK)
                (d / "notes.txt").write_text("my notes\n")
                shutil.copytree(d / "files", d / "copied-site") if (d / "files").is_dir() else (d / "copied-site").mkdir()
            said = "older layoutbench" if legacy else "(copied-site, notes.txt)"
            return _untouched([d], lambda: H.cli("report", str(w.kernel), "-o", str(d), "--store", str(s), env=env,
                                                  check=lambda o, e: said in e))
        return case
    def users_odd_name():
        d = w.tmp / "marked-odd"
        s = w.copy(w.history_store, "marked-odd")
        if not d.exists():
            o = H.cli("report", str(w.kernel), "-o", str(d), "--store", str(s), env=env, expect_ok=True)
            if o != "clean":
                return o
            (d / "notes\nlayoutbench: error: x\x1b[2J").write_text("mine\n")
        return _untouched([d], lambda: H.cli("report", str(w.kernel), "-o", str(d), "--store", str(s), env=env,
                                              check=lambda o, e: "notes\\n" in e and "\x1b" not in e))
    add("report -o D: a user's file named with a newline and an escape sequence", users_odd_name)
    add("report -o D: D written by a report, then a user's files added", users_file(False))
    add("report -o D: D marked by an older report, then a user's files added", users_file(True))

    def own_again():
        d = w.tmp / "own-again"
        s = w.copy(w.history_store, "own-again")
        for _ in range(2):
            o = H.cli("report", str(w.kernel), "-o", str(d), "--store", str(s), env=env, expect_ok=True,
                      check=lambda o, e: (d / "index.html").is_file())
            if o != "clean":
                return o
        return "clean"
    add("report -o D twice: its own folder is replaced", own_again)

    # -- a finished verdict stays; one budget rule, honestly counted ----------------------------------
    def finished(*given: str):
        def case():
            s = w.copy(w.found_store, f"finished-{len(out)}")
            args = ("bisect", str(w.kernel), *given, "--target", "prog", "--no-shadow", "--store", str(s))
            seen = []
            for cmd in (args, args[:2] + ("--store", str(s))):  # the same bisection asked again without a budget
                code, o, e, crash = H.capture(*cmd, "--json", "--exit-code", env=env)
                H.last_detail.update(cmd=" ".join(cmd), code=str(code), stdout=o[-1500:], stderr=e[-3000:])
                if crash or "Traceback" in e:
                    return crash or "traceback"
                try:
                    seen.append((code, json.loads(o).get("status")))
                except ValueError:
                    seen.append((code, None))
            return "clean" if seen == [(1, "found")] * 2 else "verdict-lost"
        return case
    for given in (("--budget", "1"), ("--budget", "1s"), ("--budget", "10"), ("HEAD~3..HEAD", "--budget", "1")):
        add(f"bisect {' '.join(given)} on a finished bisection", finished(*given))

    def over_budget(*given: str, words: str):
        def case():
            s = w.tmp / f"budget-{len(out)}-{'-'.join(given)}.sqlite"
            o = H.cli("bisect", str(w.kernel), "HEAD~3..HEAD", "--target", "prog", "--no-shadow", *given,
                      "--store", str(s), env=env, check=lambda o, e: words in e)
            if s.exists():
                with sqlite3.connect(s) as db:
                    runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
                if runs:
                    H.last_detail["stderr"] = H.last_detail.get("stderr", "") + f"\n{runs} runs measured"
                    return "wrong-success"
            return o
        return case
    add("bisect --budget 1 --exit-code (less than the endpoints' first look)",
        over_budget("--budget", "1", "--exit-code", words="does not pay for the endpoints' first look"))
    add("bisect --budget 1 --json", over_budget("--budget", "1", "--json", words="does not pay for the endpoints"))
    def over_time_budget():  # a duration is turned into runs once a run's time is measured: then the same rule
        s = w.tmp / f"budget-time-{len(out)}.sqlite"
        s.unlink(missing_ok=True)
        return H.cli("bisect", str(w.kernel), "HEAD~3..HEAD", "--target", "prog", "--no-shadow", "--budget", "0.02s",
                     "--exit-code", "--store", str(s), env=env,
                     check=lambda o, e: "--budget 0.02s (" in e and "does not pay for the endpoints' first look" in e
                     and "runs measured to choose the runs per layout are kept" in e)
    add("bisect --budget 0.02s --exit-code on a new store (less than the first look's time)", over_time_budget)
    add("bisect --max-layouts 1 --layouts 4", over_budget("--max-layouts", "1", "--layouts", "4",
                                                          words="--max-layouts 1"))
    add("bisect --max-runs 1 --runs 4", over_budget("--max-runs", "1", "--runs", "4", words="--max-runs 1"))

    # -- count files: never waited for, checked against their image and cache --------------------------
    def symdiff(*extra: str, words: str, fifo: bool = False, timeout: int = 60):
        def case():
            p = w.programs
            (a, cga), (b, cgb) = p["a"], p["b"]
            files = {"a": str(cga), "b": str(cgb), "a32": str(p["a32"][1])}
            if fifo:
                f = w.tmp / "counts.fifo"
                if not f.exists():
                    os.mkfifo(f)
                files["fifo"] = str(f)
            cut = w.tmp / "cut.cachegrind"
            text = cga.read_text()
            cut.write_text(text[:len(text) // 2])
            files["cut"] = str(cut)
            args = [files.get(x, x) for x in extra]
            return H.cli("symdiff", str(a), str(b), *args, env=env, timeout=timeout, check=lambda o, e: words in e)
        return case
    def full_stdout(native: str, sink: str):
        def case():
            (a, _), (b, _) = w.programs["a"], w.programs["b"]
            e = {**os.environ, **{k: v for k, v in env.items() if v is not None}, "LAYOUTBENCH_NATIVE_EXEC": native,
                 "PYTHONPATH": str(H.ROOT)}
            cmd = f"{sys.executable} -m layoutbench.cli symdiff {a} {b} --json " + (
                "> /dev/full" if sink == "full" else "| head -c 10 > /dev/null; exit ${PIPESTATUS[0]}")
            p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=e, timeout=120)
            H.last_detail.update(cmd=cmd, code=str(p.returncode), stderr=p.stderr[-2000:])
            if sink == "full":
                return H.judge(p.returncode, p.stdout, p.stderr, check=lambda o, er: "No space left on device" in er)
            return H.judge(p.returncode if p.returncode != 1 else 0, p.stdout, p.stderr, expect_ok=True)
        return case
    for native in ("0", "1"):  # the command writing the helper's JSON, and the helper writing it (exec)
        add(f"symdiff --json > /dev/full (LAYOUTBENCH_NATIVE_EXEC={native})", full_stdout(native, "full"))
        add(f"symdiff --json | head -c 10 (LAYOUTBENCH_NATIVE_EXEC={native}): the answer's exit code",
            full_stdout(native, "pipe"))

    cache = ("--cache", "4096,2,64")
    add("symdiff --cachegrind-out FIFO", symdiff(*cache, "--cachegrind-out", "fifo", "--cachegrind-out", "b",
                                                 words="is a FIFO", fifo=True, timeout=30))
    add("symdiff --cachegrind-out of a file cut short", symdiff(*cache, "--cachegrind-out", "cut", "--cachegrind-out",
                                                                "b", words="truncated"))
    add("symdiff --cachegrind-out NEW OLD (swapped)", symdiff(*cache, "--cachegrind-out", "b", "--cachegrind-out", "a",
                                                              words="another program"))
    add("symdiff --cachegrind-out of another cache", symdiff(*cache, "--cachegrind-out", "a32", "--cachegrind-out",
                                                             "b", words="recorded with a 32768-byte 8-way I1"))
    add("symdiff --cache 32768,8,64 of 4 KiB counts", symdiff("--cache", "32768,8,64", "--cachegrind-out", "a",
                                                              "--cachegrind-out", "b", words="not the 32768,8,64"))
    def rebuilt():  # the image changed after its counts were written: the counts are of the build before
        (a, cga), (b, cgb) = w.programs["a"], w.programs["b"]
        newer = w.tmp / "rebuilt"
        shutil.copy(b, newer)
        stale = w.tmp / "rebuilt.cachegrind"
        stale.write_text(cgb.read_text().replace(f"cmd: {b}", f"cmd: {newer}"))
        os.utime(stale, (os.stat(newer).st_mtime - 60,) * 2)
        return H.cli("symdiff", str(a), str(newer), *cache, "--cachegrind-out", str(cga), "--cachegrind-out",
                     str(stale), env=env, check=lambda o, e: "recorded before" in e and "rebuilt" in e)
    add("symdiff --cachegrind-out recorded before its image was rebuilt in place", rebuilt)
    for g in ("9223372036854775808,2,64", "1099511627776,2,64", "4096,4096,1", "4096,2,8192", "65536,2048,32"):
        add(f"symdiff --cache {g}", functools.partial(H.cli, "symdiff", "/nonexistent-a", "/nonexistent-b", "--cache",
                                                      g, env=env, check=lambda o, e: "beyond any real cache" in e))
    return out
