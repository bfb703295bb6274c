"""URLs of the audit app."""

from django.urls import path

from studio.audit import views

app_name = "audit"

urlpatterns = [path("", views.audit_log, name="audit_log")]
