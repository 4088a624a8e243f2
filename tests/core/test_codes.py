"""Every stable error code is declared once, in its app's enumeration (apps.core.codes),
with a meaning, and docs/errors.md lists them as the code declares them."""

import ast
from pathlib import Path

from django.conf import settings

from apps.core.codes import all_codes, document

APPS = Path(settings.BASE_DIR) / "apps"


def test_docs_errors_md_is_current():
    written = (Path(settings.BASE_DIR) / "docs" / "errors.md").read_text()
    assert written == document(), "docs/errors.md is out of date: run `make errors`"


def test_every_code_has_a_meaning_and_one_owner():
    seen = {}
    for label, codes in all_codes().items():
        for code in codes:
            assert code.meaning.strip(), f"{label}: {code.value} has no meaning"
            assert code.value not in seen, f"{code.value} is declared by {seen[code.value]} too"
            seen[code.value] = label
    assert len(seen) > 50


def _literal_codes(tree: ast.AST):
    """Where a code is written as a string: `code="..."` given to a call, or a class's
    `code = "..."`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "code":
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                yield node.value.lineno, node.value.value
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign)
                    and [getattr(t, "id", None) for t in statement.targets] == ["code"]
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)
                ):
                    yield statement.lineno, statement.value.value


def test_no_code_is_written_as_a_literal_outside_the_enumerations():
    found = []
    for path in sorted(APPS.rglob("*.py")):
        if "migrations" in path.parts or path.name == "codes.py":
            continue
        for line, value in _literal_codes(ast.parse(path.read_text())):
            found.append(f"{path.relative_to(APPS.parent)}:{line} {value!r}")
    assert not found, "codes written as literals:\n" + "\n".join(found)
