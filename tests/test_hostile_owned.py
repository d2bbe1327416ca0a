"""Nothing written where it is not layoutbench's, no verdict lost, no count file trusted blindly:
the table of bench/hostile/owned_cases.py (real stores, a real bisection of a real git repository, real
report folders, real cachegrind runs), every case clean."""

from __future__ import annotations

import json

from bench import hostile as H
from bench.hostile import owned_cases as hostile_owned


def test_every_case_of_what_is_written_and_kept_is_clean(tmp_path):
    rep = H.run_all([hostile_owned], tmp_path)["owned"]
    bad = "\n".join(f"{b['outcome']}: {b['case']}\n  {json.dumps({k: v for k, v in b.items() if k not in ('case', 'outcome')})[:1200]}"
                    for b in rep["bad"])
    assert not rep["bad"], f"{len(rep['bad'])} of {rep['tried']} cases not clean:\n{bad}"
    assert rep["tried"] >= 52 and rep["clean"] == rep["tried"]


def test_the_tree_diff_sees_what_a_command_made_replaced_or_deleted(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x\n")
    (tmp_path / "gone").write_text("y\n")
    before = H.tree(tmp_path)
    assert H.changes(before, H.tree(tmp_path)) == []
    (tmp_path / "d2").mkdir()
    (tmp_path / "d").rmdir()
    (tmp_path / "d2").rename(tmp_path / "d")  # the same name, another folder: replaced
    (tmp_path / "f").write_text("longer\n")
    (tmp_path / "gone").unlink()
    (tmp_path / "new").write_text("z\n")
    assert H.changes(before, H.tree(tmp_path)) == [f"changed {tmp_path / 'f'}", f"created {tmp_path / 'new'}",
                                                   f"deleted {tmp_path / 'gone'}", f"replaced {tmp_path / 'd'}"]
