"""The project's measurement scripts, each run as a module from the checkout's top
(``python3 -m bench.NAME``: that checkout's layoutbench and bench come first on sys.path, which
no script edits), and what they share with the tests: :mod:`bench.labs` (an sshd or labgrid lab
started on this machine, a profile of remote targets) and :mod:`bench.hostile` (hostile inputs and
how each is judged).  The tests import from here; nothing here imports a test."""
