from datetime import timedelta

from django.conf import settings
from django.db.models import BooleanField, Case, QuerySet, Value, When
from django.utils import timezone

from apps.compute.models import ComputeBatch, WorkflowBatchLink


def batch_list() -> QuerySet[ComputeBatch]:
    return ComputeBatch.objects.select_related("tenant")


def link_list() -> QuerySet[WorkflowBatchLink]:
    """Outstanding links, each marked stale when older than the configured age."""
    stale_before = timezone.now() - timedelta(minutes=settings.STEWARD_COMPUTE_STALE_LINK_MINUTES)
    return WorkflowBatchLink.objects.select_related("tenant").annotate(
        is_stale=Case(
            When(created_at__lt=stale_before, then=Value(True)),
            default=Value(False),
            output_field=BooleanField(),
        )
    )
