#!/usr/bin/env python3
"""Turn a staged `cmake --install` tree into kguard's binary wheel.

usage: wheel.py STAGE_PREFIX VERSION OUT_DIR     (scripts/wheel.sh runs it)

The wheel installs the same relative layout as the Debian package, under the
environment's prefix (pip's "data" scheme, sys.prefix in a venv or conda
env): bin/kguard (from .data/scripts), libexec/kguard/ (helpers and the
bundled libraries), share/kguard/ (the Python package, the rules),
share/man/man1/ and share/bash-completion/. kguard finds its helpers and
data relative to its own executable, so that layout works under any prefix,
`pip install --target DIR` included. A kguard.pth in site-packages puts
share/kguard/python on the environment's sys.path.

Every shared library other than glibc's, libstdc++ and libgcc is copied into
libexec/kguard/lib with an $ORIGIN run path, as auditwheel does; the
platform tag is manylinux_X_Y with X.Y the newest GLIBC_ symbol version any
ELF file in the wheel needs, refused above 2.35 (Ubuntu 22.04's glibc).
"""
import base64
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import zipfile

# Libraries every manylinux system provides (PEP 600 / auditwheel's policy):
# glibc's own, libstdc++ and libgcc. Everything else travels in the wheel.
SYSTEM_LIBS = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|"
                         r"libutil|libanl|libnsl|libstdc\+\+|libgcc_s)[.-]")
BUNDLE_DIR = "libexec/kguard/lib"
GLIBC_MAX = (2, 35)       # Ubuntu 22.04
GLIBCXX_MAX = (3, 4, 30)  # its libstdc++ (gcc 12)
# The parts of the staged tree that go into the wheel (the documentation stays
# out, as pip-installed tools ship none).
KEEP = ("bin/kguard", "libexec/kguard/", "share/kguard/", "share/man/man1/",
        "share/bash-completion/completions/")


def die(msg):
    sys.exit(f"wheel.py: {msg}")


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def ldd(path):
    """{soname: resolved path} of every library path needs (the closure)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env, check=True).stdout
    deps = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            if m.group(2) == "not":
                die(f"{path} needs {m.group(1)}, which is not found on this machine")
            deps[m.group(1)] = m.group(2)
    return deps


def version_needs(path):
    """The symbol versions path requires, e.g. {'GLIBC_2.34', 'GLIBCXX_3.4.21'}."""
    out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r"\b(GLIBC(?:XX)?_[0-9.]+)\b", out))


def vtuple(name):
    return tuple(int(x) for x in name.split("_", 1)[1].split("."))


def patchelf(*args):
    subprocess.run(["patchelf", *args], check=True)


def bundle(root):
    """Copy the non-system libraries the executables need into BUNDLE_DIR and
    point every ELF file's run path at it. Returns the bundled sonames."""
    exes = [os.path.join(root, p) for p in ("bin/kguard", "libexec/kguard/kguard-ckpt",
                                            "libexec/kguard/kguard-eg")]
    libdir = os.path.join(root, BUNDLE_DIR)
    os.makedirs(libdir, exist_ok=True)
    bundled = {}
    for exe in exes:
        for soname, path in ldd(exe).items():
            if not SYSTEM_LIBS.match(soname):
                bundled[soname] = path
    for soname, path in sorted(bundled.items()):
        dest = os.path.join(libdir, soname)
        shutil.copyfile(os.path.realpath(path), dest)
        os.chmod(dest, 0o755)
        subprocess.run(["strip", "--strip-unneeded", dest], check=True)
        # DT_RPATH (--force-rpath), not DT_RUNPATH: it comes before
        # LD_LIBRARY_PATH, so an environment's own libzmq never replaces ours.
        patchelf("--force-rpath", "--set-rpath", "$ORIGIN", dest)
    for exe in exes:
        rel = os.path.relpath(libdir, os.path.dirname(exe))
        patchelf("--force-rpath", "--set-rpath", f"$ORIGIN/{rel}", exe)
    # Installed, nothing but the system's libraries may come from outside.
    for f in exes + [os.path.join(libdir, s) for s in bundled]:
        for soname, path in ldd(f).items():
            if not SYSTEM_LIBS.match(soname) and not os.path.realpath(path).startswith(
                    os.path.realpath(libdir) + "/"):
                die(f"{f}: {soname} resolves to {path}, outside the wheel")
    return sorted(bundled)


def platform_tag(root):
    """manylinux_X_Y_x86_64 from the newest GLIBC_ version any ELF file
    needs; dies when that, or the libstdc++ version, is too new."""
    newest, newest_cxx, by = (2, 17), (3, 4), {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not is_elf(path):
                continue
            for v in version_needs(path):
                t = vtuple(v)
                if v.startswith("GLIBCXX_"):
                    newest_cxx = max(newest_cxx, t)
                elif t > newest:
                    newest = t
                by.setdefault(v, os.path.relpath(path, root))
    if newest > GLIBC_MAX:
        v = "GLIBC_" + ".".join(map(str, newest))
        die(f"{by[v]} needs {v}; the wheel must run on glibc "
            f"{'.'.join(map(str, GLIBC_MAX))} (Ubuntu 22.04)")
    if newest_cxx > GLIBCXX_MAX:
        v = "GLIBCXX_" + ".".join(map(str, newest_cxx))
        die(f"{by[v]} needs {v}, newer than Ubuntu 22.04's libstdc++")
    return f"manylinux_{newest[0]}_{newest[1]}_{os.uname().machine}"


def record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main():
    if len(sys.argv) != 4:
        die("usage: wheel.py STAGE_PREFIX VERSION OUT_DIR")
    stage, version, out_dir = sys.argv[1:]
    root = os.path.join(out_dir, "root")
    shutil.rmtree(root, ignore_errors=True)
    for keep in KEEP:
        src = os.path.join(stage, keep)
        if not os.path.exists(src):
            die(f"{src} is missing from the staged install")
        dst = os.path.join(root, keep)
        if os.path.isdir(src):
            shutil.copytree(src, dst, symlinks=False,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
    libs = bundle(root)
    # doctor says which install it runs from (kg_paths_install_kind)
    with open(os.path.join(root, "share/kguard/install-kind"), "w") as f:
        f.write("wheel\n")
    tag = platform_tag(root)

    name = f"kguard-{version}"
    data = f"{name}.data"
    info = f"{name}.dist-info"
    files = []   # (arcname, bytes, mode)
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, root)
            arc = f"{data}/scripts/{n}" if rel == "bin/kguard" else f"{data}/data/{rel}"
            with open(path, "rb") as f:
                files.append((arc, f.read(), os.stat(path).st_mode & 0o777))
    # relative to site-packages (lib/pythonX.Y/site-packages): the prefix's share/
    files.append(("kguard.pth", b"../../../share/kguard/python\n", 0o644))
    readme = (
        "kguard guards GPU training in Jupyter notebooks and scripts: on a sticky CUDA or ROCm\n"
        "error (a device-side assert) it stops the poisoned process, restarts it and restores\n"
        "the last checkpoint sealed before the fault.\n\n"
        "This wheel puts `kguard` on the environment's PATH; `kguard install --sys-prefix`\n"
        "adds the kernel \"Python 3 (kguard)\" to the environment's Jupyter.\n")
    metadata = (f"Metadata-Version: 2.1\nName: kguard\nVersion: {version}\n"
                "Summary: guard GPU training in Jupyter notebooks and scripts against sticky "
                "device errors\nRequires-Python: >=3.8\n"
                "Description-Content-Type: text/markdown\n\n" + readme)
    wheel = (f"Wheel-Version: 1.0\nGenerator: kguard scripts/wheel.py\n"
             f"Root-Is-Purelib: false\nTag: py3-none-{tag}\n")
    files.append((f"{info}/METADATA", metadata.encode(), 0o644))
    files.append((f"{info}/WHEEL", wheel.encode(), 0o644))
    record = "".join(record_line(a, d) + "\n" for a, d, _ in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), 0o644))

    whl = os.path.join(out_dir, f"{name}-py3-none-{tag}.whl")
    for old in os.listdir(out_dir):
        if old.endswith(".whl"):
            os.remove(os.path.join(out_dir, old))
    # Reproducible: fixed timestamps, sorted entries, modes as staged.
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    date = max((1980, 1, 1, 0, 0, 0), tuple(time.gmtime(epoch)[:6]))
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, blob, mode in files:
            zi = zipfile.ZipInfo(arc, date_time=date)
            zi.external_attr = (stat.S_IFREG | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, blob)
    shutil.rmtree(root)
    print(f"bundled: {' '.join(libs)}")
    print(os.path.abspath(whl))


if __name__ == "__main__":
    main()
