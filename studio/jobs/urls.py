"""URLs of the jobs app."""

from django.urls import path

from studio.jobs import views

app_name = "jobs"

urlpatterns = [
    path("", views.job_list, name="job_list"),
    path("worker-check/", views.worker_check_start, name="worker_check_start"),
    path("<int:job_id>/", views.job_detail, name="job_detail"),
    path("<int:job_id>/status/", views.job_status, name="job_status"),
    path("<int:job_id>/cancel/", views.job_cancel_view, name="job_cancel"),
]
