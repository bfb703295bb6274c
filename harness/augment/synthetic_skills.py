"""Skills HSA can add to a Harness: plausible neighbours and unrelated noise.

*Plausible* skills belong in a live-commerce avatar but cover topics no gold
label of the shipped sets uses (giveaways, membership points, gift wrapping
...), so a model must read descriptions to choose, not match on topic words.
*Noise* skills are unrelated to the stream (horoscopes, recipes) and must be
ignored. Rules may name tools through their built-in binding,
``{tool:livestream.search_faq}``; a skill whose tools the Harness lacks is not
offered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SkillTemplate:
    name: str
    kind: str
    description: str
    rules: tuple[tuple[str, str], ...]  # (rule id, text)
    tools: tuple[str, ...] = ()  # bindings, e.g. "builtin:livestream.search_faq"
    heading: str = "Rules"


PLAUSIBLE: tuple[SkillTemplate, ...] = (
    SkillTemplate(
        "giveaway_info",
        "reply",
        "Explain how the stream's giveaways and lucky draws work when a viewer asks how to "
        "join or when the next draw is.",
        (
            ("draw-rules-from-faq", "Describe the draw rules only as the FAQ states them."),
            ("no-winner-promise", "Never tell a viewer they will win or that their odds are good."),
            (
                "point-to-host",
                "For the exact time of the next draw, say the host will announce it.",
            ),
        ),
        ("builtin:livestream.search_faq",),
    ),
    SkillTemplate(
        "membership_points",
        "reply",
        "Questions about the shop's membership tiers, points balance and how points are earned.",
        (
            (
                "tiers-from-faq",
                "Explain tiers and earning rates from {tool:livestream.search_faq} results.",
            ),
            (
                "no-balance-lookup",
                "Do not guess a viewer's points balance; the stream cannot see accounts.",
            ),
            ("keep-short", "Answer in one short spoken sentence."),
        ),
        ("builtin:livestream.search_faq",),
    ),
    SkillTemplate(
        "gift_wrapping",
        "reply",
        "Whether an order can be gift-wrapped or sent with a card, and how to ask for it.",
        (
            ("wrap-from-faq", "Quote the gift-wrap options from the FAQ as written."),
            ("note-at-checkout", "Tell viewers to add the request in the order note at checkout."),
        ),
        ("builtin:livestream.search_faq",),
    ),
    SkillTemplate(
        "restock_notice",
        "reply",
        "Tell viewers how to get notified when a sold-out product is back in stock.",
        (
            (
                "check-stock",
                "Call {tool:livestream.get_product_info} to confirm the product is sold out.",
            ),
            ("subscribe-button", "Point to the 'notify me' button on the product page."),
            ("no-restock-date", "Never promise a restock date."),
        ),
        ("builtin:livestream.get_product_info",),
    ),
    SkillTemplate(
        "host_schedule",
        "reply",
        "When the next live session starts and which host presents it.",
        (
            ("schedule-from-faq", "Give the schedule only from FAQ entries."),
            ("follow-reminder", "Suggest following the room to get a reminder."),
        ),
        ("builtin:livestream.search_faq",),
    ),
    SkillTemplate(
        "bundle_builder",
        "strategy",
        "Tool chain for building a set of products that go together (a routine, an outfit).",
        (
            (
                "search-complements",
                "Call {tool:livestream.search_products} for "
                "products that complement the one asked about.",
            ),
            (
                "price-the-set",
                "Call {tool:mcp:marketing/calculate_optimal_promotion} for the total of the set.",
            ),
            ("max-three", "Suggest at most three products."),
        ),
        ("builtin:livestream.search_products", "mcp:marketing/calculate_optimal_promotion"),
    ),
    SkillTemplate(
        "size_conversion",
        "strategy",
        "Tool chain for converting between size systems (EU, US, CN) for shoes and clothing.",
        (
            (
                "size-chart",
                "Call {tool:livestream.search_faq} for the size chart before converting.",
            ),
            (
                "no-guess-size",
                "If the chart has no row for the size, do not "
                "guess; ask for the viewer's measurements.",
            ),
        ),
        ("builtin:livestream.search_faq",),
    ),
    SkillTemplate(
        "live_rules",
        "reply",
        "Remind viewers of the room's chat rules when they ask what is allowed in the chat.",
        (
            ("quote-rules", "List the chat rules briefly, in one sentence."),
            ("no-shaming", "Do not single out or shame a viewer."),
        ),
    ),
)

NOISE: tuple[SkillTemplate, ...] = (
    SkillTemplate(
        "horoscope_reader",
        "reply",
        "Reads today's horoscope for a star sign.",
        (
            ("sign-first", "Ask for the star sign first."),
            ("fun-only", "Say horoscopes are for fun."),
        ),
    ),
    SkillTemplate(
        "recipe_helper",
        "reply",
        "Suggests a recipe from the ingredients a user lists.",
        (
            ("list-steps", "Give the steps in order."),
            ("allergy-note", "Mention common allergens in the recipe."),
        ),
    ),
    SkillTemplate(
        "math_tutor",
        "reply",
        "Explains school maths problems step by step.",
        (
            ("show-work", "Show each step of the working."),
            ("check-answer", "Check the final answer by substitution."),
        ),
    ),
    SkillTemplate(
        "travel_planner",
        "strategy",
        "Plans a trip itinerary with flights and hotels.",
        (
            ("ask-dates", "Ask for travel dates and budget."),
            ("day-by-day", "Lay out the plan day by day."),
        ),
    ),
    SkillTemplate(
        "poem_writer",
        "reply",
        "Writes short poems on a requested theme.",
        (
            ("match-theme", "Keep the poem on the requested theme."),
            ("four-lines", "Write four lines unless asked otherwise."),
        ),
    ),
    SkillTemplate(
        "weather_report",
        "reply",
        "Gives the weather forecast for a city.",
        (
            ("ask-city", "Ask which city when none is given."),
            ("celsius", "Give temperatures in Celsius."),
        ),
    ),
    SkillTemplate(
        "code_reviewer",
        "strategy",
        "Reviews source code for bugs and style problems.",
        (
            ("read-all", "Read the whole snippet before commenting."),
            ("cite-lines", "Cite the line of each problem."),
        ),
    ),
    SkillTemplate(
        "trivia_quiz",
        "reply",
        "Runs a general-knowledge trivia quiz.",
        (
            ("one-question", "Ask one question at a time."),
            ("keep-score", "Keep score across questions."),
        ),
    ),
)

_TOOL_REF = re.compile(r"\{tool:([^}]+)\}")


def render_template(template: SkillTemplate, *, tool_for_binding) -> tuple[dict, str] | None:
    """(front matter, body) with tool references resolved, or None when a tool is missing.

    ``tool_for_binding("builtin:livestream.search_faq")`` returns the Harness's tool name
    for that binding, or None.
    """
    tools = []
    for binding in template.tools:
        name = tool_for_binding(binding)
        if name is None:
            return None
        tools.append(name)
    missing = False

    def sub(m: re.Match) -> str:
        nonlocal missing
        ref = m.group(1)
        binding = ref if ref.startswith("mcp:") else f"builtin:{ref}"
        name = tool_for_binding(binding)
        if name is None:
            missing = True
            return ""
        return name

    lines = [f"- {_TOOL_REF.sub(sub, text)} {{#{rid}}}" for rid, text in template.rules]
    if missing:
        return None
    front = {"name": template.name, "description": template.description, "kind": template.kind}
    if tools:
        front["allowed-tools"] = " ".join(tools)
    front["metadata"] = {"version": "1.0"}
    title = template.name.replace("_", " ").capitalize()
    body = f"# {title}\n\n## {template.heading}\n\n" + "\n".join(lines) + "\n"
    return front, body
