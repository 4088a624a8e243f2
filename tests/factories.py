import uuid

import factory
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.tenancy import services
from apps.tenancy.models import Region, Tenant, User


class RegionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Region
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"region-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    jurisdiction = "EU"


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    home_region = factory.SubFactory(RegionFactory)
    created_at = factory.LazyFunction(timezone.now)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user-{n}")
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery")

    @factory.post_generation
    def saved(obj, create, extracted, **kwargs):
        if create:
            obj.save()


def member(tenant, *, role="member", **user_fields) -> User:
    user = UserFactory(**user_fields)
    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant, user=user, role=role)
    return user


def service_token(*, tenant=None, scopes=("tenancy:read", "tenancy:write"), name=None, **kwargs):
    account = services.service_account_create(
        actor=SYSTEM_ACTOR, name=name or f"svc-{uuid.uuid4().hex[:8]}", tenant=tenant
    )
    return services.api_token_issue(
        actor=SYSTEM_ACTOR, service_account=account, name="test", scopes=list(scopes), **kwargs
    )
