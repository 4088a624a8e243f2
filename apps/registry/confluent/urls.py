"""URLs of the Confluent-compatible Schema Registry API (apps.registry.confluent)."""

from django.urls import path, re_path, register_converter

from apps.registry.confluent import levels
from apps.registry.confluent import views as confluent

app_name = "schema-registry"


class SubjectName:
    """A subject in a path: it may hold a `/` (sent as %2F, which the server decodes
    before routing), as the reference registry accepts it, but no `/versions` segment,
    so that a path under a subject's versions that the API does not have stays unknown."""

    regex = r"[^/]+(?:/(?!versions(?:/|$))[^/]+)*"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(SubjectName, "subject")

SUBJECT = "subjects/<subject:subject>"
VERSION = f"{SUBJECT}/versions/<str:version>"
SCHEMA = "schemas/ids/<int:schema_id>"
GUID = "schemas/guids/<str:guid>"

urlpatterns = [
    path("", confluent.Root.as_view(), name="root"),
    path("subjects", confluent.Subjects.as_view(), name="subjects"),
    path(f"{VERSION}/schema", confluent.SubjectVersionSchema.as_view(), name="version-schema"),
    path(f"{VERSION}/referencedby", confluent.ReferencedBy.as_view(), name="referencedby"),
    path(VERSION, confluent.SubjectVersion.as_view(), name="version"),
    path(f"{SUBJECT}/versions", confluent.SubjectVersions.as_view(), name="versions"),
    path(f"{SUBJECT}/metadata", confluent.LatestWithMetadata.as_view(), name="metadata"),
    path(SUBJECT, confluent.Subject.as_view(), name="subject"),
    path("schemas", confluent.SchemaList.as_view(), name="schemas"),
    path("schemas/types", confluent.SchemaTypes.as_view(), name="schema-types"),
    path(SCHEMA, confluent.SchemaById.as_view(), name="schema"),
    path(f"{SCHEMA}/schema", confluent.SchemaByIdText.as_view(), name="schema-text"),
    path(f"{SCHEMA}/subjects", confluent.SchemaByIdSubjects.as_view(), name="schema-subjects"),
    path(f"{SCHEMA}/versions", confluent.SchemaByIdVersions.as_view(), name="schema-versions"),
    path(f"{GUID}/ids", confluent.SchemaByGuidIds.as_view(), name="schema-guid-ids"),
    path(GUID, confluent.SchemaByGuid.as_view(), name="schema-guid"),
    path(
        f"compatibility/{VERSION}",
        confluent.Compatibility.as_view(),
        name="compatibility",
    ),
    path(
        f"compatibility/{SUBJECT}/versions",
        confluent.CompatibilityAll.as_view(),
        name="compatibility-all",
    ),
    path("config", levels.Config.as_view(), name="config"),
    path("config/<subject:subject>", levels.SubjectConfig.as_view(), name="subject-config"),
    path("mode", levels.Mode.as_view(), name="mode"),
    path("mode/<subject:subject>", levels.SubjectMode.as_view(), name="subject-mode"),
    path("contexts", confluent.Contexts.as_view(), name="contexts"),
    path("v1/metadata/id", confluent.ClusterId.as_view(), name="metadata-id"),
    path("v1/metadata/version", confluent.ServerVersion.as_view(), name="metadata-version"),
    path(
        "v1/metadata/deployment", confluent.ServerDeployment.as_view(), name="metadata-deployment"
    ),
    re_path(r"^.*$", confluent.UnknownPath.as_view(), name="unknown"),
]
