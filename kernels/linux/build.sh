#!/usr/bin/env bash
# layoutbench's two Linux steps, called by kernels/linux/kernel.toml:
#
#   build.sh build SRC OBJ JOBS     configure (tinyconfig + config.fragment), compile once (O=OBJ),
#                                   write OBJ/vmlinux.objs and the benchmark initramfs
#   build.sh link  SRC OBJ DIR      relink vmlinux with DIR/layoutbench-text.lds (the layout)
#
# SRC must carry the layoutbench quirks (quirks/linux.toml: -ffunction-sections, the
# LAYOUTBENCH_LDFLAGS hook, TEXT_MAIN for .text.*, and the INCLUDE of the layout file).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATH=/usr/lib/llvm-19/bin:$PATH       # clang, ld.lld, llvm-* without suffix for LLVM=1
cmd=$1 src=$2 obj=$3
# reproducible images: the same layout and seed give the same bytes (the relink recompiles the
# version stamp; without these its build counter and time would change at every link)
export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 2026" KBUILD_BUILD_VERSION=1 \
       KBUILD_BUILD_USER=layoutbench KBUILD_BUILD_HOST=layoutbench
# ccache (Debian's package) when installed: neighbouring commits of a bisection then compile only
# what changed.  layoutbench exports each commit to OBJROOT/<commit>/src and builds in .../obj, so
# with CCACHE_BASEDIR at OBJROOT every path the compiler sees is the same relative one (../src/...)
# and the objects of one export hit for the next.  LAYOUTBENCH_CCACHE=0 turns it off.
cc=clang
if [ "${LAYOUTBENCH_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  cc="ccache clang"
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$(dirname "$obj")")} CCACHE_NOHASHDIR=1
fi
mk() { make -C "$src" O="$obj" LLVM=1 CC="$cc" "$@"; }

case "$cmd" in
build)
  jobs=$4
  if [ ! -f "$src/scripts/layoutbench/layoutbench-text.lds" ]; then
    echo "error: $src lacks the layoutbench quirks (scripts/layoutbench/layoutbench-text.lds): see quirks/linux.toml" >&2
    exit 2
  fi
  mk -s tinyconfig
  "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$here/config.fragment" >/dev/null
  mk -s olddefconfig
  # the map of the default link names every object whose code is linked, in link order
  mk -j"$jobs" LAYOUTBENCH_LDFLAGS="-Map=$obj/vmlinux.map" vmlinux
  python3 "$here/objects.py" "$obj/vmlinux.map" > "$obj/vmlinux.objs"
  # the benchmark: a static /init (nolibc from the tree, no libc) in an initramfs
  mkdir -p "$obj/layoutbench"
  clang -Os -static -nostdlib -ffreestanding -fno-stack-protector -fno-asynchronous-unwind-tables \
    -include "$src/tools/include/nolibc/nolibc.h" -I "$src/tools/include/nolibc" \
    -o "$obj/layoutbench/init" "$here/bench/init.c"
  # bench/initramfs.list names the binary "init", relative to where gen_init_cpio runs
  (cd "$obj/layoutbench" && "$obj/usr/gen_init_cpio" "$here/bench/initramfs.list" > "$obj/initramfs.cpio")
  ;;
link)
  dir=$4
  # make relinks when LAYOUTBENCH_LDFLAGS changes, not when the layout file does: remove vmlinux
  rm -f "$obj/vmlinux"
  mk -s LAYOUTBENCH_LDFLAGS="-L $dir" vmlinux
  ;;
*)
  echo "usage: build.sh build SRC OBJ JOBS | link SRC OBJ DIR" >&2; exit 2 ;;
esac
