"""The refusals of the registry's versions that the Schema Registry API answers with the
reference registry's own codes (`registry_code`, mapped by apps.registry.confluent)."""

from __future__ import annotations

from apps.core.errors import Conflict, DomainError
from apps.registry.codes import RegistryCode


class RegistryRefused(DomainError):
    """A Schema Registry API operation its mode refuses, or an import whose id is another
        schema's (42205, as the reference answers both), or whose version exists already with
        another id (42207); an invalid schema or reference (42201), an invalid version
    (42202); a subject an operator alone may name before it exists (40401)."""

    status = 422
    code = RegistryCode.REGISTRY_REFUSED

    def __init__(self, detail: str, *, registry_code: int = 42205, status: int = 422):
        super().__init__(detail)
        self.registry_code, self.status = registry_code, status


class DeletionRefused(DomainError):
    """A deletion the reference registry's rules refuse; `registry_code` is its code there
    (40401/40402 not found, 40404/40406 already soft-deleted, 40405/40407 not soft-deleted
    first, 42206 still read or referenced)."""

    status = 422
    code = RegistryCode.DELETION_REFUSED

    def __init__(self, detail: str, *, registry_code: int, status: int = 422):
        super().__init__(detail)
        self.registry_code, self.status = registry_code, status


class NotRegistered(Conflict):
    """A schema the Schema Registry API was asked to register and did not publish: it
    waits for acknowledgement, or may not replace the version waiting. The reference
    registry's 40901 (an incompatible schema), which clients branch on."""

    code = RegistryCode.NOT_REGISTERED
    registry_code = 40901


class Incompatible(NotRegistered):
    """A breaking schema the Schema Registry API was asked to register on a subject where
    no consumer must acknowledge it: refused, as the reference registry refuses it, with
    the differences its level does not allow and what they were judged against
    (judged_against)."""

    def __init__(
        self,
        subject: str,
        breaking: list[dict],
        *,
        old_version: int | None = None,
        old_schema: str | None = None,
        compatibility: str | None = None,
        validate_fields: bool = False,
    ):
        details = [
            f"{{errorType:'{d['kind']}', description:'{d['path']}: {d.get('message', '')}'}}"
            for d in breaking
        ]
        details += judged_against(old_version, old_schema, compatibility, validate_fields)
        super().__init__(
            "Schema being registered is incompatible with an earlier schema for subject "
            f'"{subject[:300]}", details: [{", ".join(details)}]'
        )


# the reference logs at most this much of the old schema in its messages
OLD_SCHEMA_SHOWN = 10240


def judged_against(
    old_version: int | None,
    old_schema: str | None,
    compatibility: str | None,
    validate_fields: bool = False,
) -> list[str]:
    """What an incompatible schema was judged against, as the reference's messages end
    (a 409's details, the verbose compatibility test's messages; tools read them): the
    version it fails and that version's schema, then the settings it was judged under."""
    entries = []
    if old_version is not None:
        entries.append(f"{{oldSchemaVersion: {old_version}}}")
    if old_schema is not None:
        if len(old_schema) > OLD_SCHEMA_SHOWN:
            entries.append(f"{{oldSchema: <truncated> '{old_schema[:OLD_SCHEMA_SHOWN]}...'}}")
        else:
            entries.append(f"{{oldSchema: '{old_schema}'}}")
    if compatibility is not None:
        flag = "true" if validate_fields else "false"
        entries.append(f"{{validateFields: '{flag}', compatibility: '{compatibility}'}}")
    return entries


class ReferenceRefused(DomainError):
    """A release's schema reference (ModelSync) that is malformed or names no live
    version of a subject of the schema's type: the whole release is refused (400), before
    anything is written. The Schema Registry API answers the same reference 42201, as the
    reference registry does."""

    status = 400
    code = RegistryCode.INVALID_SCHEMA_REFERENCE


class ContractRefused(DomainError):
    """A release's data contract (ModelSync's `metadata` or `ruleSet`) of a shape the
    Schema Registry API refuses (42201 there): the whole release is refused (400), before
    anything is written."""

    status = 400
    code = RegistryCode.INVALID_DATA_CONTRACT
