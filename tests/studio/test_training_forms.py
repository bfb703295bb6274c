"""The ML engineer's run forms, as a user meets them: generated from the config dataclasses, with
the YAML and the exact command beside them; hostile or wrong values refused with 400 naming the
field and nothing saved; a valid form writes the config file the command reads and queues the
job."""

from __future__ import annotations

import dataclasses
import re

import pytest
from studio_testing import client_for, page_text

from harness.config_schema import load_config
from studio.jobs.models import Job
from studio.jobs.registry import JOB_KINDS, queue_of
from studio.training.models import TrainingRun
from training.pipeline_config import PipelineConfig
from training.sft_config import SFTStageConfig

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _every_test_has_a_runs_dir(runs_dir):
    return runs_dir


def _nothing_saved(runs_dir):
    assert not TrainingRun.objects.exists()
    assert not Job.objects.exists()
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_the_sft_form_has_every_config_field_with_its_help_and_default(personas):
    page = page_text(client_for(personas.ml_engineer).get("/training/new/sft/"))
    for f in dataclasses.fields(SFTStageConfig):
        if f.name in ("output_dir", "resume", "progress_dir"):  # the studio owns run folders
            assert f'name="{f.name}"' not in page
            continue
        assert f'name="{f.name}"' in page, f.name
        assert f.metadata["help"] in page, f.name
    assert 'name="max_steps" id="in-max_steps" value="60"' in page
    # the YAML view and the command of the same config
    assert "max_steps: 60" in page and "hsa_variants: 3" in page
    assert "python -m training sft --config TRAINING_RUNS_DIR/run-N/sft.yaml" in page
    # report_to is a field: the trackers people use
    for tracker in ("tensorboard", "mlflow", "wandb", "trackio"):
        assert f'name="report_to" value="{tracker}"' in page


def test_the_pipeline_form_has_a_section_per_stage_without_the_fields_the_pipeline_sets(personas):
    page = page_text(client_for(personas.ml_engineer).get("/training/new/pipeline/"))
    assert (
        'name="sft.hsa_variants"' in page
        and 'name="opd.beta"' in page
        and 'name="rl.num_generations"' in page
    )
    assert 'name="sft.model"' not in page and 'name="rl.report_to"' not in page
    assert "python -m training pipeline --config" in page


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"max_steps": "0"}, "max_steps", "max_steps: must be at least 1, got 0"),
        ({"max_steps": "ten"}, "max_steps", "max_steps: expected an integer, got 'ten'"),
        ({"learning_rate": "-1"}, "learning_rate", "learning_rate: must be above 0, got -1.0"),
        ({"min_accuracy": "0.5"}, "min_accuracy", "min_accuracy: Accuracy is binary; use 0 or 1"),
        (
            {"report_to": ["wandb", "spyware"]},
            "report_to",
            "report_to: spyware is not one of none, tensorboard",
        ),
        ({"report_to": [""]}, "report_to", "report_to: give ['none'] or one or more trackers"),
        (
            {"hsa_dims": ["", "skills", "rm -rf"]},
            "hsa_dims",
            "hsa_dims: rm -rf is not one of skills",
        ),
        (
            {"model": "/etc"},
            "model",
            "model: /etc has no config.json; give an existing checkpoint folder",
        ),
        (
            {"model": "tiny; rm -rf /"},
            "model",
            "model: 'tiny; rm -rf /' is not a model: use local, tiny or",
        ),
        ({"model": "../../../etc/passwd"}, "model", "is not a model"),
        (
            {"harness": "../../etc"},
            "harness",
            "harness: '../../etc' is not a Harness here: use 'demo' or a studio",
        ),
        (
            {"harness": "livestream-avatar@v99"},
            "harness",
            "harness: 'livestream-avatar@v99' is not a Harness here",
        ),
        ({"cases": "relative/cases.jsonl"}, "cases", "cases: give an absolute path on the workers"),
        (
            {"cases": "/no/such/cases.jsonl"},
            "cases",
            "cases: /no/such/cases.jsonl is not an existing file",
        ),
        ({"examples": "/etc"}, "examples", "examples: /etc is not an existing file"),
        (
            {"teacher": "openai:javascript:alert(1)"},
            "teacher",
            "teacher: 'openai:javascript:alert(1)': use 'gold'",
        ),
        ({"max_cases": "5\nmax_steps: 1"}, "max_cases", "max_cases: one line, without line breaks"),
        ({"seed": "1" * 3000}, "seed", "seed: at most 2000 characters"),
    ],
)
def test_a_wrong_field_is_refused_with_400_naming_it_and_nothing_is_saved(
    personas, runs_dir, data, field, message
):
    response = client_for(personas.ml_engineer).post("/training/new/sft/", data)
    assert response.status_code == 400
    page = page_text(response)
    assert message in page
    assert f'data-field="{field}"' in page
    _nothing_saved(runs_dir)


def test_a_pipeline_section_error_names_the_section_field(personas, runs_dir):
    response = client_for(personas.ml_engineer).post(
        "/training/new/pipeline/", {"rl.num_generations": "1", "stages": ["", "sft", "rl"]}
    )
    assert response.status_code == 400
    assert "rl.num_generations: GRPO needs at least 2 rollouts per task" in page_text(response)
    _nothing_saved(runs_dir)


def test_several_wrong_fields_are_all_named_at_once_and_the_form_keeps_what_was_typed(
    personas, runs_dir
):
    response = client_for(personas.ml_engineer).post(
        "/training/new/sft/", {"max_steps": "x", "seed": "y", "max_cases": "7"}
    )
    page = page_text(response)
    assert response.status_code == 400
    assert (
        "max_steps: expected an integer, got 'x'" in page
        and "seed: expected an integer, got 'y'" in page
    )
    assert 'name="max_cases" id="in-max_cases" value="7"' in page
    _nothing_saved(runs_dir)


def test_the_preview_shows_the_yaml_and_command_of_what_is_typed_or_the_errors(personas):
    client = client_for(personas.ml_engineer)
    ok = client.post("/training/new/sft/preview/", {"max_steps": "7", "model": "tiny"})
    assert ok.status_code == 200
    assert "max_steps: 7" in page_text(ok) and "model: tiny" in page_text(ok)
    bad = client.post("/training/new/sft/preview/", {"max_steps": "-3"})
    assert bad.status_code == 400 and "max_steps: must be at least 1, got -3" in page_text(bad)


def test_a_valid_form_writes_the_config_file_the_command_reads_and_queues_a_train_job(
    personas, runs_dir
):
    client = client_for(personas.ml_engineer)
    response = client.post(
        "/training/new/sft/?preset=tiny-smoke",
        {
            "preset": "tiny-smoke",
            "max_steps": "3",
            "report_to": ["", "tensorboard"],
            "title": "my first run",
            "progress_dir": "/etc/studio-progress",  # not a field of the form: ignored
        },
    )
    assert response.status_code == 302
    run = TrainingRun.objects.get()
    assert response["Location"] == f"/training/runs/{run.pk}/"
    assert run.title == "my first run" and run.kind == "sft" and run.preset == "tiny-smoke"
    (step,) = run.steps
    config_file = run.path / "sft.yaml"
    assert step["argv"] == ["training", "sft", "--config", str(config_file)]
    # the file is what `python -m training sft --config FILE` loads: the form's values, the run's
    # folder
    config = load_config(SFTStageConfig, config_file)
    assert (config.model, config.max_steps, config.max_cases, config.hsa_variants) == (
        "tiny",
        3,
        2,
        0,
    )
    assert config.report_to == ["tensorboard"] and config.output_dir == str(run.path / "sft")
    assert config.resume is True and config.progress_dir == ""
    assert len(run.config_digest) == 64 and run.config["sft"]["max_steps"] == 3
    assert run.job.kind == "train_sft" and run.job.status == Job.QUEUED
    page = page_text(client.get(f"/training/runs/{run.pk}/"))
    assert f"python -m training sft --config {config_file}" in page
    assert "max_steps: 3" in page


def test_a_studio_harness_version_is_written_into_the_run_folder(personas, demo_version, runs_dir):
    client_for(personas.ml_engineer).post(
        "/training/new/sft/", {"harness": "livestream-avatar@v1", "model": "tiny"}
    )
    run = TrainingRun.objects.get()
    assert run.harness_version == demo_version
    config = load_config(SFTStageConfig, run.path / "sft.yaml")
    assert config.harness == str(run.path / "harness" / "livestream-avatar")
    assert (run.path / "harness" / "livestream-avatar" / "prompt.yaml").is_file()


def test_the_demo_checkpoint_preset_runs_the_shipped_two_step_recipe_in_one_click(
    personas, runs_dir
):
    client = client_for(personas.ml_engineer)
    page = page_text(client.get("/training/new/sft/?preset=demo-checkpoint"))
    assert "Train the demo checkpoint" in page and "40-50 minutes" in page
    assert "demo-sft-1.yaml" in page and "demo-sft-2.yaml" in page
    response = client.post(
        "/training/new/sft/?preset=demo-checkpoint", {"preset": "demo-checkpoint"}
    )
    assert response.status_code == 302
    run = TrainingRun.objects.get()
    assert [s["name"] for s in run.steps] == ["demo-sft-1", "demo-sft-2"]
    second = load_config(SFTStageConfig, run.path / "demo-sft-2.yaml")
    # the recipe's second step starts from the first one's model and examples, in this run's folder
    assert second.model == str(run.path / "demo-sft-1" / "final")
    assert second.examples == str(run.path / "demo-sft-1" / "examples.jsonl")
    assert (second.learning_rate, second.stop_after_steps) == (2e-4, 20)
    assert run.final_dir == run.path / "demo-sft-2" / "final"
    # nothing was trained here: the job is queued for a training worker
    assert run.job.status == Job.QUEUED


def test_training_and_replay_jobs_go_to_the_train_queue_and_evaluation_stays_on_the_default(
    settings, monkeypatch, personas, runs_dir, django_capture_on_commit_callbacks
):
    from studio.jobs import tasks

    settings.CELERY_TRAIN_QUEUE = "gpu-hosts"
    sent = []
    monkeypatch.setattr(
        tasks.run_job, "apply_async", lambda args, **options: sent.append((args, options))
    )
    monkeypatch.setattr(tasks.run_job, "delay", lambda *args: sent.append((args, {})))
    for kind in ("train_sft", "train_opd", "train_rl", "train_pipeline", "replay_run"):
        assert queue_of(JOB_KINDS[kind]) == "gpu-hosts"
    assert queue_of(JOB_KINDS["checkpoint_eval"]) is None
    client = client_for(personas.ml_engineer)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/training/new/sft/", {"model": "tiny"})
        client.post("/training/new/eval/", {"model": "tiny", "sets": ["", "live_qa"], "cases": "2"})
    sft, evaluation = TrainingRun.objects.order_by("pk")
    assert sent == [((sft.job.pk,), {"queue": "gpu-hosts"}), ((evaluation.job.pk,), {})]


def test_the_evaluation_form_runs_the_training_eval_command_on_the_chosen_sets(personas, runs_dir):
    client = client_for(personas.ml_engineer)
    page = page_text(client.get("/training/new/eval/"))
    for label in ("T1 Live-Stream QA", "T2 Harness-Variant QA", "Prompt Robustness", "IFEval"):
        assert label in page
    bad = client.post("/training/new/eval/", {"sets": ["", "mmlu"], "cases": "0"})
    assert bad.status_code == 400 and "sets: mmlu is not one of live_qa" in page_text(bad)
    none = client.post("/training/new/eval/", {"sets": [""]})
    assert none.status_code == 400 and "sets: choose one or more of live_qa" in page_text(none)
    assert not TrainingRun.objects.exists()
    client.post(
        "/training/new/eval/",
        {"model": "tiny", "sets": ["", "live_qa", "ifeval"], "cases": "3", "ifeval": "2"},
    )
    run = TrainingRun.objects.get()
    assert run.steps[0]["argv"] == [
        "training",
        "eval",
        "--model",
        "tiny",
        "--harness",
        "demo",
        "--sets",
        "live_qa,ifeval",
        "--cases",
        "3",
        "--ifeval",
        "2",
        "--ifeval-base",
        "true",
        "--out",
        str(run.path / "eval"),
    ]  # one flag per EvalConfig field
    assert run.job.kind == "checkpoint_eval"


def test_the_replay_form_checks_the_route_and_case_file(personas, runs_dir, tmp_path):
    client = client_for(personas.ml_engineer)
    bad = client.post(
        "/training/new/replay/",
        {"route": "cpu-tiny && curl evil", "cases": "/nope.jsonl", "concurrency": "1,0"},
    )
    page = page_text(bad)
    assert bad.status_code == 400
    assert "route: 'cpu-tiny && curl evil' is not a route: use one of cpu-engine" in page
    assert "cases: /nope.jsonl is not an existing file" in page
    cases = tmp_path / "replay.jsonl"
    cases.write_text("{}\n")
    zero = client.post(
        "/training/new/replay/", {"route": "cpu-tiny", "cases": str(cases), "concurrency": "1,0"}
    )
    assert zero.status_code == 400 and "concurrency: give levels between 1 and 256" in page_text(
        zero
    )
    assert not TrainingRun.objects.exists()
    client.post(
        "/training/new/replay/",
        {"route": "cpu-engine-tiny", "cases": str(cases), "concurrency": "1, 2", "measured": "2"},
    )
    run = TrainingRun.objects.get()
    argv = run.steps[0]["argv"]
    assert argv[:4] == ["serving", "replay", "--route", "cpu-engine-tiny"]
    assert argv[argv.index("--concurrency") + 1] == "1,2"
    assert argv[-4:] == ["--run-id", "replay", "--out", str(run.path)]  # its record: RUN/replay/
    assert "--seed" not in argv and "--post" not in argv and run.replay_dir == run.path / "replay"
    assert run.config["replay"]["run_id"] == "replay"  # the record says the folder it ran in
    assert run.job.kind == "replay_run"


def test_the_replay_form_sets_the_seed_run_folder_and_deployment_the_cli_takes(
    personas, runs_dir, tmp_path
):
    """The replay form's seed, run_id and post are ReplayConfig's fields (as the CLI's flags are):
    the job's command carries them, its config file holds them, the dashboards read the folder the
    run id names; a bad value is a 400 naming its field, and no run is made."""
    from harness.config_schema import load_config
    from serving.replay_config import ReplayConfig

    client = client_for(personas.ml_engineer)
    cases = tmp_path / "replay.jsonl"
    cases.write_text("{}\n")
    form = client.get("/training/new/replay/").content.decode()
    assert all(f'name="{name}"' in form for name in ("seed", "run_id", "post"))
    post_url = "http://studio:8000/api/v1/deployments/staging/trajectories/"
    base = {"route": "cpu-engine-tiny", "cases": str(cases), "concurrency": "1"}
    for typed, message in (
        ({"seed": "abc"}, "seed: expected an integer, got 'abc' (or leave it empty for none)"),
        ({"run_id": "../x"}, "run_id: '../x' is not a folder name"),
        ({"post": "http://studio:8000/"}, "post: give the deployment's trajectories URL"),
    ):
        bad = client.post("/training/new/replay/", {**base, **typed})
        assert bad.status_code == 400 and message in page_text(bad), typed
    assert not TrainingRun.objects.exists()
    response = client.post(
        "/training/new/replay/", {**base, "seed": "7", "run_id": "nightly", "post": post_url}
    )
    assert response.status_code == 302
    run = TrainingRun.objects.get()
    argv = run.steps[0]["argv"]
    flags = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert (flags["--seed"], flags["--run-id"], flags["--post"]) == ("7", "nightly", post_url)
    assert flags["--out"] == str(run.path) and run.replay_dir == run.path / "nightly"
    config = load_config(ReplayConfig, run.path / run.steps[0]["config_file"])
    assert (config.seed, config.run_id, config.post) == (7, "nightly", post_url)


def test_an_operator_and_a_reviewer_may_read_but_not_start(personas, runs_dir):
    for user in (personas.operator, personas.reviewer):
        client = client_for(user)
        assert client.get("/training/").status_code == 200
        assert client.get("/training/new/sft/").status_code == 403
        assert client.post("/training/new/sft/", {"model": "tiny"}).status_code == 403
        assert 'href="/training/new/' not in page_text(client.get("/training/"))
    assert not TrainingRun.objects.exists()


def test_an_unknown_kind_or_preset_is_404(personas):
    client = client_for(personas.ml_engineer)
    assert client.get("/training/new/mtp-magic/").status_code == 404
    assert client.get("/training/new/sft/?preset=replay-tiny").status_code == 404


def test_the_pipeline_config_file_round_trips_through_the_library_loader(personas, runs_dir):
    client_for(personas.ml_engineer).post(
        "/training/new/pipeline/?preset=tiny-pipeline",
        {"preset": "tiny-pipeline", "stages": ["", "sft", "opd"]},
    )
    run = TrainingRun.objects.get()
    config = load_config(PipelineConfig, run.path / "pipeline.yaml")
    assert config.stages == ["sft", "opd"] and config.sft.max_steps == 2 and config.model == "tiny"
    assert run.final_dir == run.path / "pipeline" / "opd" / "final"
    assert re.search(
        r"python -m training pipeline --config \S+/pipeline\.yaml",
        page_text(client_for(personas.ml_engineer).get(f"/training/runs/{run.pk}/")),
    )


def test_a_multi_gpu_host_runs_the_same_command_through_its_launcher():
    import sys

    from studio.training.runner import command_argv

    argv = ["training", "sft", "--config", "/runs/run-1/sft.yaml"]
    assert command_argv(argv) == [sys.executable, "-m", *argv]
    assert command_argv(argv, launcher="accelerate launch --num_processes 4") == [
        "accelerate",
        "launch",
        "--num_processes",
        "4",
        "-m",
        "training",
        "sft",
        "--config",
        "/runs/run-1/sft.yaml",
    ]


def test_a_run_folder_left_by_another_database_is_neither_reused_nor_removed(personas, runs_dir):
    probe = TrainingRun.objects.create(kind="sft", title="probe", folder="", config_digest="")
    probe_id = probe.pk
    # the next run's id is this one's (SQLite) or the next (PostgreSQL): both folders exist
    probe.delete()
    olds = [runs_dir / f"run-{probe_id}", runs_dir / f"run-{probe_id + 1}"]
    for old in olds:
        old.mkdir(parents=True)
        (old / "keep.txt").write_text("an earlier studio's run")
    client_for(personas.ml_engineer).post("/training/new/sft/", {"model": "tiny"})
    run = TrainingRun.objects.get()
    assert (
        run.path not in olds
        and run.path.name.startswith(f"run-{run.pk}-")
        and (run.path / "sft.yaml").is_file()
    )
    assert all((old / "keep.txt").read_text() == "an earlier studio's run" for old in olds)


def test_a_wrong_path_and_a_wrong_number_are_named_together(personas, runs_dir):
    response = client_for(personas.ml_engineer).post(
        "/training/new/sft/", {"model": "/etc", "max_steps": "0"}
    )
    page = page_text(response)
    assert response.status_code == 400
    assert (
        "model: /etc has no config.json" in page and "max_steps: must be at least 1, got 0" in page
    )
    _nothing_saved(runs_dir)


def test_the_replay_form_starts_with_the_demo_replay_cases_once_the_demo_is_seeded(
    personas, settings, tmp_path
):
    from evaluation.world.sets import SET_FILES
    from studio.evolution.services.seeding import demo_folder

    settings.VAR_DIR = tmp_path / "var"
    mei = client_for(personas.ml_engineer)
    assert (
        'name="cases" id="in-cases" value=""' in mei.get("/training/new/replay/").content.decode()
    )
    cases = demo_folder() / SET_FILES["replay"]
    cases.parent.mkdir(parents=True)
    cases.write_text("{}\n")
    page = mei.get("/training/new/replay/").content.decode()
    assert f'name="cases" id="in-cases" value="{cases}"' in page and f"--cases {cases}" in page
    linked = mei.get(
        "/training/new/replay/?cases=/elsewhere.jsonl"
    ).content.decode()  # a link's value wins
    assert 'id="in-cases" value="/elsewhere.jsonl"' in linked


def test_the_registry_offers_a_replay_and_a_release_of_each_checkpoint_to_whoever_may_start_them(
    personas, settings, tmp_path
):
    from urllib.parse import quote

    from studio.releases.testing import trained_checkpoint

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    run = trained_checkpoint(tmp_path / "runs" / "run-ckpt")
    page = page_text(client_for(personas.ml_engineer).get("/training/checkpoints/"))
    assert f'href="/training/new/replay/?route=local:{quote(str(run.final_dir))}"' in page
    assert f'href="/releases/new/?checkpoint={quote(str(run.final_dir))}"' in page
    replay_form = client_for(personas.ml_engineer).get(
        f"/training/new/replay/?route=local:{run.final_dir}"
    )
    assert f'value="local:{run.final_dir}"' in replay_form.content.decode()
    operator = page_text(client_for(personas.operator).get("/training/checkpoints/"))
    assert "/training/new/replay/" not in operator and "/releases/new/" not in operator


def test_the_ablations_given_checkpoints_are_checked_like_any_model_field(tmp_path):
    from harness.config_schema import fields_of
    from studio.training.configs import value_problem
    from training.ablation import AblationConfig

    (field,) = [f for f in fields_of(AblationConfig) if f.name == "checkpoints"]
    assert value_problem(field, {"hsa_sft": "models/demo-adapter"}, name="checkpoints").startswith(
        "checkpoints.hsa_sft: 'models/demo-adapter' is not a model"
    )
    assert "does not exist" in value_problem(
        field, {"fixed_sft": str(tmp_path / "none")}, name="checkpoints"
    )
    assert value_problem(field, {"hsa_sft": "local"}, name="checkpoints") == ""


def test_a_studio_run_writes_no_progress_folder_whatever_its_config_says(tmp_path):
    """A progress folder is the command line's copy to commit; a studio run, even from a config
    that names one (a recipe file, a pipeline's sections), keeps everything in its own folder."""
    from studio.training.services import _plan_steps

    pipeline = PipelineConfig()
    pipeline = dataclasses.replace(
        pipeline, sft=dataclasses.replace(pipeline.sft, progress_dir="/srv/elsewhere")
    )
    sft = SFTStageConfig(progress_dir="models/demo-adapter-randomized")
    for kind, config in (("pipeline", pipeline), ("sft", sft)):
        ((_, planned),) = _plan_steps(kind=kind, config=config, folder=tmp_path, preset=None)
        assert planned.output_dir.startswith(str(tmp_path))
        sections = [planned] + [
            getattr(planned, f.name)
            for f in dataclasses.fields(planned)
            if dataclasses.is_dataclass(getattr(planned, f.name))
        ]
        assert [getattr(s, "progress_dir", "") for s in sections] == [""] * len(sections)
