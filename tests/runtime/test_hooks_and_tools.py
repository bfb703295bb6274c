"""Hook checks and built-in tools on their own: what a user of the Harness would notice."""

from __future__ import annotations

import copy

import pytest

from harness.hooks import HookSpec
from harness.livestream import Request, demo_catalogue
from harness.runtime.builtin_tools import BUILTIN_IMPLS, ToolContext, ToolInputError
from harness.runtime.hook_impls import HOOK_IMPLS, HookCheck, makes_claim, render_message


def hook(htype, **params):
    return HookSpec(
        id="h",
        event="stop",
        type=htype,
        matcher=None,
        params=params,
        action="retry",
        message="",
        fallback_reply=None,
    )


def stop_check(reply, **extra):
    request = Request.from_dict({"comments": ["how much is #3?"], "room": {"shelf": [1, 2, 3]}})
    return HookCheck(
        event="stop",
        request=request,
        room=request.room,
        constraints={"max_reply_chars": 40},
        link_ids=[1, 2, 3],
        reply=reply,
        **extra,
    )


@pytest.mark.parametrize(
    "reply,claim",
    [
        ("Link 3 is 89 yuan.", "price"),
        ("It costs only 89 today", "price"),
        ("¥89 now", "price"),
        ("Sorry, it is sold out.", "stock"),
        ("only 12 left!", "stock"),
        ("Use coupon LIVE20 to save", "promotion"),
        ("buy 3 get 15% off", "promotion"),
        ("check link #4", "link"),
    ],
)
def test_claim_detectors(reply, claim):
    assert makes_claim(reply, claim)


def test_claim_detectors_leave_plain_chat_alone():
    for claim in ("price", "stock", "promotion", "link"):
        assert not makes_claim("Thank you so much, have a lovely evening!", claim)


def test_numbers_grounded_accepts_tool_numbers_in_any_format():
    check = stop_check(
        "It is 1,299.50 yuan and ships in 5 days", grounding_text='{"price": 1299.5}'
    )
    result = HOOK_IMPLS["numbers_grounded"](hook("numbers_grounded", ignore=[]), check)
    assert result.ok is False and result.details["details"] == "5"
    assert HOOK_IMPLS["numbers_grounded"](hook("numbers_grounded", ignore=[5]), check).ok


def test_max_length_defaults_to_the_prompt_constraint():
    result = HOOK_IMPLS["max_length"](hook("max_length"), stop_check("x" * 41))
    assert not result.ok and result.details["limit"] == "40"
    assert HOOK_IMPLS["max_length"](hook("max_length", max_chars=50), stop_check("x" * 41)).ok


def test_response_format_and_banned_phrases_and_language():
    fmt = hook(
        "response_format",
        no_markdown=True,
        no_urls=True,
        single_paragraph=True,
        no_tool_syntax=True,
    )
    result = HOOK_IMPLS["response_format"](fmt, stop_check("**Great** see www.x.com\n<tool_call>"))
    assert result.details["details"] == (
        "the reply contains Markdown formatting, a URL, more than one line, tool-call syntax"
    )
    banned = HOOK_IMPLS["banned_phrases"](
        hook("banned_phrases", phrases=["guaranteed"]), stop_check("Results GUARANTEED")
    )
    assert banned.details["details"] == "'guaranteed'"
    assert not HOOK_IMPLS["language"](
        hook("language", min_ascii_ratio=0.9), stop_check("这个产品很好用的")
    ).ok


def test_render_message_keeps_json_braces():
    text = render_message(
        'bad ({details}): write <tool_call>{"name": ...}</tool_call>', {"details": "x"}
    )
    assert text == 'bad (x): write <tool_call>{"name": ...}</tool_call>'


@pytest.fixture
def ctx(demo_bundle):
    request = Request.from_dict(
        {
            "comments": ["hi"],
            "room": {"current_link_id": 1, "shelf": [1, 2, 3, 4, 5]},
            "faq": [{"id": "X", "question": "q", "answer": "a"}],
        }
    )
    return ToolContext(
        catalogue=demo_catalogue(),
        room=copy.deepcopy(request.room),
        request=request,
        skills=demo_bundle.skills,
    )


def test_product_info_and_errors_that_say_what_is_valid(ctx):
    info = BUILTIN_IMPLS["livestream.get_product_info"](ctx, {"link_id": "#3"})
    assert (info["name"], info["price"], info["stock"]) == ("Sunscreen SPF50", 89.0, 500)
    assert {
        "id": "P-SUN-MULTI",
        "title": "Sunscreen: buy 3 get 15% off",
        "rule": "buy 3 or more, get 15% off",
    } in info["promotions"]
    with pytest.raises(
        ToolInputError, match=r"no product at link 8; links on the shelf: \[1, 2, 3, 4, 5\]"
    ):
        BUILTIN_IMPLS["livestream.get_product_info"](ctx, {"link_id": 8})


def test_search_faq_room_status_promotions(ctx):
    assert (
        BUILTIN_IMPLS["livestream.search_products"](ctx, {"query": "water bottle"})["results"][0][
            "link_id"
        ]
        == 5
    )
    faq = BUILTIN_IMPLS["livestream.search_faq"](ctx, {"query": "return refund"})["entries"]
    assert (
        faq[0]["id"] == "F-RETURN" and faq[-1]["id"] == "X"
    )  # retrieved entries of the request follow
    status = BUILTIN_IMPLS["livestream.get_room_status"](ctx, {})
    assert status["current_product"] == "Hydrating Face Cream" and len(status["shelf"]) == 5
    promos = BUILTIN_IMPLS["livestream.get_room_promotions"](ctx, {})["promotions"]
    assert [p["id"] for p in promos] == ["P-ROOM-300", "P-COUPON-LIVE20"]


def test_change_order_and_load_skill(ctx):
    moved = BUILTIN_IMPLS["livestream.change_presentation_order"](
        ctx, {"link_id": 4, "position": 2}
    )
    assert moved["presentation_order"] == [2, 4, 3, 5] and ctx.room.shelf == [1, 2, 4, 3, 5]
    with pytest.raises(ToolInputError, match="being presented right now"):
        BUILTIN_IMPLS["livestream.change_presentation_order"](ctx, {"link_id": 1, "position": 1})
    body = BUILTIN_IMPLS["flow.load_skill"](ctx, {"name": "item_qa"})
    assert body["kind"] == "reply" and "{#" not in body["instructions"]
    with pytest.raises(ToolInputError, match="unknown skill 'itemqa'; skills: aftersale"):
        BUILTIN_IMPLS["flow.load_skill"](ctx, {"name": "itemqa"})


def test_a_loaded_skill_reaches_the_model_as_markdown_after_one_compact_json_line():
    from harness.runtime.context import tool_payload

    body = '# Item Q&A\n\n- Say "Link 3 is 89 yuan".\n'
    payload = tool_payload(
        "load_skill", {"skill": "item_qa", "kind": "reply", "instructions": body}, None
    )
    assert payload == (
        '<tool_response>{"name":"load_skill","result":{"skill":"item_qa","kind":"reply"}}\n'
        + body
        + "</tool_response>"
    )
    # other results stay one compact JSON object; errors and notes keep their keys
    assert tool_payload("get_price", {"price": 89.0}, None, note="cite it") == (
        '<tool_response>{"name":"get_price","result":{"price":89.0},"note":"cite '
        'it"}</tool_response>'
    )
    assert tool_payload("get_price", None, "blocked: no") == (
        '<tool_response>{"name":"get_price","error":"blocked: no"}</tool_response>'
    )
