"""The registry's stable error codes (apps.core.codes): the problem body's `code` of
every refusal the registry's Steward API and console give.

The Confluent-compatible API answers in the reference registry's own shape, with its
numeric `error_code`s (apps.registry.confluent.errors); they are the reference's, not
Steward's, and are not listed here.
"""

from apps.core.codes import Codes


class RegistryCode(Codes):
    SERVICE_REQUIRED = "service_required", "Name the service the call speaks for."
    NOT_A_CONSUMER = (
        "not_a_consumer",
        "The service does not consume the topic, so it neither acknowledges nor declares a reader.",
    )
    RELEASE_CHANGED = (
        "release_changed",
        "The release was synced (or declared its reader) with a different model before.",
    )
    SYNC_CONFLICT = (
        "sync_conflict",
        "Another sync changed the topic at the same moment; send the release again.",
    )
    INVALID_SCHEMA_TYPE = "invalid_schema_type", "The schema type is not one the registry keeps."
    INVALID_READER_SCHEMA = "invalid_reader_schema", "The declared reader schema is invalid."
    INVALID_SCHEMA_REFERENCE = (
        "invalid_schema_reference",
        "A release's schema reference is malformed, or names no live version of a subject "
        "of the schema's type.",
    )
    INVALID_DATA_CONTRACT = (
        "invalid_data_contract",
        "A release's data contract (metadata or ruleSet) is malformed: a property that is "
        "not a string, a rule without a name, two rules of one name, an unknown kind or mode.",
    )
    UNKNOWN_TOPIC = (
        "unknown_topic",
        "The topic named (by a release's reader, or by an event emitted) is not in the catalog.",
    )
    DELETION_REFUSED = (
        "deletion_refused",
        "The version or subject cannot be deleted: not found, not soft-deleted first, "
        "already soft-deleted, or still read.",
    )
    REGISTRY_REFUSED = (
        "registry_refused",
        "A Schema Registry operation its mode refuses, or an import whose id or version is "
        "another schema's.",
    )
    NOT_REGISTERED = (
        "not_registered",
        "A schema the Schema Registry API registers waits for acknowledgement, or a level "
        "lowered since the waiting version was judged lets it not replace that version.",
    )
    WEBHOOK_INCOMPLETE = (
        "webhook_incomplete",
        "An active webhook subscription needs an endpoint and a secret reference.",
    )
    SECRET_UNAVAILABLE = (
        "secret_unavailable",
        "The webhook subscription's secret reference resolves to no secret.",
    )
    ENDPOINT_NOT_ALLOWED = (
        "endpoint_not_allowed",
        "A webhook endpoint Steward does not call: not http(s), with user:password@, a "
        "metadata service, or an address that is not public (unless an operator allowed it).",
    )
    READ_ONLY_FIELD = "read_only_field", "Only endpoint, secret_ref and is_active change."
    EMPTY_RELEASE = (
        "empty",
        "A release names the topics it produces or the readers it declares.",
    )
