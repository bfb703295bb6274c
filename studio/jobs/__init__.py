"""Jobs: long work run by a Celery worker, with persisted status, progress, log and a lease."""
