#!/usr/bin/env bash
# Runs every kguard test on a fresh Debian 12 machine: installs what is
# missing, builds with warnings as errors, runs all ctest labels (GPU fixtures
# report "skipped" where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kg_need_packages $KG_PKGS_BUILD $KG_PKGS_PY $KG_PKGS_TEST $KG_PKGS_PACKAGE $KG_PKGS_WHEEL
[ "${KGUARD_TEST_HARDEN:-1}" = 0 ] || kg_need_packages $KG_PKGS_HARDEN
kg_need_node

cmake --preset ci >/dev/null
cmake --build --preset ci -j"$(nproc)"
# Unit tests in parallel, then the tests that start real kernels, notebook
# servers and browsers one at a time: on a 2-core machine they compete for
# CPU and their protocol deadlines are real (jupyter_client's 2.5 s shutdown).
ctest --test-dir build/ci --output-on-failure -j"$(nproc)" -L unit
ctest --test-dir build/ci --output-on-failure -LE unit

# Hardening stages (KGUARD_TEST_HARDEN=0 skips them; docs/SECURITY.md says
# what each adds to the run time). A memory error, a data race in kguard's
# own threads, or a fuzz crash fails the command.
if [ "${KGUARD_TEST_HARDEN:-1}" != 0 ]; then
  # AddressSanitizer + UBSan: the unit suite, then every suite that drives
  # the real binary (the browser test adds nothing kguard-side and is slow;
  # the soak's RSS bound means nothing under ASan's quarantine; the fault
  # shim cannot be preloaded next to ASan's allocator; the package test builds
  # and installs its own release build; the benchmarks' short runs replay
  # exec and checkpoint paths the exec, multinode and checkpoint suites
  # already drive, and cost 5-6 minutes under ASan; run.large_restore is the
  # restore checkpoint.in_place drives, at a size that costs a minute;
  # exec.slurm_example is the sbatch's shell logic around the start-time
  # resume that exec.resume drives; multinode.requeue starts a job twice
  # through the start and restore paths every multinode.netns job takes;
  # exec.snapshot's C paths, the memory tier of seal and resume-prepare, are
  # the unit suite's here, and every exec restore passes --memory).
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$(nproc)"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  ctest --test-dir build/asan --output-on-failure -j"$(nproc)" -L unit
  ctest --test-dir build/asan --output-on-failure -LE "unit|gpu|browser|soak|package|bench" -E '^run\.large_restore$|^exec\.slurm_example$|^exec\.snapshot$|^multinode\.requeue$'
  # ThreadSanitizer on the threaded parts: the checkpoint hasher and hash
  # pool (unit tests, and `kguard ckpt` end to end: seal, restore in place,
  # sets, in-flight and background seals, progress) and the message code
  # beside the heartbeat thread. The checkpoint suites that only refuse
  # input (corpus, trust, keys) or drive the Python side run the same
  # threads and stay with ASan. libzmq's internals are suppressed (tests/tsan.supp).
  cmake --preset tsan >/dev/null
  # Every checkpoint unit program (seals, verifies and restores run the
  # hasher threads too); the pure ones cost nothing here.
  tsan_ckpt="util manifest restore seal_names retain list seal hasher hashpool rangecheck"
  cmake --build --preset tsan -j"$(nproc)" --target $(printf 'test_ckpt_%s ' $tsan_ckpt) \
    test_msg_parse test_msg_send test_msg_forward kguard kguard-ckpt
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build/tsan --output-on-failure -R "^(test_ckpt_(${tsan_ckpt// /|})|test_msg_(parse|send|forward))\.|^checkpoint\.(cli|in_place|sets|inflight|background|progress)\$"
  # libFuzzer: each harness for a few seconds (tests/fuzz/run_fuzz.sh runs
  # them for hours), after replaying every former crash.
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j"$(nproc)"
  ctest --test-dir build/fuzz --output-on-failure -L fuzz
fi
