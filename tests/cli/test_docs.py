"""The help, the man pages, the command-line reference (docs/cli.md) and the
bash completion are written from one source, kguard's option tables: the
checked-in reference must be what `kguard help --format=markdown` writes
today, each rendering must name the same options for every command, the man
pages must render cleanly, the completion must complete, and no
hand-written page may show a command with an option it does not have."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import KGUARD, SOURCE, commands, kguard, tables

PAGE = SOURCE / "docs" / "cli.md"
ALL = commands()
IDS = [" ".join(w) for w, _ in ALL]
OPT = r"--[a-z0-9][a-z0-9-]*"


def documented(table):
    return {"--" + o["long"] for o in table["options"] if not o["hidden"]}


def test_checked_in_reference_is_current():
    want = kguard("help", "--format=markdown", check=0).stdout
    assert PAGE.exists(), "docs/cli.md is missing: run scripts/gen-cli-docs.sh"
    assert PAGE.read_text() == want, ("docs/cli.md is out of date: run "
                                      "scripts/gen-cli-docs.sh")


def _help_opts(text):
    body = text.split("\noptions:\n", 1)[1].split("\nexit codes:\n", 1)[0]
    return set(re.findall(r"^  (?:-[a-zA-Z], )?(%s)" % OPT, body, re.M))


def _man_opts(text):
    return set(o.replace("\\-", "-") for o in
               re.findall(r"^\.TP\n(?:\\fB\\-[a-zA-Z]\\fR, )?\\fB((?:\\-){2}[a-z0-9\\-]+)\\fR",
                          text, re.M))


def _md_section(page, words):
    level = "##" if len(words) == 1 else "###"
    head = "\n%s kguard %s\n" % (level, " ".join(words))
    assert head in page, head
    section = page.split(head, 1)[1]
    return re.split(r"\n#{2,3} kguard ", section, 1)[0]


def _md_opts(section):
    return set(re.findall(r"^- `(?:-[a-zA-Z], )?(%s)" % OPT, section, re.M))


def _bash_opts(script, words):
    block = script.split('    "%s")\n' % " ".join(words), 1)[1].split("        ;;\n", 1)[0]
    opts = re.search(r"^        opts='([^']*)'$", block, re.M).group(1)
    return set(w for w in opts.split() if w.startswith("--"))


@pytest.mark.parametrize("words,table", ALL, ids=IDS)
def test_every_rendering_names_the_same_options(words, table):
    want = documented(table)
    help_text = kguard(*words, "--help", check=0).stdout
    # a subcommand is a section of its parent's page, the page installed
    man = kguard("help", "--format=man", words[0], check=0).stdout
    if len(words) == 2:
        head = '.SS "kguard %s"' % " ".join(words).replace("-", "\\-")
        assert head in man, head
        man = man.split(head, 1)[1].split(".SS ", 1)[0]
        man_opts = _man_opts(man)
    else:
        man = man.split(".SH OPTIONS\n", 1)[1].split('.SH "EXIT STATUS"', 1)[0]
        man_opts = _man_opts(man)
    found = {
        "--help": _help_opts(help_text),
        "man page": man_opts,
        "docs/cli.md": _md_opts(_md_section(PAGE.read_text(), words)),
        "bash completion": _bash_opts(kguard("help", "--format=bash-completion",
                                             check=0).stdout, words),
    }
    for where, opts in found.items():
        assert opts == want, "%s of kguard %s: missing %s, extra %s" % (
            where, " ".join(words), sorted(want - opts), sorted(opts - want))


def test_man_pages(tmp_path):
    kguard("help", "--format=man", "--output-dir", str(tmp_path), check=0)
    want = {"kguard.1"} | {"kguard-%s.1" % c["name"] for c in tables()["commands"]
                           if not c["hidden"]}
    assert {p.name for p in tmp_path.iterdir()} == want
    groff = shutil.which("groff")
    for page in sorted(tmp_path.iterdir()):
        text = page.read_text()
        name = page.name[:-2]
        assert re.search(r"^\.SH NAME\n%s \\- " % name.replace("-", "\\\\-"), text, re.M), name
        if groff:
            out = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", str(page)],
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0 and out.stderr == "", (page.name, out.stderr)


# Stand-ins for bash-completion's helpers when the package is not here: the
# test is of kguard's script, which calls them.
STUBS = r'''
_init_completion() {
    words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    cur=${words[cword]}; prev=${words[cword-1]}; split=false
    if [[ $cur == --*=* ]]; then prev=${cur%%=*}; cur=${cur#*=}; split=true; fi
}
_filedir() { COMPREPLY=(FILES); }
'''


def _complete(line):
    script = kguard("help", "--format=bash-completion", check=0).stdout
    lib = "/usr/share/bash-completion/bash_completion"
    prelude = ("source %s" % lib) if os.path.exists(lib) else STUBS
    words = line.split(" ")
    prog = "%s\n%s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\nCOMP_LINE=%r\nCOMP_POINT=%d\n" \
           "_kguard\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (
               prelude, script, " ".join("'%s'" % w for w in words), len(words) - 1, line,
               len(line))
    out = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_bash_completion_completes():
    assert subprocess.run(["bash", "-n"], input=kguard("help", "--format=bash-completion",
                                                       check=0).stdout,
                          text=True).returncode == 0
    assert _complete("kguard ins") == ["install"]
    assert "--kernel" in _complete("kguard install --ker")
    assert _complete("kguard doctor --format ") == ["text", "markdown", "json"]
    assert _complete("kguard uninstall --prefix ") in (["FILES"], [])


def _doc_pages():
    pages = [SOURCE / "README.md", SOURCE / "examples" / "README.md"]
    pages += sorted(p for p in (SOURCE / "docs").glob("*.md") if p.name != "cli.md")
    return [p for p in pages if p.exists()]


def test_hand_written_pages_use_only_existing_options():
    """Every `kguard CMD ...` a page shows (in code) uses options CMD has."""
    known = {" ".join(w): documented(t) | {"-" + o["short"] for o in t["options"]
                                           if o["short"]}
             for w, t in commands(hidden=True)}
    code = re.compile(r"```.*?```|`[^`\n]+`", re.S)
    bad = []
    for page in _doc_pages():
        text = page.read_text()
        for block in code.findall(text):
            for line in block.splitlines():
                for m in re.finditer(r"(?<![%\w/-])kguard ([a-z-]+)(?: ([a-z-]+))?", line):
                    cmd = m.group(1)
                    if m.group(2) and "%s %s" % (cmd, m.group(2)) in known:
                        cmd = "%s %s" % (cmd, m.group(2))
                    if cmd not in known:
                        continue
                    rest = re.split(r"\s(?:--|\||;|&&|\|\||>|2>)\s|`|\)|$", line[m.end():])[0]
                    for word in rest.split():
                        opt = word.split("=")[0]
                        if re.fullmatch(OPT + "|-[a-zA-Z]", opt) and opt not in known[cmd]:
                            bad.append("%s: `kguard %s ... %s`" % (page.name, cmd, opt))
    assert not bad, "options no command has:\n" + "\n".join(sorted(set(bad)))


def test_every_kguard_cell_is_in_the_notebook_table_and_the_kernel_help():
    """The `%kguard` cells kguard answers (its usage line, kg_inband_cmd) are
    each a row of docs/notebooks.md's `%kguard` table and named in
    `kguard kernel --help`."""
    src = (SOURCE / "supervisor" / "kernel" / "decide" / "kg_inband_cmd.c").read_text()
    usage = re.search(r'"usage: (%kguard [^"]*)"', src).group(1)
    cells = [c.strip() for c in usage.split("|")]
    forms = []
    for c in cells:
        m = re.fullmatch(r"(%kguard \w+)(?: \[(--[\w-]+)\])?", c)
        assert m, c
        forms.append(m.group(1))
        if m.group(2):
            forms.append(m.group(1) + " " + m.group(2))
    page = (SOURCE / "docs" / "notebooks.md").read_text()
    rows = set(re.findall(r"^\| `(%kguard[^`]*)` \|", page, flags=re.M))
    help_text = " ".join(kguard("kernel", "--help", check=0).stdout.split())
    assert [f for f in forms if f not in rows] == [], "missing from docs/notebooks.md's table"
    assert [f for f in forms if f"`{f}`" not in help_text] == [], "missing from kernel --help"
