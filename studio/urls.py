"""Root URLs of Harness Studio."""

from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path

from studio.harnesses import views as harness_views


def favicon(request):
    # The icon's URL is looked up per request, not when the URLs load: with hashed names it comes
    # from collectstatic's manifest, which `manage.py check` and migrations must not need.
    return HttpResponsePermanentRedirect(static("studio/favicon.svg"))


urlpatterns = [
    path("", harness_views.home, name="home"),
    # browsers and tools that ask for /favicon.ico without reading a page's <link rel="icon">
    path("favicon.ico", favicon),
    path("accounts/", include("studio.accounts.urls")),
    path("", include("studio.harnesses.urls")),
    path("jobs/", include("studio.jobs.urls")),
    path("endpoints/", include("studio.endpoints.urls")),
    path("mcp-servers/", include("studio.mcpservers.urls")),
    path("playground/", include("studio.playground.urls")),
    path("audit/", include("studio.audit.urls")),
    path("api/v1/", include("studio.api.urls")),
    path("api/v1/deployments/", include("studio.traffic.api_urls")),
    path("evolution/", include("studio.evolution.urls")),
    path("training/", include("studio.training.urls")),
    path("replay/", include("studio.replays.urls")),
    path("releases/", include("studio.releases.urls")),
    path("compatibility/", include("studio.compatibility.urls")),
    path("traffic/", include("studio.traffic.urls")),
    path("annotation/", include("studio.annotation.urls")),
    path("edit-benchmark/", include("studio.editbench.urls")),
]
