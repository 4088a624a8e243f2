from rest_framework import authentication, exceptions


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Bearer tokens of service accounts, resolved once by ApiTokenMiddleware.

    DRF's `request.user` stays anonymous for a service: the caller is
    `request.service_account`, and `request.auth` is its token.
    """

    def authenticate(self, request):
        django_request = request._request
        error = getattr(django_request, "api_auth_error", None)
        if error is not None:
            raise exceptions.AuthenticationFailed(error.detail, code=error.code)
        token = getattr(django_request, "api_token", None)
        if token is None:
            return None
        from django.contrib.auth.models import AnonymousUser

        return (AnonymousUser(), token)

    def authenticate_header(self, request):
        return 'Bearer realm="steward"'
