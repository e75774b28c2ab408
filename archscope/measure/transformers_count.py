"""Parameters of a config.json archscope does not read, counted by transformers' own class built
on the meta device (no memory, no weights; the way accelerate's estimate-memory works, offline):
the one number archscope can still give exactly for such a model. Nothing else (cache, FLOPs,
state) is derived from it: `archscope show` says so beside the count."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from archscope.errors import SpecError
from archscope.spec.hf_keys import JSON_BYTES_MAX


@dataclasses.dataclass(frozen=True)
class CountedByTransformers:
    model_type: str
    hf_class: str  # the causal-LM class transformers built (a wrapper's text model's)
    params_total: int  # unique tensors: a tied head counts once
    params_embedding: int


def count_with_transformers(path: str | Path) -> CountedByTransformers:
    """Build transformers' causal-LM class for the config.json at `path` (file or folder) on the
    meta device and count its parameters. SpecError (naming model_type) when transformers does
    not know the type or cannot build it."""
    import torch
    import transformers

    file = Path(path) / "config.json" if Path(path).is_dir() else Path(path)
    with file.open("rb") as handle:  # archscope's reader has checked it is a JSON object
        raw = json.loads(handle.read(JSON_BYTES_MAX + 1))
    model_type = raw.get("model_type")
    try:
        config = transformers.AutoConfig.for_model(
            model_type, **{k: v for k, v in raw.items() if k != "model_type"})
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(text)
    except Exception as err:  # noqa: BLE001 - any failure of transformers' own class
        raise SpecError(f"transformers cannot build it either: {type(err).__name__}: "
                        f"{str(err).splitlines()[0] if str(err) else ''}", where=str(file),
                        key="model_type") from None
    embedding = model.get_input_embeddings().weight.numel()
    return CountedByTransformers(model_type, type(model).__name__,
                                 sum(p.numel() for p in model.parameters()), embedding)
