"""URLs of the playground."""

from django.urls import path

from studio.playground import views

app_name = "playground"

urlpatterns = [path("", views.playground, name="playground")]
