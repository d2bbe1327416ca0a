#!/usr/bin/env bash
# Installs what layoutbench needs on a Debian 12 machine (run as root, or with sudo for apt):
# LLVM 19 (clang, lld, llvm tools), QEMU, valgrind, the tools the tests use, and the Python
# package itself (editable) with its test dependencies.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(
  git make clang-19 lld-19 llvm-19 qemu-system-x86 valgrind   # build, link, boot, simulate caches
  chromium                                                     # the report test renders pages headless
  openssh-server                                               # the ssh target tests start their own sshd
  linux-perf util-linux                                        # perf stat counters, taskset pinning
  postgresql                                                   # the shared-store test starts its own server
  linux-source-6.1 xz-utils flex bison bc libelf-dev libssl-dev cpio kmod   # the real-Linux tier
  gcc libc6-dev                                                # the QEMU cache-model plugin (native/qemu-icache)
  ccache                                                       # kernels/linux/build.sh: neighbouring commits compile only what changed
  autoconf automake                                            # bench/autotools_build.sh: real programs from Debian source packages
)
# the native symdiff helper (native/symdiff: Rust, std only, no crates) is built with the machine's
# cargo; Debian's when there is none
command -v cargo >/dev/null 2>&1 || APT_PACKAGES+=(cargo)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e '.[test]'
# `layoutbench symdiff OLD NEW --json` runs it (layoutbench/native.py); offline, in seconds
cargo build --release --quiet --offline --manifest-path native/symdiff/Cargo.toml
# the L1 instruction-cache model for QEMU (target kind qemu-icache): a TCG plugin in C, GPL-2.0-or-later
make -s -C native/qemu-icache
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
echo "setup: done ($(layoutbench --version))"
