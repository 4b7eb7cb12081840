"""One command-line grammar for every kguard command and subcommand, checked
against the real binary for each command its own tables list: --opt value
and --opt=value, -h/--help/--version everywhere, `kguard help CMD` the same
text as `kguard CMD --help`, an unknown option answered in one line that
names it and points at --help (exit 100), and one `kguard CMD:` prefix."""
import re
import subprocess

import pytest

from conftest import KGUARD, commands, kguard, tables

ALL = commands()
IDS = [" ".join(w) for w, _ in ALL]


def value_for(opt):
    """A value every command accepts while parsing (they check some at once)."""
    arg = opt["arg"]
    if "|" in arg:
        return arg.split("|")[0]
    if ".." in arg:
        return "0..0"
    if arg == "HOST:PORT":
        return "127.0.0.1:1"
    if arg == "MODULES":
        return "torch"
    if arg == "HEX":
        return "0" * 64
    return "1"


@pytest.mark.parametrize("words,table", ALL, ids=IDS)
def test_help_everywhere(words, table):
    text = kguard(*words, "--help", check=0).stdout
    assert text.startswith("usage: kguard %s" % " ".join(words)), text[:200]
    assert kguard(*words, "-h", check=0).stdout == text
    # `kguard help CMD` is the same text, byte for byte
    assert kguard("help", *words, check=0).stdout == text
    # --version anywhere
    out = kguard(*words, "--version", check=0)
    assert re.fullmatch(r"kguard \d+\.\d+\.\d+\n", out.stdout), out.stdout


@pytest.mark.parametrize("words,table", ALL, ids=IDS)
def test_unknown_option_is_one_line(words, table):
    prog = "kguard " + " ".join(words)
    for bad in ("--frob", "-V", "--frob=1"):
        out = kguard(*words, bad)
        assert out.returncode == 100, (bad, out)
        # resume-prepare is read by the supervisor: a usage error is also a
        # JSON object on stdout, as it documents
        assert out.stdout == ("" if words != ("ckpt", "resume-prepare") else
                              '{"status":"error","error":"bad usage"}\n')
        assert out.stderr.count("\n") == 1, out.stderr
        name = bad.split("=")[0]
        assert out.stderr.startswith("%s: unknown option '%s'" % (prog, name)), out.stderr
        assert out.stderr.endswith("(see %s --help)\n" % prog), out.stderr


@pytest.mark.parametrize("words,table", ALL, ids=IDS)
def test_every_option_in_both_forms(words, table):
    """Each documented option is accepted as --opt=value and as --opt value
    (and -o value): followed by --help, the command parses it and prints its
    help; a form it does not read would stop with a usage error first."""
    help_text = kguard(*words, "--help", check=0).stdout
    for opt in table["options"]:
        if opt["hidden"] or opt["long"] in ("help", "version"):
            continue
        forms = []
        long = "--" + opt["long"]
        short = "-" + opt["short"] if opt["short"] else None
        if opt["arg"] is None:
            forms.append([long])
            if short:
                forms.append([short])
        elif opt.get("optional"):   # --opt alone, or --opt=value; never --opt value
            forms.append([long])
            forms.append([long + "=" + value_for(opt)])
        else:
            rest = ["b"] if opt["pair"] else []
            v = "a" if opt["pair"] else value_for(opt)
            forms.append([long + "=" + v, *rest])
            forms.append([long, v, *rest])
            if short:
                forms.append([short, v, *rest])
        for form in forms:
            out = kguard(*words, *form, "--help")
            assert out.returncode == 0 and out.stdout == help_text, (form, out.stderr)


@pytest.mark.parametrize("words,table", [c for c in ALL if c[1]["commands"]],
                         ids=[i for i, c in zip(IDS, ALL) if c[1]["commands"]])
def test_subcommand_mistakes(words, table):
    prog = "kguard " + " ".join(words)
    out = kguard(*words, "bogus", "--help")
    assert out.returncode == 100
    assert out.stderr == "%s: unknown subcommand 'bogus' (see %s --help)\n" % (prog, prog)
    out = kguard(*words)
    assert out.returncode == 100 and out.stderr.startswith(prog + ": which subcommand? one of ")
    assert out.stderr.count("\n") == 1


def test_top_level():
    for bad in ("--frob", "-V"):
        out = kguard(bad)
        assert (out.returncode, out.stderr) == (
            100, "kguard: unknown option '%s' (see kguard --help)\n" % bad)
    out = kguard("bogus")
    assert (out.returncode, out.stderr) == (
        100, "kguard: unknown command 'bogus' (see kguard --help)\n")
    out = kguard()
    assert out.returncode == 100 and out.stderr.startswith("usage: kguard COMMAND")
    assert kguard("--help", check=0).stdout == kguard("help", check=0).stdout
    # every command the help lists is one of the tables' and dispatches
    listed = re.findall(r"^  ([a-z][a-z-]*)  ", kguard("--help", check=0).stdout, re.M)
    assert listed == [c["name"] for c in tables()["commands"] if not c["hidden"]]


def test_help_of_an_unknown_command():
    out = kguard("help", "bogus")
    assert out.returncode == 100
    assert out.stderr == "kguard help: no command 'bogus' (see kguard help --help)\n"


def test_equals_form_really_applies(tmp_path):
    """Beyond parsing: the value given with '=' is the one used."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "w.bin").write_bytes(b"x" * 100)
    env = {"KGUARD_KEY_DIR": str(tmp_path / "keys"), "PATH": "/usr/bin:/bin"}
    out = kguard("ckpt", "seal", str(data), "--step=7", "--into=" + str(tmp_path / "ck"),
                 env=env, check=0)
    archive = out.stdout.strip()
    assert "/step-0000000007-" in archive
    out = kguard("ckpt", "verify", archive, env=env, check=0)
    assert ": valid: step 7," in out.stdout
    state = tmp_path / "state"
    out = kguard("exec", "--max-restarts=2", "--state-dir=" + str(state), "--name=eq", "--",
                 "true", env=env)
    assert out.returncode == 0, out.stderr
    assert (state / "exec" / "eq").is_dir()
