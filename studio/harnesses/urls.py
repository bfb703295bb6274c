"""URLs of the harnesses app: one name per action."""

from django.urls import path

from studio.harnesses import editor_views, views

app_name = "harnesses"

urlpatterns = [
    path("import/", views.harness_import, name="harness_import"),
    path("drafts/", editor_views.draft_list_view, name="draft_list"),
    path("h/<slug:name>/", views.harness_detail, name="harness_detail"),
    path("h/<slug:name>/history/", views.harness_history, name="harness_history"),
    path("h/<slug:name>/v/<int:number>/", views.version_detail, name="version_detail"),
    path("h/<slug:name>/v/<int:number>/export.zip", views.version_export, name="version_export"),
    path("h/<slug:name>/diff/", views.version_diff_view, name="version_diff"),
    path("h/<slug:name>/diff/summary/", views.version_diff_summary, name="version_diff_summary"),
    path("h/<slug:name>/labels/move/", views.label_move_view, name="label_move"),
    path(
        "h/<slug:name>/labels/<slug:label>/rollback/",
        views.label_rollback_view,
        name="label_rollback",
    ),
    path("h/<slug:name>/drafts/new/", editor_views.draft_create_view, name="draft_create"),
    path("drafts/<int:draft_id>/", editor_views.draft_edit, name="draft_edit"),
    path("drafts/<int:draft_id>/save/", editor_views.draft_save, name="draft_save"),
    path("drafts/<int:draft_id>/preview/", editor_views.draft_preview, name="draft_preview"),
    path(
        "drafts/<int:draft_id>/skills/add/",
        editor_views.draft_skill_add_view,
        name="draft_skill_add",
    ),
    path(
        "drafts/<int:draft_id>/skills/import/",
        editor_views.draft_skill_import_view,
        name="draft_skill_import",
    ),
    path(
        "drafts/<int:draft_id>/hooks/add/", editor_views.draft_hook_add_view, name="draft_hook_add"
    ),
    path(
        "drafts/<int:draft_id>/files/delete/",
        editor_views.draft_file_delete_view,
        name="draft_file_delete",
    ),
    path("drafts/<int:draft_id>/changes/", editor_views.draft_changes, name="draft_changes"),
    path("drafts/<int:draft_id>/commit/", editor_views.draft_commit_view, name="draft_commit"),
    path("drafts/<int:draft_id>/discard/", editor_views.draft_discard_view, name="draft_discard"),
    path("conflicts/<int:conflict_id>/", editor_views.conflict_detail, name="conflict_detail"),
]
