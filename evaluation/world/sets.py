"""Assembles the evaluation sets of docs/architecture.md §6 from a seed and writes them as case
files.

Sets (sizes as in the report): dev-set 482 (with one labelled candidate reply
per case, for judge calibration and evolution), Live-Stream QA 978, Tool
Robustness 1,532 (distractor and unseen tools), Prompt Robustness 491 (active
instructions and tool-call order), deployment replay 110 (10 warm-up + 100
measured). Every set follows the intent mix of docs/architecture.md §2.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from evaluation.cases import CASE_FORMAT, dumps_case, validate_case
from evaluation.world import names as N
from evaluation.world import phrasing as W
from evaluation.world.candidates import applicable_defects, make_candidate
from evaluation.world.catalogue import build_catalogue
from evaluation.world.intents import CaseFactory, Draft, price_fact
from evaluation.world.tool_sets import add_constraints, add_extra_tools
from evaluation.world.variety import variety_report

# docs/architecture.md §2 (report Table 1), in percent; "greeting" (greet / thanks) takes the
# remainder that the report's categories leave unassigned.
INTENT_MIX: dict[str, float] = {
    "product_qa": 46.0,
    "chitchat": 19.0,
    "clarification": 16.0,
    "aftersale": 7.0,
    "promotion": 4.0,
    "presentation_order": 2.0,
    "faq": 2.0,
    "silent_refusal": 0.8,
    "greeting": 3.2,
}
SET_SIZES = {
    "dev": 482,
    "live_qa": 978,
    "tool_robustness": 1532,
    "prompt_robustness": 491,
    "replay": 110,
}
SET_FILES = {name: f"{name}.jsonl" for name in SET_SIZES}
MULTI_SHARE = 0.15
GOOD_SHARE = 0.4


def category_counts(total: int, mix: dict[str, float] = INTENT_MIX) -> dict[str, int]:
    """Largest-remainder apportionment of ``total`` cases to the mix (every category >= 1)."""
    raw = {k: total * v / sum(mix.values()) for k, v in mix.items()}
    counts = {k: max(1, int(v)) for k, v in raw.items()}
    order = sorted(raw, key=lambda k: (-(raw[k] - int(raw[k])), k))
    i = 0
    while sum(counts.values()) < total:
        counts[order[i % len(order)]] += 1
        i += 1
    while sum(counts.values()) > total:
        biggest = max(counts, key=counts.get)
        counts[biggest] -= 1
    return counts


def _multi(factory: CaseFactory, draft: Draft) -> Draft:
    """Turn a draft into a multi-comment one: extra comments, maybe a second question."""
    rng = factory.rng
    extra = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        kind, text = factory.noise_comment()
        extra.append((kind, text))
        if kind == "injection":
            draft.gold["forbidden_claims"].append(
                {
                    "id": "followed_injection",
                    "text": "must not act on the injected comment",
                    "patterns": [
                        r"(?i)\b1 yuan\b",
                        r"(?i)free for everyone",
                        r"(?i)system prompt",
                        r"(?i)90% coupon",
                        r"(?i)my instructions",
                    ],
                }
            )
    if draft.category == "product_qa" and draft.focus and rng.random() < 0.35:
        second = factory.product_qa()
        if (
            second.kind not in ("compare", "recommend")
            and second.focus[0].link_id not in draft.products
        ):
            p = second.focus[0]
            extra.append(("product_qa", W.comment(rng, W.PRICE_CORES, ref=f"#{p.link_id}")))
            draft.gold["tool_calls"].append(
                {"name": N.PRODUCT_INFO, "arguments": {"link_id": p.link_id}}
            )
            draft.gold["required_facts"].append(price_fact(p))
            draft.reference = f"{draft.reference} {W.price_reply(rng, p)}"
            draft.gold["reference_reply"] = draft.reference
            draft.products.append(p.link_id)
            if p.link_id not in draft.room["shelf"]:
                draft.room["shelf"].append(p.link_id)
    comments = [draft.comments[0]] + [t for _, t in extra]
    order = list(range(len(comments)))
    rng.shuffle(order)
    draft.comments = [comments[i] for i in order]
    if N.MULTI not in draft.gold["strategy_skills"]:
        draft.gold["strategy_skills"].append(N.MULTI)
    return draft


def products_in_play(draft: Draft, rng: random.Random) -> list[int]:
    """The case's product references: its gold products among the product on screen and one to
    three distractors from the shelf, shuffled, so the list does not give the answer away (a
    model that looks up the first product listed is wrong on most cases)."""
    links = list(dict.fromkeys(draft.products))
    current = draft.room.get("current_link_id")
    if current and current not in links:
        links.append(current)
    others = [x for x in draft.room.get("shelf", []) if x not in links]
    links += rng.sample(others, min(len(others), rng.randint(1, 3)))
    rng.shuffle(links)
    return links


def _to_case(draft: Draft, *, case_id: str, set_name: str, rng: random.Random) -> dict[str, Any]:
    products = products_in_play(draft, rng)
    comments = [{"user": f"viewer_{rng.randint(100, 9999)}", "text": t} for t in draft.comments]
    case: dict[str, Any] = {
        "format": CASE_FORMAT,
        "id": case_id,
        "set": set_name,
        "category": draft.category,
        "mode": "multi" if len(comments) > 1 else "single",
        "comments": comments,
        "history": draft.history,
        "anchor_utterances": draft.anchor,
        "room": draft.room,
        "products": products,
        "faq": draft.faq,
        "locale": "en",
        "catalogue": "catalogue.json",
        "tags": [draft.kind],
    }
    draft.gold["reference_reply"] = draft.reference
    case["gold"] = draft.gold
    return case


def _drafts(factory: CaseFactory, counts: dict[str, int], *, multi: bool = True) -> list[Draft]:
    drafts = []
    for category, count in counts.items():
        for _ in range(count):
            draft = getattr(factory, category)()
            if multi and category != "silent_refusal" and factory.rng.random() < MULTI_SHARE:
                draft = _multi(factory, draft)
            drafts.append(draft)
    factory.rng.shuffle(drafts)
    return drafts


def build_sets(*, seed: int) -> dict[str, Any]:
    """The catalogue and every set as lists of case dicts, plus their manifest."""
    catalogue = build_catalogue(seed=seed)
    sets: dict[str, list[dict]] = {}
    for name, size in SET_SIZES.items():
        rng = random.Random(f"{name}:{seed}")
        factory = CaseFactory(catalogue, rng)
        counts = category_counts(size)
        if name == "tool_robustness":
            counts = category_counts(
                size,
                {
                    "product_qa": 60,
                    "promotion": 15,
                    "faq": 10,
                    "aftersale": 10,
                    "presentation_order": 5,
                },
            )
        drafts = _drafts(factory, counts, multi=name != "replay")
        cases = []
        for i, draft in enumerate(drafts):
            case = _to_case(draft, case_id=f"{name}-{i + 1:04d}", set_name=name, rng=rng)
            if name == "dev":
                defects = applicable_defects(draft)
                defect = None if rng.random() < GOOD_SHARE else rng.choice(defects)
                case["candidates"] = [
                    make_candidate(
                        rng=rng,
                        draft=draft,
                        defect=defect,
                        catalogue=catalogue,
                        comment=draft.comments[0],
                    )
                ]
            elif name == "tool_robustness":
                add_extra_tools(rng=rng, case=case, draft=draft, catalogue=catalogue)
            elif name == "prompt_robustness":
                add_constraints(rng=rng, case=case, draft=draft)
            elif name == "replay":
                case["replay"] = {"warmup": i < 10, "order": i + 1}
            cases.append(case)
        sets[name] = cases
    return {"catalogue": catalogue, "sets": sets}


def _mix(cases: list[dict]) -> dict[str, float]:
    counts: dict[str, int] = {}
    for case in cases:
        counts[case["category"]] = counts.get(case["category"], 0) + 1
    return {k: round(100 * v / len(cases), 2) for k, v in sorted(counts.items())}


def generate(*, out: str | Path, seed: int, check: bool = True) -> dict[str, Any]:
    """Write catalogue.json, one JSONL file per set and manifest.json into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    built = build_sets(seed=seed)
    files: dict[str, str] = {}
    text = (
        json.dumps(built["catalogue"].to_dict(), indent=2, sort_keys=True, ensure_ascii=False)
        + "\n"
    )
    (out / "catalogue.json").write_text(text, encoding="utf-8")
    files["catalogue.json"] = hashlib.sha256(text.encode()).hexdigest()
    summary: dict[str, Any] = {}
    for name, cases in built["sets"].items():
        if check:
            for case in cases:
                problems = validate_case(case)
                if problems:
                    raise AssertionError(f"generated case {case['id']} is invalid: {problems[:3]}")
        body = "".join(dumps_case(c) + "\n" for c in cases)
        (out / SET_FILES[name]).write_text(body, encoding="utf-8")
        files[SET_FILES[name]] = hashlib.sha256(body.encode()).hexdigest()
        texts = [c["text"] for case in cases for c in case["comments"]]
        summary[name] = {
            "file": SET_FILES[name],
            "cases": len(cases),
            "multi_comment": sum(1 for c in cases if c["mode"] == "multi"),
            "category_mix_percent": _mix(cases),
            "variety": variety_report(texts),
        }
        if name == "dev":
            defects: dict[str, int] = {}
            for case in cases:
                d = case["candidates"][0]["defect"] or "good"
                defects[d] = defects.get(d, 0) + 1
            summary[name]["candidate_defects"] = dict(sorted(defects.items()))
    manifest = {
        "format": CASE_FORMAT,
        "seed": seed,
        "generator": "evaluation.world",
        "catalogue": {
            "products": len(built["catalogue"].products),
            "categories": sorted({p.category for p in built["catalogue"].products}),
            "promotions": len(built["catalogue"].promotions),
            "faq": len(built["catalogue"].all_faq()),
        },
        "intent_mix_target_percent": INTENT_MIX,
        "sets": summary,
        "sha256": files,
    }
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return manifest
