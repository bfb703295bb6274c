"""Skill and tool names of the demo Harness (``harness/demo/livestream-avatar``) used in gold
labels.

Kept in one place so a renamed skill or tool changes one line; a test checks
that every name here exists in the shipped demo Harness.
"""

# Reply skills (response responsibility)
ITEM_QA = "item_qa"
CHILLCHAT = "chillchat"
AFTERSALE = "aftersale"
CLARIFICATION = "clarification"
FAQ_REPLY = "faq_reply"
REFUSAL = "refusal"
THANKS = "thanks"
GREET = "greet"
# Strategy skills (tool-chain responsibility)
BENEFIT = "tool_strategy_benefit"
COMPARE = "tool_strategy_compare"
MULTI = "tool_strategy_multi"
SWITCH = "tool_strategy_switch"
GENERAL_DISCOUNT = "general_discount"
CHANGE_ORDER = "change_order"

REPLY_SKILLS = (ITEM_QA, CHILLCHAT, AFTERSALE, CLARIFICATION, FAQ_REPLY, REFUSAL, THANKS, GREET)
STRATEGY_SKILLS = (BENEFIT, COMPARE, MULTI, SWITCH, GENERAL_DISCOUNT, CHANGE_ORDER)

# Tools
PRODUCT_INFO = "get_product_info_by_link_id"
SEARCH_PRODUCTS = "search_products"
SEARCH_FAQ = "search_faq"
ROOM_STATUS = "get_room_status"
CHANGE_ORDER_TOOL = "change_presentation_order"
ROOM_PROMOTIONS = "get_room_promotions"
CAMPAIGN_CONDITIONS = "get_campaign_conditions"
CALC_PROMOTION = "calculate_promotion"
CALC_OPTIMAL = "calculate_optimal_promotion"
LOAD_SKILL = "load_skill"
STAY_SILENT = "stay_silent"

TOOLS = (
    PRODUCT_INFO,
    SEARCH_PRODUCTS,
    SEARCH_FAQ,
    ROOM_STATUS,
    CHANGE_ORDER_TOOL,
    ROOM_PROMOTIONS,
    CAMPAIGN_CONDITIONS,
    CALC_PROMOTION,
    CALC_OPTIMAL,
    LOAD_SKILL,
    STAY_SILENT,
)
