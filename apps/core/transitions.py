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
such status, or had moved on meanwhile. `move_many` is the same conditional UPDATE for a
batch, each row to its own status, telling which moved; `delete` ends a row in a status
the table declares `deletable`; `from_` narrows either to fewer statuses than the table
allows, for a use case that takes fewer. `allows`/`targets` answer questions for pages
and forms; they never move anything. `tests/core/test_transitions.py` reads every table
and checks each status is reachable from an initial one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from django.db import connections, models, router, transaction
from django.db.models.expressions import Combinable

from apps.core.errors import InvalidTransition


class FollowOn(NamedTuple):
    """A data-modifying statement `move_many` runs over `moved`, the rows it moved: its
    text and parameters, and the fields of those rows it reads."""

    sql: str
    params: Sequence
    reads: Iterable[str]


class Transitions:
    def __init__(
        self,
        *,
        initial: Iterable[str],
        moves: Mapping[str, Iterable[str]],
        deletable: Iterable[str] = (),
        field: str = "status",
    ) -> None:
        self.initial = frozenset(initial)
        self.moves = {source: frozenset(targets) for source, targets in moves.items()}
        # The statuses a row may be deleted in: deletion leaves no row, so it is no move.
        self.deletable = frozenset(deletable)
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
        from_: Iterable[str] | None = None,
        detail: str | Callable[[str], str] = "",
        code: str = "",
        extra: Mapping | Callable[[str], Mapping] | None = None,
        **changes,
    ):
        """Move `row` to `to` with `changes`, in one conditional UPDATE; returns the row
        with the new values set on it.

        `from_` narrows the statuses the row may move from, for a use case that takes
        fewer rows than the table allows: the row must be in one of them and in one the
        table lets move to `to`. Refused (the row is in no such status, or another move
        won the race) it raises InvalidTransition naming the status the row is in now.
        `detail` keeps a domain's own wording where clients rely on it: a text, or a
        function of the status found; `extra` adds members to the refusal's problem
        body, or, as a function of the status found, gives all of them (for a domain
        whose clients know its refusals by other members than `status`).
        """
        field = self.field
        manager = type(row)._base_manager
        moved = manager.filter(pk=row.pk, **{f"{field}__in": self._from(to, from_)}).update(
            **{field: to}, **changes
        )
        if not moved:
            found = manager.filter(pk=row.pk).values_list(field, flat=True).first()
            setattr(row, field, found)
            raise self._refusal(found, f"cannot become {to}", detail, code, extra)
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

    def move_many(
        self,
        model: type[models.Model],
        moves: Sequence[Mapping],
        *,
        by: str,
        where: Mapping | None = None,
        returning: Iterable[str] = (),
        carry: Iterable[str] = (),
        then: FollowOn | None = None,
        **changes,
    ) -> list[models.Model]:
        """Move a batch of rows, each to its own status, in one conditional UPDATE;
        returns the rows that moved.

        Each move names its row by the field `by` (one move a row) and its new status as
        `"to"`; its members named in `carry` are no fields but travel with the row, its
        other members are fields set on that row alone, `changes` fields set on every
        row moved (plain values). A row moves only when it is in a status that may move
        to its `"to"` and its fields equal `where`, so of racing batches and moves each
        row moves once. A batch refuses nothing: the rows that did not move are left as
        they are, and the caller learns which did. Those come back as instances of
        `model` holding their key, `by`, the status and the `returning` fields (the rest
        deferred).

        `then`, a data-modifying statement, runs in the same statement over `moved`: the
        rows as moved, with the columns it reads and the carried members (as jsonb). That
        is how a batch's audit rows are written with it (apps.tenancy.audit.audit_moved),
        never a second trip.
        """
        pairs = [
            (source, target)
            for target in sorted({move["to"] for move in moves})
            for source in self.sources(target)
        ]
        if not pairs:
            return []
        alias = router.db_for_write(model)
        connection = connections[alias]
        meta, quote = model._meta, connection.ops.quote_name
        key, status = meta.get_field(by), meta.get_field(self.field)
        carry = list(carry)
        own = [meta.get_field(name) for name in moves[0] if name not in (by, "to", *carry)]
        # The batch goes as one JSON document (one parameter, encoded in C), read as the
        # rows `d`: `k` the row's key, `s` its new status, `v0`… its own fields.
        record = [(key, by, "k"), (status, "to", "s")]
        record += [(field, field.name, f"v{n}") for n, field in enumerate(own)]
        assign = [f"{quote(field.column)} = d.{name}" for field, _, name in record[1:]]
        carried = [(given, f"c{n}") for n, given in enumerate(carry)]
        params = []  # in the order of their places in the statement
        for name, value in changes.items():
            assign.append(f"{quote(meta.get_field(name).column)} = %s")
            params.append(_prep(meta.get_field(name), value, connection))
        columns, document = _document(moves, record, carried, connection)
        params.append(document)
        conditions = [
            f"t.{quote(key.column)} = d.k",
            self._may_move(moves, pairs, params, f"t.{quote(status.column)}"),
        ]
        for name, value in (where or {}).items():
            conditions.append(f"t.{quote(meta.get_field(name).column)} = %s")
            params.append(_prep(meta.get_field(name), value, connection))
        wanted = {meta.pk.name, by, self.field, *returning}
        back = [field for field in meta.concrete_fields if field.name in wanted]
        # Names from the model's metadata only; every value is a parameter.
        sql = (
            f"UPDATE {quote(meta.db_table)} AS t SET {', '.join(assign)}"  # noqa: S608
            f" FROM jsonb_to_recordset(%s::jsonb) AS d({columns})"
            f" WHERE {' AND '.join(conditions)}"
        )
        if then is None:
            sql += f" RETURNING {', '.join(f't.{quote(field.column)}' for field in back)}"
        else:
            sql = _followed(sql, params, then, model, wanted, back, carried)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            names = [field.attname for field in back]
            return [model.from_db(alias, names, row) for row in cursor.fetchall()]

    def delete(
        self,
        row: models.Model,
        *,
        from_: Iterable[str] | None = None,
        detail: str | Callable[[str], str] = "",
        code: str = "",
        extra: Mapping | Callable[[str], Mapping] | None = None,
    ) -> models.Model:
        """Delete `row` if its status is `deletable` (and one of `from_`, when given, as
        `move` narrows); returns it as it was deleted (its primary key kept, to name it
        in the audit trail and events).

        The row is read locked and deleted in one transaction, so a move racing it either
        waits and then finds it gone, or wins and the deletion is refused; Django deletes
        it, with the rows that cascade from it. Refused, it raises InvalidTransition as
        `move` does.
        """
        field = self.field
        manager = type(row)._base_manager
        # No savepoint of its own: inside a service's transaction it costs none, and the
        # refusal is raised outside it, leaving that transaction usable.
        with transaction.atomic(using=manager.db, savepoint=False):
            current = manager.select_for_update().filter(pk=row.pk).first()
            found = getattr(current, field, None)
            if found in self.deletable and (from_ is None or found in set(from_)):
                pk = current.pk
                current.delete()
                current.pk = pk
                return current
        setattr(row, field, found)
        raise self._refusal(found, "cannot be deleted", detail, code, extra)

    @staticmethod
    def _refusal(found, cannot: str, detail, code, extra) -> InvalidTransition:
        text = detail(found) if callable(detail) else detail
        members = extra(found) if callable(extra) else {"status": found, **(extra or {})}
        return InvalidTransition(
            text or f"This object is {found} and {cannot}.", code=code or None, **members
        )

    def _may_move(self, moves, pairs, params: list, column: str) -> str:
        """The batch's condition on a row's status `column` (its parameters added to
        `params`)."""
        froms = {tuple(self.sources(target)) for target in {move["to"] for move in moves}}
        if len(froms) == 1:  # every move from the same statuses (a workflow's decisions)
            [sources] = froms
            params += sources
            return f"{column} IN ({', '.join(['%s'] * len(sources))})"
        params += [value for pair in pairs for value in pair]
        return f"({column}, d.s) IN (VALUES {', '.join(['(%s, %s)'] * len(pairs))})"

    def _from(self, to: str, narrowed: Iterable[str] | None) -> list[str]:
        sources = self.sources(to)
        if narrowed is None:
            return sources
        narrowed = set(narrowed)
        return [source for source in sources if source in narrowed]


def _document(moves, record, carried, connection) -> tuple[str, str]:
    """The batch as one JSON document, and the columns that read it as rows."""
    columns = ", ".join(
        [f"{name} {field.cast_db_type(connection)}" for field, _, name in record]
        + [f"{name} jsonb" for _, name in carried]
    )
    batch = [
        {name: _as_json(field, move[given], connection) for field, given, name in record}
        | {name: move[given] for given, name in carried}
        for move in moves
    ]
    return columns, json.dumps(batch, default=str)


def _followed(sql: str, params: list, then: FollowOn, model, wanted, back, carried) -> str:
    """`sql`, a batch's UPDATE, as the statement that also runs `then` over the rows it
    moved (`moved`: the columns asked for and the ones `then` reads, and the carried
    members), answering the rows moved as the UPDATE alone would."""
    meta, quote = model._meta, connections[router.db_for_write(model)].ops.quote_name
    read = [field for field in meta.concrete_fields if field.name in {*wanted, *then.reads}]
    moved = ", ".join(
        [f"t.{quote(field.column)}" for field in read]
        + [f"d.{name} AS {quote(given)}" for given, name in carried]
    )
    params += list(then.params)
    # The caller's statement: its own text, over `moved` only.
    return (
        f"WITH moved AS ({sql} RETURNING {moved}), followed AS ({then.sql})"  # noqa: S608
        f" SELECT {', '.join(quote(field.column) for field in back)} FROM moved"
    )


def _prep(field, value, connection):
    return field.get_db_prep_value(value, connection, prepared=False)


def _as_json(field, value, connection):
    # A text goes into the batch's document as it is: the record's column type reads it
    # (and refuses a malformed one) in the database, sparing a thousand moves a round
    # through Python's value types and back to text.
    return value if isinstance(value, str) else _prep(field, value, connection)
