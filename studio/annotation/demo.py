"""The demo's labelling queue: the example requests answered by the demo Harness under their gold
scripts, with one case two labellers disagree on, so the demo shows a dispute that a third labeller
(the annotator, or an operator) settles from *Label next*.

For the local demo only (``manage.py seed_demo``); the seeded labels are marked as the demo's in
each label's note and the queue's description, and a calibration never reads them (a calibration
reads only the committed human set or an export whose labels people wrote: docs/studio.md).
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from studio.annotation.models import AnnotationQueue

DEMO_QUEUE = "demo-labels"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "requests"
SEEDED = "seeded by the demo"


def _example_replies() -> list[tuple[dict, dict]]:
    """(request data, trajectory record) of every example request under its gold script."""
    import json

    from harness import demo_harness_dir, load_dir
    from harness.livestream import Request, demo_catalogue
    from harness.policies import ScriptedPolicy
    from harness.runtime import Agent

    rows = []
    with Agent(
        bundle=load_dir(demo_harness_dir()),
        policy=ScriptedPolicy([]),
        catalogue=demo_catalogue(),
        connect_mcp=False,
    ) as agent:
        for path in sorted(EXAMPLES.glob("*.json")):
            agent.policy = ScriptedPolicy.load(EXAMPLES / "scripts" / path.name)
            data = json.loads(path.read_text(encoding="utf-8"))
            rows.append((data, agent.run(Request.from_dict(data)).to_dict()))
    return rows


@transaction.atomic
def demo_queue_ensure(*, first: User, second: User) -> AnnotationQueue | None:
    """The demo queue, made once: every example reply as an item, the first two labelled by
    ``first`` and ``second`` (agreeing on one, disputing the other). None when it exists."""
    from evaluation.cases import CASE_FORMAT, REQUEST_FIELDS, category_of_intent
    from studio.annotation.services import _add, label_save, queue_create

    if AnnotationQueue.objects.filter(name=DEMO_QUEUE).exists():
        return None
    queue = queue_create(
        name=DEMO_QUEUE,
        actor=first,
        source="the example requests under the demo Harness",
        description="Demo: two labellers disagree on one reply; a third label settles it.",
    )
    items = []
    for request, record in _example_replies():
        case_id = f"example-{request['id']}"
        items.append(
            {
                "case_id": case_id,
                "case": {
                    "format": CASE_FORMAT,
                    "id": case_id,
                    "set": "examples",
                    "category": category_of_intent(request.get("intent")),
                    **{k: request[k] for k in REQUEST_FIELDS if k in request and k != "id"},
                    "gold": {"route": record["route"]},
                },
                "reply": record["reply"],
                "route": record["route"],
                "trajectory": record,
                "origin": "example request (demo)",
                "provenance": {"kind": "demo", "request_id": request["id"]},
            }
        )
    _add(queue, items)
    agreed, disputed = queue.items.order_by("position")[:2]
    for item, (acc_a, eff_a, acc_b, eff_b) in ((agreed, (1, 1, 1, 1)), (disputed, (1, 1, 1, 0.5))):
        for user, acc, eff in ((first, acc_a, eff_a), (second, acc_b, eff_b)):
            label_save(
                item=item,
                labeller=user,
                accuracy=acc,
                effectiveness=eff,
                category=item.case["category"] or "product_qa",
                route=item.route,
                note=SEEDED,
            )
    return queue
