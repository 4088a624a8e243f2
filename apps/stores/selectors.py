from django.db.models import QuerySet

from apps.stores import services
from apps.stores.models import ResidencyRule, StoreBinding


def binding_list() -> QuerySet[StoreBinding]:
    return StoreBinding.objects.select_related(
        "tenant", "store", "profile", "region"
    ).prefetch_related("history")


def rule_list() -> QuerySet[ResidencyRule]:
    return ResidencyRule.objects.select_related("tenant", "data_class").prefetch_related("regions")


def what_if(*, tenant, store, region, profile=None) -> dict:
    """Both verdicts for a binding nobody has asked for yet, explained (residency
    alone when no profile is named)."""
    from apps.stores import residency

    how = None
    if profile is not None:
        where, how = services.evaluate(
            tenant_id=tenant.pk, store=store, profile=profile, region=region
        )
    else:
        where = residency.evaluate_residency(
            services.rule_views(),
            tenant_id=tenant.pk,
            data_class_id=store.data_class_id,
            region=region,
        )
    return {
        "tenant": tenant.slug,
        "store": store.slug,
        "region": region.slug,
        "profile": profile.slug if profile else None,
        "residency": where.as_dict(),
        "workload": how.as_dict() if how else None,
        "allowed": where.allowed and (how is None or how.allows),
    }
