#!/usr/bin/env bash
# Runs every kguard test on a fresh Debian 12 machine: installs what is
# missing, builds with warnings as errors, runs all ctest labels (GPU fixtures
# report "skipped" where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kg_need_packages $KG_PKGS_BUILD $KG_PKGS_PY $KG_PKGS_TEST
kg_need_node

cmake --preset ci >/dev/null
cmake --build --preset ci -j"$(nproc)"
# Unit tests in parallel, then the tests that start real kernels, notebook
# servers and browsers one at a time: on a 2-core machine they compete for
# CPU and their protocol deadlines are real (jupyter_client's 2.5 s shutdown).
ctest --test-dir build/ci --output-on-failure -j"$(nproc)" -L unit
ctest --test-dir build/ci --output-on-failure -LE unit
