"""Reads of the compatibility matrix: the current set, a model's fingerprint, cells, the matrix, the
alarm.

Every figure is the evaluation core's (``evaluation.compatibility``: ``cell_figures`` over the run's
result rows, ``cell_change`` for the paired bootstrap against the production pair); this module
only finds the rows. A cell's figures are kept on the row once its run has succeeded (they depend
on nothing else); a change against a reference cell is kept under the reference's id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from studio.compatibility.models import Cell, LabelServer, SetDataset
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Dataset, EvalRun
from studio.harnesses.models import Harness, HarnessVersion, Label

SERVED_LABELS = (Label.PRODUCTION, Label.STAGING)


@dataclass(frozen=True)
class CompatSet:
    """The compatibility set drawn from the source dataset as the settings say now."""

    source: Dataset
    cases: list[dict]
    version: str

    @property
    def name(self) -> str:
        """The name the studio gives the set's dataset (another is chosen when someone took it)."""
        return f"compatibility-{self.version}"

    @property
    def dataset(self) -> Dataset | None:
        """The dataset the studio imported for this set: found by its id (``SetDataset``), never by
        its name, which anyone who can import a dataset could have taken first."""
        row = SetDataset.objects.select_related("dataset").filter(set_version=self.version).first()
        return row.dataset if row is not None else None


_SETS: dict[tuple, CompatSet] = {}


def compat_source() -> Dataset | None:
    return Dataset.objects.filter(name=settings.COMPATIBILITY_SOURCE_DATASET).first()


def compat_set() -> CompatSet | None:
    """The current compatibility set (None when the source dataset is not imported)."""
    from evaluation.compatibility import build_set, set_version

    source = compat_source()
    if source is None:
        return None
    key = (source.pk, source.case_count, source.created_at, settings.COMPATIBILITY_CASES)
    if key not in _SETS:
        cases = build_set([c.data for c in source.cases.all()], size=settings.COMPATIBILITY_CASES)
        _SETS.clear()
        _SETS[key] = CompatSet(source=source, cases=cases, version=set_version(cases))
    return _SETS[key]


def model_fingerprint(*, endpoint: ModelEndpoint) -> str:
    """What the endpoint's model is, so a cell is reused only for the same model: a checkpoint's
    fingerprint (``serving.endpoint.checkpoint_info``: weights, config), a script file's sha256, or
    for a server the studio cannot look into, its URL and model name. ValueError when it cannot be
    read."""
    if endpoint.route == ModelEndpoint.SCRIPTED:
        try:
            data = Path(endpoint.script_path).read_bytes()
        except OSError as error:
            raise ValueError(
                f"endpoint {endpoint.name}: its script {endpoint.script_path} cannot be read "
                f"({error.strerror})"
            ) from None
        return "script:" + hashlib.sha256(data).hexdigest()[:48]
    if endpoint.route == ModelEndpoint.OPENAI:
        return (
            "server:"
            + hashlib.sha256(f"{endpoint.base_url} {endpoint.model}".encode()).hexdigest()[:48]
        )
    from harness.checkpoints import CheckpointError, fingerprint, resolve_checkpoint

    target = (
        endpoint.model
        if endpoint.route == ModelEndpoint.LOCAL and endpoint.model
        else endpoint.route
    )
    try:
        return fingerprint(resolve_checkpoint(target))
    except (CheckpointError, OSError) as error:
        raise ValueError(f"endpoint {endpoint.name}: {error}") from None


def label_servers(*, harness: Harness) -> dict[str, ModelEndpoint]:
    return {
        s.label: s.endpoint
        for s in LabelServer.objects.filter(harness=harness).select_related("endpoint")
    }


def labelled_versions(*, harness: Harness) -> dict[str, HarnessVersion]:
    return {
        label.name: label.version
        for label in Label.objects.filter(harness=harness).select_related("version")
    }


def cell_find(
    *,
    endpoint: ModelEndpoint,
    version: HarnessVersion,
    set_version: str,
    fingerprint: str | None = None,
) -> Cell | None:
    try:
        fingerprint = fingerprint or model_fingerprint(endpoint=endpoint)
    except ValueError:
        return None
    return (
        Cell.objects.select_related("run", "endpoint", "version__harness")
        .filter(
            model_fingerprint=fingerprint, version_digest=version.digest, set_version=set_version
        )
        .first()
    )


def cell_rows(*, cell: Cell) -> list[dict[str, Any]]:
    """The cell's results as the evaluation core's rows."""
    from studio.evolution.rows import result_row

    return [result_row(r) for r in cell.run.results.all()]


def cell_done(*, cell: Cell | None) -> bool:
    return cell is not None and cell.run.status == EvalRun.SUCCEEDED


def _run_key(cell: Cell) -> str:
    """What a cell's figures were computed from, as a cache key: its run's id and times with the
    cell's identity (a database rebuilt from scratch reuses ids; the cache on Redis outlives it)."""
    run = cell.run
    finished = run.finished_at.timestamp() if run.finished_at else 0
    stamp = f"{run.pk}@{run.created_at.timestamp():.6f}-{finished:.6f}"
    return hashlib.sha256(
        f"{stamp}|{cell.model_fingerprint}|{cell.version_digest}|{cell.set_version}".encode()
    ).hexdigest()[:32]


def cell_figures(*, cell: Cell) -> dict[str, Any]:
    """``evaluation.compatibility.cell_figures`` of a finished cell: as its row keeps them (stored
    when its run scored, ``services.cell_figures_store``), else computed once into the studio's
    cache; {} before it finished. A selector only reads: it never writes the row."""
    if cell.figures or not cell_done(cell=cell):
        return cell.figures
    from django.core.cache import cache

    from evaluation.compatibility import cell_figures as figures_of

    return cache.get_or_set(
        f"compatibility:figures:{_run_key(cell)}",
        lambda: figures_of(cell_rows(cell=cell)),
        timeout=None,
    )


def cell_avg(*, cell: Cell) -> float:
    """The cell's AVG on its base cases (percent), from its figures."""
    return float((cell_figures(cell=cell).get("avg") or {}).get("mean") or 0.0)


def cell_change(*, cell: Cell, reference: Cell) -> dict[str, Any] | None:
    """``evaluation.compatibility.cell_change`` of ``cell`` against ``reference`` (both finished,
    same set), computed once per pair of runs into the studio's cache; None when either is
    unfinished."""
    if (
        not (cell_done(cell=cell) and cell_done(cell=reference))
        or cell.set_version != reference.set_version
    ):
        return None
    from django.core.cache import cache

    from evaluation.compatibility import cell_change as change_of

    return cache.get_or_set(
        f"compatibility:change:{_run_key(cell)}:{_run_key(reference)}",
        lambda: change_of(reference=cell_rows(cell=reference), rows=cell_rows(cell=cell)),
        timeout=None,
    )


@dataclass
class Pair:
    """The production pair of a Harness: the endpoint serving production and the production
    version."""

    harness: Harness
    endpoint: ModelEndpoint | None
    version: HarnessVersion | None

    @property
    def missing(self) -> str:
        if self.version is None:
            return f"{self.harness.name} has no production label"
        if self.endpoint is None:
            return (
                f"no endpoint is named as serving {self.harness.name}@production "
                "(set it on /compatibility/)"
            )
        return ""


def production_pair(*, harness: Harness) -> Pair:
    return Pair(
        harness=harness,
        endpoint=label_servers(harness=harness).get(Label.PRODUCTION),
        version=labelled_versions(harness=harness).get(Label.PRODUCTION),
    )


@dataclass
class MatrixCell:
    version: HarnessVersion
    cell: Cell | None
    figures: dict[str, Any] = field(default_factory=dict)
    change: dict[str, Any] | None = None
    is_reference: bool = False

    # whether the person looking may cancel the cell's run (its job): set by the page's view
    can_cancel: bool = False

    @property
    def status(self) -> str:
        """The cell run's status as its run page says it: a run whose job was cancelled is
        "cancelled", not "failed"."""
        if self.cell is None:
            return "none"
        return self.cell.run.badge

    @property
    def fallback_flag(self) -> str:
        """studio.jobs.fallback's flag when most of the cell's base cases fell back, else ''."""
        from studio.jobs.fallback import summary_flag

        return summary_flag({"": self.figures.get("base")})


@dataclass
class MatrixRow:
    endpoint: ModelEndpoint
    serves: list[str]
    fingerprint: str
    problem: str
    cells: list[MatrixCell]


def matrix(*, harness: Harness) -> dict[str, Any]:
    """The matrix of ``harness``: columns are its labelled versions and those with cells, rows the
    endpoints serving a label, the registry's checkpoint endpoints and those with cells; each cell
    coloured by its paired change against the production pair."""
    current = compat_set()
    set_version = current.version if current else ""
    labels = labelled_versions(harness=harness)
    servers = label_servers(harness=harness)
    cells = list(
        Cell.objects.select_related("run__job", "endpoint", "version", "requested_by").filter(
            version__harness=harness, set_version=set_version
        )
    )
    versions = {v.pk: v for v in labels.values()}
    versions.update({c.version_id: c.version for c in cells})
    columns = sorted(versions.values(), key=lambda v: v.number)
    endpoints = {e.pk: e for e in servers.values()}
    endpoints.update({c.endpoint_id: c.endpoint for c in cells})
    for endpoint in ModelEndpoint.objects.filter(route=ModelEndpoint.LOCAL).exclude(model=""):
        endpoints.setdefault(
            endpoint.pk, endpoint
        )  # the registry's checkpoints made into endpoints
    by_key = {(c.model_fingerprint, c.version_digest): c for c in cells}
    pair = production_pair(harness=harness)
    reference = None
    rows = []
    for endpoint in sorted(endpoints.values(), key=lambda e: e.name):
        try:
            fingerprint, problem = model_fingerprint(endpoint=endpoint), ""
        except ValueError as error:
            fingerprint, problem = "", str(error)
        serves = sorted(label for label, e in servers.items() if e.pk == endpoint.pk)
        row = MatrixRow(
            endpoint=endpoint,
            serves=serves,
            fingerprint=fingerprint,
            problem=problem,
            cells=[
                MatrixCell(version=v, cell=by_key.get((fingerprint, v.digest))) for v in columns
            ],
        )
        for version, shown in zip(columns, row.cells, strict=True):
            if shown.cell is not None:
                shown.figures = cell_figures(cell=shown.cell)
            if (
                pair.endpoint
                and pair.version
                and endpoint.pk == pair.endpoint.pk
                and version.pk == pair.version.pk
            ):
                shown.is_reference = True
                reference = shown.cell
        rows.append(row)
    if cell_done(cell=reference):
        for row in rows:
            for shown in row.cells:
                if shown.cell is not None and not shown.is_reference:
                    shown.change = cell_change(cell=shown.cell, reference=reference)
    from studio.jobs.models import Job

    filling = list(
        Job.objects.filter(
            kind="compatibility_fill", status__in=Job.ACTIVE, params__harness_id=harness.pk
        )
    )
    polling = bool(filling) or any(
        shown.status in (EvalRun.QUEUED, EvalRun.RUNNING) for row in rows for shown in row.cells
    )
    return {
        "harness": harness,
        "columns": columns,
        "rows": rows,
        "labels": labels,
        "servers": servers,
        "set": current,
        "pair": pair,
        "reference": reference,
        "polling": polling,
        "filling": filling,
    }


# -- the gate and the alarm
# ----------------------------------------------------------------------------


def pair_against_production(
    *, version: HarnessVersion, endpoint: ModelEndpoint | None = None
) -> dict[str, Any]:
    """What the compatibility gate reads: the cell of ``endpoint`` (default: the one serving
    production) on ``version`` and its change against the production pair. Keys: ``problem`` (why
    there is no data, or ''), ``cell``, ``reference``, ``change``."""
    harness = version.harness
    pair = production_pair(harness=harness)
    current = compat_set()
    out: dict[str, Any] = {
        "problem": "",
        "cell": None,
        "reference": None,
        "change": None,
        "pair": pair,
    }
    if current is None:
        out["problem"] = (
            f"no compatibility set: the source dataset {settings.COMPATIBILITY_SOURCE_DATASET} is "
            "not imported (manage.py seed_evolution_demo)"
        )
        return out
    if pair.endpoint is None:
        out["problem"] = pair.missing
        return out
    endpoint = endpoint or pair.endpoint
    cell = cell_find(endpoint=endpoint, version=version, set_version=current.version)
    reference = None
    if (
        pair.version is not None
    ):  # before the first production version, the pair only needs its own cell
        reference = cell_find(
            endpoint=pair.endpoint, version=pair.version, set_version=current.version
        )
    out.update(cell=cell, reference=reference)
    needed = [("the pair", cell, version, endpoint)]
    if pair.version is not None:
        needed.append(("the production pair", reference, pair.version, pair.endpoint))
    for name, found, v, e in needed:
        if not cell_done(cell=found):
            state = (
                "has no cell" if found is None else f"is {found.run.status} (run #{found.run_id})"
            )
            out["problem"] = (
                f"{name} ({e.name} on {harness.name} v{v.number}) {state} on compatibility set "
                f"{current.version}; ask for it on /compatibility/"
            )
            return out
    out["change"] = (
        None
        if reference is None or cell.pk == reference.pk
        else cell_change(cell=cell, reference=reference)
    )
    return out


def endpoint_training_run(*, endpoint: ModelEndpoint, harness: Harness):
    """The training run behind an endpoint: the registry checkpoint it serves (a local endpoint on a
    run's final/), else the checkpoint of the Harness's newest approved release (what production
    serves); None."""
    from studio.releases.models import Release
    from studio.training.selectors import checkpoint_registry

    if endpoint.route == ModelEndpoint.LOCAL and endpoint.model:
        try:
            path = Path(endpoint.model).resolve()
        except (OSError, RuntimeError):
            path = None
        for entry in checkpoint_registry(with_heads=False):
            if path is not None and entry.path.resolve() == path:
                return entry.run, entry.harness_version
    release = (
        Release.objects.select_related("checkpoint_run__harness_version")
        .filter(harness_version__harness=harness, status=Release.APPROVED)
        .order_by("-decided_at", "-pk")
        .first()
    )
    if release is not None:
        return release.checkpoint_run, release.checkpoint_run.harness_version
    return None, None


@dataclass
class RetrainAlarm:
    harness: Harness
    endpoint: ModelEndpoint
    production: HarnessVersion
    trained_on: HarnessVersion
    run: Any  # the TrainingRun of the checkpoint
    change: dict[str, Any]
    cell: Cell
    reference: Cell

    @property
    def preset_query(self) -> str:
        from urllib.parse import urlencode

        query = {"preset": "hsa-sft", "harness": f"{self.harness.name}@v{self.production.number}"}
        final = self.run.final_dir if self.run is not None else None
        if final is not None:
            query["model"] = str(final)
        return urlencode(query)


def retrain_alarms() -> list[RetrainAlarm]:
    """Each Harness whose production model scores worse on the production version, beyond the paired
    interval, than on the version it was trained on (the run record's Harness version)."""
    alarms = []
    for harness in Harness.objects.filter(labels__name=Label.PRODUCTION).distinct():
        pair = production_pair(harness=harness)
        current = compat_set()
        if pair.missing or current is None:
            continue
        run, trained_on = endpoint_training_run(endpoint=pair.endpoint, harness=harness)
        if (
            trained_on is None
            or trained_on.pk == pair.version.pk
            or trained_on.harness_id != harness.pk
        ):
            continue
        cell = cell_find(endpoint=pair.endpoint, version=pair.version, set_version=current.version)
        reference = cell_find(
            endpoint=pair.endpoint, version=trained_on, set_version=current.version
        )
        if not (cell_done(cell=cell) and cell_done(cell=reference)):
            continue
        change = cell_change(cell=cell, reference=reference)
        if change and change["verdict"] == "worse":
            alarms.append(
                RetrainAlarm(
                    harness=harness,
                    endpoint=pair.endpoint,
                    production=pair.version,
                    trained_on=trained_on,
                    run=run,
                    change=change,
                    cell=cell,
                    reference=reference,
                )
            )
    return alarms


# --- what the matrix page picks from ---------------------------------------------------------


def matrix_harness(*, name: str = "") -> Harness | None:
    """The Harness the matrix shows: the one named (``Harness.DoesNotExist`` when none is), else the
    first with a production label, else the first by name; None when there is no Harness."""
    if name:
        return Harness.objects.get(name=name)
    return (
        Harness.objects.filter(labels__name="production").order_by("name").first()
        or Harness.objects.order_by("name").first()
    )


def matrix_choices(*, harness: Harness | None) -> dict[str, Any]:
    """The page's pickers: every Harness, every endpoint, and ``harness``'s versions (newest
    first)."""
    choices: dict[str, Any] = {
        "harnesses": Harness.objects.order_by("name"),
        "endpoints": ModelEndpoint.objects.order_by("name"),
    }
    if harness is not None:
        choices["versions"] = HarnessVersion.objects.filter(harness=harness).order_by("-number")
    return choices


def endpoint_or_none(*, pk: int | None) -> ModelEndpoint | None:
    """The endpoint with this id, or None (the service names the field)."""
    return ModelEndpoint.objects.filter(pk=pk).first() if pk is not None else None


def version_or_none(*, pk: int | None) -> HarnessVersion | None:
    """The Harness version with this id (its Harness read with it), or None."""
    if pk is None:
        return None
    return HarnessVersion.objects.select_related("harness").filter(pk=pk).first()
