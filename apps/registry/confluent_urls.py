"""URLs of the Confluent-compatible Schema Registry API (see apps.registry.confluent)."""

from django.urls import path

from apps.registry import confluent

app_name = "schema-registry"

urlpatterns = [
    path("subjects", confluent.Subjects.as_view(), name="subjects"),
    path("subjects/<str:subject>", confluent.Subject.as_view(), name="subject"),
    path("subjects/<str:subject>/versions", confluent.SubjectVersions.as_view(), name="versions"),
    path(
        "subjects/<str:subject>/versions/<str:version>",
        confluent.SubjectVersion.as_view(),
        name="version",
    ),
    path("schemas/ids/<int:schema_id>", confluent.SchemaById.as_view(), name="schema"),
    path(
        "compatibility/subjects/<str:subject>/versions/<str:version>",
        confluent.Compatibility.as_view(),
        name="compatibility",
    ),
    path("config", confluent.Config.as_view(), name="config"),
    path("config/<str:subject>", confluent.SubjectConfig.as_view(), name="subject-config"),
]
