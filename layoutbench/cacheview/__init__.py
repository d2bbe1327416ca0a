"""The cache view of a diff: where the hot functions sit in a set-associative L1 instruction
cache in both images, which of them share sets in one image and not in the other, and what
it costs (per-function I1 misses side by side, as ``cg_diff`` prints them).

A function's *lines* are the cache lines its bytes cover (address // line size), its *sets*
those lines modulo the number of sets (size / (ways * line)), its *pages* its 4 KiB pages.
Two functions that share a set compete for its ways: with more hot lines in a set than it
has ways, they evict each other.  The functions that matter are the ones with the most
executed instructions or misses in a cachegrind run of each image (its output file, read per
function: ``fn=`` records, as ``cg_annotate`` sums them) or a run of the QEMU cache model (its
per-block counts, ``<result>.blocks``, mapped to the functions that hold the blocks), or the
ones named.  The runs are the profile's ``cachegrind`` (or ``qemu-icache``) target, run here on
each image, or output files given.
"""

from .geometry import L1I, Geometry, parse_geometry
from .runs import cache_view, geometry_of, run_model, target_for
from .sides import Function, Side, sides_of
from .view import counts_line, print_view, view

__all__ = ["L1I", "Function", "Geometry", "Side", "cache_view", "counts_line", "geometry_of", "parse_geometry",
           "print_view", "run_model", "sides_of", "target_for", "view"]
