"""layoutbench: build kernels in controlled link layouts, benchmark them, and tell
code changes from layout noise."""

__version__ = "0.1.0"
