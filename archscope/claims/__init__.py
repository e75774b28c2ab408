"""The claims checker: a document's transcribed claims, recomputed from the model specs.

Modules, in dependency order (each imports only modules before it):
- stated.py: how a number was written, and so how close the computed value must come;
- quantities/: what a claim can name (registry, then shape, positions, categories, sizes);
- causes.py: the likely slip behind a number that differs;
- files.py: the claims file format (described there) and reading it; result.py: ClaimResult;
- verdict.py: stated vs computed -> agree or wrong; check.py: files -> ClaimResults;
- render.py: ClaimResults -> markdown (claims.md) or a text table; the quantities listing.
"""

from archscope.claims.check import check_claim, check_claim_files
from archscope.claims.files import ClaimError
from archscope.claims.quantities import QUANTITIES, Category, Quantity, get_quantity
from archscope.claims.render import claims_markdown, claims_text, quantities_text
from archscope.claims.result import ClaimResult
from archscope.claims.stated import Stated, StatedError, parse_stated

__all__ = [
    "check_claim", "check_claim_files", "ClaimError", "ClaimResult",
    "QUANTITIES", "Category", "Quantity", "get_quantity",
    "claims_markdown", "claims_text", "quantities_text",
    "Stated", "StatedError", "parse_stated",
]
