"""A calibrated judge for tests that need the release gates to read judged figures as trusted: a
small queue of generated world replies that a test labeller labels by hand (the label values a test
chooses: the world's, or flipped), exported as a label set, and the real calibration
(``calibration.calibration_run``) of the studio's evaluation judge against it."""

from __future__ import annotations

import json

from studio.annotation.models import JudgeCalibration


def calibrated_judge(
    *, actor=None, cases: int = 12, disagree: bool = False, name: str = ""
) -> JudgeCalibration:
    """The evaluation judge calibrated on ``cases`` labelled world replies; ``disagree`` flips every
    Accuracy label the labeller gives, so the judge lands below any sensible agreement."""
    from django.contrib.auth.models import User

    from studio.accounts.roles import REVIEWER
    from studio.accounts.services import user_create
    from studio.annotation.calibration import calibration_run
    from studio.annotation.services import label_save, queue_add_dataset, queue_create, queue_export
    from studio.evolution.services.datasets import dataset_import
    from studio.evolution.services.runs import EVAL_JUDGE
    from studio.traffic.testing import world_cases

    labeller = actor or User.objects.filter(username="test-labeller").first()
    if labeller is None:
        labeller = user_create(
            username="test-labeller", password="correct horse battery staple", roles=[REVIEWER]
        )
    name = name or ("labels-flipped" if disagree else "labels-world")
    rows, catalogue = world_cases(cases)
    source = dataset_import(
        name=f"{name}-replies",
        text="\n".join(json.dumps(c) for c in rows),
        source="replies.jsonl",
        actor=labeller,
        catalogue=catalogue.to_dict(),
    )
    queue = queue_create(name=name, actor=labeller)
    queue_add_dataset(queue=queue, dataset=source, actor=labeller)
    for item, case in zip(queue.items.order_by("position"), rows, strict=True):
        human = case["candidates"][0]["human"]
        label_save(
            item=item,
            labeller=labeller,
            accuracy=1 - human["accuracy"] if disagree else human["accuracy"],
            effectiveness=human["effectiveness"],
            category=case["category"],
            route=case["gold"]["route"],
        )
    export = queue_export(queue=queue, actor=labeller)
    return calibration_run(judge=EVAL_JUDGE, dataset_id=export.dataset_id, actor_id=labeller.pk)
