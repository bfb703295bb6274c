"""Redirects to a target the request names (`next`), kept on this site.

Every studio view that redirects to a target taken from the request goes
through `redirect_to_next`. Django's `url_has_allowed_host_and_scheme` accepts
only a path on this site or a URL of this very host (https-only when the
request came over https), so `https://elsewhere/`, `//elsewhere`,
`/\\elsewhere` and `javascript:` fall back to the view's own page. The
sign-in and sign-out views are Django's, which run the same check.
"""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme


class NextForm(forms.Form):
    next = forms.CharField(required=False)

    def target(self) -> str:
        """The ``next`` asked for, stripped ('' when none, or when it cannot be read)."""
        return self.cleaned_data["next"] if self.is_valid() else ""


def redirect_to_next(request: HttpRequest, *, fallback: str) -> HttpResponseRedirect:
    """Redirect to the request's `next` (POST, then GET) if it stays on this site, else to
    `fallback`."""
    target = NextForm(request.POST).target() or NextForm(request.GET).target()
    on_site = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return HttpResponseRedirect(target if target and on_site else fallback)
