"""The Grafana dashboard Steward ships (deploy/grafana/steward.json): every query names
only metrics Steward exports at /metrics, and Prometheus's own parser (promtool) reads
each one."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "steward.json"
# Grafana's variables, as Grafana would give them to Prometheus.
VARIABLES = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}
SUFFIXES = {
    "histogram": ("_bucket", "_count", "_sum"),
    "counter": ("_total",),
    "summary": ("_count", "_sum"),
}
KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def queries() -> list[tuple[str, str]]:
    """(panel title, PromQL as Prometheus receives it) for every query of every panel."""
    found = []
    for panel in dashboard()["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in VARIABLES.items():
                expr = expr.replace(name, value)
            found.append((panel["title"], expr))
    return found


def metric_names(expr: str) -> set[str]:
    """The metrics a PromQL expression reads: its identifiers, less label matchers,
    grouping labels, ranges, strings, functions and keywords."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for match in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", expr):
        name, call = match.groups()
        if not call and name not in KEYWORDS and not re.fullmatch(r"[eE]\d*", name):
            names.add(name)
    return names


@pytest.fixture
def exported(db, client, settings) -> set[str]:
    """Every series name /metrics answers, read from the running registry."""
    settings.STEWARD_METRICS_TOKEN = ""
    client.get("/healthz")  # a request timed, so the histogram has its series
    body = client.get("/metrics").content.decode()
    names = set()
    for family in text_string_to_metric_families(body):
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
        names.update(sample.name for sample in family.samples)
    return names


def test_the_dashboard_reads_only_what_steward_exports(exported):
    board = dashboard()
    assert {v["name"]: v["type"] for v in board["templating"]["list"]} == {
        "datasource": "datasource"
    }
    for panel in board["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])
    read = set()
    for title, expr in queries():
        names = metric_names(expr)
        assert names, f"{title}: {expr} reads no metric"
        assert names <= exported, f"{title}: {sorted(names - exported)} is not exported"
        read |= names
    # The console's charts' sources are all there: eventing, attention and each domain.
    for prefix in ("steward_outbox", "steward_deliveries", "steward_dead_letters",
                   "steward_attention", "steward_store_bindings", "steward_schema",
                   "steward_governance", "steward_workflow", "steward_schedule"):  # fmt: skip
        assert any(name.startswith(prefix) for name in read), prefix


def test_the_name_reader_tells_metrics_from_the_rest():
    expr = 'topk(5, sum by (le, route) (rate(steward_x_bucket{route!="a b"}[1m]))) > 0.5e3'
    assert metric_names(expr) == {"steward_x_bucket"}
    assert metric_names("time() - (steward_y > 0)") == {"steward_y"}


def test_promtool_parses_every_query(tmp_path):
    promtool = os.environ.get("STEWARD_PROMTOOL") or shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool is needed: run the tests through `make test`", pytrace=False)
    # promtool parses rules without a server: each query becomes one recording rule.
    rules = {
        "groups": [
            {
                "name": "steward-grafana",
                "rules": [
                    {"record": f"steward_grafana:query_{n}", "expr": expr}
                    for n, (_, expr) in enumerate(queries())
                ],
            }
        ]
    }
    path = tmp_path / "grafana-queries.yml"
    path.write_text(yaml.safe_dump(rules))
    checked = subprocess.run(  # noqa: S603
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(queries())} rules found" in checked.stdout


def test_every_panel_has_its_own_id_and_place():
    """Grafana keys a panel by its id, and two panels on the same cells of the grid are
    drawn over each other."""
    panels = dashboard()["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    taken: dict[tuple[int, int], str] = {}
    for panel in panels:
        place = panel["gridPos"]
        for y in range(place["y"], place["y"] + place["h"]):
            for x in range(place["x"], place["x"] + place["w"]):
                assert (x, y) not in taken, (panel["title"], taken[(x, y)])
                taken[(x, y)] = panel["title"]
