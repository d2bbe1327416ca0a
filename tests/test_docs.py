"""The docs cannot rot: every relative link of README.md and docs/ leads to a file (and heading)
that exists, every ``layoutbench ...`` example of the guide parses with the real command line
(the subcommand exists, every flag is one of its options, every value has its type), and the
profile-key reference is what the code prints."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import click
from markdown_it import MarkdownIt

from conftest import lb
from layoutbench import profile, reference
from layoutbench.errors import LayoutbenchError
from layoutbench.cli import main

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide"


def _tokens(text: str):
    """markdown-it's block tokens and, flattened after each inline one, its children."""
    for tok in MarkdownIt("commonmark").enable("table").parse(text):
        yield tok
        yield from tok.children or ()


def slug(heading: str, seen: dict[str, int]) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, -1 -2 ... on repeats."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else f"{s}-{n}"


def anchors(md: Path) -> set[str]:
    toks = list(MarkdownIt("commonmark").enable("table").parse(md.read_text()))
    seen: dict[str, int] = {}
    return {slug("".join(c.content for c in toks[i + 1].children or ()), seen)
            for i, t in enumerate(toks) if t.type == "heading_open"}


def broken_links(md: Path) -> list[str]:
    """``file: target (why)`` for every relative link of ``md`` that leads nowhere."""
    out = []
    for tok in _tokens(md.read_text()):
        if tok.type != "link_open":
            continue
        href = str(tok.attrs.get("href", ""))
        if re.match(r"[a-z][a-z0-9+.-]*:", href, re.I) or href.startswith("//"):
            continue  # http:, mailto: ...: not a file of this repository
        path, _, anchor = href.partition("#")
        dest = (md.parent / path).resolve() if path else md
        if not dest.exists():
            out.append(f"{md.relative_to(ROOT)}: {href} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{md.relative_to(ROOT)}: {href} (no heading #{anchor} in {dest.name})")
    return out


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_relative_link_leads_to_a_file_and_heading():
    assert [b for md in doc_files() for b in broken_links(md)] == []


def test_the_link_check_sees_a_missing_file_and_a_missing_heading(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading, with commas\n")
    (tmp_path / "a.md").write_text("[ok](other.md) [ok](other.md#a-code-heading-with-commas) [ok](#top) "
                                   "[web](https://example.org/x.md) `[code](nowhere.md)`\n\n# Top\n\n"
                                   "[gone](missing.md) [bad anchor](other.md#no-such-heading)\n")
    assert broken_links(tmp_path / "a.md") == ["a.md: missing.md (no such file)",
                                               "a.md: other.md#no-such-heading (no heading #no-such-heading in other.md)"]


# -- examples ---------------------------------------------------------------------------------------

def commands(text: str, spans: bool = True) -> list[list[str]]:
    """The argument lists after ``layoutbench`` of every example: each line of a code block and (with
    ``spans``) each code span that runs it (``$ ``, ``VAR=x``, ``nice -n 10`` before it; ``&&``, ``|``, ``;`` between
    commands; ``#`` comments and redirections after it; ``\\`` continues a line).  In a ``console`` block only
    the ``$ `` lines are commands: the rest is what they printed; a ``text`` block is printed text (the command
    reference's ``--help`` pages, whose synopses are not commands)."""
    pieces = []
    for tok in _tokens(text):
        if tok.type == "fence" and tok.info.strip() == "text":
            continue
        if tok.type in ("fence", "code_block"):
            lines = tok.content.replace("\\\n", " ").splitlines()
            pieces += [x for x in lines if x.startswith("$ ")] if tok.info.strip() == "console" else lines
        elif tok.type == "code_inline" and spans:
            pieces.append(tok.content)
    out = []
    for line in pieces:
        line = line.strip().removeprefix("$ ")
        if "layoutbench " not in line or line.startswith("layoutbench:"):
            continue
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        try:
            words = list(lex)
        except ValueError:
            continue  # not shell (a sentence in a code span)
        seg: list[str] = []
        for w in [*words, ";"]:
            if w and set(w) <= set("&|;()<>"):
                while seg and (re.fullmatch(r"\w+=\S*", seg[0]) or seg[0] in ("nice", "-n", "10", "time")):
                    seg.pop(0)
                if seg and seg[0] == "layoutbench":
                    out.append(seg[1:])
                seg = [] if w not in (">", ">>", "<") else ["#redirect"]
            elif seg != ["#redirect"]:
                seg.append(w)
    return out


def check(args: list[str]) -> str:
    """'' when ``layoutbench ARGS`` parses (the command exists, its options are known, its values typed);
    else click's message. Nothing is run: only the contexts are made."""
    ctx = main.make_context("layoutbench", list(args))
    cmd: click.Command = main
    rest = [*getattr(ctx, "_protected_args", ()), *ctx.args]
    try:
        while isinstance(cmd, click.Group) and rest:
            name, sub, rest = cmd.resolve_command(ctx, rest)
            ctx = sub.make_context(name, list(rest), parent=ctx)
            cmd = sub
            rest = [*getattr(ctx, "_protected_args", ()), *ctx.args] if isinstance(sub, click.Group) else []
    except click.UsageError as e:
        return e.format_message()
    return "" if cmd is not main else "no subcommand"


def example_problems(md: Path, spans: bool = True) -> list[str]:
    """The command lines of ``md`` that layoutbench would refuse, each with why; ``spans=False``: those of
    its code blocks only (the README's command table and the notes' prose name commands as synopses,
    ``KERNEL [--runs N]``; their code blocks are commands to run)."""
    out = []
    said = {tuple(shlex.split(cmd)[1:]): lines for cmd, lines in shown(md).items() if cmd.startswith("layoutbench ")}
    for args in commands(md.read_text(), spans=spans):
        try:
            why = check(args)
        except click.UsageError as e:
            why = e.format_message()
        except LayoutbenchError as e:  # a value refused where it is parsed: shown as refused, in these words?
            why = "" if f"layoutbench: error: {e}" in said.get(tuple(args), []) else f"refused: {e}"
        if why:
            out.append(f"{md.name}: layoutbench {shlex.join(args)}: {why}")
    return out


def test_every_example_of_the_guide_is_a_real_command_line():
    found = [a for md in sorted(GUIDE.glob("*.md")) for a in commands(md.read_text())]
    assert len(found) > 20  # the guide does show examples
    assert [p for md in sorted(GUIDE.glob("*.md")) for p in example_problems(md)] == []


def test_every_example_block_of_the_readme_and_the_notes_is_a_real_command_line():
    notes = [md for md in doc_files() if md.parent != GUIDE]
    assert len([a for md in notes for a in commands(md.read_text(), spans=False)]) > 10
    assert [p for md in notes for p in example_problems(md, spans=False)] == []


def test_the_example_check_sees_a_made_up_flag_command_and_value(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("```sh\n$ nice -n 10 layoutbench compare minikernel --runs 2 --frobnicate  # one\n"
                  "layoutbench layouts && layoutbench frob minikernel\n"
                  "layoutbench compare minikernel \\\n  --runs two > out.txt\n```\n\n"
                  "Prose `layoutbench bisect minikernel A..B --no-such`, `layoutbench bisect log --repo R`.\n\n"
                  "```text\nUsage: layoutbench bisect KERNEL [--runs R]\n  layoutbench bisect KERNEL GOOD..BAD [--x]\n```\n\n"
                  "```console\n$ layoutbench kernels\nnaive: would blame this (layoutbench agrees)\n```\n")
    assert commands(md.read_text()) == [
        ["compare", "minikernel", "--runs", "2", "--frobnicate"], ["layouts"], ["frob", "minikernel"],
        ["compare", "minikernel", "--runs", "two"], ["bisect", "minikernel", "A..B", "--no-such"],
        ["bisect", "log", "--repo", "R"], ["kernels"]]
    problems = example_problems(md)
    assert len(problems) == 4, problems
    assert "--frobnicate" in problems[0] and "frob" in problems[1] and "two" in problems[2] \
        and "--no-such" in problems[3]


def test_a_refused_value_is_an_example_only_where_its_refusal_is_shown(tmp_path):
    """A value the command line refuses as it is parsed (--runs 0): a problem in a command to run; an
    example where the console block shows that refusal, in the words the command says."""
    md = tmp_path / "x.md"
    md.write_text("```sh\nlayoutbench compare minikernel --runs 0\n```\n\n```console\n"
                  "$ layoutbench compare minikernel --seed -1\nlayoutbench: error: --seed -1 is wrong\n"
                  "$ layoutbench compare minikernel --jobs 0\n"
                  "layoutbench: error: --jobs 0 is not allowed: give a whole number from 1 to 1024\n```\n")
    problems = example_problems(md)
    assert len(problems) == 2, problems
    assert "--runs 0" in problems[0] and "refused: --runs 0 is not allowed" in problems[0]
    assert "--seed -1" in problems[1]


def shown(md: Path) -> dict[str, list[str]]:
    """``$ layoutbench ...`` command line → the output lines a console block shows under it."""
    out: dict[str, list[str]] = {}
    for tok in _tokens(md.read_text()):
        if tok.type == "fence" and tok.info.strip() == "console":
            cmd = None
            for line in tok.content.splitlines():
                if line.startswith("$ "):
                    cmd = line[2:].strip()
                    out.setdefault(cmd, [])
                elif cmd:
                    out[cmd].append(line)
    return out


#: commands of getting-started.md whose output has the same lines on every machine with setup.sh's tools
#: (numbers aside: a static-glibc program's counts move with the length of its path, which holds the
#: work folder's, since glibc's start-up code reads argv[0])
SAME_EVERYWHERE = ("layoutbench kernels", "layoutbench layouts",
                   "layoutbench compare docs/guide/example --target cachegrind --layouts default,random:4 --runs 1")


def _shape(line: str) -> str:
    """A line with every number as N and every run of blanks as one space."""
    return re.sub(r"\s+", " ", re.sub(r"\d[\d.,]*(e[+-]?\d+)?", "N", line)).strip()


def missing_lines(printed: str, lines: list[str]) -> list[str]:
    """The lines of an excerpt the command did not print, numbers aside (``…`` stands for lines, or
    for a line's end, left out)."""
    got = [_shape(g) for g in printed.splitlines()]
    out = []
    for want in lines:
        w = _shape(want)
        if w != "…" and not any(g == w or (w.endswith("…") and g.startswith(w[:-1].rstrip())) for g in got):
            out.append(want)
    return out


def test_getting_started_runs_as_written(tmp_path):
    """Every command of the page's code blocks runs, in order, in a fresh work folder and exits 0;
    the commands whose output does not depend on the machine print every line the page shows."""
    page = GUIDE / "getting-started.md"
    runs = commands(page.read_text(), spans=False)
    assert ["compare", "docs/guide/example", "--target", "cachegrind", "--layouts", "default,random:4",
            "--runs", "1"] in runs
    excerpts = shown(page)
    for args in runs:
        p = lb(*args, cwd=ROOT, env={"LAYOUTBENCH_DIR": str(tmp_path / "work")})
        line = "layoutbench " + shlex.join(args)
        if line in SAME_EVERYWHERE:
            assert missing_lines(p.stdout + p.stderr, excerpts[line]) == [], \
                f"{page.name} shows lines `{line}` no longer prints: paste its output again"


def test_the_excerpt_check_sees_a_changed_line():
    printed = "a   1.5 ± 0\nlong line with an end\n"
    assert missing_lines(printed, ["a 2.25 ± 10", "…", "long line…"]) == []
    assert missing_lines(printed, ["b 1.5 ± 0", "a 1.5 ±", "other…"]) == ["b 1.5 ± 0", "a 1.5 ±", "other…"]


# -- profile snippets -------------------------------------------------------------------------------

#: what a snippet of [targets.*] tables is loaded inside: a profile with the images they may name
HOST_PROFILE = """name = "snippet"
[source]
tree = "."
[build]
command = "true"
[images.hosted]
objects = "hosted.objs"
template = "elf-x86_64.ld.in"
entry = "_start"
base = 0x400000
[images.kernel]
objects = "kernel.objs"
template = "elf-x86_64.ld.in"
entry = "pvh_start32"
base = 0x100000
"""


def snippet_problems(md: Path, tmp: Path, seen: list | None = None) -> list[str]:
    """A whole profile (a toml block that names ``[build]``) or ``[targets.*]`` tables of ``md`` that the
    profile loader refuses, with its one line."""
    out = []
    for i, tok in enumerate(t for t in _tokens(md.read_text()) if t.type == "fence" and t.info.strip() == "toml"):
        text = tok.content
        if "[build]" in text:
            toml = text
        elif text.lstrip().startswith("[targets."):
            toml = HOST_PROFILE + text
        else:
            continue
        d = tmp / f"{md.stem}-{i}"
        d.mkdir()
        if seen is not None:
            seen.append(d)
        (d / "kernel.toml").write_text(toml)
        try:
            profile.load(str(d / "kernel.toml"))
        except LayoutbenchError as e:
            out.append(f"{md.name}, toml block {i + 1}: {e}")
    return out


def test_every_profile_snippet_of_the_guide_loads(tmp_path):
    seen: list[Path] = []
    assert [p for md in sorted(GUIDE.glob("*.md")) for p in snippet_problems(md, tmp_path, seen)] == []
    assert len(seen) >= 4  # the profiles of getting-started and kernels, the target tables of targets and farm


def test_the_snippet_check_sees_a_misspelt_setting(tmp_path):
    md = tmp_path / "x.md"
    md.write_text('```toml\n[targets.bench1]\nkind = "ssh"\nhost = "b"\nlayout_costs = 60\n```\n')
    (tmp_path / "w").mkdir()
    [problem] = snippet_problems(md, tmp_path / "w")
    assert "has no setting 'layout_costs' for kind ssh; did you mean 'layout_cost'?" in problem


# -- generated reference ----------------------------------------------------------------------------

def test_the_profile_key_reference_is_what_the_code_prints():
    """Regenerate with: python3 -m layoutbench.reference > docs/guide/profile-keys.md"""
    assert (GUIDE / "profile-keys.md").read_text() == reference.render()


def test_the_command_reference_is_what_the_code_prints():
    """Regenerate with: python3 -m layoutbench.reference commands > docs/guide/commands.md"""
    assert (GUIDE / "commands.md").read_text() == reference.render_commands()


def test_the_command_reference_holds_every_command_with_its_options():
    helps = dict(reference.commands())
    assert {"layoutbench", "layoutbench compare", "layoutbench bisect", "layoutbench bisect run",
            "layoutbench bisect log", "layoutbench judge", "layoutbench symdiff", "layoutbench report"} <= set(helps)
    assert "--exit-code" in helps["layoutbench bisect run"] and "Exit codes" in helps["layoutbench judge"]
    assert "-h, --help" in helps["layoutbench compare"]  # the command line's own help option names


def test_the_reference_lists_every_key_the_loader_reads():
    keys = {(t, k) for t, k, *_ in reference.profile_keys()}
    assert {("", "name"), ("source", "repo"), ("build", "command"), ("build", "untracked_inputs"),
            ("images.NAME", "objects"), ("images.NAME", "static"), ("targets.NAME", "kind"),
            ("metrics", "prefix")} <= keys
    required = {(t, k) for t, k, _, req, _ in reference.profile_keys() if req == "yes"}
    assert required == {("build", "command"), ("images.NAME", "objects"), ("targets.NAME", "kind")}
    assert {s for s, *_ in reference.settings_table()} >= {"miss_weight", "host", "coordinator", "layout_cost"}


# -- size and archaeology ---------------------------------------------------------------------------

#: the most lines README.md and the design note may have: short, example-first; the rest is the guide's
MAX_LINES = {"README.md": 260, "docs/how-it-decides.md": 420}

#: a numbered round of work or an issue number: what no reader of the repository can look up
ARCHAEOLOGY = re.compile(r"\b(?:issues?|sessions?|rounds? of work)\s*#?\d+[a-z]?\b|\bissue-\d+|\bround \d+ (?:start|of)\b"
                         r"|\b(?:before|after) (?:issue|session)\b|\b(?:this|last|next) session\b"
                         r"|\b(?:today's|the new|the old) engine\b", re.I)


def archaeology(md: Path) -> list[str]:
    """``file:line: text`` for every line of ``md``'s prose that dates its content instead of saying what it
    is (a fenced block is a command and what it printed: the program's words, checked in its code)."""
    out, fence = [], False
    for i, line in enumerate(md.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and (m := ARCHAEOLOGY.search(line)):
            out.append(f"{md.relative_to(ROOT)}:{i}: {m.group(0)}")
    return out


def test_readme_and_the_design_note_stay_short():
    for name, most in MAX_LINES.items():
        n = len((ROOT / name).read_text().splitlines())
        assert n <= most, f"{name} has {n} lines (at most {most}): move the detail to docs/guide/"


def test_no_doc_names_a_round_of_work_or_an_issue_number():
    assert [a for md in doc_files() for a in archaeology(md)] == []


def test_the_archaeology_check_sees_rounds_and_issue_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    md = tmp_path / "a.md"
    # the samples are assembled from their words, so that this file names no round of work itself
    issue, session, work = "issue", "Session", "rounds of work"
    md.write_text(f"Fixed in {issue} 21h.\n{session} 9 changed it.\nthe old engine\nbefore {issue} #4\n"
                  "two rounds instead of 4; a session resumes; the issue's shape; round 2 start\n"
                  f"3 {work} 5\n```console\n$ layoutbench bisect\n27 run in this {session.lower()}\n```\n")
    assert archaeology(md) == [f"a.md:1: {issue} 21h", f"a.md:2: {session} 9", "a.md:3: the old engine",
                               f"a.md:4: before {issue}", "a.md:5: round 2 start", f"a.md:6: {work} 5"]
