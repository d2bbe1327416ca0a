"""Hostile ELF files against symdiff: crafted files and a seeded byte-flip fuzz.

Two small real images are linked with the real toolchain (clang-19, ld.lld-19: two source files,
so STT_FILE symbols, locals, globals, a TLS variable, data, and a function whose bytes differ
by more than an address so that llvm-objdump is asked), then mutated: header fields, section
headers, the symbol table and its string table, the file's length, the path, the kind of file.
Each input is diffed against the other, untouched image twice:

* the command, ``layoutbench symdiff OLD NEW --json``, run by a fork server (one interpreter that
  imported layoutbench once forks a child per input: the same code as the command, without paying
  an interpreter start per input): it runs the helper and words what the helper cannot diff, and
* the native helper (``native/symdiff``) alone, started directly without ``LAYOUTBENCH_PYTHON``:
  it answers, says one line (exit 2), or exits 125 for a file the front end words.

Both run under a memory limit (``RLIMIT_AS``, 1 GiB) and a timeout.  An input's outcome:

``clean``
    both answered with the same bytes and exit status, or the command refused with ONE line
    ``layoutbench: error: ...`` naming the file (exit 2) where the helper declined (125 or 2);
``traceback``
    a traceback, a crash (a signal, a panic caught in the helper, an exit that is neither an
    answer nor a refusal), or an error that is not one line naming the file;
``wrong-success``
    the two disagree, or an answer for a file that must be refused (a refusal where an answer
    is due), or a temporary file left behind (llvm-objdump's response file), or what a file that
    must not be read holds (a response file named by a symbol) printed;
``hang``
    a path did not finish within the timeout.

:func:`cases` is the interface: ``cases(tmp) -> [(name, run)]``; ``run()`` makes its input (under
``tmp``) and returns the outcome.  ``python3 -m bench.hostile.elf_cases`` prints the counts.
"""

from __future__ import annotations

import json
import os
import random
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
HELPER = ROOT / "native" / "symdiff" / "target" / "release" / "layoutbench-symdiff"
MEMORY = 1 << 30  #: RLIMIT_AS of every run (bytes)
TIMEOUT = float(os.environ.get("HOSTILE_ELF_TIMEOUT", "30"))  #: seconds before a run is a hang
SEED = 22
FLIPS = 200  #: byte-flipped inputs
OUTCOMES = ("clean", "traceback", "wrong-success", "hang")
LAST: dict = {}  #: what the last judge() saw (statuses, stderr of the command and of the helper)

# -- two small real images ----------------------------------------------------------------------

MAIN_C = r"""
typedef unsigned long u64;
u64 table[4] = {1, 2, 3, 4};
static const char *msg = "hello, world";
__thread u64 tls_counter = 5;
u64 zeroes[64];
extern u64 other(u64);
static __attribute__((noinline)) u64 helper(u64 x) { return x * MUL + 1; }
__attribute__((noinline)) u64 grow(u64 x) { return x + table[x & 3] + GROW; }
__attribute__((noinline)) u64 callee(u64 x) { return helper(x) ^ msg[x & 3]; }
__attribute__((noinline)) u64 caller(u64 x) { return callee(x) + grow(x) + tls_counter + other(x) + zeroes[x & 63]; }
void _start(void) { caller(7); for (;;) ; }
"""

OTHER_C = r"""
typedef unsigned long u64;
static u64 count;
static __attribute__((noinline)) u64 helper(u64 x) { count++; return x - 1; }
__attribute__((noinline)) u64 other(u64 x) { return helper(x) * 2 + count; }
"""


def base_images(tmp: Path) -> tuple[Path, Path]:
    """old.elf and new.elf (grow() grown, helper()'s constant changed, same size), linked once."""
    d = tmp / "base"
    old, new = d / "old.elf", d / "new.elf"
    if old.is_file() and new.is_file():
        return old, new
    d.mkdir(parents=True, exist_ok=True)
    (d / "main.c").write_text(MAIN_C)
    (d / "other.c").write_text(OTHER_C)
    cflags = ["--target=x86_64-unknown-none-elf", "-ffreestanding", "-fno-pic", "-O1", "-ffunction-sections",
              "-fdata-sections", "-fno-asynchronous-unwind-tables"]
    for out, defs in ((old, ["-DGROW=1", "-DMUL=3"]), (new, ["-DGROW=(x*x*x+5)/(x|1)", "-DMUL=5"])):
        objs = []
        for src in ("main.c", "other.c"):
            o = d / f"{out.stem}-{src[:-2]}.o"
            subprocess.run(["clang-19", *cflags, *defs, "-c", str(d / src), "-o", str(o)], check=True)
            objs.append(str(o))
        subprocess.run(["ld.lld-19", "-e", "_start", "-o", str(out), *objs], check=True)
    return old, new


# -- an ELF64 little-endian file to mutate --------------------------------------------------------

SH_FIELDS = ("name", "type", "flags", "addr", "offset", "size", "link", "info", "align", "entsize")
SH_FMT = "<IIQQQQIIQQ"
SYM_FMT = "<IBBHQQ"  # name, info, other, shndx, value, size


class Elf:
    """The bytes of an ELF64 LE file with its section headers and symbols, editable in place."""

    def __init__(self, data: bytes):
        self.b = bytearray(data)

    @property
    def shoff(self) -> int:
        return struct.unpack_from("<Q", self.b, 0x28)[0]

    @property
    def shnum(self) -> int:
        return struct.unpack_from("<H", self.b, 0x3C)[0]

    def sh(self, i: int) -> dict:
        return dict(zip(SH_FIELDS, struct.unpack_from(SH_FMT, self.b, self.shoff + 64 * i)))

    def set_sh(self, i: int, **kw) -> None:
        h = {**self.sh(i), **kw}
        struct.pack_into(SH_FMT, self.b, self.shoff + 64 * i, *(h[f] & ((1 << (32 if f in ("name", "type", "link", "info") else 64)) - 1) for f in SH_FIELDS))

    def names(self) -> list[str]:
        strndx = struct.unpack_from("<H", self.b, 0x3E)[0]
        t = self.sh(strndx)
        tab = bytes(self.b[t["offset"]:t["offset"] + t["size"]])
        return [tab[h["name"]:tab.index(b"\0", h["name"])].decode() for h in map(self.sh, range(self.shnum))]

    def index(self, name: str) -> int:
        return self.names().index(name)

    def section(self, name: str) -> bytes:
        h = self.sh(self.index(name))
        return bytes(self.b[h["offset"]:h["offset"] + h["size"]])

    def syms(self) -> list[list]:
        h = self.sh(self.index(".symtab"))
        return [list(struct.unpack_from(SYM_FMT, self.b, h["offset"] + 24 * k)) for k in range(h["size"] // 24)]

    def set_sym(self, k: int, **kw) -> None:
        h = self.sh(self.index(".symtab"))
        at = h["offset"] + 24 * k
        s = list(struct.unpack_from(SYM_FMT, self.b, at))
        for f, v in kw.items():
            s[("name", "info", "other", "shndx", "value", "size").index(f)] = v
        struct.pack_into(SYM_FMT, self.b, at, *s)

    def sym_index(self, name: str) -> int:
        tab = self.section(".strtab")
        for k, s in enumerate(self.syms()):
            if s[0] and tab[s[0]:tab.index(b"\0", s[0])] == name.encode():
                return k
        raise KeyError(name)

    def append(self, data: bytes, align: int = 8) -> int:
        """Append bytes at the end of the file (aligned); their offset."""
        self.b += bytes(-len(self.b) % align)
        at = len(self.b)
        self.b += data
        return at

    def replace_section(self, name: str, data: bytes, **kw) -> None:
        """Move a section's contents to the end of the file, replaced by data."""
        self.set_sh(self.index(name), offset=self.append(data), size=len(data), **kw)

    def rename_symbol(self, old: str, new: bytes) -> None:
        """Give a symbol a new name (appended to a copy of .strtab at the end of the file)."""
        k = self.sym_index(old)
        tab = self.section(".strtab")
        self.replace_section(".strtab", tab + new + b"\0")
        self.set_sym(k, name=len(tab))

    def write(self, path: Path) -> Path:
        path.write_bytes(bytes(self.b))
        return path


# -- running the command and the helper ----------------------------------------------------------

_SERVER = r"""
import json, os, resource, sys, tempfile, time, traceback
memory = int(sys.argv[1])
import layoutbench.cli as cli
import layoutbench.commands, layoutbench.elfinfo, layoutbench.specs, layoutbench.symdiff.files  # noqa: F401,E401  (what the command imports, once)
replies = os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            out = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            err = os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(out, 1); os.dup2(err, 2)
            os.chdir(req["cwd"])
            os.environ["TMPDIR"] = tempfile.tempdir = req["tmpdir"]
            sys.argv = ["layoutbench", *req["args"]]
            cli.main(args=req["args"], prog_name="layoutbench")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            try:
                sys.stdout.flush(); sys.stderr.flush()
            finally:
                os._exit(code)
    end, status = time.monotonic() + req["timeout"], None
    while status is None:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(st)
        elif time.monotonic() > end:
            os.killpg(pid, 9)
            os.waitpid(pid, 0)
            status = "hang"
        else:
            time.sleep(0.002)
    try:
        os.killpg(pid, 9)  # anything it left behind (llvm-objdump)
    except ProcessLookupError:
        pass
    replies.write(json.dumps({"status": status}) + "\n")
    replies.flush()
"""


class _Server:
    """The command's fork server (started once, on first use)."""

    proc: subprocess.Popen | None = None
    lock = threading.Lock()

    @classmethod
    def run(cls, args: list[str], out: Path, err: Path, cwd: Path, timeout: float, tmpdir: Path) -> int | str:
        with cls.lock:
            if cls.proc is None or cls.proc.poll() is not None:
                # this checkout's layoutbench: PYTHONPATH first on the server's sys.path (-P: no working
                # directory before it, which every child changes)
                env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "160",
                       "PYTHONPATH": str(ROOT)}
                cls.proc = subprocess.Popen([sys.executable, "-P", "-c", _SERVER, str(MEMORY)],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
            req = {"args": args, "out": str(out), "err": str(err), "cwd": str(cwd), "timeout": timeout,
                   "tmpdir": str(tmpdir)}
            cls.proc.stdin.write(json.dumps(req) + "\n")
            cls.proc.stdin.flush()
            r, _, _ = select.select([cls.proc.stdout], [], [], timeout + 30)
            if not r:
                raise RuntimeError("the symdiff fork server stopped answering")
            return json.loads(cls.proc.stdout.readline())["status"]


def _limit() -> None:
    os.setpgid(0, 0)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run_native(args: list[str], cwd: Path, timeout: float = TIMEOUT, tmpdir: Path | None = None
               ) -> tuple[int | str, bytes, str]:
    """The helper on its own (no LAYOUTBENCH_PYTHON: exit 125 where the front end words the error),
    under the memory limit: (exit status or "hang"; negative: a signal), stdout, stderr."""
    env = {k: v for k, v in os.environ.items() if k != "LAYOUTBENCH_PYTHON"}
    env.update(LAYOUTBENCH_NATIVE_TRACE="1", LAYOUTBENCH_ROOT=str(ROOT), TMPDIR=str(tmpdir or _tmpdir(cwd)))
    p = subprocess.Popen([str(HELPER), *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, preexec_fn=_limit)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "hang", b"", ""
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _tmpdir(cwd: Path) -> Path:
    d = cwd / ".tmp"
    d.mkdir(exist_ok=True)
    return d


def run_command(args: list[str], cwd: Path, timeout: float = TIMEOUT, tmpdir: Path | None = None
                ) -> tuple[int | str, bytes, str]:
    """``layoutbench symdiff`` (the fork server), under the memory limit."""
    out, err = cwd / ".py.out", cwd / ".py.err"
    status = _Server.run(["symdiff", *args], out, err, cwd, timeout, tmpdir or _tmpdir(cwd))
    return status, out.read_bytes(), err.read_bytes().decode("utf-8", "replace")


def refusal_ok(err: str, files: list[str]) -> bool:
    """ONE line ``layoutbench: error: ...`` that names one of the files (its name at least)."""
    lines = err.strip().splitlines()
    return (len(lines) == 1 and lines[0].startswith("layoutbench: error: ") and "Traceback" not in err
            and any(f in lines[0] or Path(f).name in lines[0] for f in files))


def judge(old: str, new: str, cwd: Path, expect: str | None = None, timeout: float = TIMEOUT,
          detail: dict | None = None, forbid: str | None = None, text: bool = False) -> str:
    """Diff OLD NEW by the command and by the helper alone; the outcome (see the module's docstring).
    expect "refuse": an answer is a wrong success; "answer": so is a refusal; forbid: text neither
    may print (what a file that must not be read holds); text: the text report, not JSON."""
    flag = [] if text else ["--json"]
    args = [old, new, *flag]
    if any(a.startswith("-") for a in (old, new)):
        args = [*flag, "--", old, new]
    tmpdir = _tmpdir(cwd)
    for f in tmpdir.iterdir():
        f.unlink()
    py, py_out, py_err = run_command(args, cwd, timeout, tmpdir)
    na, na_out, na_err = run_native(["--json", "--", old, new], cwd, timeout, tmpdir)
    left = sorted(f.name for f in tmpdir.iterdir())
    if detail is None:
        detail = LAST
    detail.clear()
    detail.update(command=py, command_err=py_err[-2000:], native=na, native_err=na_err[-2000:],
                  same=py_out == na_out, left=left)
    if "hang" in (py, na):
        return "hang"
    if left:  # a temporary file (llvm-objdump's response file) left behind
        return "wrong-success"
    if forbid and any(forbid in t for t in (py_out.decode("utf-8", "replace"), py_err,
                                             na_out.decode("utf-8", "replace"), na_err)):
        return "wrong-success"
    if "Traceback" in py_err or "internal error" in na_err + py_err or not isinstance(na, int) or na < 0 \
            or na not in (0, 1, 2, 125) or py not in (0, 1, 2):
        return "traceback"
    if py == 2:
        if not refusal_ok(py_err, [old, new]):
            return "traceback"
        return "clean" if na in (2, 125) and expect != "answer" else "wrong-success"
    if expect == "refuse" or na != py:
        return "wrong-success"
    return "clean" if text or na_out == py_out else "wrong-success"


# -- the crafted inputs ---------------------------------------------------------------------------

U64 = (1 << 64) - 1
STRTAB_16M = 16 << 20


def _mutations(old: Path, new: Path, d: Path) -> list[tuple[str, Callable[[Elf], None], bool]]:
    """(name, edit of new.elf, must be refused)."""

    def ehdr(fmt: str, at: int, v: int):
        return lambda e: struct.pack_into(fmt, e.b, at, v)

    def sh(name: str, **kw):
        return lambda e: e.set_sh(e.index(name), **kw)

    def sym(name: str, **kw):
        return lambda e: e.set_sym(e.sym_index(name), **kw)

    def many_syms_no_nul(e: Elf):  # 2000 symbols named into a 16 MB string table with no NUL
        one = e.syms()[e.sym_index("caller")]
        raw = bytes(24) + b"".join(struct.pack(SYM_FMT, 1 + 8 * k, *one[1:]) for k in range(2000))
        e.replace_section(".symtab", raw)
        e.replace_section(".strtab", b"A" * STRTAB_16M)

    def long_names(e: Elf):  # a NUL-terminated 16 MB name shared by 2000 symbols (one byte apart)
        one = e.syms()[e.sym_index("caller")]
        raw = bytes(24) + b"".join(struct.pack(SYM_FMT, 1 + k, *one[1:4], one[4] + k, 0) for k in range(2000))
        e.replace_section(".symtab", raw)
        e.replace_section(".strtab", b"\0" + b"B" * STRTAB_16M + b"\0")

    def names_past_table(e: Elf):
        e.set_sym(e.sym_index("caller"), name=len(e.section(".strtab")) + 100)

    def strtab_no_nul(e: Elf):
        tab = e.section(".strtab")
        e.replace_section(".strtab", tab[:-1] + b"Z")

    def non_utf8(e: Elf):
        e.rename_symbol("caller", b"call\xff\xfeer\xc3")

    def non_utf8_section(e: Elf):
        strndx = struct.unpack_from("<H", e.b, 0x3E)[0]
        h = e.sh(strndx)
        tab = bytearray(e.b[h["offset"]:h["offset"] + h["size"]])
        at = tab.index(b".text")
        tab[at + 1] = 0xFF
        e.b[h["offset"]:h["offset"] + h["size"]] = tab

    def xindex(e: Elf):
        e.set_sym(e.sym_index("caller"), shndx=0xFFFF)

    def shnum_huge(e: Elf):
        struct.pack_into("<H", e.b, 0x3C, 0xFFFF)

    def extended_numbering(e: Elf):  # e_shnum 0: the count is in section 0's size (2**63 here)
        struct.pack_into("<H", e.b, 0x3C, 0)
        e.set_sh(0, size=1 << 63)

    def xindex_strndx(e: Elf):
        struct.pack_into("<H", e.b, 0x3E, 0xFFFF)
        e.set_sh(0, link=999)

    def overlap(e: Elf):  # .symtab's bytes are .text's
        t = e.sh(e.index(".text"))
        e.set_sh(e.index(".symtab"), offset=t["offset"])

    def link_loop(e: Elf):  # .symtab's string table is .symtab itself
        i = e.index(".symtab")
        e.set_sh(i, link=i)

    def strtab_link_loop(e: Elf):
        i, j = e.index(".symtab"), e.index(".strtab")
        e.set_sh(j, link=i, type=2)  # .strtab claims to be a symbol table linking back

    def two_symtabs(e: Elf):
        i = e.index(".symtab")
        e.set_sh(e.index(".comment"), type=2, link=i, entsize=24)

    def dup_names(e: Elf):
        k = e.sym_index("grow")
        e.set_sym(e.sym_index("callee"), name=e.syms()[k][0])

    def every_symbol_odd(e: Elf):
        for k in range(1, len(e.syms())):
            e.set_sym(k, info=(15 << 4) | 15)

    def bss_huge(e: Elf):
        e.set_sym(e.sym_index("zeroes"), size=1 << 62)

    def cut(n: int):
        def f(e: Elf):
            del e.b[n:]
        return f

    def cut_symtab(e: Elf):
        h = e.sh(e.index(".symtab"))
        del e.b[h["offset"] + 30:]

    return [
        ("shoff-past-eof", ehdr("<Q", 0x28, 1 << 40), True),
        ("shoff-wraps", ehdr("<Q", 0x28, U64 - 63), True),
        ("shnum-huge", shnum_huge, True),
        ("extended-numbering-huge", extended_numbering, True),
        ("shstrndx-out-of-range", ehdr("<H", 0x3E, 500), True),
        ("shstrndx-xindex-bad", xindex_strndx, True),
        ("shentsize-wrong", ehdr("<H", 0x3A, 40), True),
        ("class-32-on-64", ehdr("<B", 4, 1), True),
        ("class-bad", ehdr("<B", 4, 7), True),
        ("big-endian-flag", ehdr("<B", 5, 2), True),
        ("text-offset-past-eof", sh(".text", offset=1 << 40), True),
        ("text-offset-size-wraps", sh(".text", offset=U64 - 15, size=64), True),
        ("strtab-offset-size-wraps", sh(".strtab", offset=U64 - 7, size=32), True),
        ("shstrtab-offset-size-wraps", sh(".shstrtab", offset=(1 << 63) + 5, size=1 << 63), True),
        ("symtab-offset-past-eof", sh(".symtab", offset=1 << 33), True),
        ("symtab-entsize-0", sh(".symtab", entsize=0), False),
        ("symtab-size-odd", sh(".symtab", size=24 * 5 + 7), False),
        ("symtab-size-0", sh(".symtab", size=0), False),
        ("symtab-link-0", sh(".symtab", link=0), True),
        ("symtab-link-out-of-range", sh(".symtab", link=4000), True),
        ("symtab-link-self", link_loop, True),
        ("strtab-link-loop", strtab_link_loop, True),
        ("strtab-nobits", sh(".strtab", type=8), True),
        ("strtab-no-nul", strtab_no_nul, True),
        ("strtab-16MB-no-nul-2000-symbols", many_syms_no_nul, True),
        ("names-16MB-long-2000-symbols", long_names, True),
        ("name-past-strtab", names_past_table, True),
        ("name-not-utf8", non_utf8, False),
        ("section-name-not-utf8", non_utf8_section, False),
        ("overlapping-sections", overlap, False),
        ("two-symtabs", two_symtabs, False),
        ("shndx-out-of-range", sym("caller", shndx=500), False),
        ("shndx-xindex-without-symtab-shndx", xindex, False),
        ("shndx-abs", sym("caller", shndx=0xFFF1), False),
        ("shndx-common", sym("table", shndx=0xFFF2), False),
        ("size-2**64-1", sym("caller", size=U64), True),
        ("value-size-wrap", sym("callee", value=U64 - 3, size=16), True),
        ("size-past-eof", sym("caller", size=1 << 20), False),
        ("bss-size-huge", bss_huge, False),
        ("tls-value-huge", sym("tls_counter", value=1 << 62), False),
        ("value-0", sym("grow", value=0), False),
        ("duplicate-names", dup_names, False),
        ("odd-type-and-binding", every_symbol_odd, False),
        ("truncated-in-header", cut(20), True),
        ("truncated-at-64", cut(64), True),
        ("truncated-in-section-headers", lambda e: cut(e.shoff + 64 * 3)(e), True),
        ("truncated-in-symtab", cut_symtab, True),
        ("empty", cut(0), True),
        ("e-machine-unknown", ehdr("<H", 0x12, 0xBEEF), True),  # an image of no known machine beside an x86-64 one
        ("e-machine-says-aarch64", ehdr("<H", 0x12, 183), True),  # only the header says AArch64: still refused
        ("e-type-says-object", ehdr("<H", 0x10, 1), True),
    ]


#: other machines (clang's --target), each image linked from the same two sources by ld.lld
OTHER_MACHINES = ("aarch64-unknown-none-elf", "riscv64-unknown-none-elf", "i386-unknown-none-elf",
                  "powerpc64-unknown-none-elf")


def other_machine(tmp: Path, target: str) -> Path:
    """old.elf's program linked for another machine (i386: ELF32; powerpc64: big-endian)."""
    d = tmp / "machines"
    out = d / f"{target}.elf"
    if out.is_file():
        return out
    d.mkdir(parents=True, exist_ok=True)
    (d / "main.c").write_text(MAIN_C)
    (d / "other.c").write_text(OTHER_C)
    objs = []
    for src in ("main", "other"):
        o = d / f"{target}-{src}.o"
        subprocess.run(["clang-19", f"--target={target}", "-ffreestanding", "-fno-pic", "-O1", "-ffunction-sections",
                        "-fdata-sections", "-fno-asynchronous-unwind-tables", "-DGROW=1", "-DMUL=3", "-c",
                        str(d / f"{src}.c"), "-o", str(o)], check=True)
        objs.append(str(o))
    subprocess.run(["ld.lld-19", "-e", "_start", "-o", str(out), *objs], check=True)
    return out


def _machines(base: Path) -> list[tuple[str, Callable[[Path], tuple[str, str]]]]:
    """Pairs of images of different machines or kinds: each must be refused, in both orders."""
    def pair(target: str | None, swap: bool):
        def make(tmp: Path) -> tuple[str, str]:
            old, _ = base_images(base)
            other = other_machine(base, target) if target else old.parent / "old-main.o"  # a .o of the same program
            return (str(other), str(old)) if swap else (str(old), str(other))
        return make
    return [(f"{target or 'object-file'}{'-as-old' if swap else ''}", pair(target, swap))
            for target in (*OTHER_MACHINES, None) for swap in (False, True)]


def _case(tmp: Path, make: Callable[[Path], tuple[str, str]], expect: str | None = None,
          forbid: str | None = None, text: bool = False) -> Callable[[], str]:
    def run() -> str:
        tmp.mkdir(parents=True, exist_ok=True)
        old, new = make(tmp)
        return judge(old, new, tmp, expect, forbid=forbid, text=text)
    return run


def _mutated(base: Path, name: str, edit: Callable[[Elf], None], refuse: bool, swap: bool = False):
    def make(tmp: Path) -> tuple[str, str]:
        old, new = base_images(base)
        e = Elf(new.read_bytes())
        edit(e)
        f = e.write(tmp / f"{name}.elf")
        return (str(f), str(old)) if swap else (str(old), str(f))
    return make


def _special(base: Path) -> list[tuple[str, Callable[[Path], tuple[str, str]], str, str | None]]:
    """Inputs that are not a mutated file: the kind of file, its path, a name meant for llvm-objdump."""

    def fifo(tmp: Path):
        old, _ = base_images(base)
        f = tmp / "fifo.elf"
        if not f.exists():
            os.mkfifo(f)
        return str(old), str(f)

    def directory(tmp: Path):
        old, _ = base_images(base)
        (tmp / "dir.elf").mkdir(exist_ok=True)
        return str(old), str(tmp / "dir.elf")

    def devnull(tmp: Path):
        old, _ = base_images(base)
        return str(old), "/dev/null"

    def dash(tmp: Path):  # a relative path starting with "-": a file, never an option of llvm-objdump
        old, new = base_images(base)
        shutil.copy(old, tmp / "-old.elf")
        shutil.copy(new, tmp / "-new.elf")
        return "-old.elf", "-new.elf"

    def at(tmp: Path):  # a relative path starting with "@": a file, never a response file
        old, new = base_images(base)
        shutil.copy(new, tmp / "@new.elf")
        (tmp / "new.elf").write_text("--RESPONSE-FILE-READ-22\n")
        return str(old), "@new.elf"

    def at_name(tmp: Path):  # a symbol named "helper @FILE": FILE must not be read by llvm-objdump
        old, new = base_images(base)
        secret = tmp / "secret.txt"
        secret.write_text("--SECRET-CONTENTS-22\n")
        out = []
        for src in (old, new):
            e = Elf(src.read_bytes())
            k = [k for k, s in enumerate(e.syms()) if s[1] & 0xF == 2 and _name(e, s) == "helper"][0]
            tab = e.section(".strtab")
            e.replace_section(".strtab", tab + f"helper @{secret}".encode() + b"\0")
            e.set_sym(k, name=len(tab))
            out.append(str(e.write(tmp / f"at-name-{src.name}")))
        return out[0], out[1]

    def spaces(tmp: Path):  # quotes, backslashes, spaces and commas in names llvm-objdump is asked for
        old, new = base_images(base)
        out = []
        for src in (old, new):
            e = Elf(src.read_bytes())
            k = [k for k, s in enumerate(e.syms()) if s[1] & 0xF == 2 and _name(e, s) == "helper"][0]
            tab = e.section(".strtab")
            e.replace_section(".strtab", tab + b"he'l\"p\\er \t x" + b"\0")
            e.set_sym(k, name=len(tab))
            out.append(str(e.write(tmp / f"quoted-{src.name}")))
        return out[0], out[1]

    def markup(tmp: Path):  # what a terminal or rich could take for markup or control: printed as it is
        old, new = base_images(base)
        out = []
        for src in (old, new):
            e = Elf(src.read_bytes())
            e.rename_symbol("grow", b"[bold red]grow[/]\x1b[2J\x07\r\n")
            out.append(str(e.write(tmp / f"markup-{src.name}")))
        return out[0], out[1]

    def units_fifo(tmp: Path):  # a plan beside the images, and units.json a FIFO: not waited for
        old, new = base_images(base)
        shutil.copy(old, tmp / "old.elf")
        shutil.copy(new, tmp / "new.elf")
        (tmp / "plan.json").write_text(json.dumps({"kernel": "no-such-kernel", "image": "kernel", "commit": "0" * 40,
                                                   "layout": "sorted", "seed": 0, "groups": {}, "pinned": [],
                                                   "format": 1}))
        if not (tmp / "units.json").exists():
            os.mkfifo(tmp / "units.json")
        return str(tmp / "old.elf"), str(tmp / "new.elf")

    def same(tmp: Path):
        old, new = base_images(base)
        return str(old), str(new)

    return [("fifo", fifo, "refuse", None), ("directory", directory, "refuse", None),
            ("dev-null", devnull, "refuse", None),
            ("path-starts-with-dash", dash, "answer", None),
            ("path-starts-with-at", at, "answer", "RESPONSE-FILE-READ"),
            ("symbol-name-with-@file", at_name, "answer", "SECRET-CONTENTS"),
            ("symbol-name-with-quotes", spaces, "answer", None),
            ("symbol-name-with-markup", markup, "answer", "\x1b[2J"),
            ("units-json-fifo", units_fifo, "answer", None),
            ("the-real-pair", same, "answer", None)]


def _name(e: Elf, s: list) -> str:
    tab = e.section(".strtab")
    return tab[s[0]:tab.index(b"\0", s[0])].decode("utf-8", "replace")


# -- the byte-flip fuzz ---------------------------------------------------------------------------

def flipped(base: Path, k: int, tmp: Path) -> tuple[str, str]:
    """Input k of the fuzz: new.elf (or old.elf) with 1 to 8 bytes set at random, most in the
    headers, the section headers, the symbol table and its string table (the rest is code and
    data, where a flip only changes an answer), seeded by SEED and k."""
    old, new = base_images(base)
    rnd = random.Random(SEED * 100003 + k)
    src = new if k % 2 == 0 else old
    e = Elf(src.read_bytes())
    regions = [(0, 64), (e.shoff, e.shoff + 64 * e.shnum)]
    for name in (".symtab", ".strtab", ".shstrtab"):
        h = e.sh(e.index(name))
        regions.append((h["offset"], h["offset"] + h["size"]))
    regions.append((0, len(e.b)))
    for _ in range(rnd.randint(1, 8)):
        lo, hi = rnd.choice(regions)
        at = rnd.randrange(lo, hi)
        e.b[at] = rnd.choice((0, 0xFF, 0x80, 0x7F, rnd.randrange(256), e.b[at] ^ (1 << rnd.randrange(8))))
    f = e.write(tmp / f"flip-{k:04d}.elf")
    return (str(old), str(f)) if k % 3 else (str(f), str(old))


# -- the interface --------------------------------------------------------------------------------

def cases(tmp: Path, flips: int = FLIPS) -> list[tuple[str, Callable[[], str]]]:
    """Every input of this module: (name, run -> outcome).  The crafted inputs (each mutation of the
    new image, and some of the old one too), then `flips` byte-flipped ones."""
    tmp = Path(tmp)
    base = tmp / "images"
    out: list[tuple[str, Callable[[], str]]] = []
    for name, edit, refuse in _mutations(*base_images(base), tmp):
        out.append((f"crafted/{name}", _case(tmp / "crafted", _mutated(base, name, edit, refuse),
                                             "refuse" if refuse else None)))
    for name in ("strtab-16MB-no-nul-2000-symbols", "name-past-strtab", "name-not-utf8", "size-2**64-1",
                 "symtab-link-0", "truncated-in-symtab", "e-machine-unknown"):
        edit, refuse = {n: (e, r) for n, e, r in _mutations(*base_images(base), tmp)}[name]
        out.append((f"crafted/{name}-as-old", _case(tmp / "crafted-old",
                                                     _mutated(base, name + "-old", edit, refuse, swap=True),
                                                     "refuse" if refuse else None)))
    for name, make in _machines(base):
        out.append((f"machine/{name}", _case(tmp / "machine", make, "refuse")))
    for name, make, expect, forbid in _special(base):
        out.append((f"special/{name}", _case(tmp / "special" / name, make, expect, forbid)))
        out.append((f"special/{name}/text", _case(tmp / "special" / name, make, expect, forbid, text=True)))
    for k in range(flips):
        out.append((f"flip/{k:04d}", _case(tmp / "flip", lambda t, k=k: flipped(base, k, t))))
    return out


def truncated_while_read(tmp: Path, rounds: int = 8) -> list[tuple[str, int | str]]:
    """The helper and the command on an image that another thread keeps truncating and rewriting:
    (who, status) of each run.  A status is an exit code (0, 1, 2, or 125: the front end words it),
    never a signal or a hang."""
    old, new = base_images(tmp / "images")
    d = tmp / "truncating"
    d.mkdir(parents=True, exist_ok=True)
    f = d / "new.elf"
    whole = new.read_bytes() + bytes(1 << 20)  # bigger, so that a run sees it shrink under it
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            with open(f, "r+b" if f.exists() else "wb") as h:
                h.truncate(0)
                h.write(whole)
                h.flush()
                time.sleep(0.0005)
                h.truncate(rnd.randrange(0, len(whole)))
            time.sleep(0.0005)

    rnd = random.Random(SEED)
    f.write_bytes(whole)
    t = threading.Thread(target=churn, daemon=True)
    t.start()
    seen = []
    try:
        for _ in range(rounds):
            seen.append(("native", run_native([str(old), str(f), "--json"], d)[0]))
            py, _, err = run_command([str(old), str(f), "--json"], d)
            seen.append(("command", "traceback" if "Traceback" in err else py))
    finally:
        stop.set()
        t.join()
    return seen


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hostile-elf-") as t:
        counts = dict.fromkeys(OUTCOMES, 0)
        bad = []
        for name, run in cases(Path(t)):
            r = run()
            counts[r] += 1
            if r != "clean":
                bad.append((name, r))
        for name, r in bad:
            print(f"  {r:14} {name}")
        print(f"tried {sum(counts.values())}  " + "  ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":  # python3 -m bench.hostile.elf_cases --one NAME: its details
        import tempfile

        t = Path(tempfile.mkdtemp(prefix="hostile-elf-"))
        for name, run in cases(t):
            if name == sys.argv[2]:
                print(run())
                for k, v in LAST.items():
                    print(f"{k}: {v if not isinstance(v, str) else chr(10).join(v.splitlines()[-6:])}")
        sys.exit(0)
    main()
