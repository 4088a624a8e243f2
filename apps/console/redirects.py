from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme


def redirect_next(request, default: str = "console:dashboard") -> HttpResponseRedirect:
    """Back to the page a form came from (`next`), if it is on this site; else `default`.

    Checked, so a crafted link cannot send a signed-in person to another site.
    """
    target = request.POST.get("next") or request.GET.get("next", "")
    if not (target and url_has_allowed_host_and_scheme(target, {request.get_host()})):
        target = reverse(default)
    return HttpResponseRedirect(target)
