"""The project's measurement scripts (``python3 bench/NAME.py``, or ``python3 -m bench.NAME`` from
the checkout's top) and what they share with the tests: :mod:`bench.labs` (an sshd or labgrid lab
started on this machine, a profile of remote targets) and :mod:`bench.hostile` (hostile inputs and
how each is judged).  The tests import from here; nothing here imports a test."""
