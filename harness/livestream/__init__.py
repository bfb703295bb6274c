"""The live-room domain: products, promotions, FAQ, room state and the agent request.

Everything here is plain data with JSON round-trips and field-path validation;
the built-in tools, the MCP marketing server and the evaluation world build on it.
"""

from harness.livestream.catalogue import Campaign, Catalogue, FaqEntry, Product
from harness.livestream.promotions import (
    CartItem,
    PriceQuote,
    Promotion,
    PromotionError,
    optimal_quote,
    price_cart,
)
from harness.livestream.request import Comment, Request, RoomState, Turn, ViewerAction
from harness.livestream.validation import DocumentValidationError, FieldProblem

__all__ = [
    "Campaign",
    "CartItem",
    "Catalogue",
    "Comment",
    "DocumentValidationError",
    "FaqEntry",
    "FieldProblem",
    "PriceQuote",
    "Product",
    "Promotion",
    "PromotionError",
    "Request",
    "RoomState",
    "Turn",
    "ViewerAction",
    "demo_catalogue",
    "demo_catalogue_path",
    "optimal_quote",
    "price_cart",
]


def demo_catalogue_path():
    """Path of the small demo catalogue shipped with the package (5 products)."""
    from pathlib import Path

    return Path(__file__).with_name("demo_catalogue.json")


def demo_catalogue() -> Catalogue:
    """The demo catalogue used by examples/requests and the tests."""
    return Catalogue.load(demo_catalogue_path())
