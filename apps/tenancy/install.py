"""What every set-up installs for tenancy (apps.core.setup): regions and data classes."""

from __future__ import annotations

from apps.tenancy.models import DataClass, Region

REGIONS = [
    ("israelcentral", "Israel Central", "IL"),
    ("westeurope", "West Europe", "EU"),
    ("northeurope", "North Europe", "EU"),
    ("eastus", "East US", "US"),
]
DATA_CLASSES = [
    ("public", "Public", "public"),
    ("operational", "Operational metadata", "internal"),
    ("customer-content", "Customer content", "confidential"),
    ("personal", "Personal data", "restricted"),
]


def install_reference_data(report) -> None:
    for slug, name, jurisdiction in REGIONS:
        _, created = Region.objects.get_or_create(
            slug=slug, defaults={"name": name, "jurisdiction": jurisdiction}
        )
        if created:
            report.created.append(f"region {slug}")
    for slug, name, sensitivity in DATA_CLASSES:
        _, created = DataClass.objects.get_or_create(
            slug=slug, defaults={"name": name, "sensitivity": sensitivity}
        )
        if created:
            report.created.append(f"data class {slug}")
