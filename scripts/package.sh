#!/usr/bin/env bash
# Builds kguard's Debian package on a Debian 12 machine, offline, from
# Debian's own packages only: configures a release build with the prefix
# /usr (the paths kguard finds its helpers, Python package and rules by),
# builds it, and runs CPack's DEB generator (packaging/kguard-package.cmake).
# The last line printed is the package's path; install it with
#   sudo apt install ./kguard_VERSION_ARCH.deb
#
# usage: scripts/package.sh [BUILD_DIR]     (default: build/package)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kg_need_packages $KG_PKGS_BUILD $KG_PKGS_PACKAGE python3

build=${1:-build/package}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DBUILD_TESTING=OFF -DKGUARD_GPU_FIXTURES=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
rm -f "$build"/kguard_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/kguard_*.deb)
echo "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
