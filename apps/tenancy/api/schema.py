from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "apps.tenancy.api.authentication.ApiTokenAuthentication"
    name = "serviceToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A service account's token (`stw_…`), with scopes `<app>:read|write`.",
        }
