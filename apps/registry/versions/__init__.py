"""Schema versions: the compatibility gate, consumers' readers and acknowledgements,
deletion, compatibility levels and Schema Registry modes, and the news they announce.

One module per concern; callers outside the package (the API, the console, the
Schema Registry API, attention, set-up) use the services named here:

- `gate`: one subject's decision on a schema (unchanged, published, waiting, superseding);
- `sync`: a release's ModelSync, the gate for each topic it names;
- `register`: the Schema Registry API's register and import, one call per request;
- `submitted`: a schema as that API receives it, with its references;
- `readers`, `declarations`: consumers' reader schemas, judged and declared;
- `acknowledgements`: a waiting version's way to publication, or withdrawal;
- `deletion`, `modes`: deleting versions; levels and modes;
- `announcements`: the news of it all, to observers and to each consumer.
"""

from apps.registry.versions.acknowledgements import (
    acknowledge,
    override,
    remind,
    require_may_override,
    withdraw_acknowledgement,
    withdraw_version,
)
from apps.registry.versions.declarations import reader_declare, reader_service
from apps.registry.versions.deletion import subject_delete, version_delete
from apps.registry.versions.errors import DeletionRefused, NotRegistered, RegistryRefused
from apps.registry.versions.modes import (
    mode_implies,
    set_contract_config,
    set_mode,
    set_policy,
    set_registry_default,
    set_registry_mode,
    subject_mode_clear,
    subject_mode_set,
    subject_topic,
)
from apps.registry.versions.readers import LEVEL_PASSES, NO_READER
from apps.registry.versions.register import schema_register, subject_register, version_import
from apps.registry.versions.sync import model_sync

__all__ = [
    "LEVEL_PASSES",
    "NO_READER",
    "DeletionRefused",
    "NotRegistered",
    "RegistryRefused",
    "acknowledge",
    "mode_implies",
    "model_sync",
    "override",
    "reader_declare",
    "reader_service",
    "remind",
    "require_may_override",
    "schema_register",
    "set_mode",
    "set_policy",
    "set_registry_default",
    "set_contract_config",
    "set_registry_mode",
    "subject_delete",
    "subject_mode_clear",
    "subject_mode_set",
    "subject_topic",
    "subject_register",
    "version_delete",
    "version_import",
    "withdraw_acknowledgement",
    "withdraw_version",
]
