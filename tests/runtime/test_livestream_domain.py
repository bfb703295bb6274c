"""The live-room domain: request validation, catalogue round-trips, promotion arithmetic."""

import json

import pytest

from harness.livestream import (
    Catalogue,
    DocumentValidationError,
    PromotionError,
    Request,
    demo_catalogue,
    optimal_quote,
    price_cart,
)


def test_single_comment_request_round_trips_through_json():
    raw = {
        "id": "r1",
        "comments": [{"user": "amy", "text": "How much is product #3?"}],
        "room": {
            "current_link_id": 1,
            "shelf": [1, 2, 3],
            "viewer_actions": [{"user": "amy", "action": "added_to_cart", "link_id": 3}],
        },
        "history": [{"role": "viewer", "user": "bob", "text": "hi"}],
        "anchor_utterances": ["Link one is our face cream!"],
        "products": [3],
    }
    request = Request.from_dict(raw, catalogue=demo_catalogue())
    assert request.mode == "single"
    assert request.text == "How much is product #3?"
    again = Request.from_dict(json.loads(json.dumps(request.to_dict())))
    assert again.to_dict() == request.to_dict()


def test_multi_comment_mode_numbers_each_comment():
    request = Request.from_dict(
        {"comments": ["is #2 in stock?", {"user": "li", "text": "price of #3?"}]}
    )
    assert request.mode == "multi"
    assert request.text.splitlines() == ["[1] viewer: is #2 in stock?", "[2] li: price of #3?"]


def test_request_errors_name_every_bad_field():
    bad = {
        "mode": "single",
        "comments": [{"text": ""}, {"txt": "x"}],
        "room": {"current_link_id": 9, "shelf": [1, "two"]},
        "products": [42],
        "history": [{"role": "moderator", "text": "hey"}],
    }
    with pytest.raises(DocumentValidationError) as info:
        Request.from_dict(bad, source="bad.json", catalogue=demo_catalogue())
    paths = {p.path for p in info.value.problems}
    assert {
        "comments[0].text",
        "comments[1].txt",
        "comments[1].text",
        "mode",
        "room.shelf[1]",
        "room.current_link_id",
        "products[0]",
        "history[0].role",
    } <= paths
    assert "bad.json: products[0]: no product with link id 42" in str(info.value)


def test_inline_catalogue_snapshot_is_validated_and_used():
    snapshot = {
        "products": [
            {
                "link_id": 7,
                "product_id": "X",
                "name": "Mug",
                "category": "home",
                "price": 20,
                "promotions": ["nope"],
            }
        ]
    }
    with pytest.raises(DocumentValidationError) as info:
        Request.from_dict({"comments": ["hi"], "catalogue": snapshot})
    assert "catalogue.products[0].promotions[0]" in str(info.value)
    snapshot["products"][0]["promotions"] = []
    request = Request.from_dict({"comments": ["hi"], "catalogue": snapshot, "products": [7]})
    assert request.catalogue.product(7).name == "Mug"


def test_catalogue_dump_and_load_are_lossless(tmp_path):
    catalogue = demo_catalogue()
    catalogue.dump(tmp_path / "c.json")
    assert Catalogue.load(tmp_path / "c.json").to_dict() == catalogue.to_dict()


def test_catalogue_search_and_faq_retrieval():
    catalogue = demo_catalogue()
    assert catalogue.search("sunscreen spf")[0].link_id == 3
    assert catalogue.search("earbuds battery")[0].name == "Wireless Earbuds Pro"
    assert catalogue.search_faq("when does my order ship")[0].id == "F-SHIP"
    assert catalogue.search_faq("use under makeup", link_id=3)[0].id == "F-3-1"


def test_threshold_multibuy_and_coupon_stack_in_platform_order():
    catalogue = demo_catalogue()
    cart = catalogue.cart([{"link_id": 3, "quantity": 3}, {"link_id": 1, "quantity": 1}])
    quote = price_cart(items=cart, promotions=catalogue.promotions, coupon_code="LIVE20")
    # 3 x 89 = 267, 15% off = 40.05; + 129 = 355.95 >= 300 -> -40; coupon -20
    assert quote.subtotal == 396.0
    assert quote.product_discount == 40.05
    assert quote.threshold_discount == 40.0
    assert quote.coupon_discount == 20.0
    assert quote.total == 295.95


def test_coupon_below_min_spend_is_not_applied_and_says_why():
    catalogue = demo_catalogue()
    quote = price_cart(
        items=catalogue.cart([{"link_id": 3, "quantity": 1}]),
        promotions=catalogue.promotions,
        coupon_code="LIVE20",
    )
    assert quote.total == 89.0
    assert any("LIVE20 needs 150" in n for n in quote.notes)
    with pytest.raises(PromotionError, match="valid codes: LIVE20"):
        price_cart(
            items=catalogue.cart([{"link_id": 3}]),
            promotions=catalogue.promotions,
            coupon_code="FAKE",
        )


def test_repeat_threshold_is_capped():
    catalogue = Catalogue.from_dict(
        {
            "products": [
                {
                    "link_id": 1,
                    "product_id": "a",
                    "name": "A",
                    "category": "c",
                    "price": 100,
                    "stock": 50,
                }
            ],
            "promotions": [
                {
                    "id": "T",
                    "kind": "threshold",
                    "threshold": 200,
                    "discount": 25,
                    "repeat": True,
                    "max_discount": 60,
                }
            ],
        }
    )
    quote = price_cart(
        items=catalogue.cart([{"link_id": 1, "quantity": 9}]), promotions=catalogue.promotions
    )
    assert quote.threshold_discount == 60.0  # 4 x 25 = 100, capped at 60
    assert quote.total == 840.0


def test_optimal_quote_picks_reachable_coupon_and_suggests_multibuy():
    catalogue = demo_catalogue()
    result = optimal_quote(
        items=catalogue.cart([{"link_id": 2, "quantity": 1}]), promotions=catalogue.promotions
    )
    # 159 - 10% = 143.10; coupon needs 150 after product discounts -> not reachable
    assert result["best_total"] == 143.1
    cream = optimal_quote(
        items=catalogue.cart([{"link_id": 1, "quantity": 1}]), promotions=catalogue.promotions
    )
    assert cream["cheaper_per_unit"]["quantities"] == {"1": 3}
    assert cream["cheaper_per_unit"]["per_unit_price"] == 83.2


def test_cart_rejects_unknown_links_and_out_of_stock():
    catalogue = demo_catalogue()
    with pytest.raises(PromotionError, match="no product with link id 99"):
        catalogue.cart([{"link_id": 99, "quantity": 1}])
    with pytest.raises(PromotionError, match="only 0 of link 5 in stock"):
        catalogue.cart([{"link_id": 5, "quantity": 1}])
