"""App config for studio.jobs: loads the job kinds of every app and the worker signals."""

from importlib import import_module

from django.apps import AppConfig, apps


class JobsConfig(AppConfig):
    name = "studio.jobs"
    label = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Each app declares its job kinds in <app>/job_kinds.py; importing registers them.
        for config in apps.get_app_configs():
            if config.name.startswith("studio."):
                try:
                    import_module(f"{config.name}.job_kinds")
                except ModuleNotFoundError as error:
                    if error.name != f"{config.name}.job_kinds":
                        raise
        import_module("studio.jobs.receivers")
        # SQLite: a statement that meets another process's write lock waits and runs again
        # (studio/dblocks.py)
        from django.db.backends.signals import connection_created

        from studio.dblocks import install

        connection_created.connect(install, dispatch_uid="studio.dblocks")
