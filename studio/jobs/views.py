"""Job list, job page (polled by htmx while the job runs) and the worker check."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from studio.accounts.decorators import requires
from studio.jobs import selectors
from studio.jobs.models import Job
from studio.jobs.presentation import job_presented
from studio.jobs.registry import JOB_KINDS
from studio.jobs.services import (
    JobNotCancellable,
    job_can_cancel,
    job_cancel,
    job_create,
)
from studio.lookups import found_or_404


def _job_context(job: Job, user=None) -> dict:
    """The job plus how its kind presents a result (e.g. a trajectory for playground runs)."""
    kind = JOB_KINDS.get(job.kind)
    context = {
        "job": job,
        "result_template": None,
        "can_cancel": job_can_cancel(job=job, user=user),
        "wait": selectors.job_wait(job=job),
        "silent_s": selectors.job_silent_s(job=job),
        # the error's class and a short message for everyone, tracebacks and bodies for admins
        "details_hidden": job_presented(job, user=user)["details_hidden"],
    }
    if kind is not None and kind.result_template and job.result is not None:
        context["result_template"] = kind.result_template
        context.update(kind.present(job.result) if kind.present else {"result": job.result})
    return context


def _job(job_id: int) -> Job:
    job = found_or_404(selectors.job_get, f"no job #{job_id}", job_id=job_id)
    job.title = selectors.job_title(job=job)  # counted now, as the page beside it counts
    return job


@require_GET
@requires("studio.view")
def job_list(request):
    kind = request.GET.get("kind") or None
    return render(
        request,
        "jobs/job_list.html",
        {
            "jobs": selectors.jobs_titled(jobs=selectors.job_list(kind=kind)),
            "kinds": JOB_KINDS,
            "kind": kind,
        },
    )


@require_GET
@requires("studio.view")
def job_detail(request, job_id: int):
    job = _job(job_id)
    return render(request, "jobs/job_detail.html", _job_context(job, request.user))


@require_GET
@requires("studio.view")
def job_status(request, job_id: int):
    """The part of the job page that htmx polls; polling stops once the job has ended."""
    job = _job(job_id)
    # the title too (out of band): a title that counts progress changes while the job runs and when
    # it ends
    response = render(
        request, "jobs/_job_status.html", {**_job_context(job, request.user), "oob_title": True}
    )
    if not job.is_active:
        response["HX-Trigger"] = "job-finished"
    return response


@require_POST
@requires("studio.view")
def job_cancel_view(request, job_id: int):
    """Cancel a job (its starter or an admin); 403 with the reason for anyone else or an ended
    job."""
    job = _job(job_id)
    try:
        job_cancel(job=job, actor=request.user)
    except JobNotCancellable as error:
        response = render(
            request,
            "jobs/job_detail.html",
            {**_job_context(job, request.user), "cancel_error": str(error)},
            status=403,
        )
        return response
    return redirect("jobs:job_detail", job_id=job.pk)


@require_POST
@requires("job.diagnose")
def worker_check_start(request):
    from django.http import HttpResponseBadRequest

    from studio.forms import form_problem
    from studio.jobs.forms import WorkerCheckForm

    form = WorkerCheckForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(form_problem(form), content_type="text/plain; charset=utf-8")
    seconds = form.cleaned_data["seconds"]
    job = job_create(
        kind="worker_check",
        title=f"Worker check ({seconds:g} s)",
        params={"seconds": seconds},
        created_by=request.user,
    )
    return redirect("jobs:job_detail", job_id=job.pk)
