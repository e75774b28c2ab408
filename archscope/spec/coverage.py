"""What archscope reads of what the installed transformers builds: every model_type transformers
maps to a causal-LM class (and the wrappers and aliases the family modules add), each with its
status at transformers' own default config:

- read exactly: a family module reads it, and its weight names load checkpoints;
- read without weights: a family module reads it (counts, cache, FLOPs), no weight names;
- refused: a family module reads its configs, but refuses the default one, naming the key and
  the component it lacks (a default transformers' own class cannot run gets the family's
  `default_fix` first);
- not read: no family module; `archscope show` of such a config.json counts its parameters
  with transformers' own class on the meta device, and says that nothing else is derived.

Importing transformers' model mapping imports torch: this is not an analytic-speed path.
"""

from __future__ import annotations

import dataclasses

from archscope.errors import SpecError
from archscope.spec.families.registry import families

STATUSES = ("read exactly", "read without weights", "refused", "not read")
@dataclasses.dataclass(frozen=True)
class Coverage:
    model_type: str
    hf_class: str
    status: str  # one of STATUSES
    detail: str = ""  # the refusal (key and component), or what the family is


def causal_lm_types() -> dict[str, str]:
    """model_type -> the causal-LM class transformers maps it to."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def coverage() -> list[Coverage]:
    """One row per model_type, sorted (see the module doc)."""
    classes = causal_lm_types()
    declared = families()
    rows = []
    for model_type in sorted({*classes, *declared}):
        family = declared.get(model_type)
        hf_class = family.hf_class if family else classes[model_type]
        if family is None:
            rows.append(Coverage(model_type, hf_class, "not read",
                                 "no family module: transformers' class counts its parameters"))
            continue
        refusal = _refusal(model_type, family)
        if refusal:
            rows.append(Coverage(model_type, hf_class, "refused", refusal))
        else:
            status = "read exactly" if family.weights else "read without weights"
            rows.append(Coverage(model_type, hf_class, status, family.doc))
    return rows


def _refusal(model_type: str, family) -> str | None:
    """Why archscope refuses transformers' default config of `model_type` (None: it reads)."""
    from transformers import AutoConfig

    from archscope.spec.fields import from_mapping
    from archscope.spec.hf_import import mapping_from_raw
    from archscope.spec.schema import ModelSpec

    raw = _quietly(lambda: AutoConfig.for_model(family.class_of or model_type,
                                                **family.default_fix).to_dict())
    raw["model_type"] = model_type
    try:
        from_mapping(ModelSpec, mapping_from_raw(raw, "default config", model_type, "defaults"))
    except SpecError as err:
        return f"{err.key}: {err.detail}" if err.key else err.detail
    return None


def _quietly(make):
    """`make()` with transformers' logger at errors only: its config classes warn about their
    own defaults (a token id outside the default vocabulary), which say nothing here."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        return make()
    finally:
        hf_logging.set_verbosity(level)
