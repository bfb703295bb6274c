"""URLs of the JSON API (v1)."""

from django.urls import path

from studio.api import views

app_name = "api"

urlpatterns = [
    path("harnesses/", views.harness_list, name="harness_list"),
    path("harnesses/<slug:name>/versions/", views.version_list, name="version_list"),
    path("harnesses/<slug:name>/versions/<int:number>/", views.version_files, name="version_files"),
    path("harnesses/<slug:name>/labels/<slug:label>/", views.label_set, name="label_set"),
    path("import/", views.bundle_import, name="bundle_import"),
]
