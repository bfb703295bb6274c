"""URLs of the releases app (/releases/)."""

from django.urls import path

from studio.releases import views

app_name = "releases"

urlpatterns = [
    path("", views.release_list, name="release_list"),
    path("new/", views.release_new, name="release_new"),
    path("signing-key.pem", views.release_signing_key, name="release_signing_key"),
    path("<int:release_id>/", views.release_detail, name="release_detail"),
    path("<int:release_id>/decide/", views.release_decide_view, name="release_decide"),
    path("<int:release_id>/gates/", views.release_refresh, name="release_refresh"),
    path("<int:release_id>/manifest.json", views.release_manifest, name="release_manifest"),
]
