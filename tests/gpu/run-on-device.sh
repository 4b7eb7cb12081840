#!/bin/sh
# kguard on a real GPU, from the wheel: install it without touching the
# machine's Python (pip install --no-index --target), build nothing but the
# small driver-API fixture (where a C compiler exists), run every device
# check with its own time limit, print one verdict line per check (PASS,
# SKIP or FAIL with what was measured) and write a JSON summary. Meant for a
# bare CUDA machine (torch and the driver, no -dev packages, no registry);
# on a machine without a GPU every device check is SKIPped by name, and the
# run passes (package.wheel runs it so).
#
#   sh tests/gpu/run-on-device.sh WHEEL [OUT_DIR]     (default OUT_DIR: ./kguard-gpu-check)
#
# Environment: KGUARD_PYTHON (the Python with torch, default python3 on PATH);
# KGUARD_CHECK_EMULATED=auto|1|0: also run the exec-* flows on the CPU with
# kguard's labelled emulation of the CUDA assert, verdict "PASS (cpu-emulated)"
# (auto, the default: only where torch sees no GPU; 1: also on a GPU).
# Checks (tests/gpu/real_device.py and tests/gpu/exec_checks.py say what each
# proves): doctor, preflight, driver-assert, driver-trap, kernel-assert,
# run-notebook (the last two need ipykernel in that Python, else SKIP),
# torch_label4, then kguard exec over a genuine label-4 training:
# exec-label4, exec-same-bug, exec-fault-to-step, exec-nproc2. Target: all
# of them within 6 minutes on a GPU machine (the DONE line says the total).
set -u
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: sh tests/gpu/run-on-device.sh WHEEL [OUT_DIR]   (WHEEL: from scripts/wheel.sh)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
wheel=$1
out=$(mkdir -p "${2:-kguard-gpu-check}" && cd "${2:-kguard-gpu-check}" && pwd)
py=${KGUARD_PYTHON:-$(command -v python3)}
start=$(date +%s)
lines=$out/verdicts.txt
: > "$lines"

line() { printf '%s\n' "$*" | tee -a "$lines"; }

if command -v nvidia-smi >/dev/null 2>&1; then
  line "INFO device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -3 | tr '\n' ';')"
else
  line "INFO device: no nvidia-smi on PATH"
fi

# --- install: the wheel's files only, into a directory of this run ---------
dir=$out/kguard
rm -rf "$dir"
if "$py" -m pip install --no-index --no-deps --target "$dir" "$wheel" >"$out/pip.log" 2>&1 \
   && [ -x "$dir/bin/kguard" ]; then
  line "PASS install: $("$dir/bin/kguard" --version) in $dir ($(( $(date +%s) - start )) s)"
else
  line "FAIL install: $py -m pip install --target: $(tail -2 "$out/pip.log" | tr '\n' ' ')"
  exit 1
fi
lib=
if command -v cc >/dev/null 2>&1 \
   && cc -O2 -fPIC -shared -o "$out/libkgfx_cuda.so" "$here/kgfx_cuda.c" -ldl 2>"$out/cc.log"; then
  lib=$out/libkgfx_cuda.so
fi

# --- the checks, each in its own time limit ----------------------------------
fails=0
judge() {  # NAME RC OUTPUT: the check's last verdict line, or a FAIL saying why none
  v=$(printf '%s\n' "$3" | grep -E '^(PASS|SKIP|FAIL) ' | tail -1)
  [ -n "$v" ] || v="FAIL $1: exit $2 without a verdict: $(printf '%s' "$3" | tail -2 | tr '\n' ' ' | cut -c1-300)"
  case $v in FAIL*) fails=$((fails + 1)) ;; esac
  line "$v"
}
has_ipykernel=$("$py" -c 'import ipykernel' >/dev/null 2>&1 && echo 1)
for check in doctor preflight driver-assert driver-trap kernel-assert run-notebook; do
  case $check in
    driver-*) [ -n "$lib" ] || { line "SKIP $check: no C compiler here for the driver-API fixture"; continue; } ;;
    kernel-assert|run-notebook)
      [ -n "$has_ipykernel" ] || { line "SKIP $check: ipykernel is not importable by $py"; continue; }
      [ -n "$lib" ] || [ "$check" = run-notebook ] || { line "SKIP $check: no C compiler here for the driver-API fixture"; continue; } ;;
  esac
  o=$(KGUARD_BIN="$dir/bin/kguard" KGFX_LIB="$lib" KGFX_HIP_LIB= KGUARD_SOURCE_DIR="$here/../.." \
      KGUARD_PYTHON="$py" timeout 90 "$py" "$here/real_device.py" "$check" 2>&1)
  judge "$check" $? "$o"
done
o=$(timeout 90 "$py" "$here/torch_label4.py" 2>&1)
rc=$?
case $rc in
  0) line "PASS torch_label4: $(printf '%s\n' "$o" | tail -1 | cut -c1-200)" ;;
  77) line "SKIP torch_label4: $(printf '%s\n' "$o" | tail -1 | cut -c1-200)" ;;
  *) fails=$((fails + 1)); line "FAIL torch_label4: exit $rc: $(printf '%s\n' "$o" | tail -3 | tr '\n' ' ' | cut -c1-300)" ;;
esac

# --- kguard exec over a genuine label-4 training, each in its own limit ----
# One probe of torch decides: a GPU run, or a named SKIP plus (unless
# KGUARD_CHECK_EMULATED=0) the same flow on the CPU under kguard's labelled
# emulation, reported "(cpu-emulated)" so it is never taken for a GPU's PASS.
torch_info=$("$py" -c 'import torch; print(torch.__version__, int(torch.cuda.is_available()))' \
             2>/dev/null | tail -1)
emulated=${KGUARD_CHECK_EMULATED:-auto}
for spec in exec-label4:120 exec-same-bug:90 exec-fault-to-step:150 exec-nproc2:120; do
  check=${spec%%:*}
  limit=${spec#*:}
  modes=
  case $torch_info in
    "") line "SKIP $check: torch is not importable by $py" ;;
    *" 1") modes=cuda; [ "$emulated" = 1 ] && modes="cuda cpu-emulated" ;;
    *) line "SKIP $check: no CUDA device visible to torch ${torch_info% *}"
       [ "$emulated" = 0 ] || modes=cpu-emulated ;;
  esac
  for mode in $modes; do
    name=$check
    [ "$mode" = cuda ] || name="(cpu-emulated) $check"
    o=$(KGUARD_BIN="$dir/bin/kguard" KGUARD_PYTHON="$py" timeout $((limit + 20)) \
        "$py" "$here/exec_checks.py" "$check" --device "$mode" --limit "$limit" \
        --work "$out/work/$check-$mode" --json "$out/$check.$mode.json" 2>&1)
    judge "$name" $? "$o"
  done
done

took=$(( $(date +%s) - start ))
[ "$took" -le 360 ] || over=" (over the 6-minute target)"
line "DONE $fails failure(s) in $took s${over:-}"
"$py" - "$lines" "$out/summary.json" "$out" <<'PY'
import json, os, re, sys
checks, by_name = [], {}
for l in open(sys.argv[1]):
    m = re.match(r"(PASS|SKIP|FAIL)( \(cpu-emulated\))? ([^:]+): (.*)", l.rstrip("\n"))
    if not m:
        continue
    verdict, emulated, name, facts = m.group(1), bool(m.group(2)), m.group(3), m.group(4)
    entry = {"verdict": verdict, "facts": facts}
    measured = os.path.join(sys.argv[3], "%s.%s.json" % (name, "cpu-emulated" if emulated
                                                         else "cuda"))
    if os.path.exists(measured):
        entry["measured"] = json.load(open(measured)).get("measured", {})
    if emulated:   # a self-test on the CPU, kept apart from the GPU verdict
        by_name.setdefault(name, {"check": name, "verdict": "SKIP", "facts": ""})
        by_name[name]["cpu_emulated"] = entry
        if by_name[name] not in checks:
            checks.append(by_name[name])
    else:
        by_name[name] = dict(check=name, **entry)
        checks.append(by_name[name])
fails = sum(c["verdict"] == "FAIL" for c in checks) + \
    sum(c.get("cpu_emulated", {}).get("verdict") == "FAIL" for c in checks)
json.dump({"checks": checks, "failures": fails}, open(sys.argv[2], "w"), indent=1)
PY
[ "$fails" -eq 0 ]
