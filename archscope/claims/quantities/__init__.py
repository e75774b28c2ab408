"""The quantities a claim can name (`archscope check-claims --quantities` lists them).

registry.py holds the registry (`QUANTITIES`, `get_quantity`, `Category`); the theme modules
register into it when imported here: shape (model, attention and FFN dimensions), positions
(RoPE), categories (norms, activations, schemes) and sizes (parameters, KV cache, memory,
FLOPs, each a call to archscope.estimate). Import quantities from this package, so that every
theme is registered.
"""

from archscope.claims.quantities.registry import (QUANTITIES, Category, Quantity, get_quantity,
                                                  quantity)
# Importing a theme module registers its quantities (no two register the same name).
from archscope.claims.quantities import categories, positions, shape, sizes  # noqa: F401

__all__ = ["QUANTITIES", "Category", "Quantity", "get_quantity", "quantity"]
