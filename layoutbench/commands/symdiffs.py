"""Job 2's command: symdiff, what moved between two images."""

from __future__ import annotations

import json
import sys

from dataclasses import dataclass

import click

from ..errors import LayoutbenchError
from . import CHECKS, main, options_of, out, say

# -- symdiff: what moved between two images ------------------------------------------------------


@dataclass(frozen=True)
class SymdiffOptions:
    """``layoutbench symdiff``'s options."""

    old: str
    new: str
    image: str | None
    repo: str | None
    show_symbols: bool
    as_json: bool
    own_only: bool
    cache: str | None
    cache_target: str | None
    cachegrind_out: tuple[str, ...]
    extra: str | None
    functions: str | None
    top: int

@main.command("symdiff")
@click.argument("old")
@click.argument("new")
@click.option("--image", help="Image of a build spec KERNEL@REV:LAYOUT[:SEED] (default: the profile's first).")
@click.option("--repo", type=click.Path(), help="The kernel's git repository for build specs.")
@click.option("--symbols", "show_symbols", is_flag=True, help="Also list every symbol that is not unchanged.")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON (every symbol).")
@click.option("--own-only", "own_only", is_flag=True,
              help="Leave out the symbols of the toolchain's archives and crt files (a static program's C "
                   "library: libc.a(...) members, crt1.o): diff the program's own objects only.")
@click.option("--cache", "cache", metavar="L1I|SIZE,WAYS,LINE", type=CHECKS["geometry"],
              help="Also show where the hot functions sit in this instruction cache (L1I: the geometry of the "
                   "profile's cachegrind/qemu-icache target), which pairs share sets in one image only, and "
                   "their I1 misses side by side (a cachegrind or qemu-icache run of each image).")
@click.option("--target", "cache_target", help="With --cache: the profile target whose geometry and runs "
                                               "are used (cachegrind or qemu-icache; default: its cachegrind target, else its qemu-icache one).")
@click.option("--cachegrind-out", "cachegrind_out", multiple=True, type=click.Path(),
              help="With --cache: cachegrind output files of OLD and NEW (give it twice) instead of running them; "
                   "or the QEMU cache model's per-block files (RESULT.blocks, written when its plugin is given blocks=on).")
@click.option("--args", "extra", help="With --cache: extra words for the program / kernel command line of the "
              "cachegrind runs, as compare and history take them (the same --args gives the counts they store).")
@click.option("--functions", "functions", help="With --cache: the functions to show (comma-separated) "
                                               "instead of the hottest.")
@click.option("--top", "top", type=click.IntRange(1), default=10, show_default=True,
              help="With --cache: the hot functions are the TOP with the most I1 misses and the TOP with the most "
                   "instructions (one list, up to twice TOP), and TOP miss lines are shown.")
@options_of(SymdiffOptions)
def symdiff_cmd(opts: SymdiffOptions):
    """Diff the symbols of two images: unchanged, moved, changed, resized, added, removed;
    where the shift starts and why.  OLD and NEW are ELF files or builds KERNEL@REV:LAYOUT[:SEED]
    (REV 'worktree': the working tree), of one machine and kind (an x86-64 image and an AArch64 one,
    or a .o and a linked image, are refused).  Exit 0: placement identical, 1: differs, 2: error.
    The diff is the compiled helper's (native/symdiff: built by setup.sh, else on first use with cargo).
    """
    from .. import specs, symdiff

    cache, functions = opts.cache, opts.functions
    if not cache and (opts.cache_target or opts.cachegrind_out or functions or opts.extra):
        raise LayoutbenchError("--target, --cachegrind-out, --functions and --args go with --cache L1I|SIZE,WAYS,LINE")
    if opts.extra and opts.cachegrind_out:
        raise LayoutbenchError("--args goes with the runs symdiff makes; --cachegrind-out gives counts already made")
    (old, old_label), (new, new_label) = (specs.symdiff_image(side, opts.image, opts.repo, say)
                                          for side in (opts.old, opts.new))
    res = symdiff.diff_files(old, new, (old_label, new_label), bool(opts.as_json or opts.show_symbols or cache),
                             opts.own_only)
    view = None
    if cache:  # where the hot functions sit, from the diff's symbols
        from .. import cacheview

        names = [n.strip() for n in functions.split(",") if n.strip()] if functions else None
        view = cacheview.cache_view(*cacheview.sides_of(res), cache, opts.cache_target, tuple(opts.cachegrind_out),
                                    names, opts.top, tuple((opts.extra or "").split()))
    if opts.as_json:  # plain json: rich's print_json takes seconds on 30k symbols
        if view is None:
            click.echo(res.to_json())
        else:
            click.echo(json.dumps({**res.to_dict(), "cache": view}))
    else:
        click.echo(symdiff.text(res, opts.show_symbols), nl=False)
        if view is not None:
            cacheview.print_view(out, view)
    sys.exit(0 if res.placement_identical else 1)
