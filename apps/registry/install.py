"""What every set-up installs for the registry (apps.core.setup): Steward's own topics,
before anything emits on them."""

from __future__ import annotations

from apps.registry.catalog import install_steward_topics


def install_topics(report) -> None:
    report.created += [f"topic {name}" for name in install_steward_topics()]
