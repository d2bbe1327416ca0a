#!/bin/sh
# A profile's build command for any autotools C program (as Debian builds it: autoreconf first),
# out of tree, for bench/real_history.py on a Debian source package's history:
#
#   sh bench/autotools_build.sh SRC OBJDIR CC OBJECTS-FILE "DIR:VAR ..." [CONFIGURE-FLAGS...]
#
# configures SRC in OBJDIR with CC and -ffunction-sections, runs make, then writes
# OBJDIR/OBJECTS-FILE: the objects the program links, in the order its Makefiles list them,
# read from each DIR/Makefile's variable VAR (e.g. "src:dash_OBJECTS src:dash_LDADD", or
# "src/xz:xz_OBJECTS src/liblzma:liblzma_la_OBJECTS"; a libtool .lo names its .o).
set -eu
src=$1 obj=$2 cc=$3 out=$4 vars=$5
shift 5
mkdir -p "$obj"
[ -f "$src/.lb-autoreconf" ] || { (cd "$src" && autoreconf -fi >/dev/null 2>&1) && touch "$src/.lb-autoreconf"; }
cd "$obj"
[ -f Makefile ] || CC="$cc" CFLAGS="-O2 -ffunction-sections -fdata-sections" "$src/configure" -q "$@" >/dev/null
make -s >/dev/null
: > "$out.tmp"
for dv in $vars; do
  dir=${dv%%:*} var=${dv#*:}
  printf 'lb-print:\n\t@echo $(%s)\n' "$var" > "$obj/lb-print.mk"
  make -s -C "$dir" -f Makefile -f "$obj/lb-print.mk" lb-print | tr ' ' '\n' | grep '[.]l\{0,1\}o$' |
    sed "s|[.]lo\$|.o|; s|^|$dir/|" >> "$out.tmp"
done
rm -f "$obj/lb-print.mk"
mv "$out.tmp" "$out"
