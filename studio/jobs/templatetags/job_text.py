"""``{% load job_text %}``: a job's error and log as the person reading the page may see them
(studio.jobs.presentation): ``{% job_error job %}`` and ``{% job_log job %}``, for every page that
shows a job's error or log tail."""

from __future__ import annotations

from django import template

from studio.jobs.presentation import job_presented

register = template.Library()


def _shown(context, job) -> dict:
    request = context.get("request")
    return job_presented(job, user=getattr(request, "user", None))


@register.simple_tag(takes_context=True)
def job_error(context, job) -> str:
    """The job's error: as stored for an admin, its class and a short message for anyone else."""
    return _shown(context, job)["error_shown"]


@register.simple_tag(takes_context=True)
def job_log(context, job) -> str:
    """The job's log tail: as stored for an admin, without tracebacks and bodies for anyone else."""
    return _shown(context, job)["log_shown"]
