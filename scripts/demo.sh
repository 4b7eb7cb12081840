#!/usr/bin/env bash
# The kguard demo on a fresh Debian 12 machine: installs what is missing,
# builds, installs the kguard kernelspec into a private location, and runs the
# example training notebook unattended with an emulated CUDA device-side
# assert at step 60 (CPU only: the emulation is labelled, no GPU is touched).
#
# You will see: the failure detected and classified, the kernel restarted,
# the last checkpoint sealed before the fault verified and restored, training
# resumed and finished, then the paths of the executed notebook and of the
# incident record. Everything it writes stays under build/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
kg_need_packages $KG_PKGS_BUILD $KG_PKGS_PY

cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build build/demo -j"$(nproc)" >/dev/null
kguard=$PWD/build/demo/kguard

work=$PWD/build/demo/run
rm -rf "$work"
mkdir -p "$work"
# A private Jupyter data dir, state dir and signing key: the demo leaves
# nothing in your home directory.
export JUPYTER_DATA_DIR=$work/jupyter JUPYTER_PATH=$work/jupyter
export KGUARD_STATE_DIR=$work/state KGUARD_KEY_DIR=$work/keys
"$kguard" install --kernel python3 --name python3-kguard --user --checkpoints "$work/checkpoints"
cp examples/train_classifier.ipynb "$work/"

echo
echo "== kguard run with an emulated CUDA device-side assert at step 60 =="
status=0
KGUARD_EMULATE=cuda-assert:step=60:once \
  "$kguard" run "$work/train_classifier.ipynb" --kernel python3-kguard \
  -o "$work/train_classifier.executed.ipynb" || status=$?

echo
echo "== the result line of the executed notebook =="
grep -o 'RESULT [^"\\]*' "$work/train_classifier.executed.ipynb" | head -1 || true
echo
echo "== checkpoints (quarantined ones were sealed after the fault) =="
"$kguard" ckpt list "$work/checkpoints" || true
ls "$work/checkpoints/quarantine"/* 2>/dev/null | sed 's/^/  quarantined: /' || true
echo
echo "executed notebook: $work/train_classifier.executed.ipynb"
for f in "$KGUARD_STATE_DIR"/incidents/*.json; do
  [ -e "$f" ] && echo "incident record:   $f"
done
exit $status
