"""Mistral 3 (transformers' `mistral3`, Mistral3ForConditionalGeneration: Mistral Small 3.1 and
later, Ministral 3): a Pixtral vision tower and projector in front of a text model that is read
here from `text_config`, by its own family (its model_type: mistral, the class default,
ministral or ministral3). The vision tower and projector have no counterpart here: their
tensors are skipped while loading.

Without a text_config, transformers builds Mistral3Config's default text model (Mistral Small
3.1's shape) from the init_kwargs it keeps for it; so does this reader.

Tied embeddings: the text model's tie_word_embeddings (its class default when it says nothing;
Mistral's is false) decides, as transformers 4.x did and as the text model built alone does. A
top-level tie_word_embeddings that disagrees is refused as ambiguous. (transformers 5's wrapper
ties by its own flag, whose class default is true: for Mistral Small 3.1's published
config.json, which says nothing on either level, it ties the lm_head that the checkpoint ships
untied.)"""

from __future__ import annotations

import dataclasses

from archscope.spec.families.base import frozen, renamed, rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.ministral import read as read_ministral
from archscope.spec.families.ministral3 import read as read_ministral3
from archscope.spec.families.mistral import read as read_mistral
from archscope.spec.hf_keys import Defaulted, Keys, what
from archscope.spec.hf_readers_base import check_one_tie, read_text_config

# text_config's model_type -> its reader (the text models Mistral 3 checkpoints carry)
_TEXT = {"mistral": read_mistral, "ministral": read_ministral, "ministral3": read_ministral3}
_DEFAULT_TEXT = "mistral"  # Mistral3Config's sub-config default


def _default_text_config() -> dict:
    """Mistral3Config's default text model keys (transformers' sub_configs_defaults), looked
    up only when a file has no text_config (transformers imports torch)."""
    from transformers import CONFIG_MAPPING

    spec = CONFIG_MAPPING["mistral3"].sub_configs_defaults["text_config"]
    return dict(spec.init_kwargs)


def read(c: Keys) -> dict:
    text = c.raw.get("text_config")
    if text is None:
        text = _default_text_config()
        c.defaulted.setdefault("text_config", Defaulted("text_config", text, c.where))
    elif not isinstance(text, dict):
        raise c.error("text_config", f"expected a mapping, {what(text)}")
    model_type = text.get("model_type", _DEFAULT_TEXT)
    if not isinstance(model_type, str) or model_type not in _TEXT:
        raise c.error("text_config.model_type", f"archscope reads Mistral 3's text model as "
                                                f"{', '.join(_TEXT)}, {what(model_type)}")
    sub = Keys(text, model_type, c.where)
    out = read_text_config(c, sub, _TEXT[model_type])
    check_one_tie(c, out)
    return out


# transformers 5: the text model under model.language_model, the head at the top; checkpoints
# saved by 4.x: language_model.model and language_model.lm_head (the llava conversion)
_BODY = tuple(r for r in LLAMA.weights if r.hf.startswith("model."))
MISTRAL3 = LLAMA.but(
    "mistral3", "Mistral3ForConditionalGeneration", read=read,
    weights=renamed(_BODY, "model.", "model.language_model.")
    + tuple(dataclasses.replace(r, alias=True)
            for r in renamed(_BODY, "model.", "language_model.model."))
    + rules(("lm_head.weight", "lm_head.weight"),
            ("language_model.lm_head.weight", "lm_head.weight", {"alias": True})),
    skipped_prefixes=("model.vision_tower.", "model.multi_modal_projector.", "vision_tower.",
                      "multi_modal_projector."),
    spec_keys=frozen({k: f"text_config.{v}" for k, v in LLAMA.spec_keys.items()}),
    # Mistral3Config ties by its own flag (default true) and saves it beside its text model's
    # (Mistral's default, false): refused as ambiguous (transformers itself unties when a
    # checkpoint ships both tensors); the fix agrees with the text model
    default_fix=frozen({"tie_word_embeddings": False}),
    names=("mistral",), doc="Mistral's text model inside the multimodal wrapper")
FAMILIES = (MISTRAL3,)
