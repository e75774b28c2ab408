"""What the config.json writers share: activation names, the RoPE and shape keys every RoPE
family starts from (hf_export.py holds the 2024 families, hf_<family>.py the others)."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.fields import to_mapping
from archscope.spec.hf_readers_base import RENAMED
from archscope.spec.schema import ModelSpec, PositionSpec

HF_ACT = {"silu": "silu", "gelu": "gelu", "relu": "relu", "gelu_tanh": "gelu_new",
           "quick_gelu": "quick_gelu", "xielu": "xielu"}  # xielu: only Apertus reads it back
RENAMED_BACK = {ours: hf for hf, ours in RENAMED.items()}


def rope_parameters(position: PositionSpec) -> dict:
    """One `rope_parameters` entry (transformers 5's layout) for a RoPE position: rope_type,
    rope_theta and the scaling's keys under their HF names."""
    scaling = to_mapping(position.scaling) if position.scaling else {"kind": "default"}
    return {"rope_type": scaling.pop("kind"), "rope_theta": position.theta,
            **{RENAMED_BACK.get(k, k): v for k, v in scaling.items()}}


def to_base(s: ModelSpec) -> dict:
    """The shape, norm and RoPE keys every RoPE family's config starts from."""
    p = s.position
    if p.kind != "rope":
        raise SpecError(f"this transformers class uses RoPE, not {p.kind!r}", key="position.kind")
    rope = rope_parameters(p)
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "rms_norm_eps": s.norm.eps,
            "rope_parameters": rope}


def without(mapping: dict, *keys: str) -> dict:
    return {k: v for k, v in mapping.items() if k not in keys}



def two_matrix_act(s: ModelSpec) -> str:
    """The hidden_act of a non-gated MLP (kind mlp or relu2): relu2 is transformers' name too."""
    return "relu2" if s.ffn.kind == "relu2" else HF_ACT[s.ffn.activation]
