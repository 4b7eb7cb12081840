#!/usr/bin/env bash
# Builds kguard's binary wheel on a Debian 12 machine, offline, from Debian's
# own packages only: a release build (libarchive linked statically, see
# checkpoint/CMakeLists.txt), `cmake --install` into a staging tree, then
# scripts/wheel.py bundles the libraries, checks the glibc versions, tags
# and zips it. The last line printed is the wheel's path; install it in any
# venv or conda env, no root needed:
#   pip install ./kguard-VERSION-py3-none-manylinux_X_Y_x86_64.whl
#
# usage: scripts/wheel.sh [BUILD_DIR]     (default: build/wheel)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kg_need_packages $KG_PKGS_BUILD $KG_PKGS_WHEEL

build=${1:-build/wheel}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DBUILD_TESTING=OFF -DKGUARD_GPU_FIXTURES=OFF -DKGUARD_PYTHON_SITEDIR= \
  -DKGUARD_STATIC_LIBARCHIVE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
stage=$(realpath -m "$build/stage")
rm -rf "$stage"
DESTDIR="$stage" cmake --install "$build" --strip >/dev/null
version=$("$build/kguard" --version | awk '{print $2}')
mkdir -p "$build/dist"
python3 scripts/wheel.py "$stage/usr" "$version" "$build/dist"
