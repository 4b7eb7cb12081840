#!/usr/bin/env python3
"""long-functions: no function of kguard's C sources is longer than
MAX_LINES lines, so that each entry point stays a few named steps (parse,
check, run) a reader can follow.

A function's length is counted in source lines, from the line that names it
to its closing brace, both included (comments and blank lines inside count:
they are what a reader scrolls through). The scanner is a brace matcher over
each .c file with comments, strings, character constants and preprocessor
lines blanked out: a "{" at file level that follows a ")" opens a function
body, and the name is the identifier before that parameter list's "(".

Usage: long-functions.py [--all] [SOURCE_DIR]
  Lists every function over MAX_LINES lines under supervisor/ ipc/
  checkpoint/ common/ ("path:line: name N lines"), marks those in the named
  exception list, and exits 1 when one is not listed (or a listed one is gone
  or no longer long, so that the list only shrinks). --all prints every
  function's length instead (longest first).
"""
import os
import re
import sys

# A function past this many lines does several things in one place; split it
# into steps of its own.
MAX_LINES = 80

# The folders scanned; tests/ is not counted.
SOURCE_DIRS = ["supervisor", "ipc", "checkpoint", "common"]

# Functions allowed over MAX_LINES, each named with the file that holds it
# ("path:name"): the list cannot grow silently, and an entry that no longer
# applies fails the check so the list shrinks with the code.
EXCEPTIONS = set()

IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "__attribute__"}


def s_blank(text):
    """text with comments, string and character literals and preprocessor
    lines replaced by spaces, newlines kept, so offsets and line numbers are
    the source's."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":
            # a directive runs to an unescaped newline
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                if text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        at_line_start = False
        if c == "\n":
            at_line_start = True
            i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for k in range(i, end):
                if out[k] != "\n":
                    out[k] = " "
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            for k in range(i, end):
                out[k] = " "
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def s_name_before(code, close):
    """The function name of a parameter list ending at code[close] == ')',
    and the offset of that name, or (None, None)."""
    depth, i = 0, close
    while i >= 0:
        if code[i] == ")":
            depth += 1
        elif code[i] == "(":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    if i < 0:
        return None, None
    head = code[:i].rstrip()
    m = IDENT_RE.search(head)
    if not m or m.group(0) in KEYWORDS:
        return None, None
    return m.group(0), m.start()


def functions(text):
    """[(name, first line, line count)] of every function defined in a C
    source's text."""
    code = s_blank(text)
    found = []
    depth, i, n = 0, 0, len(code)
    while i < n:
        c = code[i]
        if c == "{":
            if depth == 0:
                before = code[:i].rstrip()
                if before.endswith(")"):
                    name, at = s_name_before(code, len(before) - 1)
                    if name:
                        end = s_match(code, i)
                        first = code.count("\n", 0, at) + 1
                        last = code.count("\n", 0, end) + 1
                        found.append((name, first, last - first + 1))
                        i = end + 1
                        continue
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        i += 1
    return found


def s_match(code, open_at):
    """The offset of the brace closing the one at open_at (the end of code
    when it is never closed)."""
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(code) - 1


def scan(source_dir):
    """[(path relative to source_dir, name, first line, lines)] of every
    function in the scanned folders' .c files."""
    found = []
    for top in SOURCE_DIRS:
        for dirpath, dirs, names in os.walk(os.path.join(source_dir, top)):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(".c"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, source_dir)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for fn, line, count in functions(text):
                    found.append((rel, fn, line, count))
    return found


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) > 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    source_dir = args[0] if args else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    every = scan(source_dir)
    if not every:
        print(f"long-functions: no C functions under {source_dir}", file=sys.stderr)
        return 2
    if "--all" in argv:
        for rel, fn, line, count in sorted(every, key=lambda f: -f[3]):
            print(f"{rel}:{line}: {fn} {count} lines")
        return 0
    long_fns = sorted((f for f in every if f[3] > MAX_LINES), key=lambda f: (f[0], f[2]))
    unlisted = 0
    for rel, fn, line, count in long_fns:
        listed = f"{rel}:{fn}" in EXCEPTIONS
        unlisted += not listed
        note = " (listed exception)" if listed else ""
        print(f"too long: {rel}:{line}: {fn} {count} lines (limit {MAX_LINES}){note}")
    still = {f"{rel}:{fn}" for rel, fn, _, _ in long_fns}
    stale = sorted(EXCEPTIONS - still)
    for key in stale:
        print(f"stale exception: {key} is no longer over {MAX_LINES} lines "
              f"(or is gone): remove it from EXCEPTIONS in {os.path.basename(__file__)}")
    counts = sorted(f[3] for f in every)
    print(f"long-functions: {len(every)} functions, median {counts[len(counts) // 2]} lines; "
          f"{len(long_fns)} over {MAX_LINES} lines ({len(long_fns) - unlisted} listed "
          f"exceptions, {unlisted} not listed), {len(stale)} stale exception(s)")
    return 1 if unlisted or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
