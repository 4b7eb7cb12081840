# shellcheck shell=bash
# Sourced by scripts/demo.sh and scripts/test.sh: installs the Debian 12
# packages kguard needs, and nothing else. As root it runs apt-get; otherwise
# it prints the exact command to run and stops.

KG_PKGS_BUILD="build-essential cmake pkg-config libzmq3-dev libsodium-dev libcjson-dev libarchive-dev libzstd-dev libssl-dev"
# Real peers: Debian's ipykernel, jupyter_client, jupyter-console, nbclient,
# nbconvert and torch (CPU). Tests and the demo use /usr/bin/python3, which
# is the interpreter these packages belong to.
KG_PKGS_PY="python3 python3-ipykernel python3-jupyter-client jupyter-console python3-nbclient python3-nbformat python3-nbconvert python3-torch python3-psutil"
# Server tests: Jupyter Server (JupyterLab's backend) and a fake Enterprise
# Gateway written with python3-cryptography.
KG_PKGS_TEST="python3-pytest jupyter-notebook chromium procps python3-jupyter-server python3-cryptography"
# scripts/package.sh: dpkg-shlibdeps computes the package's Depends (it
# needs file); both are Debian's, already there on most build machines.
KG_PKGS_PACKAGE="dpkg-dev file"
# scripts/wheel.sh: patchelf gives the bundled libraries their $ORIGIN run
# path; its test installs the wheel with Debian's pip into a fresh venv.
KG_PKGS_WHEEL="patchelf binutils python3-pip python3-venv"
# The hardening stages of scripts/test.sh: clang with libFuzzer and the
# sanitizer runtimes (libclang-rt-14-dev holds libclang_rt.fuzzer); gcc's
# libasan/libubsan/libtsan come with build-essential.
KG_PKGS_HARDEN="clang libclang-rt-14-dev"

# kg_need_packages PKG... : install whichever of PKG are missing.
kg_need_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "kguard: missing Debian packages. Run as root, then run this command again:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "kguard: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The browser test drives Chromium with playwright-core from npm. Node.js may
# come from Debian (then npm is a separate package) or from elsewhere.
kg_need_node() {
  command -v npm >/dev/null 2>&1 && return 0
  kg_need_packages nodejs npm
}
