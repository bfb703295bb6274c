"""The layers of docs/architecture.md §1, checked on every import statement (lazy ones included):
the Harness library imports none of the others and holds no inference engine; the local routes reach
it as plug-ins."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from harness.policies import factory

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("harness", "evaluation", "training", "serving")
#: What each library may import of the project (the studio may import all four; nothing imports it).
ALLOWED = {
    "harness": set(),
    "evaluation": {"harness"},
    "serving": {"harness", "evaluation"},
    "training": {"harness", "evaluation", "serving"},
}
#: No library imports the web layer; only serving runs an inference engine.
NEVER = {"studio", "django", "celery"}
ENGINES = {"xllamacpp", "sglang", "vllm"}


def _imports(package: str) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [
                (f"{path.relative_to(ROOT)}:{node.lineno}", node.lineno, name.split(".")[0])
                for name in names
            ]
    return found


@pytest.mark.parametrize("package", LIBRARIES)
def test_each_library_imports_only_the_layers_below_it(package):
    others = set(LIBRARIES) - {package}
    wrong = [
        f"{where} imports {top}"
        for where, _, top in _imports(package)
        if (top in others and top not in ALLOWED[package])
        or top in NEVER
        or (top in ENGINES and package != "serving")
    ]
    assert not wrong, "\n".join(wrong)


def test_the_harness_library_holds_no_inference_engine():
    assert not (ROOT / "harness" / "engine").exists()
    routes = {name: factory._routes()[name].value for name in factory.local_engines()}
    assert routes == {
        "llama": "serving.llama_cpp:LlamaCppPolicy",
        "torch": "serving.engine.policy:TransformersPolicy",
    }


def test_a_route_that_is_not_installed_is_named_with_the_installed_ones(monkeypatch):
    only_llama = {"llama": factory._routes()["llama"]}
    monkeypatch.setattr(factory, "_routes", lambda: only_llama)
    with pytest.raises(
        ValueError,
        match=r"local route 'torch' is not installed \(installed: llama\).*pip install -e",
    ):
        factory.local_route("torch")
    monkeypatch.setenv("HARNESS_LOCAL_ENGINE", "torch")
    with pytest.raises(ValueError, match=r"\$HARNESS_LOCAL_ENGINE: 'torch' is not one of llama"):
        factory.make_policy("local")
    with pytest.raises(ValueError, match="unknown policy 'torch:tiny'"):
        factory.make_policy("torch:tiny")


def test_the_studio_starts_without_torch():
    """A Celery worker, manage.py and every web process load the studio's URLs and task modules; the
    run folders, configs and metrics they read need no model, so they load no torch or transformers
    (about 3 s of every such process on 2 cores). The code that trains or serves imports them where
    it runs."""
    script = (
        "import sys, django; django.setup(); import studio.urls, "
        "studio.jobs.tasks, studio.evolution.tasks; "
        "print(sorted(m for m in ('torch', 'transformers', "
        "'trl', 'xllamacpp') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "studio.settings"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def _sources(*packages: str) -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for package in packages
        for path in sorted((ROOT / package).rglob("*.py"))
    }


PROJECT = (*LIBRARIES, "studio", "tests", "benchmarks", "scripts")


def test_nothing_imports_pyarrow():
    """metrics.jsonl has one reader (training.runs.parse_metrics); pyarrow is no second one."""
    wrong = [
        where
        for package in PROJECT
        if (ROOT / package).is_dir()
        for where, _, top in _imports(package)
        if top == "pyarrow"
    ]
    assert not wrong, wrong


def test_metrics_jsonl_has_one_writer():
    """Every trainer appends its rows through training.runs.append_metrics."""
    writers = [
        name
        for name, text in _sources(*LIBRARIES, "studio").items()
        if "metrics.jsonl" in text and ('open("a"' in text or "open('a'" in text)
    ]
    assert writers == ["training/runs.py"]


def test_checkpoint_folders_are_checked_only_by_harness_checkpoints():
    """A folder with config.json and no weights is no checkpoint: every check of a model folder goes
    through harness.checkpoints (is_checkpoint, checkpoint_problem, checkpoint_config), none tests
    for config.json itself."""
    import re

    bare = re.compile(r"""["']config\.json["']\)\.(is_file|exists|read_text|open|read_bytes)\(""")
    wrong = [
        f"{name}:{n}"
        for name, text in _sources(*LIBRARIES, "studio").items()
        if name not in ("harness/checkpoints.py", "harness/model_folders.py")
        for n, line in enumerate(text.splitlines(), 1)
        if bare.search(line)
    ]
    assert not wrong, wrong


def _module_graph(*packages: str) -> dict[str, set[str]]:
    """module -> the project modules it imports (function-level imports included), each edge to the
    module named (``from a import b``: ``a.b`` when that is a module), not to the packages above
    it."""
    paths = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        edges = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in paths}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in paths:
                named = {f"{node.module}.{alias.name}" for alias in node.names} & set(paths)
                edges |= named or {node.module}
                if len(named) < len(node.names):
                    edges.add(node.module)
        edges.discard(module)
    return graph


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module == goal:
            return True
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return False


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (
            "harness.model_cache",
            "harness.checkpoints",
        ),  # the model cache is not a policy and needs no checkpoints
        ("harness.model_folders", "harness.adapters"),  # an adapter's base is a plain model folder
        (
            "harness.adapters",
            "harness.checkpoints",
        ),  # checkpoints dispatch between adapters and plain folders
        ("serving.engine.sampling", "serving.engine.speculative"),
        ("serving.engine.speculative", "serving.engine.engine"),
    ],
)
def test_no_import_circle_between_a_module_and_the_one_built_on_it(low, high):
    graph = _module_graph("harness", "serving")
    assert _reaches(graph, high, low), f"{high} no longer builds on {low}: update this test"
    assert not _reaches(graph, low, high), f"{low} reaches {high}: an import circle"


def test_cross_process_locks_are_filelock():
    """The model cache, run folders' JSON and the test artefacts lock with filelock, not flock
    helpers."""
    wrong = [
        where
        for package in PROJECT
        if (ROOT / package).is_dir()
        for where, _, top in _imports(package)
        if top == "fcntl"
    ]
    assert not wrong, wrong


def test_views_answer_404_through_one_helper():
    """studio.lookups.found_or_404 is the one way a view turns a missing object into a 404."""
    wrong = [name for name, text in _sources("studio").items() if "get_object_or_404(" in text]
    assert not wrong, wrong


def test_the_code_cites_the_projects_own_documents():
    """Comments and docstrings cite docs/ (docs/architecture.md §N), not the external specification
    or design document a clone lacks; every section cited is there."""
    import re

    sources = _sources(*PROJECT)
    stale = re.compile(
        "SPEC" + r" §|DESIGN" + r"\.md|\bthe " + "SPEC" + r"\b"
    )  # split: this file names them
    wrong = [name for name, text in sources.items() if stale.search(text)]
    assert not wrong, wrong
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    cited = {
        int(n)
        for text in sources.values()
        for n in re.findall(r"docs/architecture\.md §(\d+)", text)
    }
    missing = [n for n in sorted(cited) if f"## §{n} " not in architecture]
    assert cited and not missing, missing


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module
    (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _app(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def test_no_studio_import_circle_crosses_apps_or_spans_more_than_two_modules():
    """docs/architecture.md §1: a studio app reaches another through its selectors and services, and
    another app's reaction to its events through signals, so no import (function-level ones
    included) forms a circle across two apps; within one app a circle is at most a module and its
    task module (a task module imports the service that runs it, which queues the task)."""
    graph = {
        module: edges
        for module, edges in _module_graph("studio").items()
        if ".migrations." not in module
    }
    circles = _circles(graph)
    across = [c for c in circles if len({_app(m) for m in c}) > 1]
    long = [c for c in circles if len(c) > 2]
    assert not across, f"import circles across studio apps: {across}"
    assert not long, f"import circles of more than two modules within an app: {long}"


def _hand_read_posts(tree: ast.AST) -> list[int]:
    """Lines of ``<...>.POST[...]``, ``<...>.POST.get(...)`` and ``<...>.POST.getlist(...)``."""

    def is_post(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "POST"

    return [
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Subscript) and is_post(node.value))
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "getlist")
            and is_post(node.func.value)
        )
    ]


def test_studio_views_parse_posted_fields_through_forms():
    """A view reads ``form.cleaned_data``, not ``request.POST[...]`` / ``request.POST.get(...)``: a
    field read by hand skips the form's checks, and its error is not named like the others. Passing
    ``request.POST`` itself to a form is what should be done; each app's forms.py holds its forms
    (docs/architecture.md)."""
    reads = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "studio").rglob("*.py"))
        for line in _hand_read_posts(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not reads, "\n".join(reads)


def test_a_hand_read_post_is_counted():
    source = (
        "request.POST['a']\nrequest.POST.get('b', "
        "'')\nself.request.POST.getlist('c')\nForm(request.POST)\n"
    )
    assert _hand_read_posts(ast.parse(source)) == [1, 2, 3]


# --- one fallback rule (issue 52, item 2) -------------------------------------------------------

#: The one place the "more than half fell back" comparison is written.
FALLBACK_RULE = ("evaluation/summary.py", "mostly_fell_back")


def _names_fallback(node: ast.AST) -> bool:
    """Whether an expression reads something named for fallbacks (``fallbacks``, ``o["fallback"]``,
    ``m.get("fallback_rate")``, ``n_fallback``, ``fell``...)."""
    for sub in ast.walk(node):
        word = (
            sub.id
            if isinstance(sub, ast.Name)
            else sub.attr
            if isinstance(sub, ast.Attribute)
            else sub.value
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
            else ""
        )
        if "fallback" in word.lower() or "fell" in word.lower():
            return True
    return False


def _halves(node: ast.AST) -> bool:
    """Whether an expression holds one half: ``2 * x``, ``x * 2``, ``x / 2``, ``x // 2``, ``0.5``,
    ``x >> 1``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and sub.value == 0.5:
            return True
        if isinstance(sub, ast.BinOp):
            two = [s for s in (sub.left, sub.right) if isinstance(s, ast.Constant) and s.value == 2]
            if two and isinstance(sub.op, ast.Mult):
                return True
            if isinstance(sub.right, ast.Constant) and (
                (sub.right.value == 2 and isinstance(sub.op, (ast.Div, ast.FloorDiv)))
                or (sub.right.value == 1 and isinstance(sub.op, ast.RShift))
            ):
                return True
    return False


def _fallback_half_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, enclosing function) of each comparison of a fallback count or rate against a half."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = (
                child.name
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                else function
            )
            if (
                isinstance(child, ast.Compare)
                and any(isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in child.ops)
                and _names_fallback(child)
                and _halves(child)
            ):
                found.append((child.lineno, name))
            visit(child, name)

    visit(tree, "")
    return found


def test_the_mostly_fallback_rule_is_written_once():
    """The more-than-half fallback comparison lives in ``evaluation.summary.mostly_fell_back``;
    every other module (the replay metrics, the studio's flags, the edit benchmark, ...) calls it,
    so the rule cannot drift apart again (it was written four times, issue 52)."""
    written = [
        f"{path.relative_to(ROOT)}:{line} ({function})"
        for package in (*LIBRARIES, "studio", "scripts", "benchmarks")
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, function in _fallback_half_comparisons(
            ast.parse(path.read_text(encoding="utf-8"))
        )
        if (str(path.relative_to(ROOT)), function) != FALLBACK_RULE
    ]
    assert not written, "\n".join(written)
    rule = ast.parse((ROOT / FALLBACK_RULE[0]).read_text(encoding="utf-8"))
    assert [f for _, f in _fallback_half_comparisons(rule)] == [FALLBACK_RULE[1]]


@pytest.mark.parametrize(
    "source",
    [
        "2 * fallbacks > n > 0",
        "o['fallback'] * 2 > o['n']",
        "m.get('fallback_rate', 0) > 0.5",
        "fell > n / 2",
        "n_fallback >= n // 2 + 1",
        "summary['outcomes']['fallback'] > summary['outcomes']['n'] >> 1",
    ],
)
def test_a_rewritten_fallback_rule_is_found(source):
    assert _fallback_half_comparisons(ast.parse(f"def f():\n    return {source}\n")) == [(2, "f")]


def test_a_fallback_comparison_without_a_half_is_not_the_rule():
    assert not _fallback_half_comparisons(ast.parse("fallbacks > 0\nn * 2 > total\n"))


def test_templates_render_the_fallback_headline_through_the_one_tag():
    """No template types "Mostly fallback" itself: each renders ``{% fallback_badge %}``
    (studio/jobs/templatetags/fallback.py), so the words are the library's everywhere."""
    typed = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "mostly fallback" in line.lower()
    ]
    assert not typed, "\n".join(typed)


# --- the studio's app graph (issue 52, item 1; docs/architecture.md §1) ---------------------------

#: The studio's apps: its packages (``studio/<app>/``). Its top-level modules (``studio/gates.py``,
#: ``studio/promotion.py``, ``studio/forms.py``, ...) are no app: the shared helpers and the layer
#: above the apps, checked by the tests below.
STUDIO_APPS = sorted(
    path.name for path in (ROOT / "studio").iterdir() if (path / "__init__.py").is_file()
)

#: The pairs of apps that import each other, each with why; docs/architecture.md §1 names them too.
#: Keep it short: a pair leaves this list when one of its two directions goes.
MUTUAL_APPS = {
    ("accounts", "audit"): "accounts' role and token changes are audited (audit_record); the audit "
    "log's page is guarded by accounts' roles (requires), as every page is",
    ("annotation", "traffic"): "annotation queues take their cases from production traffic; the "
    "traffic pages offer to add a trajectory to a queue (they list the queues)",
    ("harnesses", "mcpservers"): "a Harness bundle's tools name MCP servers, checked when it is "
    "imported; the MCP server page lists the Harness versions that use a server",
    ("replays", "training"): "a replay is a training app run (kind replay) that the replay pages "
    "read; the run form shows the replay's time estimate from earlier replays",
}

#: The layer above the apps: only views (and the API's), the release services and one another
#: import these; they import the apps' selectors and services.
TOP_MODULES = ("studio.gates", "studio.promotion")
TOP_IMPORTERS = ("studio.releases.services",)


def _studio_imports() -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) for every import statement in the studio outside
    migrations, function-level ones included; ``from studio import x`` names ``studio.x`` (the
    studio writes no relative imports)."""
    found = []
    for path in sorted((ROOT / "studio").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "migrations" in parts:
            continue
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = (
                    [f"studio.{alias.name}" for alias in node.names]
                    if node.module == "studio"
                    else [node.module]
                )
            else:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            found += [(module, name, where) for name in names if name.startswith("studio.")]
    return found


def _studio_app(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STUDIO_APPS else None


def _app_graph() -> dict[str, dict[str, list[str]]]:
    """app -> {app it imports: [where, ...]}."""
    graph: dict[str, dict[str, list[str]]] = {app: {} for app in STUDIO_APPS}
    for module, name, where in _studio_imports():
        source, target = _studio_app(module), _studio_app(name)
        if source and target and source != target:
            graph[source].setdefault(target, []).append(where)
    return graph


def _mutual(graph: dict[str, Iterable[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ())}


def _drawn(graph: dict[str, dict[str, list[str]]]) -> str:
    """The app graph as text: each app in layers (an app after every app it imports but the pairs),
    with what it imports; the top modules with theirs."""
    allowed = {frozenset(pair) for pair in MUTUAL_APPS}
    below = {
        app: {other for other in graph[app] if frozenset((app, other)) not in allowed}
        for app in graph
    }
    layers, placed = [], set()
    while len(placed) < len(below):
        layer = sorted(a for a in below if a not in placed and below[a] <= placed)
        if not layer:  # a circle beyond the named pairs: the test below fails and says which
            layer = sorted(set(below) - placed)
        layers.append(layer)
        placed |= set(layer)
    lines = ["studio app graph (layer: app -> the apps it imports; <-> a named pair)"]
    for number, layer in enumerate(layers):
        for app in layer:
            targets = ", ".join(
                f"{other}{' <->' if frozenset((app, other)) in allowed else ''}"
                for other in sorted(graph[app])
            )
            lines.append(f"  {number}: {app} -> {targets or '-'}")
    imports = _studio_imports()
    for top in TOP_MODULES:
        apps = sorted({_studio_app(name) for module, name, _ in imports if module == top} - {None})
        users = sorted({module for module, name, _ in imports if name.startswith(top)})
        lines.append(f"  top: {top} -> {', '.join(apps)}; imported by {', '.join(users)}")
    return "\n".join(lines)


def test_the_studio_app_graph_has_no_mutual_imports_but_the_named_pairs():
    """No two studio apps import each other (every import statement, function-level ones included),
    but the pairs of MUTUAL_APPS, each for its reason; and no circle runs through more than two
    apps. ``pytest -s tests/test_layers.py -k graph`` prints the graph."""
    graph = _app_graph()
    print(_drawn(graph))
    mutual = _mutual(graph)
    unexplained = [
        f"{a} <-> {b}: {a} -> {b} at {graph[a][b][:3]}; {b} -> {a} at {graph[b][a][:3]}"
        for a, b in sorted(mutual - set(MUTUAL_APPS))
    ]
    assert not unexplained, "apps that import each other:\n" + "\n".join(unexplained)
    gone = sorted(set(MUTUAL_APPS) - mutual)
    assert not gone, f"no longer mutual, take them out of MUTUAL_APPS: {gone}"
    longer = [c for c in _circles({a: set(t) for a, t in graph.items()}) if len(c) > 2]
    assert not longer, f"import circles through more than two apps: {longer}"


def test_a_pair_of_apps_importing_each_other_is_found():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set()}
    assert _mutual(graph) == {("a", "b")}
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]


def test_the_release_gates_and_promotion_are_imported_only_from_the_top():
    """``studio.gates`` reads every app's selectors, so only what stands above the apps imports it
    (and ``studio.promotion``, its gated writes): views, the API, the release services."""
    wrong = [
        f"{where}: {module} imports {name}"
        for module, name, where in _studio_imports()
        if any(name == top or name.startswith(f"{top}.") for top in TOP_MODULES)
        and module not in (*TOP_MODULES, *TOP_IMPORTERS)
        and not module.endswith((".views", ".api"))
        and not module.startswith("studio.api.")
    ]
    assert not wrong, "\n".join(wrong)


# --- one place each (issue 52, item 3) ----------------------------------------------------------


def _duration_texts(tree: ast.AST) -> list[int]:
    """Lines of an f-string that says a duration itself: ``f"about {n} min"``, ``f"{s} s left"``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        texts = [v.value for v in node.values if isinstance(v, ast.Constant)]
        formatted = any(isinstance(v, ast.FormattedValue) for v in node.values)
        units = any(
            t.split(" left")[0].strip() in ("s", "min", "h") and t.startswith(" ") for t in texts
        )
        if formatted and units and any("about" in t or "left" in t for t in texts):
            found.append(node.lineno)
    return found


def test_time_left_is_worded_in_one_place():
    """ "about 7 min left" is said by ``studio.durations`` (it was written three times, two of them
    without hours)."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "studio").rglob("*.py"))
        if path.relative_to(ROOT).as_posix() != "studio/durations.py"
        for line in _duration_texts(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not wrong, "\n".join(wrong)
    assert _duration_texts(ast.parse('f"about {m} min"\nf"about {round(s)} s left"\n')) == [1, 2]


def _sha256_of_text(tree: ast.AST) -> list[int]:
    """Lines of ``hashlib.sha256(<text>.encode(...))``."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "sha256"
        and node.args
        and isinstance(node.args[0], ast.Call)
        and isinstance(node.args[0].func, ast.Attribute)
        and node.args[0].func.attr == "encode"
    ]


def test_a_harness_files_content_hash_is_computed_in_one_place():
    """FileBlob's key, a version's tree, a draft's changes and a diff's sides all hash a file's text
    through ``studio.harnesses.models.text_sha256`` (it was written three times)."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "studio" / "harnesses").rglob("*.py"))
        if path.name != "models.py"
        for line in _sha256_of_text(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not wrong, "\n".join(wrong)
    assert _sha256_of_text(ast.parse('hashlib.sha256(text.encode("utf-8")).hexdigest()')) == [1]


def test_one_function_is_named_parse_metrics():
    """``training.runs.parse_metrics`` reads metrics.jsonl into rows; the dashboards' columns are
    ``metrics_columns``, so one name means one return type."""
    defined = [
        name
        for name, text in _sources(*LIBRARIES, "studio").items()
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name == "parse_metrics"
    ]
    assert defined == ["training/runs.py"]


def test_charts_are_drawn_through_the_one_chart_module():
    """Only ``static/studio/linechart.js`` (and the evolution's bar charts, docs/architecture.md)
    construct a Chart.js chart; every other page script calls ``StudioCharts``."""
    allowed = {"static/studio/linechart.js", "studio/evolution/static/evolution/charts.js"}
    wrong = [
        str(path.relative_to(ROOT))
        for folder in ("static", "studio")
        for path in sorted((ROOT / folder).rglob("*.js"))
        if "vendor" not in path.parts
        and str(path.relative_to(ROOT)) not in allowed
        and "new Chart(" in path.read_text(encoding="utf-8")
    ]
    assert not wrong, wrong


def _models_urls(tree: ast.AST) -> list[int]:
    """Lines of a string or f-string that ends in ``/models`` (an OpenAI-compatible model list)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values:
            last = node.values[-1]
            if isinstance(last, ast.Constant) and str(last.value).endswith("/models"):
                found.append(node.lineno)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.endswith("/models")
            and node.value.startswith(("http", "/"))
        ):
            found.append(node.lineno)
    return sorted(set(found))


def test_an_endpoint_is_probed_in_one_place():
    """Whether an OpenAI-compatible endpoint answers is asked by ``serving.endpoint.probe_models``
    (the replay's routes and the studio's endpoint check; there were two probes). Apart from it:
    the engine server's own route and the managed ``transformers serve``'s wait for its model."""
    apart = {
        "serving/endpoint.py",  # probe_models itself
        "serving/engine_server/app.py",  # serves /v1/models, probes nothing
        "serving/transformers_server.py",  # waits for the process it started to list its model
    }
    wrong = [
        f"{name}:{line}"
        for name, text in _sources(*LIBRARIES, "studio").items()
        if name not in apart
        for line in _models_urls(ast.parse(text))
    ]
    assert not wrong, "\n".join(wrong)
    assert _models_urls(ast.parse('httpx.get(f"{base}/models")\nurl = base + "/models"')) == [1, 2]


# --- apps shaped as documented (issue 52, item 4) -----------------------------------------------


def _orm_calls(tree: ast.AST) -> int:
    """ORM calls a module makes itself: each ``<Model>.objects`` query and each ``.save()`` /
    ``.delete()`` / ``.refresh_from_db()`` of a row."""
    return sum(
        1
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr == "objects")
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("save", "delete", "refresh_from_db")
        )
    )


def _view_modules() -> dict[str, ast.AST]:
    return {
        str(path.relative_to(ROOT)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / "studio").rglob("*.py"))
        if path.name.endswith("views.py") or path.name == "api.py"
    }


#: View modules that still query rows themselves, with how many ORM calls each makes: none. A view
#: parses, authorises and delegates to its app's selectors and services (docs/architecture.md §1);
#: a view module that makes an ORM call fails the test below.
VIEWS_WITH_ORM_CALLS: dict[str, int] = {}


def test_views_make_no_new_orm_calls():
    counts = {name: _orm_calls(tree) for name, tree in _view_modules().items()}
    grown = [
        f"{name}: {n} ORM calls, {VIEWS_WITH_ORM_CALLS.get(name, 0)} allowed"
        for name, n in counts.items()
        if n > VIEWS_WITH_ORM_CALLS.get(name, 0)
    ]
    assert not grown, "a view queries rows itself; call a selector or service:\n" + "\n".join(grown)
    lower = {name: counts.get(name, 0) for name, n in VIEWS_WITH_ORM_CALLS.items()}
    stale = {name: n for name, n in lower.items() if n < VIEWS_WITH_ORM_CALLS[name]}
    assert not stale, f"fewer ORM calls now: lower VIEWS_WITH_ORM_CALLS to {stale}"


def test_an_orm_call_in_a_view_is_counted():
    source = "Run.objects.filter(a=1).first()\nrun.save(update_fields=['a'])\nrun.delete()\n"
    assert _orm_calls(ast.parse(source)) == 3


def _positional_functions(path: Path) -> list[str]:
    """The public module-level functions of ``path`` that take an argument by position."""
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return [
        f"{name}:{node.lineno} {node.name}"
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("_")
        and (node.args.posonlyargs or node.args.args)
    ]


def test_the_selectors_and_services_are_keyword_only():
    """docs/architecture.md §1: selectors and services take keyword arguments only (every public
    function of an app's ``selectors.py`` / ``services.py`` or of its ``selectors/`` / ``services/``
    package), so a call names what it passes and an argument cannot be swapped for another."""
    wrong = [
        where
        for path in sorted((ROOT / "studio").rglob("*.py"))
        if path.name in ("selectors.py", "services.py")
        or {"selectors", "services"} & set(path.relative_to(ROOT).parts[:-1])
        for where in _positional_functions(path)
    ]
    assert not wrong, "\n".join(wrong)


def test_a_positional_argument_is_found(tmp_path):
    module = tmp_path / "selectors.py"
    module.write_text(
        "def a(x): ...\ndef b(*, x): ...\ndef c(x, /): ...\ndef _d(x): ...\ndef e(x, *, y): ...\n",
        encoding="utf-8",
    )
    found = [where.split()[-1] for where in _positional_functions(module)]
    assert found == ["a", "c", "e"]


def test_each_app_defines_its_signals_in_signals_py():
    """docs/architecture.md §1: an app's events are Django signals defined in its ``signals.py``
    (``eval_run_scored``, ``checkpoint_registered``, ``job_cancelled``), beside the receivers."""
    wrong = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "studio").rglob("*.py"))
        if path.name != "signals.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "Signal")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "Signal")
        )
    ]
    assert not wrong, "\n".join(wrong)
