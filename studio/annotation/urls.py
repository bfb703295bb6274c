"""URLs of the annotation pages: one name per action."""

from django.urls import path

from studio.annotation import views

app_name = "annotation"

urlpatterns = [
    path("", views.queue_list, name="queue_list"),
    path("add/traffic/", views.queue_add_traffic_view, name="queue_add_traffic"),
    path("add/", views.queue_add_source_view, name="queue_add_source"),
    path("calibrations/", views.calibration_list, name="calibration_list"),
    path("calibrations/start/", views.calibration_start_view, name="calibration_start"),
    path("calibrations/<int:calibration_id>/", views.calibration_detail, name="calibration_detail"),
    path(
        "calibrations/<int:calibration_id>/retire/",
        views.calibration_retire_view,
        name="calibration_retire",
    ),
    path(
        "q/<slug:name>/exports/<int:version>/calibration.jsonl",
        views.export_download,
        name="export_download",
    ),
    path("q/<slug:name>/", views.queue_detail, name="queue_detail"),
    path("q/<slug:name>/next/", views.queue_next, name="queue_next"),
    path("q/<slug:name>/items/<int:position>/", views.item_label, name="item_label"),
    path("q/<slug:name>/export/", views.queue_export_view, name="queue_export"),
]
