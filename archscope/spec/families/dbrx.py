"""DBRX (transformers' `dbrx`, DbrxForCausalLM): Llama's block with LayerNorms without bias
(nn.LayerNorm(d_model, bias=False): eps 1e-5, no config key), q, k and v in one fused Wqkv
(rows q, k, v: archscope's qkv_proj) clamped to +-clip_qkv, no attention bias, head_dim
d_model / n_heads, and every layer a MoE: a bias-free router Linear, softmax over all
experts, the top moe_top_k, those weights divided by their p-norm (moe_normalize_expert_weights
p; DBRX's 1: their sum, archscope's renormalisation), and GLU experts (ffn_act_fn's
activation). The config nests its attention and FFN keys (attn_config, ffn_config; their
defaults are DbrxAttentionConfig's and DbrxFFNConfig's) and names the shape d_model, n_heads,
n_layers, max_seq_len.

RoPE: DBRX's files give its theta only as attn_config.rope_theta (500000), which transformers
5's DbrxAttention requires (its class fails without it) but never applies: its rotary embedding
reads the top-level rope_parameters, so such a file runs at DbrxConfig's default 10000 there.
archscope reads the model's theta: attn_config.rope_theta where the file has no top-level RoPE
key, and refuses the two when they disagree; it writes both, so transformers rotates alike.

Weights: transformers' names, which DBRX's checkpoints use: transformer.wte, blocks.{i}
.norm_attn_norm.{norm_1, attn.Wqkv, attn.out_proj, norm_2}, blocks.{i}.ffn.router.layer,
norm_f; each projection's experts stacked in one 2-D tensor, ffn.experts.mlp.w1 (gate), v1 (up)
[E*f, d] as nn.Linear rows and w2 [E*f, d] as x @ W: our gate_up_proj's halves and our
down_proj, each expert's block transposed (weights/layouts.py).
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import Family, frozen, rules
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _ACT, _rope
from archscope.spec.hf_writers_base import HF_ACT, rope_parameters
from archscope.spec.schema import ModelSpec

EPS = 1e-5  # nn.LayerNorm's default: DbrxConfig has no eps key
_ATTN, _FFN = "attn_config", "ffn_config"
_ROPE_KEYS = ("rope_parameters", "rope_scaling", "rope_theta")


def _position(c: Keys) -> dict:
    """The model's RoPE (see the module doc): attn_config.rope_theta unless the top level says
    otherwise; the class fails without it, so a file lacking it is refused."""
    key = f"{_ATTN}.rope_theta"
    if c.get(key) is None:
        raise c.error(key, "required: transformers' DbrxAttention reads it and fails without "
                           "it (DbrxAttentionConfig has no default)")
    theta = c.number(key)
    if not any(k in c.raw for k in _ROPE_KEYS):
        return {"kind": "rope", "theta": theta}
    position = _rope(c)
    if theta != position["theta"]:
        raise c.error(key, f"is {theta}, but the file's RoPE says {position['theta']}: DBRX's "
                           "own code rotates by attn_config.rope_theta, transformers 5 by "
                           "rope_parameters; archscope refuses the ambiguity")
    return position


def _act(c: Keys) -> str:
    key = f"{_FFN}.ffn_act_fn"
    fn = c.get(key)
    if fn is None:  # DbrxFFNConfig's __post_init__: {"name": "silu"}
        return "silu"
    if not isinstance(fn, dict) or set(fn) - {"name"}:
        raise c.error(key, f"expected {{\"name\": <activation>}} (DbrxExpertGLU reads the name "
                           f"only), {what(fn)}")
    return _ACT[c.text(f"{key}.name", _ACT, noun="activation", fallback=fn.get("name", "silu"))]


def _normalize(c: Keys) -> bool:
    key = f"{_FFN}.moe_normalize_expert_weights"
    p = c.number(key, null=True)
    if p is not None and p != 1:
        raise c.error(key, f"DbrxFFN divides the top-k weights by their {p}-norm; archscope's "
                           "router renormalises by their sum (the 1-norm) only")
    return p is not None


def read(c: Keys) -> dict:
    for section in (_ATTN, _FFN):
        c.mapping(section)  # a mapping or null, checked before its keys are read
    if c.flag("tie_word_embeddings"):
        raise c.error("tie_word_embeddings", "transformers' DbrxConfig refuses tied embeddings")
    width, heads = c.size(c.alias("d_model", "hidden_size")), c.size("n_heads")
    kv = c.size(f"{_ATTN}.kv_n_heads")
    if width % heads:
        raise c.error("n_heads", f"d_model ({width}) is not a multiple of n_heads ({heads}): "
                                 "DbrxAttention's Wqkv splits d_model query rows into heads")
    if heads % kv:
        raise c.error(f"{_ATTN}.kv_n_heads", f"n_heads ({heads}) must be a multiple of "
                                             f"kv_n_heads ({kv})")
    experts, top_k = c.size(f"{_FFN}.moe_num_experts"), c.size(f"{_FFN}.moe_top_k")
    if top_k > experts:
        raise c.error(f"{_FFN}.moe_top_k", f"top-k ({top_k}) cannot exceed moe_num_experts "
                                           f"({experts})")
    c.number(f"{_FFN}.moe_jitter_eps", null=True, positive=False)  # training only: checked
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size(c.alias("n_layers", "num_hidden_layers")),
            "max_seq_len": c.size(c.alias("max_seq_len", "max_position_embeddings")),
            "tie_embeddings": False,
            "norm": {"kind": "layernorm", "eps": EPS, "bias": False, "position": "pre"},
            "position": _position(c),
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": width // heads, "fused_qkv": True,
                          "clip_qkv": c.number(f"{_ATTN}.clip_qkv", null=True)},
            "ffn": {"kind": "moe", "activation": _act(c), "n_experts": experts,
                    "top_k": top_k, "d_expert": c.size(f"{_FFN}.ffn_hidden_size"),
                    "router": {"normalize": _normalize(c)}}}


def write(s: ModelSpec) -> dict:
    """DbrxConfig's keys for `s`; what DBRX's class cannot build (a dense layer, heads that do
    not divide d_model) is named here, anything else by the exporter's read-back."""
    a, f = s.attention, s.ffn
    if a.head_dim * a.n_heads != s.d_model:
        raise SpecError(f"transformers' Dbrx sizes heads as d_model / n_heads ({s.d_model} / "
                        f"{a.n_heads}); head_dim is {a.head_dim}", key="attention.head_dim")
    dense = next((layer for layer in s.plan if not layer.is_moe), None)
    if dense is not None:
        raise SpecError(f"transformers' Dbrx makes every layer MoE; layer {dense.index} is "
                        f"'{dense.ffn.kind}'", key="ffn.kind" if dense.ffn is f else "layers")
    return {"vocab_size": s.vocab_size, "d_model": s.d_model, "n_layers": s.n_layers,
            "n_heads": a.n_heads, "max_seq_len": s.max_seq_len, "tie_word_embeddings": False,
            "rope_parameters": rope_parameters(s.position),
            _ATTN: {"kv_n_heads": a.kv_heads, "clip_qkv": a.clip_qkv,
                    "rope_theta": s.position.theta},
            _FFN: {"ffn_act_fn": {"name": HF_ACT[f.activation]}, "ffn_hidden_size": f.d_expert,
                   "moe_num_experts": f.n_experts, "moe_top_k": f.top_k,
                   # a float: DbrxFFNConfig (strict) refuses the int 1 DBRX's own files carry
                   "moe_normalize_expert_weights": 1.0 if f.routing.normalize else None}}


_BLOCK, _EXPERTS = "transformer.blocks.{i}", "layers.{i}.mlp.experts"
WEIGHTS = rules(
    ("transformer.wte.weight", "embed_tokens.weight"),
    (f"{_BLOCK}.norm_attn_norm.norm_1.weight", "layers.{i}.input_layernorm.weight"),
    (f"{_BLOCK}.norm_attn_norm.attn.Wqkv.weight", "layers.{i}.self_attn.qkv_proj.weight"),
    (f"{_BLOCK}.norm_attn_norm.attn.out_proj.weight", "layers.{i}.self_attn.o_proj.weight"),
    (f"{_BLOCK}.norm_attn_norm.norm_2.weight", "layers.{i}.post_attention_layernorm.weight"),
    (f"{_BLOCK}.ffn.router.layer.weight", "layers.{i}.mlp.gate.weight"),
    (f"{_BLOCK}.ffn.experts.mlp.w1", f"{_EXPERTS}.gate_up_proj",
     {"layout": "stacked_experts", "split_dim": 1, "part": (0, 2)}),
    (f"{_BLOCK}.ffn.experts.mlp.v1", f"{_EXPERTS}.gate_up_proj",
     {"layout": "stacked_experts", "split_dim": 1, "part": (1, 2)}),
    (f"{_BLOCK}.ffn.experts.mlp.w2", f"{_EXPERTS}.down_proj",
     {"layout": "stacked_experts_transposed"}),
    ("transformer.norm_f.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"),
)


def _is_dbrx(s: ModelSpec) -> bool:
    """The one class with bias-free LayerNorms and MoE layers."""
    return s.norm.kind == "layernorm" and not s.norm.has_bias and s.norm.has_weight \
        and any(layer.is_moe for layer in s.plan)


DBRX = Family(
    "dbrx", "DbrxForCausalLM", read=read, write=write, exports=_is_dbrx, ffns=("moe",),
    weights=WEIGHTS,
    spec_keys=frozen({
        "vocab_size": "vocab_size", "d_model": "d_model", "n_layers": "n_layers",
        "max_seq_len": "max_seq_len", "tie_embeddings": "tie_word_embeddings",
        "position.theta": f"{_ATTN}.rope_theta", "position.scaling": "rope_parameters",
        "attention.n_heads": "n_heads", "attention.n_kv_heads": f"{_ATTN}.kv_n_heads",
        "attention.clip_qkv": f"{_ATTN}.clip_qkv", "ffn.activation": f"{_FFN}.ffn_act_fn",
        "ffn.n_experts": f"{_FFN}.moe_num_experts", "ffn.top_k": f"{_FFN}.moe_top_k",
        "ffn.d_expert": f"{_FFN}.ffn_hidden_size"}),
    key_fields=frozen({"kv_n_heads": "n_kv_heads", "ffn_hidden_size": "d_expert",
                       "moe_num_experts": "n_experts", "moe_top_k": "top_k"}),
    # DbrxAttentionConfig has no rope_theta, which DbrxAttention reads: the default config
    # fails to build without one (10000 is DbrxConfig's default theta, the one it rotates by)
    default_fix=frozen({_ATTN: {"rope_theta": 10000.0}}),
    names=("dbrx",), usual={"dbrx": "dbrx"},
    doc="Llama with bias-free LayerNorms, fused clipped Wqkv and a MoE of stacked GLU experts")
FAMILIES = (DBRX,)
