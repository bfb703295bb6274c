"""Pages of the ML engineer: runs, the generated run forms, a run's page and dashboard, the
checkpoint registry.

Views parse, authorise, call a service or selector, render. A form that does not validate comes
back with status 400, every wrong field named beside its input, and nothing saved.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from harness.checkpoints import is_checkpoint
from harness.config_schema import config_text
from harness.numbers import decimal_int
from serving.metrics import fallback_warning
from studio.accounts.decorators import requires
from studio.endpoints.services import EndpointError
from studio.lookups import found_or_404
from studio.training import configs, selectors
from studio.training.live import live_context
from studio.training.models import TrainingRun
from studio.training.presets import PRESETS, preset_config, presets_for, recipe_steps
from studio.training.results import evaluation_rows
from studio.training.series import DEFAULT_POINTS
from studio.training.services import (
    RunRefused,
    checkpoint_endpoint_create,
    command_text,
    run_resume,
    run_start,
    step_argv,
)

KIND_LABELS = dict(TrainingRun.KINDS)
# Fields a link may fill in (the registry's "Evaluate" and "Train from here"): checked on submit
# like any other.
PREFILL = ("model", "route", "cases", "harness", "init_head")


def _run_or_404(run_id: int) -> TrainingRun:
    return found_or_404(selectors.run_get, f"no training run #{run_id}", run_id=run_id)


def _kind_or_404(kind: str) -> str:
    if kind not in configs.CONFIG_CLASSES:
        raise Http404(f"no run kind {kind!r}; kinds: {', '.join(configs.CONFIG_CLASSES)}")
    return kind


@require_GET
@requires("training.view")
def run_list(request):
    kind = request.GET.get("kind") or None
    if kind is not None and kind not in KIND_LABELS:
        kind = None
    return render(
        request,
        "training/run_list.html",
        {
            "runs": selectors.run_list(kind=kind),
            "kind": kind,
            "kinds": TrainingRun.KINDS,
            "presets": list(PRESETS.values()),
        },
    )


def _preset(request, kind: str):
    name = (
        configs.PresetChoiceForm(request.GET).chosen()
        or configs.PresetChoiceForm(request.POST).chosen()
    )
    if not name:
        return None
    preset = PRESETS.get(name)
    if preset is None or preset.kind != kind:
        raise Http404(
            f"no {kind} preset {name!r}; presets: {', '.join(p.name for p in presets_for(kind))}"
        )
    return preset


def _base_config(kind: str, preset, request):
    cls = configs.CONFIG_CLASSES[kind]
    config = preset_config(preset, cls) if preset is not None and not preset.is_recipe else cls()
    import dataclasses

    if kind == TrainingRun.REPLAY and not config.cases:
        from studio.evolution.services.seeding import demo_set_file

        demo_cases = demo_set_file(
            key="replay"
        )  # the demo's 110 replay cases, once seed_evolution_demo wrote them
        if demo_cases is not None:
            config = dataclasses.replace(config, cases=str(demo_cases))
    prefill = {
        name: request.GET[name] for name in PREFILL if name in request.GET and hasattr(config, name)
    }
    if prefill:  # shown in the form only; checked when the form is sent
        config = dataclasses.replace(
            config, **{k: v[: configs.MAX_VALUE_CHARS] for k, v in prefill.items()}
        )
    return config


def _preview(kind: str, config, preset) -> dict:
    """The YAML file(s) and the exact command(s) the run will be started with."""
    from pathlib import Path

    folder = Path("TRAINING_RUNS_DIR") / "run-N"
    if preset is not None and preset.is_recipe:
        steps = recipe_steps(preset, configs.CONFIG_CLASSES[kind], folder=folder)
    elif kind in TrainingRun.TRAINING_KINDS or kind == TrainingRun.ABLATION:
        import dataclasses

        steps = [(kind, dataclasses.replace(config, output_dir=str(folder / kind)))]
    else:
        steps = [(kind, config)]
    out = []
    for name, step in steps:
        file = folder / f"{name}.yaml"
        argv, _ = step_argv(kind=kind, config=step, folder=folder, config_file=file)
        out.append(
            {
                "name": name,
                "file": str(file),
                "yaml": config_text(step, suffix=file.suffix),
                "command": command_text(argv=argv),
            }
        )
    estimate = None
    if kind == TrainingRun.REPLAY and config is not None:
        from studio.replays.selectors import replay_time_estimate

        estimate = replay_time_estimate(
            route=config.route,
            concurrency=list(config.concurrency),
            warmup=config.warmup,
            measured=config.measured,
            request_timeout=config.request_timeout,
        )
    return {"preview_steps": out, "replay_estimate": estimate}


def _run_form(kind: str, preset, base, data=None) -> configs.RunForm:
    return configs.RunForm(
        kind, data, base=base, with_config=not (preset is not None and preset.is_recipe)
    )


def _form_context(kind: str, *, preset, config, form: configs.RunForm) -> dict:
    from studio.harnesses import selectors as harness_selectors

    return {
        "kind": kind,
        "kind_label": KIND_LABELS[kind],
        "preset": preset,
        "presets": presets_for(kind),
        "sections": form.sections(),
        "errors": form.problems,
        **_preview(kind, config, preset),
        "checkpoints": selectors.checkpoint_choices(),
        "harness_versions": harness_selectors.version_choices(limit=50),
    }


@require_http_methods(["GET", "POST"])
@requires("training.run")
def run_new(request, kind: str):
    kind = _kind_or_404(kind)
    preset = _preset(request, kind)
    base = _base_config(kind, preset, request)
    if request.method == "GET":
        return render(
            request,
            "training/run_new.html",
            _form_context(kind, preset=preset, config=base, form=_run_form(kind, preset, base)),
        )
    form = _run_form(kind, preset, base, request.POST)
    if not form.is_valid():
        return render(
            request,
            "training/run_new.html",
            _form_context(kind, preset=preset, config=base, form=form),
            status=400,
        )
    run = run_start(
        kind=kind,
        config=form.config,
        actor=request.user,
        preset=preset,
        title=form.cleaned_data["title"],
    )
    return redirect("training:run_detail", run_id=run.pk)


@require_POST
@requires("training.run")
def run_preview(request, kind: str):
    """The form's YAML and command for what is typed now (htmx), or the errors naming the fields."""
    kind = _kind_or_404(kind)
    preset = _preset(request, kind)
    base = _base_config(kind, preset, request)
    form = _run_form(kind, preset, base, request.POST)
    if not form.is_valid():
        return render(request, "training/_preview.html", {"errors": form.problems}, status=400)
    return render(request, "training/_preview.html", _preview(kind, form.config or base, preset))


@require_GET
@requires("training.view")
def run_detail(request, run_id: int):
    from studio.jobs.services import job_can_cancel

    run = _run_or_404(run_id)
    steps = []
    for step in run.steps:
        file = run.path / step["config_file"]
        steps.append(
            {
                **step,
                "command": command_text(argv=step["argv"]),
                "file": str(file),
                "yaml": file.read_text(encoding="utf-8") if file.is_file() else "",
            }
        )
    job = run.job
    can_resume = (
        run.kind != TrainingRun.REPLAY and job is not None and job.status in ("failed", "cancelled")
    )
    summary = run.summary or selectors.read_folder_summary(run=run)
    return render(
        request,
        "training/run_detail.html",
        {
            "run": run,
            "steps": steps,
            "job": job,
            **live_context(run),
            "can_cancel": job is not None and job_can_cancel(job=job, user=request.user),
            "can_resume": can_resume,
            "summary": summary,
            "eval_rows": evaluation_rows((summary or {}).get("evaluation")),
            "replay_warning": fallback_warning(
                ((summary or {}).get("replay") or {}).get("levels") or {}
            ),
            "has_model": run.is_policy and is_checkpoint(run.final_dir),
            "ablation": selectors.ablation_dashboard(run=run)
            if run.kind == TrainingRun.ABLATION
            else None,
            "eval_labels": configs.EVAL_SET_LABELS,
        },
    )


@require_GET
@requires("training.view")
def run_live_view(request, run_id: int):
    """The run page's live panel (status, progress, time left, log); once the job has ended the page
    reloads itself whole, so its result shows."""
    run = _run_or_404(run_id)
    response = render(request, "training/_run_live.html", {**live_context(run), "oob_log": True})
    if run.job is None or not run.job.is_active:
        response["HX-Refresh"] = "true"
    return response


@require_GET
@requires("training.view")
def run_metrics(request, run_id: int):
    """The dashboard's data: curves downsampled on the server to ``points`` per curve (50-2000)."""
    run = _run_or_404(run_id)
    raw = request.GET.get("points", str(DEFAULT_POINTS))
    points = decimal_int(raw, max_digits=4)
    if points is None or not 50 <= points <= 2000:
        return JsonResponse(
            {"error": f"points: a whole number between 50 and 2000, got {raw[:40]!r}"}, status=400
        )
    return HttpResponse(
        selectors.run_dashboard_json(run=run, max_points=points), content_type="application/json"
    )


@require_POST
@requires("training.run")
def run_resume_view(request, run_id: int):
    run = _run_or_404(run_id)
    try:
        run_resume(run=run, actor=request.user)
    except RunRefused as refusal:
        messages.error(request, str(refusal))
        return redirect("training:run_detail", run_id=run.pk)
    messages.success(
        request, f"training run #{run.pk} resumes from its last checkpoint (attempt {run.attempts})"
    )
    return redirect("training:run_detail", run_id=run.pk)


@require_GET
@requires("training.view")
def checkpoint_list(request):
    return render(
        request,
        "training/checkpoint_list.html",
        {"entries": selectors.checkpoint_registry(), "eval_labels": configs.EVAL_SET_LABELS},
    )


def _checkpoint_param(request, name: str) -> TrainingRun | str:
    """The run named by GET parameter ``name`` if it has a checkpoint, else the message saying why
    not."""
    raw = request.GET.get(name, "")
    valid = "give the id of a training run whose checkpoint is in the registry (run #N)"
    run_id = decimal_int(raw, max_digits=12)
    if run_id is None or run_id < 1:
        return f"{name}: {valid}, got {raw[:40]!r}"
    try:
        run = selectors.run_get(run_id=run_id)
    except TrainingRun.DoesNotExist:
        return f"{name}: there is no training run #{raw}; {valid}"
    if not run.is_policy or not is_checkpoint(run.final_dir):
        return (
            f"{name}: training run #{raw} ({run.get_kind_display()}) "
            f"has no trained checkpoint; {valid}"
        )
    return run


@require_GET
@requires("training.view")
def checkpoint_compare(request):
    """Two checkpoints side by side: per evaluation set both scores and B - A with its
    paired-bootstrap interval."""
    a, b = _checkpoint_param(request, "a"), _checkpoint_param(request, "b")
    problems = [p for p in (a, b) if isinstance(p, str)]
    if not problems and a.pk == b.pk:
        problems = ["b: the same run as a; choose two different checkpoints"]
    if problems:
        return render(
            request,
            "training/checkpoint_compare.html",
            {"problems": problems, "entries": selectors.checkpoint_registry(with_heads=False)},
            status=400,
        )
    return render(
        request,
        "training/checkpoint_compare.html",
        {
            "a": a,
            "b": b,
            "rows": selectors.checkpoint_compare(a=a, b=b),
            "resamples": selectors.COMPARE_RESAMPLES,
            "entries": selectors.checkpoint_registry(with_heads=False),
        },
    )


@require_POST
@requires("endpoint.manage")
def checkpoint_endpoint(request, run_id: int):
    """Make a model endpoint of the run's final model, then open the endpoint list."""
    from django.urls import reverse
    from django.utils import timezone

    run = _run_or_404(run_id)
    asked_at = timezone.now()
    try:
        endpoint = checkpoint_endpoint_create(run=run, actor=request.user)
    except (RunRefused, EndpointError) as refusal:
        messages.error(request, str(refusal))
        return redirect("training:checkpoint_list")
    if endpoint.created_at >= asked_at:
        messages.success(
            request,
            f"Made endpoint {endpoint.name}: the local route serving training run "
            f"#{run.pk}'s model ({endpoint.model}). Try it in the playground, or ask for its "
            "compatibility cells.",
        )
    else:
        messages.info(
            request,
            f"Endpoint {endpoint.name} already serves training run #{run.pk}'s model "
            f"({endpoint.model}); nothing new was made.",
        )
    return redirect(
        f"{reverse('endpoints:endpoint_list')}?made={endpoint.pk}#endpoint-{endpoint.pk}"
    )
