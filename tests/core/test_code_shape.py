"""Rooms one person can hold (docs/architecture.md, "Inside an app"): no module of
apps/ over 800 lines and no function over 80, migrations excepted. A module that grows
past it becomes a package along the sections it marks."""

import ast
from pathlib import Path

from django.conf import settings

APPS = Path(settings.BASE_DIR) / "apps"
MODULE_LINES = 800
FUNCTION_LINES = 80


def _modules():
    return [path for path in sorted(APPS.rglob("*.py")) if "migrations" not in path.parts]


def test_no_module_is_over_800_lines():
    long = {
        str(path.relative_to(APPS.parent)): lines
        for path in _modules()
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert not long


def test_no_function_is_over_80_lines():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES:
                    where = f"{path.relative_to(APPS.parent)}:{node.lineno}"
                    long.append(f"{where} {node.name} {lines}")
    assert not long
