"""What governance does with the registry's tenant-owned tables (apps.core.governed):
none. Topics, services, schemas and subscriptions are the platform's, not a tenant's."""

from apps.core.governed import Coverage

GOVERNED: dict[str, Coverage] = {}
EXEMPT: dict[str, str] = {}
