"""Tiny specs for the estimator tests, built from mappings (no files), as fixtures."""

from __future__ import annotations

import pytest

from archscope.spec import ModelSpec, load_spec, preset_names
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.loader import deep_merge


class Tiny:
    """`tiny(**changes)`: BASE with `changes` deep-merged over it (a new `kind` replaces the
    mapping). BASE: vocab 100, d 16, 2 layers, 4 query heads of 4 over 2 KV heads, SwiGLU 32."""

    BASE = {
        "name": "tiny", "source": "test", "vocab_size": 100, "d_model": 16, "n_layers": 2,
        "max_seq_len": 64,
        "norm": {"kind": "rmsnorm", "eps": 1e-5},
        "position": {"kind": "rope", "theta": 10000.0},
        "attention": {"kind": "gqa", "n_heads": 4, "n_kv_heads": 2, "head_dim": 4},
        "ffn": {"kind": "swiglu", "d_ff": 32},
    }
    MLA = {"kind": "mla", "n_heads": 4, "q_lora_rank": 8, "kv_lora_rank": 6,
           "qk_nope_head_dim": 4, "qk_rope_head_dim": 2, "v_head_dim": 3}
    MOE = {"kind": "moe", "n_experts": 4, "top_k": 2, "d_expert": 8, "n_shared_experts": 1}
    # GPT-2 style: learned positions, LayerNorm with bias, biased projections, GELU MLP, tied.
    GPT2 = {"position": {"kind": "learned"}, "norm": {"kind": "layernorm", "eps": 1e-5},
            "attention": {"n_kv_heads": 4, "bias": True},
            "ffn": {"kind": "mlp", "d_ff": 64, "activation": "gelu_tanh", "bias": True},
            "tie_embeddings": True}

    def __call__(self, **changes) -> ModelSpec:
        return from_mapping(ModelSpec, deep_merge(self.BASE, changes))


@pytest.fixture
def tiny() -> Tiny:
    return Tiny()


@pytest.fixture
def preset():
    """`preset(name)`: the shipped preset, or skip while it is not shipped yet."""
    def load(name: str) -> ModelSpec:
        if name not in preset_names():
            pytest.skip(f"preset {name} not shipped yet")
        return load_spec(name)
    return load


# Tiny variants: every size shrunk, every kind and flag kept.
_ATTENTION = {"head_dim": 8, "window": 6, "q_lora_rank": 16, "kv_lora_rank": 8,
              "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6}
_FFN = {"d_ff": 64, "n_experts": 4, "d_expert": 16, "d_shared": 24}
# a DSA indexer: 2 heads of 8, choosing 4 of a 10-token prompt's keys (a shared one: topk only)
_INDEXER = {"n_heads": 2, "head_dim": 8, "topk": 4}


def _shrink_attention(a: dict, heads: int) -> dict:
    out = {k: v if v is None else _ATTENTION.get(k, v) for k, v in a.items()}  # null: as is
    if "n_heads" in a:
        out["n_heads"] = 4
    if "n_kv_heads" in a:  # keep MHA / MQA / GQA as it was
        out["n_kv_heads"] = {heads: 4, 1: 1}.get(a["n_kv_heads"], 2)
    if a.get("indexer"):
        out["indexer"] = {k: _INDEXER.get(k, v) for k, v in a["indexer"].items()}
    return out


def _shrink_ffn(f: dict) -> dict:
    out = {k: _FFN.get(k, v) for k, v in f.items()}
    if "top_k" in f:
        out["top_k"] = min(f["top_k"], 2)
    if f.get("n_shared_experts"):
        out["n_shared_experts"] = min(f["n_shared_experts"], 2)
    if "router" in f and (f["router"].get("n_group") or 0) > 1:  # one group stays one
        out["router"] = {**f["router"], "n_group": 2, "topk_group": 1}
    return out


# State mixers: several heads and groups kept; Mamba-2's scan in chunks of 4 (a 10-token
# prompt spans three). The Gated DeltaNet keeps its 64: transformers' class has no key for it
# and always scans in chunks of 64, so the export refuses another. Lightning in blocks of 4.
_MIXER = {"mamba2": {"n_heads": 4, "head_dim": 8, "d_state": 8, "chunk_size": 4},
          "gated_deltanet": {"n_key_heads": 2, "key_head_dim": 8, "value_head_dim": 8},
          # RecurrentGemma's gates have as many blocks as attention has heads (4 here)
          "rglru": {"lru_width": 48, "n_heads": 4},
          # lightning: blocks of 4 (a 10-token prompt runs 4 + 4 + 2)
          "lightning": {"n_heads": 4, "head_dim": 8, "block_size": 4},
          "kimi_delta": {"n_heads": 2, "head_dim": 8},  # Kimi's scan: 64 too
          "short_conv": {"width": 32},  # LFM2's: the shrunk d_model, as transformers builds it
          # Mamba-1: twice the shrunk d_model (the families size it as expand * d_model)
          "mamba1": {"d_inner": 64, "dt_rank": 4, "d_state": 8}}


def _shrink_mixer(x: dict) -> dict:
    out = {**x, **_MIXER[x["kind"]]}
    if "n_groups" in x:  # 1 or 2 groups, dividing the 4 heads
        out["n_groups"] = min(x["n_groups"], 2)
    if "n_value_heads" in x:  # keep value heads per key head (at most 2)
        out["n_value_heads"] = 2 * min(x["n_value_heads"] // x["n_key_heads"], 2)
    return out


def _layer_count(spec: ModelSpec) -> int:
    """6 layers (SmolLM3 NoPEs layer 3, "3::4"; Gemma 3's layer 5 is global, "5::6"), unless
    the overrides name layers beyond (a hybrid's pattern): then all of them, still tiny, or a
    slice starts beyond: then up to its first layer."""
    named = [i for o in spec.layers if isinstance(o.select, tuple) for i in o.select]
    if named and max(named) >= 6:
        return spec.n_layers
    # a slice starting beyond (MiniMax-01's softmax layers, "7::8"): up to its first layer
    starts = [o.select.split(":")[0] for o in spec.layers if isinstance(o.select, str)]
    return max([6] + [int(a) + 1 for a in starts if a.isdigit()])


def _shrink_longrope(m: dict) -> None:
    """LongRoPE's factors, one per rotated pair: as many of them, evenly spaced, as the shrunk
    head rotates pairs (the first and last kept)."""
    scaling = m.get("position", {}).get("scaling") or {}
    if scaling.get("kind") != "longrope":
        return
    fraction = m["attention"].get("rotary_fraction") or 1.0
    pairs = int(m["attention"]["head_dim"] * fraction) // 2
    for name in ("short_factor", "long_factor"):
        factors = scaling[name]
        picked = [round(i * (len(factors) - 1) / max(pairs - 1, 1)) for i in range(pairs)]
        scaling[name] = [factors[i] for i in picked]


def shrink(spec: ModelSpec) -> ModelSpec:
    m = to_mapping(spec)
    m.update(vocab_size=96, d_model=32, n_layers=_layer_count(spec), max_seq_len=64)
    if "mixer" in m:
        m["mixer"] = _shrink_mixer(m["mixer"])
    heads = spec.attention.n_heads
    m["attention"] = _shrink_attention(m["attention"], heads)
    m["ffn"] = _shrink_ffn(m["ffn"])
    _shrink_longrope(m)
    mults = m.get("multipliers") or {}
    if mults.get("embedding") == spec.d_model ** 0.5:  # Gemma's sqrt(d_model): still that
        mults["embedding"] = m["d_model"] ** 0.5
        if m.get("mixer", {}).get("kind") == "rglru":  # RecurrentGemma's is a bf16 buffer
            from archscope.spec.families.recurrent_gemma import embedding_scale

            mults["embedding"] = embedding_scale(m["d_model"])
    if m.get("shared"):  # shared blocks: their uses among the tiny layers (1, 3, 5 else)
        s, n = m["shared"], m["n_layers"]
        s["at"] = [i for i in s["at"] if i < n] if sum(i < n for i in s["at"]) > 1 else \
            list(range(1, n, 2))
        s["copies"] = min(s["copies"], len(s["at"]))
        s["adapter_rank"] = min(s["adapter_rank"], 4)
        a, old = m["attention"], spec.attention
        if old.head_dim == 2 * spec.d_model // old.n_heads:  # heads over concat(hidden, emb)
            a["head_dim"] = 2 * m["d_model"] // a["n_heads"]  # (Zamba 2's): still so
            if mults.get("attention") == (old.head_dim / 2) ** -0.5:  # and its scale
                mults["attention"] = (a["head_dim"] / 2) ** -0.5
    for override in m.get("layers", []):
        if "attention" in override:
            override["attention"] = _shrink_attention(override["attention"], heads)
        if isinstance(override.get("ffn"), dict):
            # an MLP as wide as the experts stays so (Jamba sizes both by intermediate_size)
            alike = spec.ffn.kind == "moe" and override["ffn"].get("d_ff") == spec.ffn.d_expert
            override["ffn"] = _shrink_ffn(override["ffn"])
            if alike:
                override["ffn"]["d_ff"] = m["ffn"]["d_expert"]
    return from_mapping(ModelSpec, m)


@pytest.fixture
def tiny_variant():
    """`tiny_variant(spec)`: the same kinds and flags at toy sizes (d 32, 6 layers, vocab 96)."""
    return shrink
