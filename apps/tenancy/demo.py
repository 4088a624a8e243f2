"""Tenancy's demo data (apps.core.setup, `steward_setup --demo`): the demo operator,
tenants acme and globex, a person in each, and a platform service with a token."""

from __future__ import annotations

from apps.core.context import SYSTEM_ACTOR
from apps.core.setup import DEMO_OPERATOR
from apps.tenancy import selectors, services
from apps.tenancy.models import Membership, Tenant

DEMO_PASSWORD = "steward-demo"  # noqa: S105 - documented demo login, development only


def install_demo_data(report) -> list[str]:
    actor = SYSTEM_ACTOR
    regions = selectors.region_list()
    # the demo operator may also use the Django admin
    services.user_create(
        actor=actor,
        username=DEMO_OPERATOR,
        password=DEMO_PASSWORD,
        is_operator=True,
        is_superuser=True,
    )
    acme = services.tenant_create(
        actor=actor,
        slug="acme",
        name="Acme Corporation",
        home_region=regions.get(slug="israelcentral"),
        environment_class=Tenant.EnvironmentClass.PRODUCTION,
    )
    globex = services.tenant_create(
        actor=actor,
        slug="globex",
        name="Globex",
        home_region=regions.get(slug="westeurope"),
    )
    admin = services.user_create(actor=actor, username="acme-admin", password=DEMO_PASSWORD)
    services.membership_set(actor=actor, tenant=acme, user=admin, role=Membership.Role.ADMIN)
    member = services.user_create(actor=actor, username="globex-member", password=DEMO_PASSWORD)
    services.membership_set(actor=actor, tenant=globex, user=member, role=Membership.Role.MEMBER)
    account = services.service_account_create(
        actor=actor, name="release-pipeline", description="Demo platform service"
    )
    issued = services.api_token_issue(
        actor=actor,
        service_account=account,
        name="demo",
        scopes=["tenancy:read", "tenancy:write"],
    )
    report.secrets.append(f"demo service token (release-pipeline): {issued.secret}")
    return ["tenants acme and globex", "three people", "one service"]


def demo_tenant(slug: str = "acme") -> Tenant:
    """A tenant the demo created, for the other apps' demo data."""
    return selectors.tenants_visible_to(platform_wide=True, tenant=None).get(slug=slug)
