"""One shape for every state machine in Steward.

Each stateful model declares its moves once, as a class attribute:

    class StoreBinding(models.Model):
        class Status(models.TextChoices): ...
        TRANSITIONS = Transitions(
            initial=[Status.REQUESTED],
            moves={Status.REQUESTED: {Status.PROVISIONED, Status.FAILED}, ...},
        )

Every status of the model's `status` field has a row, terminal ones an empty set, and
a service checks the table before it moves a row (ideally with a conditional UPDATE on
`sources(target)`, so two racing moves cannot both win). An illegal move raises
`InvalidTransition`, which the API answers with 409. `tests/core/test_transitions.py`
reads every table and checks each status is reachable from an initial one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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
