"""One shape for every state machine in Steward.

Each stateful model declares its moves once, as a class attribute:

    class StoreBinding(models.Model):
        class Status(models.TextChoices): ...
        TRANSITIONS = Transitions(
            initial=[Status.REQUESTED],
            moves={Status.REQUESTED: {Status.PROVISIONED, Status.FAILED}, ...},
        )

Every status of the model's `status` field has a row, terminal ones an empty set.

`TRANSITIONS.move(row, to, **changes)` is the one way a service moves a row: a
conditional UPDATE on the statuses that may move to `to` (so of two racing moves only
one can win), which raises `InvalidTransition` (409 in the API) when the row was in no
such status, or had moved on meanwhile. `allows`/`targets` answer questions for pages
and forms; they never move anything. `tests/core/test_transitions.py` reads every table
and checks each status is reachable from an initial one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from django.db import models
from django.db.models.expressions import Combinable

from apps.core.errors import InvalidTransition


class Transitions:
    def __init__(
        self,
        *,
        initial: Iterable[str],
        moves: Mapping[str, Iterable[str]],
        field: str = "status",
    ) -> None:
        self.initial = frozenset(initial)
        self.moves = {source: frozenset(targets) for source, targets in moves.items()}
        self.field = field

    @property
    def statuses(self) -> frozenset[str]:
        return frozenset(self.moves)

    def allows(self, source: str, target: str) -> bool:
        return target in self.moves.get(source, ())

    def targets(self, source: str) -> frozenset[str]:
        return self.moves.get(source, frozenset())

    def sources(self, target: str) -> list[str]:
        """The statuses a row may be in to move to `target`."""
        return [source for source, targets in self.moves.items() if target in targets]

    def move(
        self,
        row: models.Model,
        to: str,
        *,
        detail: str | Callable[[str], str] = "",
        code: str = "",
        extra: Mapping | None = None,
        **changes,
    ):
        """Move `row` to `to` with `changes`, in one conditional UPDATE; returns the row
        with the new values set on it.

        Refused (the row is in no status that may move to `to`, or another move won the
        race) it raises InvalidTransition naming the status the row is in now. `detail`
        keeps a domain's own wording where clients rely on it: a text, or a function of
        the status found; `extra` adds members to the refusal's problem body.
        """
        field = self.field
        manager = type(row)._base_manager
        moved = manager.filter(pk=row.pk, **{f"{field}__in": self.sources(to)}).update(
            **{field: to}, **changes
        )
        if not moved:
            found = manager.filter(pk=row.pk).values_list(field, flat=True).first()
            setattr(row, field, found)
            text = detail(found) if callable(detail) else detail
            raise InvalidTransition(
                text or f"This object is {found} and cannot become {to}.",
                code=code or None,
                status=found,
                **(extra or {}),
            )
        setattr(row, field, to)
        computed = []
        for name, value in changes.items():
            if isinstance(value, Combinable):
                computed.append(name)
            else:
                setattr(row, name, value)
        if computed:
            row.refresh_from_db(fields=computed)
        return row

    def check(self, source: str, target: str, *, detail: str = "", code: str = "", **extra) -> None:
        """Raise InvalidTransition unless `source` may move to `target`; `detail` and
        `code` keep a domain's own wording where its clients already rely on it."""
        if not self.allows(source, target):
            raise InvalidTransition(
                detail or f"This object is {source} and cannot become {target}.",
                code=code or None,
                status_from=source,
                status_to=target,
                **extra,
            )
