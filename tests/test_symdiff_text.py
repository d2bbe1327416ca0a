"""The text of a diff (symdiff/render.py) and the result read back from its JSON (model.from_dict):
the native helper's JSON and the Python diff are printed by this one renderer, so what it prints is
checked here against the result itself, not against another path."""

from __future__ import annotations

import gc
import json
import os
import re
import signal
import subprocess
import sys
import time
from unittest import mock

import pytest

from conftest import lb
from layoutbench import fmt, native, symdiff
from layoutbench.symdiff import render
from layoutbench.symdiff.model import STATUSES, ObjectDiff
from test_symdiff import image, repo  # noqa: F401  (repo: the minikernel fixture)

PAIRS = [(("base", "sorted", 1), ("base", "random", 2)), (("base", "sorted", 1), ("edit", "sorted", 1)),
         (("base", "aligned", 1), ("addobj", "aligned", 1)), (("base", "sorted", 1), ("base", "sorted", 1))]


def _result(repo, pair):  # noqa: F811
    return symdiff.diff_files(*(image(repo, c, lay, s) for c, lay, s in pair))


@pytest.mark.parametrize("pair", PAIRS, ids=["layouts", "grown", "added-object", "itself"])
def test_the_result_read_back_from_its_json_is_the_result(repo, pair):  # noqa: F811
    """Every field: the symbols, the objects and their shifts, origins, propagation, counts."""
    res = _result(repo, pair)
    back = symdiff.SymdiffResult.from_dict(json.loads(res.to_json()))
    assert back == res
    assert back.placement_identical == res.placement_identical == (pair[0] == pair[1])
    assert render.text(back, symbols=True) == render.text(res, symbols=True)


@pytest.mark.parametrize("pair", PAIRS[:3], ids=["layouts", "grown", "added-object"])
def test_the_tables_hold_the_results_numbers(repo, pair):  # noqa: F811
    """Each per-object row is the object's counts (a blank for 0) and its two commonest shifts; the
    per-symbol table has one row per symbol that is not unchanged, with its addresses."""
    res = _result(repo, pair)
    lines = render.text(res, symbols=True).splitlines()
    at = lines.index("per object")
    header = lines[at + 1]
    assert header.split() == ["object", "symbols", *STATUSES, "shift"]
    rows = lines[at + 2:at + 2 + len(res.objects)]
    assert lines[at + 2 + len(res.objects)] == "per symbol (all but unchanged)"
    for o, row in zip(res.objects, rows):
        assert row.startswith(o.object + " ")
        for k in ("symbols", *STATUSES):  # right-aligned under its header, a blank for 0
            end = re.search(rf"(?<!\S){k}(?!\S)", header).end()
            want = str(o.total if k == "symbols" else o.counts[k] or "")
            cell = row[end - len(k):end].strip()
            assert cell == want and row[end:end + 1] in ("", " "), (k, row)
    sym_rows = lines[at + 4 + len(res.objects):]
    changed = [s for s in res.symbols if s.status != "unchanged"]
    assert len(sym_rows) == len(changed) > 0
    for s, row in zip(changed, sym_rows):
        words = row.split()
        assert words[:3] == [s.status, s.name, s.object]
        addrs = [f"{a:#x}" for a in (s.old_addr, s.new_addr) if a is not None]
        assert [w for w in words[3:] if w.startswith("0x")] == addrs, row
    assert all(line == line.rstrip() for line in lines)


def test_a_shift_of_whole_pages_is_said_so_and_the_commonest_shifts_come_first():
    o = ObjectDiff("a.o", {k: 0 for k in STATUSES} | {"moved": 9}, {-64: 2, 8192: 3, 4096: 3, 16: 1})
    (row,) = render.object_rows(type("R", (), {"objects": [o]})())
    assert row[0] == "a.o" and row[1] == "9" and row[2 + STATUSES.index("moved")] == "9"
    assert row[2 + STATUSES.index("unchanged")] == ""
    assert row[-1] == "+4096 (1 page), +8192 (2 pages) ..."  # 3 each (the smaller first), then more
    assert fmt.shift(-12288) == "-12288 (3 pages)" and fmt.shift(0) == "+0" and fmt.shift(-5) == "-5"


def test_a_table_is_as_wide_as_its_widest_cell_with_two_spaces_between_columns():
    lines = render.table("t", [("name", "left"), ("n", "right"), ("tail", "left")],
                         [["a", "1", "x"], ["long-name", "12345", ""], ["b", "", ""]])
    assert lines == ["t",
                     "name           n  tail",
                     "a              1  x",
                     "long-name  12345",
                     "b"]
    assert render.table("empty", [("name", "left"), ("n", "right")], []) == ["empty", "name  n"]


def test_a_name_with_control_characters_is_shown_not_sent(repo, tmp_path):  # noqa: F811
    """A symbol or object name holding an escape sequence reaches the terminal as \\xNN, in the
    summary and in the tables, through the command (the helper's JSON rendered by the front end)."""
    res = _result(repo, PAIRS[0])
    d = json.loads(res.to_json())
    d["objects"][0]["object"] = "evil\x1b[2J.o"
    d["shift_origins"][0]["symbol"] = "f\x07"
    d["symbols"][0]["name"] = "g\x1b]0;x\x07"
    d["symbols"][0]["status"] = "moved"
    text = render.text(symdiff.SymdiffResult.from_dict(d), symbols=True)
    assert "\x1b" not in text and "\x07" not in text
    assert "evil\\x1b[2J.o" in text and "f\\x07" in text and "g\\x1b]0;x\\x07" in text
    a, b = (image(repo, c, lay, s) for c, lay, s in PAIRS[0])
    p = lb("symdiff", str(a), str(b), check=False)
    assert p.returncode == 1 and p.stdout == render.text(res)


def _crafted(**over) -> symdiff.SymdiffResult:
    """A result written out by hand: six origins, a partial propagation, shifts of whole pages."""
    from layoutbench.symdiff.model import Propagation, ShiftOrigin, SideInfo, SymbolDiff

    side = SideInfo("a.elf", "a.elf", 3, "plan", "sorted:0", "0x1")
    origins = [ShiftOrigin(f".s{i}", 0x1000 * (i + 1), f"f{i}", "o.o" if i == 0 else "", "layout", "o.o", "why")
               for i in range(6)]
    syms = [SymbolDiff("f", "o.o", "func", "moved", 0x1000, 0x3000, 16, 16, ".text"),
            SymbolDiff("g", "o.o", "func", "unchanged", 0x2000, 0x2000, 8, 8, ".text"),
            SymbolDiff("h", "p.o", "func", "added", None, 0x4000, None, 4, ".text")]
    fields = dict(old=side, new=side, mapping="plan", counts={k: 0 for k in STATUSES} | {"moved": 1, "unchanged": 1,
                                                                                       "added": 1},
                  moved_by={8192: 1}, page_quantized=True, origins=origins,
                  propagation=Propagation(".text", 1, 2, 0x1000, 0x3000, False, "g"), text_bytes=3,
                  text_unchanged_bytes=1, text_functions=3, text_unchanged_functions=1,
                  objects=[ObjectDiff("o.o", {k: 0 for k in STATUSES} | {"moved": 1, "unchanged": 1}, {8192: 1, 16: 1})],
                  symbols=syms, compared={"identical_bytes": 1, "same_after_masking": 2, "address_fields": 3,
                                          "llvm_objdump": 0}, notes=["n"], text_moved_by={8192: 1})
    return symdiff.SymdiffResult(**(fields | over))


def test_the_summary_says_what_the_result_holds():
    lines = render.summary_lines(_crafted())
    assert lines[:2] == ["old: a.elf  [sorted:0, plan 0x1]", "new: a.elf  [sorted:0, plan 0x1]"]
    bare = symdiff.SideInfo("b.elf", "b.elf", 3, "file", None, None)
    assert render.summary_lines(_crafted(new=bare))[:2] == ["old: a.elf  [sorted:0, plan 0x1]", "new: b.elf"]
    ties = render.summary_lines(_crafted(moved_by={64: 2, -32: 2, 16: 3, 8: 1, 4: 1}))[3]
    assert ties.endswith("most: +16 x3, -32 x2, +64 x2, +4 x1")  # commonest first, then by shift
    assert lines[2] == "placement differs: 3 -> 3 symbols: 1 unchanged, 1 moved, 0 changed, 0 resized, 1 added, 0 removed"
    assert lines[3] == "moved: 1 symbols by +8192 (2 pages) bytes (code moved by whole pages only); most: +8192 (2 pages) x1"
    assert lines[4] == "shift origin .s0 at 0x1000 (o.o:f0): layout: why"
    assert lines[5:8] == [f"  also in .s{i} at {0x1000 * (i + 1):#x} (f{i}): layout: why" for i in (1, 2, 3)]
    assert lines[8] == "  ... and 2 more sections"
    assert lines[9] == "propagation: 1 of 3 symbols above the origin in .text moved, up to 0x3000; back in place from g"
    assert lines[10] == "text unchanged: 33.3% of function bytes (1 of 3 functions in place with the same code)"
    assert lines[11].startswith("code compared: 1 identical, 2 same after masking 3 address fields, 0 by llvm-objdump")
    assert lines[12:] == ["note: n"]
    text = "\n".join(render.summary_lines(_crafted(page_quantized=False, origins=_crafted().origins[:4],
                                                   propagation=None, text_bytes=0)))
    assert "(code not page-quantized)" in text and "more sections" not in text and "also in .s3" in text
    assert "propagation" not in text and "text unchanged" not in text
    assert "(no code moved)" in "\n".join(render.summary_lines(_crafted(text_moved_by={})))
    assert render.object_rows(_crafted())[0][-1] == "+16, +8192 (2 pages)"  # two shifts: no " ..."


def test_the_json_keeps_what_the_text_needs():
    res = _crafted()
    d = res.to_dict()
    assert d["text"]["unchanged_share"] == round(1 / 3, 6)
    assert [s["delta"] for s in d["symbols"]] == [0x2000, 0, None]
    assert [s["name"] for s in res.to_dict(all_symbols=False)["symbols"]] == ["f", "h"]
    rows = render.symbol_rows(res)
    assert rows == [["moved", "f", "o.o", "0x1000", "0x3000", "+8192 (2 pages)", "16"],
                    ["added", "h", "p.o", "", "0x4000", "", "4"]]
    assert symdiff.SymdiffResult.from_dict(json.loads(res.to_json())) == res
    assert gc.isenabled()  # the collector paused for the reading is running again


def test_ctrl_c_while_the_helper_diffs_is_one_line_and_exit_130(tmp_path):
    """The text of two files waits for the helper: an interrupt then ends the command with one line,
    no traceback, exit 130; a helper that prints JSON cut short is one line that says to run again."""
    helper = tmp_path / "helper"
    helper.write_text("#!/bin/sh\nexec sleep 60\n")
    helper.chmod(0o755)
    a, b = tmp_path / "a.elf", tmp_path / "b.elf"
    a.write_bytes(b"x")
    b.write_bytes(b"y")
    code = (f"import sys; from layoutbench import native; from layoutbench.symdiff import files; "
            f"native.binary = lambda: {str(helper)!r}; "
            f"print('ready', flush=True); files.text_fast_path(['symdiff', {str(a)!r}, {str(b)!r}])")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    assert p.stdout.readline() == "ready\n"
    deadline = time.monotonic() + 60
    while not subprocess.run(["pgrep", "-P", str(p.pid), "sleep"], capture_output=True).stdout.strip():
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err == "layoutbench: interrupted\n" and out == "", (out, err)
    helper.write_text("#!/bin/sh\necho '{\"old\": '\nexit 1\n")  # JSON cut short
    with mock.patch.object(native, "binary", lambda: str(helper)):
        with pytest.raises(native.Failed, match="output was cut short"):
            native.diff_json(str(a), str(b))
    helper.write_text("#!/bin/sh\nkill -9 $$\n")  # killed (the out-of-memory killer's signal)
    with mock.patch.object(native, "binary", lambda: str(helper)):
        with pytest.raises(native.Failed, match=r"^the symdiff helper was killed by SIGKILL while diffing .*a\.elf"):
            native.diff_json(str(a), str(b))
    helper.write_text("#!/bin/sh\necho 'thread panicked' >&2\nexit 101\n")  # neither an answer nor its line
    with mock.patch.object(native, "binary", lambda: str(helper)):
        with pytest.raises(native.Failed, match=r"failed on .* \(exit 101: thread panicked\)$"):
            native.diff_json(str(a), str(b))


def test_a_pair_the_helper_cannot_diff_is_worded_once_by_the_front_end(tmp_path):
    """The helper cannot diff the text's two files (exit 125): the command words it in one line (here:
    the files are not ELF) without running the helper again."""
    calls = tmp_path / "calls"
    helper = tmp_path / "helper"
    helper.write_text(f"#!/bin/sh\necho run >> {calls}\nexit 125\n")
    helper.chmod(0o755)
    a, b = tmp_path / "a.elf", tmp_path / "b.elf"
    a.write_text("not an image\n")
    b.write_text("nor this\n")
    code = (f"import sys; from layoutbench import cli, native; native.binary = lambda: {str(helper)!r}; "
            f"sys.argv = ['layoutbench', 'symdiff', {str(a)!r}, {str(b)!r}]; cli.run()")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not an ELF file" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert calls.read_text() == "run\n"


def test_the_text_to_a_full_disk_or_a_reader_that_stops_is_one_line_or_nothing(repo, native_helper):  # noqa: F811
    """The text of the helper's diff written to a full disk: one line that says so and what to do, exit
    2; to a reader that has stopped reading (| true): nothing on stderr, the diff's own exit."""
    a, b = image(repo, "base", "sorted"), image(repo, "base", "random", 2)
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "layoutbench.cli", "symdiff", str(a), str(b)], stdout=full,
                           stderr=subprocess.PIPE, text=True, env={**os.environ, "LAYOUTBENCH_NATIVE_TRACE": "1"})
    assert p.returncode == 2 and "layoutbench-symdiff: native" in p.stderr, p.stderr
    assert p.stderr.splitlines()[-1] == ("layoutbench: error: cannot write the diff (No space left on device); free "
                                         "some space and run the same command again"), p.stderr
    # (the reader is gone long before the diff is written; a text shorter than the pipe's buffer fails
    # when it is flushed, a longer one when it is written)
    for x, y, code in ((a, b, "1"), (a, a, "0")):
        sh = subprocess.run(f"{sys.executable} -m layoutbench.cli symdiff {x} {y} | true; echo \"${{PIPESTATUS[0]}}\"",
                            shell=True, executable="/bin/bash", capture_output=True, text=True)
        assert sh.stdout == f"{code}\n" and sh.stderr == "", sh
