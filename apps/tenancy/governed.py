"""What governance does with tenancy's tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUDIT_REDACTION, AUTHORITATIVE, Coverage

GOVERNED = {
    "tenancy.Membership": Coverage(AUTHORITATIVE, exported=True),
    # Deleted after the audit entries naming them are redacted (they are referenced).
    "tenancy.ServiceAccount": Coverage(AUDIT_REDACTION, exported=True),
    "tenancy.TenantUserObjectPermission": Coverage(AUTHORITATIVE, exported=False),
    "tenancy.TenantGroupObjectPermission": Coverage(AUTHORITATIVE, exported=False),
    "tenancy.AuditEvent": Coverage(AUDIT_REDACTION, exported=True, retention="steward-audit-trail"),
}
EXEMPT: dict[str, str] = {}
