#!/bin/sh
# A stand-in OpenBSD benchmark: prints layoutbench metric lines.  Copy it to
# /var/layoutbench/bench.sh on the test machine, or replace it with your own
# (anything that prints "LAYOUTBENCH metric name=... value=... unit=... better=...").
# Untested on OpenBSD (none was available). Measures the wall time of a fork+exec-heavy loop and of a pipe throughput run.
set -eu
echo "LAYOUTBENCH build kernel=openbsd version=$(sysctl -n kern.osrelease) platform=$(uname -m)"
now() { perl -MTime::HiRes=time -e 'printf "%.6f\n", time'; }   # perl is in OpenBSD base
t0=$(now)
i=0; while [ $i -lt 2000 ]; do /usr/bin/true; i=$((i + 1)); done
t1=$(now)
dd if=/dev/zero bs=64k count=16384 2>/dev/null | cat > /dev/null
t2=$(now)
echo "LAYOUTBENCH metric name=fork_exec_seconds value=$(echo "$t1 - $t0" | bc) unit=s better=lower"
echo "LAYOUTBENCH metric name=pipe_1g_seconds value=$(echo "$t2 - $t1" | bc) unit=s better=lower"
echo "LAYOUTBENCH end status=ok"
