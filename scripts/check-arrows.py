#!/usr/bin/env python3
"""check-arrows: kguard's libraries use only libraries below them, and no
source file is long.

Each library is a folder (its own files, not the folders under it). They
stand in this order ("A < B": B may use A):

    common < checkpoint
    common < ipc < diag < gpu < kernel < cli
    common < ipc < diag < kernel/decide < kernel/peers < kernel
    common < ipc < diag < gpu < exec
    common < ipc < diag < run
    common < ipc < eg
    every library < main (supervisor/main.c, which only dispatches)

A library may include the headers of, and call the functions of, libraries
below it only; a header named *_priv.h is included only inside its own
folder. The includes are read from the sources (`#include "x.h"`, resolved
to the folder holding x.h); the calls from the built object files (nm: what
the linker sees is what calls what). The check fails naming

  * every arrow that runs back up: a file that includes a header of, or
    calls a function defined in, a library that is not below its own (one
    line per file and library, with one include or symbol as a witness);
  * every private header included from another folder;
  * every circle of libraries (a strongly connected component of the
    library graph), with one arrow per step as a witness;
  * every circle of files, in every library: A calls B and B, maybe
    through others, calls A back (a lower file tells a higher one through
    an event, a callback or a table, never by calling it);
  * every source file (.c/.h) under supervisor/ ipc/ checkpoint/ common/
    longer than MAX_LINES.

Usage: check-arrows.py BUILD_DIR [SOURCE_DIR]    (exit 0 clean, 1 findings,
2 bad usage or no object files: build first). `--graph` prints every call
arrow between files; `--layers` prints each library's files by layer (0:
calls no other file of its library; n: calls files of layers below n only),
when there is no cycle. Needs `nm` (binutils).
"""
import os
import re
import subprocess
import sys

# A file holds one concern, whatever its length; past this many lines it
# holds more than one (CZMQ's median file is 540 lines, redis's ae.c 493).
MAX_LINES = 1000

# Files over the limit that the supervisor core does not own: each is named
# so that the list cannot grow silently. Tests (tests/) are not counted.
LONG_FILE_EXCEPTIONS = {}

# (library, source folder, libraries directly below it). A library may use
# every library below it, directly or through others.
LIBRARIES = [
    ("common", "common", []),
    ("ipc", "ipc", ["common"]),
    ("checkpoint", "checkpoint", ["common"]),
    ("diag", "supervisor/diag", ["ipc"]),
    ("gpu", "supervisor/gpu", ["diag"]),
    ("decide", "supervisor/kernel/decide", ["diag"]),
    ("peers", "supervisor/kernel/peers", ["decide"]),
    ("kernel", "supervisor/kernel", ["gpu", "peers"]),
    ("cli", "supervisor/cli", ["kernel"]),
    ("exec", "supervisor/exec", ["gpu"]),
    ("run", "supervisor/run", ["diag"]),
    ("eg", "supervisor/eg", ["ipc"]),
    ("main", "supervisor", ["checkpoint", "cli", "exec", "run", "eg"]),
]

# The libraries whose files must not call each other in a circle: all.
FILE_CYCLE_LIBRARIES = {name for name, _, _ in LIBRARIES}

LINE_DIRS = ["supervisor", "ipc", "checkpoint", "common"]

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def s_below():
    """{library: set of the libraries it may use}."""
    direct = {name: set(under) for name, _, under in LIBRARIES}
    below = {}

    def visit(name):
        if name not in below:
            below[name] = set()
            for d in direct[name]:
                below[name] |= {d} | visit(d)
        return below[name]

    for name in direct:
        visit(name)
    return below


def s_library_of(rel):
    """The library of a path relative to the source root, or None."""
    folder = os.path.dirname(rel)
    for name, src, _ in LIBRARIES:
        if folder == src:
            return name
    return None


def s_sources(source_dir):
    """[(path relative to source_dir, library)] of every .c/.h of a library
    (its own folder only, not the folders under it)."""
    found = []
    for name, src, _ in LIBRARIES:
        root = os.path.join(source_dir, src)
        if not os.path.isdir(root):
            continue
        for f in sorted(os.listdir(root)):
            if f.endswith((".c", ".h")) and os.path.isfile(os.path.join(root, f)):
                found.append((os.path.join(src, f), name))
    return found


def s_includes(source_dir, sources):
    """[(file, its library, header, header's path)] for every quoted include
    that names a header of a library."""
    where = {os.path.basename(rel): rel for rel, _ in sources if rel.endswith(".h")}
    found = []
    for rel, lib in sources:
        with open(os.path.join(source_dir, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for header in INCLUDE_RE.findall(text):
            target = where.get(os.path.basename(header))
            if target:
                found.append((rel, lib, os.path.basename(header), target))
    return found


def s_objects(build_dir):
    """[(source path, library, object path)] for every built object of a
    library (BUILD_DIR/<folder>/CMakeFiles/<target>.dir/...)."""
    found = []
    for name, src, _ in LIBRARIES:
        root = os.path.join(build_dir, src, "CMakeFiles")
        if not os.path.isdir(root):
            continue
        for target in sorted(os.listdir(root)):
            tdir = os.path.join(root, target)
            if not target.endswith(".dir") or not os.path.isdir(tdir):
                continue
            for dirpath, _, names in os.walk(tdir):
                for f in sorted(names):
                    if f.endswith(".c.o"):
                        rel = os.path.relpath(os.path.join(dirpath, f), tdir)
                        found.append((os.path.join(src, rel[:-2]), name,
                                      os.path.join(dirpath, f)))
    return found


def s_symbols(objects):
    """{object path: (defined symbols, undefined symbols)}, one nm run for
    all of them."""
    table = {obj: (set(), set()) for _, _, obj in objects}
    paths = [obj for _, _, obj in objects]
    for i in range(0, len(paths), 200):
        chunk = paths[i:i + 200]
        out = subprocess.run(["nm", "-P", "-A", *chunk], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            head, _, rest = line.partition(": ")
            parts = rest.split()
            if head not in table or len(parts) < 2:
                continue
            name, kind = parts[0], parts[1]
            if kind in ("T", "D", "B", "R"):
                table[head][0].add(name)
            elif kind == "U":
                table[head][1].add(name)
    return table


def s_call_graph(objects, symbols):
    """{file: {callee file: example symbol}} and {file: library}."""
    defined_in, needs, library = {}, {}, {}
    for src, lib, obj in objects:
        defined, undefined = symbols[obj]
        for sym in defined:
            defined_in[sym] = src
        needs[src] = undefined
        library[src] = lib
    graph = {src: {} for src in needs}
    for src, undefined in needs.items():
        for sym in sorted(undefined):
            callee = defined_in.get(sym)
            if callee and callee != src:
                graph[src].setdefault(callee, sym)
    return graph, library


def s_components(graph):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                comps.append(sorted(comp))
    return comps


def s_long_files(source_dir):
    found = []
    for top in LINE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(source_dir, top)):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, source_dir)
                with open(path, encoding="utf-8", errors="replace") as f:
                    n = sum(1 for _ in f)
                if n > MAX_LINES and rel not in LONG_FILE_EXCEPTIONS:
                    found.append((rel, n))
    return sorted(found)


def s_layers(graph):
    """{file: layer}: 0 for a file that calls none of the graph, else one
    more than the highest layer it calls (the graph has no cycle)."""
    layer = {}

    def visit(node):
        if node not in layer:
            layer[node] = -1   # on the path; a cycle was already excluded
            layer[node] = 1 + max((visit(c) for c in graph[node]), default=-1)
        return layer[node]

    for node in graph:
        visit(node)
    return layer


def s_check_libraries(includes, graph, library):
    """(findings, library graph {lib: {lib: witness}}): the arrows that run
    back up, the private headers used outside their folder."""
    below = s_below()
    findings, lib_graph = [], {name: {} for name, _, _ in LIBRARIES}
    seen = set()
    for rel, lib, header, target in includes:
        tlib = s_library_of(target)
        if header.endswith("_priv.h") and os.path.dirname(target) != os.path.dirname(rel):
            findings.append(f"private header: {rel} includes {header}, private to "
                            f"{os.path.dirname(target)}/")
        if tlib == lib or tlib is None:
            continue
        lib_graph[lib].setdefault(tlib, f"{rel} includes {header}")
        if tlib not in below[lib] and (rel, tlib) not in seen:
            seen.add((rel, tlib))
            findings.append(f"arrow runs back up: {rel} ({lib}) includes {header} ({tlib})")
    for src, callees in sorted(graph.items()):
        lib = library[src]
        for callee, sym in sorted(callees.items()):
            tlib = library[callee]
            if tlib == lib:
                continue
            lib_graph[lib].setdefault(tlib, f"{src} calls {sym} ({callee})")
            if tlib not in below[lib] and (src, tlib) not in seen:
                seen.add((src, tlib))
                findings.append(f"arrow runs back up: {src} ({lib}) calls {sym}, "
                                f"defined in {callee} ({tlib})")
    return findings, lib_graph


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if not args or len(args) > 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build_dir = args[0]
    source_dir = args[1] if len(args) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    # objects of sources since deleted stay in a build tree: not the house's
    objects = [o for o in s_objects(build_dir) if os.path.exists(os.path.join(source_dir, o[0]))]
    if not objects:
        print(f"check-arrows: no library object files under {build_dir}: build first",
              file=sys.stderr)
        return 2
    graph, library = s_call_graph(objects, s_symbols(objects))
    if "--graph" in argv:
        for src in sorted(graph):
            for callee, sym in sorted(graph[src].items()):
                print(f"{src} -> {callee}   ({sym})")
    sources = s_sources(source_dir)
    findings, lib_graph = s_check_libraries(s_includes(source_dir, sources), graph, library)
    for line in findings:
        print(line)
    upward = sum(1 for f in findings if f.startswith("arrow runs back up"))
    lib_cycles = [c for c in s_components(lib_graph) if len(c) > 1]
    for comp in sorted(lib_cycles):
        members = set(comp)
        print(f"circle of {len(comp)} libraries: " + " ".join(comp))
        for lib in comp:
            for tlib, witness in sorted(lib_graph[lib].items()):
                if tlib in members:
                    print(f"    {lib} -> {tlib}  ({witness})")
    file_graph = {src: {c: s for c, s in callees.items()
                        if library[c] in FILE_CYCLE_LIBRARIES}
                  for src, callees in graph.items() if library[src] in FILE_CYCLE_LIBRARIES}
    cycles = [c for c in s_components(file_graph) if len(c) > 1]
    for comp in sorted(cycles):
        members = set(comp)
        print(f"cycle of {len(comp)} files: " + " ".join(comp))
        for src in comp:
            for callee, sym in sorted(file_graph[src].items()):
                if callee in members:
                    print(f"    {src} -> {callee}  ({sym})")
    long_files = s_long_files(source_dir)
    for rel, n in long_files:
        print(f"too long: {rel}: {n} lines (limit {MAX_LINES})")
    if "--layers" in argv and not cycles:
        for name, src_dir, _ in LIBRARIES:
            own = {f: {c: s for c, s in callees.items() if library[c] == name}
                   for f, callees in file_graph.items() if library[f] == name}
            layers = s_layers(own)
            for n in range(max(layers.values(), default=-1) + 1):
                names = sorted(os.path.relpath(f, src_dir) for f, l in layers.items() if l == n)
                print(f"{name} layer {n}: " + " ".join(names))
    private = len(findings) - upward
    print(f"check-arrows: {len(sources)} source files, {len(objects)} objects in "
          f"{len(LIBRARIES)} libraries; {upward} arrow(s) back up, {private} private "
          f"header(s) outside their folder, {len(lib_cycles)} circle(s) of libraries, "
          f"{len(cycles)} circle(s) of files, {len(long_files)} file(s) over {MAX_LINES} "
          f"lines ({len(LONG_FILE_EXCEPTIONS)} listed exceptions)")
    return 1 if findings or lib_cycles or cycles or long_files else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
