"""URLs of the held-out edit benchmark page."""

from django.urls import path

from studio.editbench import views

app_name = "editbench"

urlpatterns = [
    path("", views.benchmark_view, name="benchmark"),
    path("start/", views.benchmark_start, name="benchmark_start"),
]
