"""The Harness-Variant set (docs/architecture.md §6, T2): every case bound to an augmented Harness.

``make_variant_set(set_path=..., harness_dir=..., variants=K, out=...)`` reads a
case file, makes K variants of the Harness per case with HSA (each protecting
that case's gold skills and limits), and writes::

    OUT/cases.jsonl                 the cases, gold labels remapped (hs-case/1),
                                    ids "<id>~v<k>", tag "harness:<digest16>"
    OUT/bindings.jsonl              case id -> harness folder, mapping, seed
    OUT/harnesses/<digest16>/       each distinct variant bundle (content-addressed)
    OUT/harnesses/<digest16>.mapping.json
    OUT/trajectories.jsonl          (with --trajectories) gold trajectories remapped;
                                    --verify-replay also replays each under its variant
    OUT/manifest.json               source set and Harness digests, seeds, counts, timings
    OUT/<catalogue>                 the catalogue file the cases name, copied

Cases with the same gold skills are grouped, at most ``share`` per group, and
a group shares one variant built to protect all of its cases (``share=1``: a
distinct variant for every case). A variant's seed is derived from the set
seed, k and its cases' ids, so output does not depend on worker count or case
order; the same inputs give byte-identical files. Work is spread over
processes (``workers``); nothing is written unless every case could be served.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from evaluation.cases import dumps_case, load_cases, validate_case
from harness.jsonl import jsonl_records

FORMAT = "hsa-variant-set/1"


class VariantSetError(ValueError):
    """The cases cannot be served by the Harness (problems name the case line)."""


def case_seed(seed: int, case_id: str, k: int) -> int:
    digest = hashlib.sha256(f"{seed}:{case_id}:{k}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


# -- worker side (module-level so it pickles) -----------------------------------------------
_STATE: dict[str, Any] = {}


def _init_worker(
    files: dict[str, str],
    dims: list[str] | None,
    envelope_path: str | None,
    verify_replay: bool = False,
    catalogue_path: str | None = None,
) -> None:
    from harness import load_mapping
    from harness.augment import load_envelope

    _STATE["bundle"] = load_mapping(files)
    _STATE["dims"] = dims
    _STATE["envelope"] = load_envelope(envelope_path) if envelope_path else None
    _STATE["verify"] = verify_replay
    _STATE["catalogue"] = None
    if verify_replay and catalogue_path:
        from harness.livestream.catalogue import Catalogue

        _STATE["catalogue"] = Catalogue.load(catalogue_path)


def _one(job: tuple[list[tuple[dict, dict | None]], int, int]) -> dict[str, Any]:
    """One variant for a group of cases: its bundle, mapping and the remapped cases."""
    from harness.augment import Requirements, augment_bundle, requirements_from_case

    members, k, seed = job
    bundle = _STATE["bundle"]
    load_tools = tuple(t.name for t in bundle.tool_registry.by_role("load_skill"))
    need = Requirements()
    for case, trajectory in members:
        need = need.merge(
            requirements_from_case(case, trajectory=trajectory, load_tools=load_tools)
        )
    variant = augment_bundle(
        bundle=bundle,
        seed=seed,
        dims=_STATE["dims"],
        envelope=_STATE["envelope"],
        requirements=need,
    )
    digest = variant.bundle.digest[:16]
    rows = []
    for case, trajectory in members:
        out_case = variant.mapping.remap_case(case)
        out_case["id"] = f"{case['id']}~v{k}"
        out_case["set"] = "harness_variant"
        out_case["tags"] = [*(case.get("tags") or []), f"harness:{digest}"]
        rows.append(
            {
                "case": out_case,
                "binding": {
                    "case_id": out_case["id"],
                    "source_case_id": case["id"],
                    "variant": k,
                    "seed": seed,
                    "harness": f"harnesses/{digest}",
                    "mapping": f"harnesses/{digest}.mapping.json",
                },
                "trajectory": variant.mapping.remap_trajectory(trajectory) if trajectory else None,
                "replay_problems": _verify(trajectory, variant) if trajectory else [],
            }
        )
    return {
        "rows": rows,
        "digest": digest,
        "files": variant.bundle.files,
        "mapping": variant.mapping.to_json(),
    }


def _verify(trajectory: dict, variant) -> list[str]:
    if not _STATE.get("verify"):
        return []
    from harness.augment.gold_replay import replay_under_variant

    return replay_under_variant(
        trajectory=trajectory, variant=variant, catalogue=_STATE["catalogue"]
    ).problems


def group_cases(cases: list[dict], *, share: int, seed: int) -> list[list[dict]]:
    """Cases that will share one variant: same gold skills, at most ``share`` per group.

    Grouping by gold-skill signature keeps masking effective (a group protects only
    the skills its own cases need); the order inside a signature comes from a hash of
    the seed and case id, so it does not depend on the file order.
    """
    by_signature: dict[tuple, list[dict]] = {}
    for case in cases:
        gold = case.get("gold") or {}
        signature = tuple(
            sorted(set(gold.get("reply_skills") or []) | set(gold.get("strategy_skills") or []))
        )
        by_signature.setdefault(signature, []).append(case)
    groups = []
    for signature in sorted(by_signature):
        members = sorted(
            by_signature[signature],
            key=lambda c: hashlib.sha256(f"{seed}:{c['id']}".encode()).hexdigest(),
        )
        groups += [members[i : i + share] for i in range(0, len(members), share)]
    return groups


# -- main side ------------------------------------------------------------------------------
def _gold_problems(cases: list[dict], bundle) -> list[str]:
    problems = []
    for line, case in enumerate(cases, 1):
        gold = case.get("gold") or {}
        extra = {t.get("name") for t in case.get("extra_tools") or []}
        for key in ("reply_skills", "strategy_skills"):
            for skill in gold.get(key) or []:
                if skill not in bundle.skills:
                    problems.append(
                        f"case {case['id']} (line {line}): gold.{key} names "
                        f"'{skill}', which the Harness does not have"
                    )
        for i, call in enumerate(gold.get("tool_calls") or []):
            if bundle.tool_registry.get(call["name"]) is None and call["name"] not in extra:
                problems.append(
                    f"case {case['id']} (line {line}): gold.tool_calls[{i}] names "
                    f"'{call['name']}', which the Harness does not have"
                )
    return problems


def _catalogues(cases: list[dict], set_path: Path) -> list[str]:
    """Catalogue files the cases name (relative to the set), copied beside the new set."""
    names = sorted({c["catalogue"] for c in cases if isinstance(c.get("catalogue"), str)})
    for name in names:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise VariantSetError(
                f"{set_path}: catalogue {name!r} must be a path inside the "
                "set's folder to travel with the variant set"
            )
        if not (set_path.parent / name).is_file():
            raise VariantSetError(
                f"{set_path}: catalogue file {set_path.parent / name} named "
                "by the cases does not exist"
            )
    return names


def _read_trajectories(path: str | Path | None) -> dict[str, dict]:
    if not path:
        return {}
    out = {}
    for n, data in jsonl_records(path, error=VariantSetError):
        rid = data.get("request_id") if isinstance(data, dict) else None
        if not isinstance(rid, str):
            raise VariantSetError(f"{path}:{n}: a trajectory needs its request_id (the case id)")
        out[rid] = data
    return out


def make_variant_set(
    *,
    set_path: str | Path,
    harness_dir: str | Path,
    variants: int,
    out: str | Path,
    seed: int = 0,
    dims: list[str] | None = None,
    envelope_path: str | Path | None = None,
    trajectories_path: str | Path | None = None,
    share: int = 8,
    verify_replay: bool = False,
    workers: int | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Build the Harness-Variant set; returns the manifest (also written to OUT)."""
    from harness import load_dir
    from harness.augment import load_envelope, parse_dims

    started = time.perf_counter()
    if variants < 1:
        raise VariantSetError(f"--variants must be at least 1, got {variants}")
    dims = parse_dims(dims) if dims is not None else None
    if envelope_path:
        load_envelope(envelope_path)  # fail early, with its line numbers
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise VariantSetError(f"{out} exists and is not empty; choose another --out or use --force")
    cases = load_cases(set_path)
    bundle = load_dir(harness_dir)
    problems = _gold_problems(cases, bundle)
    if problems:
        raise VariantSetError(
            f"{len(problems)} case(s) cannot be served by {harness_dir}:\n  "
            + "\n  ".join(problems[:50])
        )
    if share < 1:
        raise VariantSetError(f"--share must be at least 1, got {share}")
    catalogues = _catalogues(cases, Path(set_path))
    trajectories = _read_trajectories(trajectories_path)
    jobs = []
    for k in range(variants):
        for group in group_cases(cases, share=share, seed=seed + k):
            group_id = ",".join(sorted(c["id"] for c in group))
            jobs.append(
                ([(c, trajectories.get(c["id"])) for c in group], k, case_seed(seed, group_id, k))
            )
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs) // 20 or 1))
    if verify_replay and not trajectories:
        raise VariantSetError("--verify-replay needs --trajectories (recorded gold trajectories)")
    catalogue_path = str(Path(set_path).parent / catalogues[0]) if catalogues else None
    init = (
        bundle.files,
        dims,
        str(envelope_path) if envelope_path else None,
        verify_replay,
        catalogue_path,
    )
    if workers == 1:
        _init_worker(*init)
        variants_built = [_one(job) for job in jobs]
    else:
        with ProcessPoolExecutor(
            max_workers=workers, initializer=_init_worker, initargs=init
        ) as pool:
            variants_built = list(
                pool.map(_one, jobs, chunksize=max(1, len(jobs) // (workers * 8)))
            )
    built = time.perf_counter()
    order = {(c["id"], k): i for k in range(variants) for i, c in enumerate(cases)}
    results = sorted(
        (row for v in variants_built for row in v["rows"]),
        key=lambda r: (
            r["binding"]["variant"],
            order[(r["binding"]["source_case_id"], r["binding"]["variant"])],
        ),
    )
    broken = [
        f"{r['binding']['source_case_id']} under {r['binding']['harness']}: {p}"
        for r in results
        for p in r["replay_problems"]
    ]
    if broken:
        raise VariantSetError(
            f"{len(broken)} problem(s) replaying gold trajectories under their "
            "variants; nothing was written:\n  " + "\n  ".join(broken[:50])
        )
    bad = [(r["case"]["id"], validate_case(r["case"])) for r in results]
    bad = [f"{cid}: {field}: {msg}" for cid, found in bad for field, msg in found]
    if bad:
        raise VariantSetError("remapped cases failed validation:\n  " + "\n  ".join(bad[:50]))
    if out.exists():
        shutil.rmtree(out)
    (out / "harnesses").mkdir(parents=True)
    written: set[str] = set()
    for v in variants_built:
        if v["digest"] in written:
            continue
        written.add(v["digest"])
        root = out / "harnesses" / v["digest"]
        for rel, text in v["files"].items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        (out / "harnesses" / f"{v['digest']}.mapping.json").write_text(
            v["mapping"], encoding="utf-8"
        )
    for name in catalogues:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(set_path).parent / name, out / name)
    _write_lines(out / "cases.jsonl", (dumps_case(r["case"]) for r in results))
    _write_lines(
        out / "bindings.jsonl", (json.dumps(r["binding"], sort_keys=True) for r in results)
    )
    if trajectories:
        _write_lines(
            out / "trajectories.jsonl",
            (
                json.dumps(
                    {**r["trajectory"], "request_id": r["case"]["id"]},
                    sort_keys=True,
                    ensure_ascii=False,
                )
                for r in results
                if r["trajectory"]
            ),
        )
    manifest = {
        "format": FORMAT,
        "set": str(set_path),
        "set_sha256": hashlib.sha256(Path(set_path).read_bytes()).hexdigest(),
        "harness": str(harness_dir),
        "harness_digest": bundle.digest,
        "harness_name": bundle.name,
        "variants_per_case": variants,
        "cases_per_variant": share,
        "seed": seed,
        "dims": dims or "all",
        "envelope": str(envelope_path) if envelope_path else "harness/augment/envelope.yaml",
        "cases": len(results),
        "distinct_harnesses": len(written),
        "trajectories": sum(1 for r in results if r["trajectory"]),
        "replays_verified": sum(1 for r in results if r["trajectory"]) if verify_replay else 0,
    }
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    manifest["timings"] = {
        "augment_s": round(built - started, 3),
        "write_s": round(time.perf_counter() - built, 3),
        "total_s": round(time.perf_counter() - started, 3),
        "workers": workers,
    }
    return manifest


def _write_lines(path: Path, lines) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line + "\n")


def load_variant_set(out: str | Path) -> list[tuple[dict, Path]]:
    """(case, harness folder) pairs of a variant set, in case order, for runners."""
    out = Path(out)
    cases = {c["id"]: c for c in load_cases(out / "cases.jsonl")}
    pairs = []
    for line in (out / "bindings.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            binding = json.loads(line)
            pairs.append((cases[binding["case_id"]], out / binding["harness"]))
    return pairs


def register(sub) -> None:
    """Add ``make-variant-set`` to ``python -m evaluation``."""
    p = sub.add_parser(
        "make-variant-set", help="bind every case to an augmented Harness (the Harness-Variant set)"
    )
    p.add_argument("--set", required=True, type=Path, help="case file (JSONL, hs-case/1)")
    p.add_argument("--harness", required=True, type=Path, help="the parent Harness folder")
    p.add_argument("--variants", type=int, default=1, help="variants per case (default 1)")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dims", default=None, help="HSA families (default: all five)")
    p.add_argument("--envelope", type=Path, default=None, help="change envelope YAML")
    p.add_argument(
        "--trajectories",
        type=Path,
        default=None,
        help="JSONL of recorded gold trajectories (request_id = case id) to remap",
    )
    p.add_argument(
        "--verify-replay",
        action="store_true",
        help="replay each remapped trajectory under its variant through the runtime "
        "(ScriptedPolicy); any blocked hook or changed outcome aborts the build",
    )
    p.add_argument(
        "--share",
        type=int,
        default=8,
        help="at most this many cases with the same gold skills share one variant "
        "(default 8; 1 = a distinct variant for every case)",
    )
    p.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.set_defaults(fn=_cmd, func=_cmd)


def _cmd(args) -> int:
    import sys

    from evaluation.cases import CaseFileError
    from harness.augment import EnvelopeError
    from harness.errors import HarnessValidationError

    try:
        manifest = make_variant_set(
            set_path=args.set,
            harness_dir=args.harness,
            variants=args.variants,
            out=args.out,
            seed=args.seed,
            dims=args.dims.split(",") if args.dims else None,
            envelope_path=args.envelope,
            trajectories_path=args.trajectories,
            share=args.share,
            verify_replay=args.verify_replay,
            workers=args.workers,
            force=args.force,
        )
    except (
        VariantSetError,
        CaseFileError,
        EnvelopeError,
        HarnessValidationError,
        ValueError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t = manifest["timings"]
    print(
        f"wrote {args.out}: {manifest['cases']} cases over {manifest['distinct_harnesses']} "
        f"distinct Harness variants ({manifest['variants_per_case']} per case) in "
        f"{t['total_s']:.2f} s on {t['workers']} worker(s)"
    )
    return 0
