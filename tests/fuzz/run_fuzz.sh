#!/usr/bin/env bash
# Runs kguard's libFuzzer harnesses (build them with the `fuzz` preset).
#
#   tests/fuzz/run_fuzz.sh BUILD_DIR HARNESS SECONDS
#
# HARNESS is msg, conninfo, rules, notebook, manifest, archive, gate or inband
# (or `all`).
# The test command runs each for a few seconds; for a long campaign run e.g.
#
#   cmake --preset fuzz && cmake --build --preset fuzz -j2
#   tests/fuzz/run_fuzz.sh build/fuzz all 14400      # 4 hours each
#
# The growing corpus is kept in BUILD_DIR/fuzz-corpus/HARNESS (seeds are
# made fresh from the tests' inputs each run, see make_seeds.py). A crash
# leaves its input as BUILD_DIR/fuzz-crashes/HARNESS/crash-*: add it to
# tests/fuzz/regressions/HARNESS/, where every run replays it first.
set -euo pipefail
build=$(cd "$1" && pwd)
which=$2
secs=$3
here=$(cd "$(dirname "$0")" && pwd)
python=${KGUARD_PYTHON:-/usr/bin/python3}
seeds=$build/fuzz-seeds
if [ ! -d "$seeds/keys" ] || [ ! -d "$seeds/inband" ]; then   # made by an older make_seeds.py
  "$python" "$here/make_seeds.py" "$build/kguard" "$seeds.tmp"
  rm -rf "$seeds"
  mv "$seeds.tmp" "$seeds"
fi
export KG_FUZZ_KEY_DIR=$seeds/keys
# ASan's leak checker and libFuzzer's own limits; UBSan findings are fatal
# (the build uses -fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local h=$1 bin=$build/tests/fuzz/fuzz_$1
  local corpus=$build/fuzz-corpus/$h crashes=$build/fuzz-crashes/$h
  mkdir -p "$corpus" "$crashes"
  local maxlen=16384
  case $h in archive|rules) maxlen=65536 ;; esac   # the real rule table is ~18 KB
  # Replay the regression inputs first: each is a former crash.
  if [ -d "$here/regressions/$h" ] && ls "$here/regressions/$h"/* >/dev/null 2>&1; then
    "$bin" -runs=0 "$here/regressions/$h"/*
  fi
  "$bin" -max_total_time="$secs" -max_len=$maxlen -timeout=10 -rss_limit_mb=2048 \
         -print_final_stats=1 -artifact_prefix="$crashes/" \
         "$corpus" "$seeds/$h" 2>&1 | tail -n 25
  return "${PIPESTATUS[0]}"
}

if [ "$which" = all ]; then
  for h in msg conninfo rules notebook manifest archive gate inband; do run_one "$h"; done
else
  run_one "$which"
fi
