"""A seeded catalogue of the synthetic live room: 72 products in 8 categories.

Names are composed from brand, line, noun and variant pools; specs come from
per-category value pools; prices, stock, promotions and FAQ are drawn from
the seed. The result is a :class:`harness.livestream.Catalogue` the runtime's
built-in tools and the marketing MCP server can read directly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.livestream.catalogue import Campaign, Catalogue, FaqEntry, Product
from harness.livestream.promotions import Promotion


@dataclass(frozen=True)
class CategorySpec:
    """How to make products of one category: name parts, spec pools, price range, FAQ."""

    name: str
    brands: tuple[str, ...]
    nouns: tuple[str, ...]
    variants: tuple[str, ...]
    specs: dict[str, tuple]
    price_range: tuple[int, int]
    faq: tuple[tuple[str, str], ...]


CATEGORIES: tuple[CategorySpec, ...] = (
    CategorySpec(
        "skincare",
        ("Luma", "Dewlab", "Aquaria", "Petalis"),
        ("Sunscreen", "Face Serum", "Night Cream", "Cleansing Foam", "Sheet Mask Set", "Toner"),
        ("SPF50", "Hyaluronic", "Vitamin C", "Ceramide", "Green Tea", "Rose"),
        {
            "volume_ml": (30, 50, 75, 100, 150),
            "skin_type": ("all", "dry", "oily", "sensitive", "combination"),
            "fragrance_free": (True, False),
            "shelf_life_months": (12, 24, 36),
        },
        (39, 299),
        (
            (
                "Is it suitable for sensitive skin?",
                "It is dermatologist tested; patch-test it on your wrist first.",
            ),
            ("Can I use it every day?", "Yes, it is made for daily use, morning and evening."),
        ),
    ),
    CategorySpec(
        "apparel",
        ("Northwind", "Koto", "Linea", "Urbanfox"),
        ("Hoodie", "Linen Shirt", "Down Jacket", "Yoga Pants", "Knit Sweater", "Denim Skirt"),
        ("Classic", "Oversized", "Slim Fit", "Cropped", "Relaxed", "Winter"),
        {
            "material": ("cotton", "linen", "polyester blend", "merino wool", "nylon"),
            "sizes": ("S-XL", "XS-L", "M-XXL", "S-XXL"),
            "colors": ("black, white", "navy, grey", "beige, olive", "pink, cream", "red, black"),
            "machine_washable": (True, False),
        },
        (59, 599),
        (
            (
                "How do I pick my size?",
                "Check the size chart in the link; between two sizes, take the larger one.",
            ),
            (
                "Does it shrink after washing?",
                "Wash it cold and it keeps its size; do not tumble dry.",
            ),
        ),
    ),
    CategorySpec(
        "electronics",
        ("Voltix", "Sonaro", "Pixelwave", "Tenko"),
        (
            "Wireless Earbuds",
            "Power Bank",
            "Smart Watch",
            "Bluetooth Speaker",
            "Desk Lamp",
            "Phone Stand",
        ),
        ("Pro", "Mini", "Lite", "Max", "Air", "Go"),
        {
            "battery_mah": (300, 1200, 5000, 10000, 20000),
            "weight_g": (45, 120, 250, 380, 520),
            "warranty_months": (6, 12, 24),
            "waterproof": ("none", "IPX4", "IPX7"),
        },
        (79, 899),
        (
            (
                "What is the warranty?",
                "Every device has the listed warranty; contact service with your order number.",
            ),
            ("Does it work with iPhone and Android?", "Yes, it pairs with both over Bluetooth."),
        ),
    ),
    CategorySpec(
        "snacks",
        ("Crunchy Fox", "Golden Grove", "Mochi Mori", "Sunny Farm"),
        (
            "Mixed Nuts",
            "Seaweed Chips",
            "Dried Mango",
            "Rice Crackers",
            "Dark Chocolate",
            "Beef Jerky",
        ),
        ("Sea Salt", "Honey", "Spicy", "Original", "Matcha", "Family Pack"),
        {
            "net_weight_g": (80, 150, 250, 500, 1000),
            "flavor": ("salty", "sweet", "spicy", "savory"),
            "shelf_life_days": (90, 180, 270, 365),
            "contains_nuts": (True, False),
        },
        (19, 129),
        (
            (
                "Is it suitable for vegetarians?",
                "Check the ingredient list in the link; jerky is not vegetarian.",
            ),
            ("How should I store it?", "Keep it sealed in a cool, dry place away from sunlight."),
        ),
    ),
    CategorySpec(
        "home",
        ("Nestly", "Oakhaven", "Pureline", "Casa Mio"),
        (
            "Storage Box Set",
            "Ceramic Mug",
            "Cotton Towel Set",
            "Air Purifier",
            "Throw Blanket",
            "Knife Set",
        ),
        ("Nordic", "Deluxe", "Compact", "Eco", "Family", "Studio"),
        {
            "material": ("ceramic", "bamboo", "cotton", "stainless steel", "PP plastic"),
            "dimensions_cm": ("30x20x15", "40x30x25", "10x8x9", "150x200", "35x35x60"),
            "pieces": (1, 2, 3, 4, 6),
            "dishwasher_safe": (True, False),
        },
        (29, 699),
        (
            (
                "Is it fragile in delivery?",
                "Fragile items ship in foam packing; report damage within 48 hours.",
            ),
            (
                "Can I return it if the colour differs?",
                "Yes, within the 7-day no-reason return window if unused.",
            ),
        ),
    ),
    CategorySpec(
        "sports",
        ("Stridex", "Peakform", "Aerolite", "Tidal"),
        (
            "Running Shoes",
            "Yoga Mat",
            "Resistance Bands",
            "Water Bottle",
            "Hiking Backpack",
            "Jump Rope",
        ),
        ("Trail", "Studio", "Ultra", "Flex", "Summit", "Core"),
        {
            "weight_g": (150, 300, 750, 1200),
            "material": ("TPE", "EVA foam", "latex", "ripstop nylon", "mesh"),
            "capacity": ("one size", "750 ml", "30 L", "5 levels", "EU 36-45"),
            "color": ("black", "teal", "coral", "grey", "lime"),
        },
        (29, 799),
        (
            ("Is it good for beginners?", "Yes, it suits beginners and regular training alike."),
            ("How do I clean it?", "Wipe it with a damp cloth and let it air-dry."),
        ),
    ),
    CategorySpec(
        "baby",
        ("Little Sprout", "Cuddle Cloud", "Tiny Steps", "Bebe Bloom"),
        (
            "Diaper Pack",
            "Baby Wipes",
            "Feeding Bottle",
            "Swaddle Blanket",
            "Teething Toy",
            "Bath Tub",
        ),
        ("Newborn", "Soft", "Organic", "Travel", "Anti-colic", "Sensitive"),
        {
            "age_range": ("0-6 months", "0-12 months", "6-24 months", "1-3 years"),
            "material": ("organic cotton", "food-grade silicone", "BPA-free PP", "bamboo fibre"),
            "count": (1, 3, 40, 80, 120),
            "bpa_free": (True, False),
        },
        (25, 399),
        (
            (
                "Is it safe for newborns?",
                "It meets national infant product standards; follow the age range on the label.",
            ),
            ("Can it be sterilised?", "Silicone and PP parts can be boiled or steam-sterilised."),
        ),
    ),
    CategorySpec(
        "pets",
        ("Pawsome", "Whisker Co", "Happy Tail", "Furrever"),
        ("Cat Litter", "Dog Chews", "Pet Bed", "Cat Tree", "Grooming Brush", "Pet Fountain"),
        ("Tofu", "Dental", "Orthopedic", "Compact", "Deshedding", "Silent"),
        {
            "pet": ("cat", "dog", "cat and dog"),
            "weight_kg": (0.3, 1.5, 2.5, 6, 10),
            "material": ("tofu fibre", "natural rubber", "memory foam", "sisal", "stainless steel"),
            "size": ("S", "M", "L", "one size"),
        },
        (19, 459),
        (
            (
                "Is it safe if my pet chews it?",
                "It uses pet-safe materials; supervise chewing and replace worn items.",
            ),
            ("Which size for a 10 kg dog?", "Size M fits most dogs from 8 to 15 kg."),
        ),
    ),
)

SHOP_FAQ = (
    (
        "shipping",
        "How long does shipping take?",
        "Orders ship within 48 hours and arrive in 3-5 days on the mainland.",
        ("shipping", "delivery"),
    ),
    (
        "returns",
        "What is the return policy?",
        "Unused items can be returned within 7 days, no reason "
        "needed; return shipping is free with shipping insurance.",
        ("return", "refund"),
    ),
    (
        "exchange",
        "Can I exchange the size or colour?",
        "Yes, request an exchange in your order within 7 "
        "days; we ship the new one after the old one arrives.",
        ("exchange", "size"),
    ),
    (
        "invoice",
        "Can I get an invoice?",
        "Yes, request an electronic invoice on the order page after delivery.",
        ("invoice", "receipt"),
    ),
    (
        "payment",
        "Which payment methods are accepted?",
        "We accept Alipay, WeChat Pay and bank cards; cash on delivery is not available.",
        ("payment", "pay"),
    ),
    (
        "overseas",
        "Do you ship to Hong Kong or overseas?",
        "We ship to Hong Kong, Macau and Taiwan in 5-8 "
        "days; other overseas regions are not supported yet.",
        ("overseas", "hong", "kong", "abroad"),
    ),
    (
        "damaged",
        "My parcel arrived damaged, what do I do?",
        "Take photos within 48 hours of delivery and "
        "contact service in your order; we resend or refund.",
        ("damaged", "broken"),
    ),
    (
        "late",
        "My order has not arrived yet.",
        "Check tracking in your order; if it has not moved for "
        "3 days, contact service and we will chase the courier.",
        ("late", "tracking", "arrived"),
    ),
    (
        "cancel",
        "Can I cancel my order?",
        "You can cancel before it ships from the order "
        "page; after shipping, refuse delivery or return it.",
        ("cancel",),
    ),
    (
        "authentic",
        "Are the products authentic?",
        "All products come from the brands' official "
        "distributors, with authenticity certificates on request.",
        ("authentic", "genuine", "fake"),
    ),
)


def _price(rng: random.Random, low: int, high: int) -> float:
    base = rng.randint(low, high)
    return float(base - (base % 10) + rng.choice((9, 9, 9, 5, 0))) if base > 20 else float(base)


def build_catalogue(*, seed: int, per_category: int = 9) -> Catalogue:
    """A catalogue with ``per_category`` products in each of the 8 categories (72 by default)."""
    rng = random.Random(f"catalogue:{seed}")
    products: list[Product] = []
    promotions: list[Promotion] = []
    link_id = 0
    used_names: set[str] = set()
    for cat in CATEGORIES:
        for _ in range(per_category):
            link_id += 1
            while True:
                name = (
                    f"{rng.choice(cat.brands)} {rng.choice(cat.variants)} {rng.choice(cat.nouns)}"
                )
                if name not in used_names:
                    used_names.add(name)
                    break
            specs = {key: rng.choice(values) for key, values in cat.specs.items()}
            stock = rng.choice((0, 3, 8, 25, 60, 120, 300, 500)) if rng.random() > 0.1 else 0
            promo_ids: list[str] = []
            roll = rng.random()
            if roll < 0.3:
                pid = f"pct-{link_id}"
                promotions.append(
                    Promotion(
                        id=pid,
                        kind="percentage",
                        title=f"Live deal on #{link_id}",
                        link_ids=(link_id,),
                        percent_off=float(rng.choice((5, 10, 15, 20))),
                        campaign_id="camp-live",
                    )
                )
                promo_ids.append(pid)
            elif roll < 0.5:
                pid = f"multi-{link_id}"
                promotions.append(
                    Promotion(
                        id=pid,
                        kind="multi_buy",
                        title=f"Buy more of #{link_id}",
                        link_ids=(link_id,),
                        percent_off=float(rng.choice((10, 15, 20))),
                        min_quantity=rng.choice((2, 3)),
                        campaign_id="camp-live",
                    )
                )
                promo_ids.append(pid)
            faq = tuple(
                FaqEntry(
                    id=f"p{link_id}-faq{j + 1}",
                    question=q,
                    answer=a,
                    link_id=link_id,
                    tags=(cat.name,),
                )
                for j, (q, a) in enumerate(rng.sample(cat.faq, k=rng.choice((1, 2))))
            )
            products.append(
                Product(
                    link_id=link_id,
                    product_id=f"SKU-{seed % 1000:03d}-{link_id:03d}",
                    name=name,
                    category=cat.name,
                    price=_price(rng, *cat.price_range),
                    specs=specs,
                    stock=stock,
                    promotion_ids=tuple(promo_ids),
                    faq=faq,
                    description=f"{name}: {cat.name} from {name.split()[0]}.",
                )
            )
    threshold = float(rng.choice((199, 299)))
    promotions.append(
        Promotion(
            id="room-threshold",
            kind="threshold",
            title="Room-wide spend and save",
            threshold=threshold,
            discount=float(rng.choice((20, 30))),
            repeat=True,
            max_discount=90.0,
            campaign_id="camp-live",
        )
    )
    promotions.append(
        Promotion(
            id="coupon-live",
            kind="coupon",
            title="Live-room coupon",
            code=rng.choice(("LIVE10", "MIA10", "STREAM10")),
            discount=10.0,
            min_spend=99.0,
            campaign_id="camp-live",
        )
    )
    faq = [
        FaqEntry(id=f"shop-{key}", question=q, answer=a, tags=tags) for key, q, a, tags in SHOP_FAQ
    ]
    campaigns = [
        Campaign(
            id="camp-live",
            name="Weekend live special",
            conditions=(
                "Valid during this live stream only",
                "Threshold savings repeat per full threshold, capped at 90 yuan",
                "One coupon per order",
            ),
            promotion_ids=tuple(p.id for p in promotions),
        )
    ]
    return Catalogue(products=products, promotions=promotions, faq=faq, campaigns=campaigns)
