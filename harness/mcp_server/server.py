"""The marketing MCP server: campaign conditions and promotion arithmetic.

A real MCP server (``mcp`` SDK 2.x, ``MCPServer``) over one catalogue snapshot,
runnable over stdio (the default; how a Harness's ``tools.yaml`` starts it) or
streamable HTTP (``python -m harness serve-mcp --http PORT``). Its tools do the
arithmetic of ``harness.livestream.promotions`` over the catalogue's rules:

- ``get_campaign_conditions(link_id)``: the campaigns and rules touching a product;
- ``calculate_promotion(link_id, quantity, coupon_code?)``: one product's final price;
- ``calculate_optimal_promotion(items)``: the cheapest plan for a basket.

The catalogue comes from ``--catalogue FILE``, else ``$HARNESS_CATALOGUE``,
else the demo catalogue.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from harness.livestream import Catalogue, demo_catalogue, optimal_quote, price_cart
from harness.livestream.promotions import PromotionError
from harness.mcp_server.constants import CATALOGUE_ENV

SERVER_NAME = "harness-marketing"


def load_server_catalogue(path: str | Path | None = None) -> Catalogue:
    source = path or os.environ.get(CATALOGUE_ENV)
    return Catalogue.load(source) if source else demo_catalogue()


def _product_or_error(catalogue: Catalogue, link_id: int):
    product = catalogue.product(link_id)
    if product is None:
        raise ToolError(f"no product with link id {link_id}; links on sale: {catalogue.link_ids}")
    return product


def campaign_conditions(catalogue: Catalogue, link_id: int) -> dict[str, Any]:
    product = _product_or_error(catalogue, link_id)
    rules = [
        p for p in catalogue.promotions if p.applies_to(link_id) or p.id in product.promotion_ids
    ]
    campaign_ids = {p.campaign_id for p in rules if p.campaign_id}
    return {
        "link_id": link_id,
        "product": product.name,
        "list_price": product.price,
        "promotions": [
            {
                "id": p.id,
                "kind": p.kind,
                "title": p.title,
                "rule": p.describe(),
                "room_wide": not p.link_ids,
            }
            for p in rules
        ],
        "campaigns": [c.to_dict() for c in catalogue.campaigns if c.id in campaign_ids],
    }


class BasketItem(BaseModel):
    """One basket line for calculate_optimal_promotion."""

    link_id: int = Field(ge=1, description="The product's link number.")
    quantity: int = Field(default=1, ge=1, le=99, description="How many units.")


def build_server(catalogue: Catalogue) -> MCPServer:
    """An MCPServer whose tools price carts over ``catalogue``."""
    server = MCPServer(
        SERVER_NAME,
        log_level="ERROR",
        instructions="Campaign rules and promotion arithmetic for the live room.",
    )

    @server.tool()
    def get_campaign_conditions(link_id: int) -> dict[str, Any]:
        """The campaigns and promotion rules that apply to a product (by link number)."""
        return campaign_conditions(catalogue, link_id)

    @server.tool()
    def calculate_promotion(
        link_id: int, quantity: int = 1, coupon_code: str | None = None
    ) -> dict[str, Any]:
        """Final price of `quantity` units of one product after its promotions and an optional
        coupon."""
        _product_or_error(catalogue, link_id)
        try:
            cart = catalogue.cart([{"link_id": link_id, "quantity": quantity}])
            return price_cart(
                items=cart, promotions=catalogue.promotions, coupon_code=coupon_code or None
            ).to_dict()
        except PromotionError as exc:
            raise ToolError(str(exc)) from exc

    @server.tool()
    def calculate_optimal_promotion(items: list[BasketItem]) -> dict[str, Any]:
        """The cheapest combination of promotions and coupons for a basket [{link_id, quantity}]."""
        try:
            basket = [item.model_dump() for item in items]
            return optimal_quote(items=catalogue.cart(basket), promotions=catalogue.promotions)
        except PromotionError as exc:
            raise ToolError(str(exc)) from exc

    return server


def serve(
    *,
    catalogue_path: str | Path | None = None,
    http_port: int | None = None,
    host: str = "127.0.0.1",
) -> None:
    """Run the server until stopped: stdio by default, streamable HTTP at /mcp with a port."""
    server = build_server(load_server_catalogue(catalogue_path))
    if http_port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=http_port)
