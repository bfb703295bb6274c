"""Sign in/out and the user's API tokens."""

from __future__ import annotations

import time

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from studio.accounts.decorators import requires
from studio.accounts.forms import ApiTokenForm, SignInAttemptForm
from studio.accounts.selectors import api_token_get, api_token_list
from studio.accounts.services import (
    api_token_create,
    api_token_revoke,
    sign_in_delay,
    sign_in_failed,
    sign_in_refusal,
    sign_in_succeeded,
)
from studio.forms import valid_data
from studio.lookups import found_or_404


class LoginView(auth_views.LoginView):
    """Django's sign-in, throttled: past the failures allowed for the name the form answers 429
    without checking the password (studio.accounts.services.sign_in_refusal); past the failures
    allowed from the client's address it waits first (sign_in_delay)."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        username = SignInAttemptForm(request.POST).attempted_username()
        refusal = sign_in_refusal(request=request, username=username)
        if refusal:
            form = self.get_form_class()(request, initial={"username": username})
            return self.render_to_response(
                self.get_context_data(form=form, throttled=refusal), status=429
            )
        delay = sign_in_delay(request=request)
        if delay:
            time.sleep(delay)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        sign_in_failed(
            request=self.request, username=SignInAttemptForm(self.request.POST).attempted_username()
        )
        return super().form_invalid(form)

    def form_valid(self, form):
        sign_in_succeeded(username=form.get_user().get_username())
        return super().form_valid(form)


class LogoutView(auth_views.LogoutView):
    pass


@require_http_methods(["GET", "POST"])
@requires("studio.view")
def token_list(request):
    new_token = None
    if request.method == "POST":
        try:
            name = valid_data(ApiTokenForm(request.POST), error=ValueError)["name"]
            _, new_token = api_token_create(user=request.user, name=name)
        except ValueError as error:
            messages.error(request, str(error))
    tokens = api_token_list(user=request.user)
    return render(request, "accounts/tokens.html", {"tokens": tokens, "new_token": new_token})


@require_POST
@requires("studio.view")
def token_revoke(request, token_id: int):
    token = found_or_404(
        api_token_get, f"no API token #{token_id}", token_id=token_id, user=request.user
    )
    api_token_revoke(token=token, actor=request.user)
    messages.info(request, f"Revoked token {token.name}.")
    return redirect("accounts:token_list")
