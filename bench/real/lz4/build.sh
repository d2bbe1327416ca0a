#!/bin/sh
# layoutbench build of one lz4 commit (bench/real/lz4/kernel.toml):
#   build.sh SRC OBJDIR CC JOBS
# compiles the library's lib/*.c (the set changes over the history: lz4file.c appears in
# v1.10.0) and the benchmark driver bench.c with -O2 -ffunction-sections, and writes
# OBJDIR/bench.objs: the program's objects in link order, the driver then the library.
set -eu
src=$1 obj=$2 cc=$3 jobs=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$obj/lib"
{ echo bench; (cd "$src" && ls lib/*.c | LC_ALL=C sort | sed 's/\.c$//'); } > "$obj/bench.units"
# JOBS compilers at a time; xargs exits non-zero when one of them fails
xargs -P "$jobs" -I{} sh -c '
  case "$1" in bench) in="$2/bench.c" ;; *) in="$3/$1.c" ;; esac
  exec "$5" -O2 -ffunction-sections -I"$3/lib" -c "$in" -o "$4/$1.o"' sh {} "$here" "$src" "$obj" "$cc" \
  < "$obj/bench.units"
sed 's/$/.o/' "$obj/bench.units" > "$obj/bench.objs"
