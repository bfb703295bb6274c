"""Pages of the replay dashboards: the list, one replay's dashboard and run record, two side by
side.

Views parse, authorise, call a selector, render. Reading is ``training.view`` (every role); starting
a replay is the training app's form (``training.run``). A compare link with a missing, malformed or
non-replay id answers 400 naming the parameter; an unknown run 404.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from harness.numbers import decimal_int
from studio.accounts.decorators import requires
from studio.replays import selectors
from studio.replays.selectors import NotAReplay, ReplayNotFound
from studio.training.models import TrainingRun


class BadParameter(ValueError):
    pass


@require_GET
@requires("training.view")
def replay_list(request):
    return render(request, "replays/replay_list.html", {"rows": selectors.replay_rows()})


@require_GET
@requires("training.view")
def replay_detail(request, run_id: int):
    try:
        run = selectors.replay_get(run_id=run_id)
    except (ReplayNotFound, NotAReplay) as error:
        raise Http404(f"{error}; the replays are listed at /replay/") from None
    return render(
        request, "replays/replay_detail.html", {"board": selectors.replay_dashboard(run=run)}
    )


def _replay_param(request, name: str) -> TrainingRun:
    raw = request.GET.get(name, "")
    if not raw:
        raise BadParameter(
            f"{name}: missing; give the ids of two replay runs, e.g. /replay/compare/?a=3&b=4"
        )
    run_id = decimal_int(raw, max_digits=12)
    if run_id is None or run_id < 1:
        raise BadParameter(
            f"{name}: {raw[:40]!r} is not a run id; give a whole number, e.g. ?a=3&b=4"
        )
    try:
        return selectors.replay_get(run_id=run_id)
    except NotAReplay as error:
        raise BadParameter(f"{name}: {error}; pick two runs from /replay/") from None
    except ReplayNotFound as error:
        raise Http404(f"{name}: {error}; the replays are listed at /replay/") from None


@require_GET
@requires("training.view")
def replay_compare(request):
    try:
        a, b = _replay_param(request, "a"), _replay_param(request, "b")
    except BadParameter as error:
        return render(
            request,
            "replays/replay_compare.html",
            {"error": str(error), "rows": selectors.replay_rows()},
            status=400,
        )
    return render(
        request,
        "replays/replay_compare.html",
        {"comparison": selectors.replay_compare(a=a, b=b), "rows": selectors.replay_rows()},
    )
