"""docs/ERROR-FAMILIES.md is generated from supervisor/rules/gpu-errors.json by
scripts/gen-error-docs.py: the checked-in page must be what the generator
writes now, the check must catch a stale page, and the page must tell a user
what each family is, what kguard does, what to check first and what not to
conclude, without referring to documents users do not have."""
import json
import os
import subprocess
import sys
from pathlib import Path

SOURCE = Path(os.environ.get("KGUARD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
GEN = SOURCE / "scripts" / "gen-error-docs.py"
PAGE = SOURCE / "docs" / "ERROR-FAMILIES.md"
RULES = SOURCE / "supervisor" / "rules" / "gpu-errors.json"
PYTHON = os.environ.get("KGUARD_PYTHON", sys.executable)


def _gen(*args):
    return subprocess.run([PYTHON, str(GEN), *args], capture_output=True, text=True,
                          timeout=30)


def test_checked_in_page_is_current():
    out = _gen("--check", str(PAGE))
    assert out.returncode == 0, ("docs/ERROR-FAMILIES.md is out of date; run "
                                 "scripts/gen-error-docs.py -o docs/ERROR-FAMILIES.md\n"
                                 + out.stderr)


def test_check_catches_a_stale_page(tmp_path):
    stale = tmp_path / "page.md"
    stale.write_text(PAGE.read_text().replace("Check first", "Check", 1))
    out = _gen("--check", str(stale))
    assert out.returncode == 1
    assert "out of date" in out.stderr
    # And a rule table that changed makes the real page stale.
    table = json.loads(RULES.read_text())
    table["families"][0]["first_check"] += " (changed)"
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(table))
    out = _gen("--rules", str(rules), "--check", str(PAGE))
    assert out.returncode == 1


def test_bad_rule_table_is_an_error(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text('{"families": [], "rules": [{"id": "x", "family": "nope"}]}')
    out = _gen("--rules", str(rules))
    assert out.returncode == 2 and "unknown family" in out.stderr


def test_page_covers_every_family_and_rule():
    table = json.loads(RULES.read_text())
    page = PAGE.read_text()
    for fam in table["families"]:
        section = page.split(f'<a id="{fam["id"]}"></a>', 1)[1].split("<a id=", 1)[0]
        assert f"## {fam['title']}" in section
        assert fam["first_check"] in section
        assert fam["avoid"] in section
        action = "**Restart and restore.**" if fam["sticky"] else "**Advice only.**"
        assert action in section, fam["id"]
        for rule in table["rules"]:
            if rule["family"] == fam["id"]:
                assert f"`{rule['id']}`" in section
                for text in rule["match"].get("any", []) + rule["match"].get("all", []):
                    assert text in section, (rule["id"], text)


def test_user_docs_name_no_missing_document():
    docs = [SOURCE / "README.md", SOURCE / "examples" / "README.md", PAGE]
    docs += sorted((SOURCE / "docs").glob("*.md"))
    for doc in docs:
        text = doc.read_text().lower()
        for phrase in ("seed guide", "the seed's", "seed's example"):
            assert phrase not in text, f"{doc.name} mentions {phrase!r}"
    readme = (SOURCE / "README.md").read_text()
    assert "docs/ERROR-FAMILIES.md" in readme


def test_python_docstrings_and_examples_name_no_missing_document():
    # help(kguard...) and the examples are read by users, who do not have the guide.
    files = sorted((SOURCE / "python" / "kguard").glob("*.py"))
    files += sorted(p for p in (SOURCE / "examples").rglob("*") if p.is_file())
    for f in files:
        text = f.read_text(errors="replace").lower()
        for phrase in ("seed guide", "the seed's", "seed's example", "the seed"):
            assert phrase not in text, f"{f.relative_to(SOURCE)} mentions {phrase!r}"
