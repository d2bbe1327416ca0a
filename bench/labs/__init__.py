"""Labs started on this machine for the remote targets, shared by the tests and the benches:
:mod:`.sshd` (sshd servers as machines), :mod:`.labgrid_lab` (a labgrid coordinator and exporters
over them), :mod:`.postgres` (a PostgreSQL server), :mod:`.remote` (a minikernel profile with given ``[targets.*]`` tables, and the
cachegrind-over-ssh command the farm runs)."""
