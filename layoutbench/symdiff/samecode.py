"""Same code: bytes compared in bulk, differences explained as address fields naming the same
targets (numpy), llvm-objdump's instruction view for what remains."""

from __future__ import annotations

import bisect
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import LayoutbenchError
from .image import MASK64, Image, Sym, same_target


class Stats:
    def __init__(self):
        self.identical = 0
        self.masked = 0
        self.fields = 0
        self.objdump = 0


def explain(old: Image, o: Sym, new: Image, n: Sym, ob: bytes, nb: bytes, st: Stats) -> bool | None:
    """True: same code (differences are addresses naming the same targets); None: undecided."""
    a = np.frombuffer(ob, np.uint8)
    b = np.frombuffer(nb, np.uint8)
    diff = np.flatnonzero(a != b)
    if diff.size == 0:
        st.identical += 1
        return True
    L = len(ob)
    code = o.kind == "func" or o.sec.executable
    ends = (0, 1, 2, 4) if code else (0,)
    covered = 0
    fields = 0
    dl = diff.tolist()
    for pos, i in enumerate(dl):
        if i < covered:
            continue
        j = i  # the last differing byte of this run (a field holds at most 4 of them)
        while pos + 1 < len(dl) and dl[pos + 1] == j + 1 and j - i < 3:
            pos += 1
            j += 1
        hit = 0
        for s in (i, i - 1, i - 2, i - 3):
            if s < 0 or s + 4 > L or s + 3 < j:
                continue
            ro = int.from_bytes(ob[s:s + 4], old.order, signed=True)
            rn = int.from_bytes(nb[s:s + 4], old.order, signed=True)
            if old.lo <= ro & MASK64 <= old.hi and same_target(old, ro & MASK64, new, rn & MASK64):
                hit = s + 4  # an absolute address (non-PIC code, data pointers)
                break
            for k in ends:
                if s + 4 + k > L and code:
                    break
                if same_target(old, o.addr + s + 4 + k + ro, new, n.addr + s + 4 + k + rn):
                    hit = s + 4
                    break
            if not hit and not old.lo <= ro & MASK64 <= old.hi and same_target(old, ro & MASK64, new, rn & MASK64):
                hit = s + 4
            if hit:
                break
        if not hit:
            for s in range(i, i - 8, -1):
                if s < 0 or s + 8 > L:
                    continue
                if same_target(old, int.from_bytes(ob[s:s + 8], old.order), new,
                               int.from_bytes(nb[s:s + 8], old.order)):
                    hit = s + 8
                    break
        if not hit:
            return None if code else False
        covered = hit
        fields += 1
    st.masked += 1
    st.fields += fields
    return True


#: The fields :func:`explain` tries, in its order, for a run of differing bytes starting at offset
#: i: (width, back, k) is a field of `width` bytes starting at i - back, read as an address (k None)
#: or as a PC-relative displacement of an instruction ending k bytes after the field.  Every field
#: of one width and start covers the same bytes, so only the first (width, back) that names the
#: same target in both images matters.
_FIELDS = [(4, back, k) for back in range(4) for k in (None, 0, 1, 2, 4)] + [(8, back, None) for back in range(8)]
_CHUNK = 1 << 22  #: bytes of symbol pairs compared per batch (bounds the index arrays' memory)


class _Targets:
    """:func:`same_target` over arrays of address pairs.

    Its fast path (x inside a sized symbol of the old image whose twin has the same size and
    moved by exactly y - x) and its cheap "no" (x or y outside both the image and the absolute
    symbols: nothing to name) are decided in numpy; the pairs left (``unknown``) go to
    :func:`same_target` itself, once per distinct pair.  Addresses are uint64; a computed address
    that wrapped (below 0 or past 2**64 in Python's ints) is marked invalid, and names nothing.
    """

    def __init__(self, old: Image, new: Image):
        self.old, self.new = old, new
        sized, twin, count = old._sized, new.by_key.get, len(old._sized)
        twins = [twin(s.key) for s in sized]
        start = np.fromiter((s.addr for s in sized), np.uint64, count)
        size = np.fromiter((s.size for s in sized), np.uint64, count)
        has = np.fromiter((n is not None for n in twins), bool, count)
        naddr = np.fromiter((n.addr if n is not None else 0 for n in twins), np.uint64, count)
        nsize = np.fromiter((n.size if n is not None else 0 for n in twins), np.uint64, count)
        self.start, self.end = start, start + size
        self.delta = np.where(has, naddr - start, np.uint64(0))  #: the twin's shift, modulo 2**64
        self.moves = has & (nsize == size)  #: the twin has the same size
        self.bounds = [(np.uint64(img.lo), np.uint64(img.hi), np.array(sorted(img.absolute), np.uint64))
                       for img in (old, new)]
        self.memo: dict[tuple[int, int], bool] = {}

    def classify(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(same, unknown): same_target is True for `same`; for `unknown` only same_target can tell;
        for the rest it is False."""
        if self.start.size:
            i = np.searchsorted(self.start, x, "right") - 1
            j = np.maximum(i, 0)
            same = (i >= 0) & (x < self.end[j]) & self.moves[j] & (y - x == self.delta[j])
        else:
            same = np.zeros(x.shape, bool)
        (lo, hi, ab), (nlo, nhi, nab) = self.bounds
        named = ((x >= lo) & (x <= hi) | np.isin(x, ab)) & ((y >= nlo) & (y <= nhi) | np.isin(y, nab))
        return same, named & ~same

    def decide(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """same_target for each pair (the unknown ones), each distinct pair asked once."""
        memo, old, new = self.memo, self.old, self.new
        out = []
        for a, b in zip(x.tolist(), y.tolist()):
            r = memo.get((a, b))
            if r is None:
                r = memo[(a, b)] = same_target(old, a, new, b)
            out.append(r)
        return np.array(out, bool)


def _word(buf: np.ndarray, at: np.ndarray, width: int, order: str = "little") -> np.ndarray:
    """The unsigned `width`-byte words (in byte ``order``) of buf at the given offsets, as uint64."""
    rows = np.lib.stride_tricks.sliding_window_view(buf, width)[at]  # one gather: (len(at), width) bytes
    return rows.view(("<" if order == "little" else ">") + ("u4" if width == 4 else "u8")).reshape(-1).astype(np.uint64)


def _displaced(base: np.ndarray, disp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """base + disp (signed) as uint64, and whether it stayed in 0 .. 2**64-1 (no wrap)."""
    x = base + disp.astype(np.uint64)
    return x, np.where(disp >= 0, x >= base, x < base)


def explain_all(old: Image, new: Image, pairs: list[tuple[Sym, Sym]], st: Stats) -> list[bool | None]:
    """:func:`explain` for many same-size pairs at once, with the same answers and counts.

    The bytes of all pairs are gathered into two arrays and compared at once.  Every differing
    byte is a possible start of a run; for a set of them at once, the candidate fields of
    :data:`_FIELDS` are tried in order (a byte leaves once a field names the same target), and
    what :func:`same_target` decides beyond its fast path is asked of it once per distinct
    address pair.  Each pair's runs are walked as :func:`explain` does (the first differing byte
    not covered by the previous field starts the next run), with the bytes that start a run of
    differing bytes decided up front and any other byte a walk reaches decided in a next round.
    """
    out: list[bool | None] = []
    targets = _Targets(old, new)
    lo = 0
    while lo < len(pairs):  # in batches of about _CHUNK bytes
        hi, size = lo, 0
        while hi < len(pairs) and (size < _CHUNK or hi == lo):
            size += pairs[hi][0].size
            hi += 1
        out += _explain_batch(targets, pairs[lo:hi], st)
        lo = hi
    return out


def _bytes(img: Image, syms: list[Sym]) -> np.ndarray:
    """The bytes of the symbols one after the other, then 8 zero bytes (a word read at a symbol's
    end stays in the array)."""
    data, parts = img.data, []
    for s in syms:
        at = img.offset_of(s)
        parts.append(data[at:at + s.size])
    parts.append(bytes(8))
    return np.frombuffer(b"".join(parts), np.uint8)


@dataclass
class _Batch:
    """The differing bytes of a batch of same-size pairs (:func:`_explain_batch`), a row each: a
    possible start of a run.  ``a``, ``b``: the pairs' bytes end to end; ``first``: where each pair's
    bytes start; per row: its pair ``q``, its offset ``i`` in the symbol, the last byte ``j`` of its run
    (at most 4), the symbol's ``length``, the pair's addresses and whether it is code."""

    targets: _Targets
    a: np.ndarray
    b: np.ndarray
    rows: np.ndarray
    first: np.ndarray
    q: np.ndarray
    i: np.ndarray
    j: np.ndarray
    length: np.ndarray
    oaddr: np.ndarray
    naddr: np.ndarray
    code: np.ndarray


def _explain_batch(targets: _Targets, pairs: list[tuple[Sym, Sym]], st: Stats) -> list[bool | None]:
    old, new = targets.old, targets.new
    m = len(pairs)
    geometry = np.array([(o.size, o.addr, n.addr, o.kind == "func" or o.sec.executable) for o, n in pairs], np.uint64)
    size = geometry[:, 0].astype(np.int64)
    first = np.zeros(m, np.int64)  # where each pair's bytes start in the batch
    np.cumsum(size[:-1], out=first[1:])
    a, b = _bytes(old, [o for o, _ in pairs]), _bytes(new, [n for _, n in pairs])
    differs = a != b
    rows = np.flatnonzero(differs)  # every differing byte is a row: a possible run start
    q = np.searchsorted(first, rows, "right") - 1  # its pair
    i, length = rows - first[q], size[q]  # its offset in the symbol, the symbol's size
    run = np.zeros(rows.size, np.int64)  # the run's last byte: j = i + run (at most 4 bytes)
    more = np.ones(rows.size, bool)
    for t in (1, 2, 3):
        more &= (i + t < length) & differs[rows + t]
        run += more
    j = i + run
    bt = _Batch(targets, a, b, rows, first, q, i, j, length, geometry[q, 1], geometry[q, 2],
                geometry[q, 3].astype(bool))
    # Walk each pair's runs as explain does, every pair one step per round, in numpy.  Rows are
    # decided on demand, in bulk: first every row that starts a run of differing bytes (nearly all
    # run starts), then the rows some walk stopped at, undecided.
    UNDECIDED = -2
    cover = np.full(rows.size + 1, UNDECIDED, np.int64)  # per row (and one past the last): see covers
    nxt = np.zeros(rows.size + 1, np.int64)
    sel = np.flatnonzero((i == 0) | ~differs[rows - 1])
    at = np.searchsorted(rows, first)  # per pair: the row its walk is at
    ends = np.searchsorted(rows, first + size)
    fields = np.zeros(m, np.int64)
    out: list[bool | None] = [True] * m
    walking = np.flatnonzero(at < ends)
    st.identical += m - walking.size
    while walking.size:
        cover[sel], nxt[sel] = _covers(bt, sel)
        while walking.size:  # one step of every walk whose row is decided and explained
            t = at[walking]
            c = cover[t]
            step = c >= 0
            go = walking[step]
            fields[go] += 1
            at[go] = nxt[t[step]]
            done = go[at[go] >= ends[go]]  # walked past its last differing byte: every run explained
            st.masked += int(done.size)
            st.fields += int(fields[done].sum())
            for p in walking[c == -1].tolist():  # a run no field explains
                o = pairs[p][0]
                out[p] = None if o.kind == "func" or o.sec.executable else False
            stopped = walking[c == UNDECIDED]
            walking = go[at[go] < ends[go]]
            if stopped.size:
                break
        walking = np.union1d(walking, stopped) if stopped.size else walking
        sel = np.unique(at[walking][cover[at[walking]] == UNDECIDED])
    return out




def _covers(bt: _Batch, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the rows sel as run starts: the offset just past the first field of _FIELDS that
    names the same target in both images (-1: none does), and the row of the next run."""
    targets, a, b, rows, first, q = bt.targets, bt.a, bt.b, bt.rows, bt.first, bt.q
    i, j, length, oaddr, naddr, code = bt.i, bt.j, bt.length, bt.oaddr, bt.naddr, bt.code
    widths = np.array([w for w, _, _ in _FIELDS], np.int64)
    backs = np.array([bk for _, bk, _ in _FIELDS], np.int64)
    NONE = len(_FIELDS)
    found = np.full(sel.size, NONE, np.int64)  # per row of sel: index of that field in _FIELDS
    active = np.arange(sel.size)  # rows of sel without a field yet
    unknown = []  # (rows of sel, field, x, y) that only same_target can decide
    for f, (width, back, k) in enumerate(_FIELDS):
        r = sel[active]
        s = i[r] - back
        ok = (s >= 0) & (s + width <= length[r])
        if width == 4:
            ok &= s + 3 >= j[r]
        if k:  # instruction end past the field: code only, and inside the symbol
            ok &= code[r] & (s + 4 + k <= length[r])
        r, s, at = r[ok], s[ok], active[ok]
        if not r.size:
            continue
        g = rows[r] - back
        x, y = _word(a, g, width, bt.targets.old.order), _word(b, g, width, bt.targets.old.order)
        valid = True
        if width == 4:  # sign-extended
            x, y = (np.where(v >= 1 << 31, v.astype(np.int64) - (1 << 32), v.astype(np.int64)) for v in (x, y))
            if k is None:
                x, y = x.astype(np.uint64), y.astype(np.uint64)
            else:
                end = (s + 4 + k).astype(np.uint64)
                x, vx = _displaced(oaddr[r] + end, x)
                y, vy = _displaced(naddr[r] + end, y)
                valid = vx & vy
        same, maybe = targets.classify(x, y)
        found[at[same & valid]] = f
        maybe &= valid
        if maybe.any():
            unknown.append((at[maybe], f, x[maybe], y[maybe]))
        active = active[found[active] == NONE]
    if unknown:
        yes = targets.decide(np.concatenate([u[2] for u in unknown]), np.concatenate([u[3] for u in unknown]))
        at = np.concatenate([u[0] for u in unknown])
        f = np.concatenate([np.full(u[0].size, u[1], np.int64) for u in unknown])
        np.minimum.at(found, at[yes], f[yes])
    hit = found < NONE
    f = np.where(hit, found, 0)
    cover = np.where(hit, i[sel] - backs[f] + widths[f], -1)
    return cover, np.searchsorted(rows, first[q[sel]] + cover)



_LINE = re.compile(r"^\s*([0-9a-f]+):\s*(.*)$")
_RIP = re.compile(r"-?0x[0-9a-f]+\(%rip\)")
_HEX = re.compile(r"-?0x[0-9a-f]+")
_ANNOT = re.compile(r"\s*<[^>]*>")


_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,=$-")


def rsp_quote(arg: str) -> str:
    """One argument as a response-file entry llvm-objdump reads back as exactly that argument
    (GNU quoting: a backslash makes the next character literal): a symbol name with a space or a
    quote stays one argument, and `` @file`` in it is no response file to read."""
    return "".join(c if ord(c) >= 128 or ord(c) in _PLAIN else "\\" + c for c in arg)


def file_arg(path: Path) -> str:
    """A path as llvm-objdump's operand: never an option (``-x``) or a response file (``@x``)."""
    p = str(path)
    return p if p.startswith("/") else "./" + p


def objdump(img: Image, syms: list[Sym], tool: str) -> subprocess.Popen:
    """Start ONE llvm-objdump over the given functions (and any label inside them).  Its response
    file is removed by :func:`instructions` or :func:`close`."""
    ranges = sorted((s.addr, s.addr + s.size) for s in syms)
    starts = [r[0] for r in ranges]
    names = set(s.name for s in syms)
    for s in img.syms:  # labels inside a function split llvm-objdump's output: ask for them too
        i = bisect.bisect_right(starts, s.addr) - 1
        if i >= 0 and s.addr < ranges[i][1]:
            names.add(s.name)
    with tempfile.NamedTemporaryFile("w", suffix=".rsp", delete=False, encoding="utf-8") as rsp:
        try:
            rsp.write(rsp_quote("--disassemble-symbols=" + ",".join(sorted(names))) + "\n")
        except BaseException:
            os.unlink(rsp.name)
            raise
    try:
        p = subprocess.Popen([tool, "-d", "--no-show-raw-insn", f"@{rsp.name}", file_arg(img.path)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, errors="replace")
    except FileNotFoundError:
        os.unlink(rsp.name)
        raise LayoutbenchError(f"{tool} not found; install llvm-19 (apt-get install llvm-19)") from None
    p.rsp = rsp.name  # type: ignore[attr-defined]
    return p


def close(p: subprocess.Popen | None) -> None:
    """An llvm-objdump that will not be read: stopped, its response file removed."""
    if p is None:
        return
    if p.poll() is None:
        p.kill()
        p.wait()
    for f in (p.stdout, p.stderr):
        if f is not None:
            f.close()
    try:
        os.unlink(p.rsp)  # type: ignore[attr-defined]
    except FileNotFoundError:
        pass


def instructions(img: Image, syms: list[Sym], p: subprocess.Popen) -> dict[int, list[tuple[str, list[int]]]]:
    """Each function's instructions (by address) as (text with addresses taken out, [addresses])."""
    try:
        out, errtext = p.communicate()
    finally:
        close(p)
    if p.returncode != 0:
        first = errtext.strip().splitlines()[0] if errtext.strip() else f"exit {p.returncode}"
        raise LayoutbenchError(f"llvm-objdump failed on {img.path}: {first}")
    ranges = sorted((s.addr, s.addr + s.size) for s in syms)
    starts = [r[0] for r in ranges]
    text: dict[int, list] = {r[0]: [] for r in ranges}
    lines = []
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            lines.append((int(m.group(1), 16), m.group(2)))
    for j, (addr, body) in enumerate(lines):
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or addr >= ranges[i][1]:
            continue
        # the instruction ends where the next printed one starts, but never past its function (the
        # next printed line may be a later function's, symbols not asked for lying between)
        nxt = min(lines[j + 1][0], ranges[i][1]) if j + 1 < len(lines) and lines[j + 1][0] > addr else ranges[i][1]
        ins = _ANNOT.sub("", body.partition("#")[0]).strip()
        addrs: list[int] = []

        def rip(m: re.Match) -> str:  # the target is the next instruction's address + displacement
            addrs.append((nxt + int(m.group(0)[:-6], 16)) & MASK64)
            return "@(%rip)"

        def number(m: re.Match) -> str:
            v = int(m.group(0), 16) & MASK64
            if img.resolve(v) is None:
                return m.group(0)
            addrs.append(v)
            return "@"

        ins = _HEX.sub(number, _RIP.sub(rip, ins))
        text[starts[i]].append((ins, addrs))
    return text


def same_instructions(old: Image, a: list, new: Image, b: list) -> bool:
    if not a or len(a) != len(b):
        return False
    for (ta, xa), (tb, xb) in zip(a, b):
        if ta != tb or len(xa) != len(xb):
            return False
        if not all(x == y or same_target(old, x, new, y, wide=True) for x, y in zip(xa, xb)):
            return False
    return True
