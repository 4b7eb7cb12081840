#!/bin/sh
# kguard on a real GPU (issue 13): build what is needed, run every device
# check, print one verdict line per check, exit 0 when nothing FAILed.
# Meant for a machine with an NVIDIA (or AMD) GPU, in under 5 minutes; on a
# machine without one it builds and reports each check SKIPped by name.
#
#   sh tests/gpu/run-on-device.sh [BUILD_DIR]      (default build/gpu)
#
# Environment: KGUARD_PYTHON (the kernel's interpreter, default
# /usr/bin/python3: a CUDA build of torch there enables run-notebook),
# JOBS (build parallelism, default nproc), CUDACXX / KGUARD_HIP_ARCHS as for
# the CMake fixtures. Checks (tests/gpu/real_device.py says what each proves):
#   doctor, preflight, driver-assert, driver-trap, kernel-assert,
#   run-notebook, hip-driver-assert, hip-kernel-assert (where hipcc built the
#   HIP twin of the fixture), then the platform fixtures cuda_device_assert,
#   hip_device_assert (where hipcc exists) and torch_label4.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-$src/build/gpu}
py=${KGUARD_PYTHON:-/usr/bin/python3}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
fails=0
start=$(date +%s)

line() { printf '%s\n' "$*"; }

if command -v nvidia-smi >/dev/null 2>&1; then
  line "INFO device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -3 | tr '\n' ';')"
elif command -v rocm-smi >/dev/null 2>&1; then
  line "INFO device: $(rocm-smi --showproductname 2>&1 | grep -m1 'Card series' )"
else
  line "INFO device: no nvidia-smi or rocm-smi on PATH"
fi

# --- build (Release flags, the GPU fixtures where a toolkit is found) --------
log=$build.log
if cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKGUARD_GPU_FIXTURES=AUTO \
     -DKGUARD_PYTHON="$py" >"$log" 2>&1 \
   && cmake --build "$build" -j "$jobs" >>"$log" 2>&1; then
  line "PASS build: $build ($(( $(date +%s) - start )) s)"
else
  line "FAIL build: see $log: $(tail -3 "$log" | tr '\n' ' ')"
  exit 1
fi
lib=$(find "$build" -name 'libkgfx_cuda.so' | head -1)
hiplib=$(find "$build" -name 'libkgfx_hip.so' | head -1)

# --- the checks of kguard itself on the device -------------------------------
for check in doctor preflight driver-assert driver-trap kernel-assert run-notebook \
             hip-driver-assert hip-kernel-assert; do
  out=$(KGUARD_BIN="$build/kguard" KGFX_LIB="$lib" KGFX_HIP_LIB="$hiplib" KGUARD_SOURCE_DIR="$src" \
        KGUARD_PYTHON="$py" timeout 280 "$py" "$here/real_device.py" "$check" 2>&1)
  rc=$?
  verdict=$(printf '%s\n' "$out" | grep -E '^(PASS|SKIP|FAIL) ' | tail -1)
  if [ -z "$verdict" ]; then
    verdict="FAIL $check: exit $rc without a verdict: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
  fi
  case $verdict in FAIL*) fails=$((fails + 1)) ;; esac
  line "$verdict"
done

# --- the platform fixtures (CUDA runtime, HIP, torch) through ctest ----------
for t in gpu.cuda_device_assert gpu.hip_device_assert gpu.torch_label4; do
  out=$(cd "$build" && timeout 280 ctest -V -R "^$t\$" 2>&1)
  # what the fixture itself printed ("120: text"), without ctest's bookkeeping
  said=$(printf '%s\n' "$out" | grep -E '^[0-9]+: ' \
         | grep -vE 'Test command|Working Directory|Environment variables|Test timeout|^[0-9]+:  ' \
         | sed -E 's/^[0-9]+: //')
  if printf '%s' "$out" | grep -q 'No tests were found'; then
    line "SKIP $t: not built here (no toolkit for it)"
  elif printf '%s' "$out" | grep -q '\*\*\*Skipped'; then
    line "SKIP $t: $(printf '%s\n' "$said" | head -1 | cut -c1-200)"
  elif printf '%s' "$out" | grep -q '100% tests passed'; then
    line "PASS $t: $(printf '%s\n' "$said" | tail -1 | cut -c1-200)"
  else
    fails=$((fails + 1))
    line "FAIL $t: $(printf '%s\n' "$said" | tail -3 | tr '\n' ' ' | cut -c1-300)"
  fi
done

line "DONE $fails failure(s) in $(( $(date +%s) - start )) s"
[ "$fails" -eq 0 ]
