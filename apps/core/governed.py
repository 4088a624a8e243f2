"""What governance does with each tenant-owned table, as every app registers it.

A tenant deletion runs in phases — derived stores, then artifacts and authoritative
stores, then audit redaction (audit evidence is redacted, never purged), then the
release of the tenant's store bindings — and an export includes what is marked
exported. Each app lists its own models with a tenant foreign key in its
`apps/<app>/governed.py`: `GOVERNED` (label → Coverage: the phase, whether it is
exported, and the retention rule that expires its rows) and `EXEMPT` (label → the
reason governance leaves it alone). `tests/governance` fails for a tenant model that is
in neither, so a new table cannot escape deletion and export by being forgotten.

This module is in core so that every app, the ground included, can register without
importing governance; governance reads the collected lists (apps.governance.coverage).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

from apps.core.hooks import app_modules

DERIVED = "derived"  # projections, indexes, queues, caches: rebuilt or worthless alone
AUTHORITATIVE = "authoritative"  # the tenant's records: control, runtime, model, integration
AUDIT_REDACTION = "audit_redaction"  # evidence: personal data replaced, entries kept
# The tenant's store bindings: released last, with the subscription, once every owner
# has finished with the stores they reach.
RELEASE = "release"
PHASES = (DERIVED, AUTHORITATIVE, AUDIT_REDACTION, RELEASE)


@dataclass(frozen=True)
class Coverage:
    phase: str
    exported: bool
    # The data class of Steward's own whose retention rules expire rows before any
    # deletion order (apps.governance.retention.sweeper.OWN_TABLES); "" for none.
    retention: str = ""


@dataclass(frozen=True)
class Registrations:
    governed: dict[str, Coverage]
    exempt: dict[str, str]


@functools.cache
def registrations() -> Registrations:
    """Every installed app's `GOVERNED` and `EXEMPT`, merged. A label two apps list is
    refused: which of the two would apply?"""
    governed: dict[str, Coverage] = {}
    exempt: dict[str, str] = {}
    for module in app_modules("governed"):
        for collected, listed in (
            (governed, getattr(module, "GOVERNED", {})),
            (exempt, getattr(module, "EXEMPT", {})),
        ):
            twice = sorted(set(collected) & set(listed))
            if twice:
                raise ImproperlyConfigured(f"{module.__name__} lists {twice} a second time.")
            collected.update(listed)
    return Registrations(governed=governed, exempt=exempt)


def governed_tables() -> dict[str, Coverage]:
    """Model label → what governance does with its rows, for every app."""
    return registrations().governed


def exempt_tables() -> dict[str, str]:
    """Model label → why governance leaves its rows alone, for every app."""
    return registrations().exempt
