"""Sign in/out and the user's API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from studio.accounts.decorators import requires
from studio.accounts.models import ApiToken
from studio.accounts.services import api_token_create, api_token_revoke
from studio.lookups import found_or_404


class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    pass


@require_http_methods(["GET", "POST"])
@requires("studio.view")
def token_list(request):
    new_token = None
    if request.method == "POST":
        try:
            _, new_token = api_token_create(user=request.user, name=request.POST.get("name", ""))
        except ValueError as error:
            messages.error(request, str(error))
    tokens = ApiToken.objects.filter(user=request.user, revoked_at__isnull=True)
    return render(request, "accounts/tokens.html", {"tokens": tokens, "new_token": new_token})


@require_POST
@requires("studio.view")
def token_revoke(request, token_id: int):
    token = found_or_404(ApiToken.objects.get, f"no API token #{token_id}", pk=token_id, user=request.user)
    api_token_revoke(token=token, actor=request.user)
    messages.info(request, f"Revoked token {token.name}.")
    return redirect("accounts:token_list")

