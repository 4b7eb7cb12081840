"""scripts/long-functions.py on made-up sources: it must count a function
from the line naming it to its closing brace, ignore braces in comments,
strings, character constants, preprocessor lines and initializers, fail on a
long function that is not listed, pass one that is, and fail on a listed
exception that is no longer long (so the list only shrinks)."""
import importlib.util
import os

SOURCE_DIR = os.environ.get("KGUARD_SOURCE_DIR",
                            os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "long-functions.py")


def s_module():
    spec = importlib.util.spec_from_file_location("long_functions", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def s_body(n):
    """A function definition of exactly n lines, its type on a line of its
    own (not counted: the count starts at the name)."""
    return "static int\nf_%d(int a)\n{\n" % n + "    a++;\n" * (n - 3) + "}\n"


def test_counts_from_the_name_to_the_closing_brace():
    lf = s_module()
    text = "#include <x.h>\n" + s_body(10).replace("f_10", "ten")
    assert lf.functions(text) == [("ten", 3, 10)]


def test_ignores_braces_outside_function_bodies():
    lf = s_module()
    text = ("/* void fake(void) { */\n"
            "#define M(x) { x }\n"
            "#define LONG(x) do { \\\n  x; } while (0)\n"
            "static const char *s = \"(x) {\";\n"
            "static const char c = '{';\n"
            "static const int t[] = { 1, 2 };\n"
            "struct s { int a; };\n"
            "int\nreal(void)\n{\n    // }\n    if (1) { return '}'; }\n    return 0;\n}\n")
    assert lf.functions(text) == [("real", 10, 6)]


def test_fails_on_a_long_function_not_listed_and_passes_a_listed_one(tmp_path, capsys):
    lf = s_module()
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "kg_a.c").write_text(s_body(81) + s_body(80))
    lf.EXCEPTIONS = set()
    assert lf.main(["x", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "too long: common/kg_a.c:2: f_81 81 lines (limit 80)" in out
    assert "f_80" not in out
    lf.EXCEPTIONS = {"common/kg_a.c:f_81"}
    assert lf.main(["x", str(tmp_path)]) == 0
    assert "(listed exception)" in capsys.readouterr().out


def test_fails_on_a_stale_exception(tmp_path, capsys):
    lf = s_module()
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "kg_a.c").write_text(s_body(80))
    lf.EXCEPTIONS = {"common/kg_a.c:f_80"}
    assert lf.main(["x", str(tmp_path)]) == 1
    assert "stale exception: common/kg_a.c:f_80" in capsys.readouterr().out
