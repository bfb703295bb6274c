"""Root URLs of Harness Studio."""

from django.templatetags.static import static
from django.urls import include, path
from django.views.generic.base import RedirectView

from studio.harnesses import views as harness_views

urlpatterns = [
    path("", harness_views.home, name="home"),
    # browsers and tools that ask for /favicon.ico without reading a page's <link rel="icon">
    path("favicon.ico", RedirectView.as_view(url=static("studio/favicon.svg"), permanent=True)),
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
