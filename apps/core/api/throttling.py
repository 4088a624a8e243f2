from rest_framework.throttling import SimpleRateThrottle


class CallerRateThrottle(SimpleRateThrottle):
    """Rate per caller: a service account, a person, or (anonymous) an address."""

    scope = "caller"

    def get_rate(self):
        from django.conf import settings

        rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
        return rates["caller"]

    def get_cache_key(self, request, view):
        if getattr(request, "service_account", None) is not None:
            ident = f"service:{request.service_account.pk}"
        elif request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"anon:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
