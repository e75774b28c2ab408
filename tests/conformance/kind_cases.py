"""The kind cases of the conformance suite: one tiny spec per component kind (and per variant of
a kind that changes its parts, cache or FLOPs), run through the builder, the estimators and
`show --verify` in test_kinds.py. A new kind adds a line here."""

from __future__ import annotations

from archscope.spec import ModelSpec
from archscope.spec.fields import from_mapping
from archscope.spec.loader import deep_merge

BASE = {"name": "tiny", "source": "test", "vocab_size": 96, "d_model": 32, "n_layers": 2,
        "max_seq_len": 64, "norm": {"kind": "rmsnorm", "eps": 1e-5},
        "position": {"kind": "rope", "theta": 10000.0},
        "attention": {"kind": "gqa", "n_heads": 4, "n_kv_heads": 2, "head_dim": 8},
        "ffn": {"kind": "swiglu", "d_ff": 48}}
_MLA = {"kind": "mla", "n_heads": 4, "q_lora_rank": 16, "kv_lora_rank": 12,
        "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6}
_MOE = {"kind": "moe", "n_experts": 4, "top_k": 2, "d_expert": 16}
_MAMBA2 = {"kind": "mamba2", "n_heads": 4, "head_dim": 8, "d_state": 8, "n_groups": 2,
           "conv_kernel": 4, "chunk_size": 4}
_GDN = {"kind": "gated_deltanet", "n_key_heads": 2, "n_value_heads": 4, "key_head_dim": 8,
        "value_head_dim": 8, "conv_kernel": 4}
_RGLRU = {"kind": "rglru", "lru_width": 48, "n_heads": 4, "conv_kernel": 4}

# id -> changes deep-merged over BASE (a mapping with a new `kind` replaces the old one)
KIND_CASES = {
    "gqa": {},
    "gqa-mha-bias-tied": {"attention": {"n_kv_heads": 4, "bias": True}, "tie_embeddings": True},
    "gqa-window": {"attention": {"window": 6}},
    "gqa-qk-norm-head": {"attention": {"qk_norm": "head"}},
    "gqa-qk-norm-full": {"attention": {"qk_norm": "full"}, "norm": {"position": "output"}},
    # Hunyuan's query_layernorm/key_layernorm: the per-head RMSNorm after RoPE
    "gqa-qk-norm-after-rope": {"attention": {"qk_norm": "head", "qk_norm_after_rope": True}},
    "gqa-sinks": {"attention": {"sinks": True, "bias": True}},
    "gqa-output-gate-partial-rope": {"attention": {"output_gate": True, "rotary_fraction": 0.5}},
    "gqa-chunk-l2-interleaved": {"attention": {"chunk": 4, "qk_norm": "l2"},
                                 "position": {"interleaved": True}},
    "gqa-fused": {"attention": {"fused_qkv": True}, "ffn": {"fused_gate_up": True}},
    "gqa-nope-layer": {"layers": [{"select": [1], "attention": {"rope": False}}]},
    "mla": {"attention": _MLA},
    "mla-no-q-lora": {"attention": {**_MLA, "q_lora_rank": None}},
    # DeepSeek Sparse Attention: the indexer keeps 4 of the prompt's 10 keys; GLM-5's shared
    # selection on the second layer, with the indexer's RoPE on adjacent pairs
    "mla-dsa": {"attention": {**_MLA, "indexer": {"n_heads": 2, "head_dim": 8, "topk": 4}}},
    "mla-dsa-shared-interleaved": {
        "attention": {**_MLA, "indexer": {"n_heads": 2, "head_dim": 6, "topk": 4,
                                          "interleaved": True}},
        "layers": [{"select": [1], "attention": {"indexer": {"topk": 4, "shared": True}}}]},
    "mlp-learned-layernorm": {"position": {"kind": "learned"},
                              "norm": {"kind": "layernorm", "eps": 1e-5},
                              "ffn": {"kind": "mlp", "d_ff": 64, "activation": "gelu_tanh",
                                      "bias": True}},
    "geglu-sandwich": {"ffn": {"kind": "geglu", "d_ff": 48, "activation": "gelu_tanh"},
                       "norm": {"position": "sandwich", "unit_offset": True}},
    "relu2": {"ffn": {"kind": "relu2", "d_ff": 64}},
    "moe": {"ffn": _MOE},
    "moe-shared-sigmoid": {"ffn": {**_MOE, "n_shared_experts": 1,
                                   "router": {"method": "noaux_tc", "scoring": "sigmoid",
                                              "correction_bias": True, "n_group": 2,
                                              "topk_group": 1}}},
    "mamba2-hybrid": {"mixer": _MAMBA2, "position": {"kind": "none"},
                      "layers": [{"select": [1], "mixer": "attention"}]},
    "gated-deltanet-hybrid": {"mixer": _GDN,
                              "layers": [{"select": [1], "mixer": "attention"}]},
    "multipliers": {"multipliers": {"embedding": 4.0, "attention": 0.25, "residual": 0.5,
                                    "logits": 2.0}},
    "parallel-block-layernorm-no-bias": {"norm": {"kind": "layernorm", "eps": 1e-5,
                                                  "bias": False, "position": "parallel"}},
    "norms-without-weight": {"norm": {"kind": "layernorm", "eps": 1e-5, "weight": False}},
    "rmsnorm-without-weight": {"norm": {"weight": False}},
    "head-bias-and-softcap": {"head": {"bias": True, "softcap": 3.0}},
    "attention-softcap-and-clip": {"attention": {"softcap": 2.0, "clip_qkv": 0.5}},
    # Cohere's QK LayerNorm, a weight row per head (a bias here too, which Cohere lacks)
    "qk-layernorm-per-head": {"norm": {"kind": "layernorm", "eps": 1e-5},
                              "attention": {"qk_norm": "per_head", "qk_norm_kind": "layernorm",
                                            "qk_norm_bias": True}},
    # Phi-2's qk_layernorm: one LayerNorm with bias for every head
    "qk-layernorm-head-bias": {"attention": {"qk_norm": "head", "qk_norm_kind": "layernorm",
                                             "qk_norm_bias": True}},
    # Nemotron's LayerNorm1P: (1 + weight), with bias
    "layernorm-unit-offset": {"norm": {"kind": "layernorm", "eps": 1e-5, "unit_offset": True}},
    # nanochat: a weightless norm after the embedding too, RoPE turning the other way
    "embedding-norm-reversed-rope": {"norm": {"weight": False, "embedding": True},
                                     "position": {"reversed": True}},
    # BLOOM-like: an embedding LayerNorm with weight and bias
    "embedding-layernorm": {"norm": {"kind": "layernorm", "eps": 1e-5, "embedding": True}},
    "moe-sparsemixer": {"ffn": {**_MOE, "router": {"method": "sparsemixer", "jitter_eps": 0.5,
                                                   "normalize": False}}},
    "sub-norms-relu2-glu": {"attention": {"sub_norm": True},
                            "ffn": {"activation": "relu2", "sub_norm": True}},
    # ERNIE 4.5: softmax scores, a selection bias that is a counted parameter
    "moe-correction-bias-parameter": {"ffn": {**_MOE, "router": {
        "method": "noaux_tc", "correction_bias": True, "correction_bias_parameter": True,
        "n_group": 1, "topk_group": 1}}},
    # GLM-4: part of each head rotated, on adjacent pairs
    "partial-rope-interleaved": {"attention": {"rotary_fraction": 0.5},
                                 "position": {"interleaved": True}},
    # Ministral 3: temperature tuning counted from the position itself, on RoPE layers
    "gqa-temperature-from-position": {"attention": {"temperature_floor": 4,
                                                    "temperature_scale": 0.5,
                                                    "temperature_offset": 0}},
    # MiniCPM3: MLA's decoupled RoPE dims in half-split pairs
    "mla-half-split-rope": {"attention": {**_MLA, "rope_half_split": True}},
    # Apertus: a two-matrix MLP with xIELU (alpha_p, alpha_n learned per MLP)
    "mlp-xielu": {"ffn": {"kind": "mlp", "d_ff": 48, "activation": "xielu"}},
    # Griffin: the RG-LRU recurrent block (wider than d_model) beside windowed MQA
    "rglru-hybrid": {"mixer": _RGLRU, "attention": {"n_kv_heads": 1, "window": 6},
                     "layers": [{"select": [1], "mixer": "attention"}]},
    # Qwen3.5: the Gated DeltaNet's projections split (in_proj_qkv, _z, _b, _a)
    "gated-deltanet-split-hybrid": {"mixer": {**_GDN, "projections": "split"},
                                    "layers": [{"select": [1], "mixer": "attention"}]},
    # MiniMax-01's lightning attention (blocks of 4, shorter than the kind tests' prompts) with
    # its normed-residual block and DeepNorm's scales
    "lightning-hybrid": {"mixer": {"kind": "lightning", "n_heads": 4, "head_dim": 8,
                                   "block_size": 4},
                         "norm": {"position": "normed_residual"},
                         "multipliers": {"skip": 1.5, "residual": 0.75},
                         "layers": [{"select": [1], "mixer": "attention"}]},
    # Kimi Linear: KDA (a decay per key channel) with NoPE MLA on layer 1, chunks of 4
    "kimi-delta-hybrid-nope-mla": {
        "mixer": {"kind": "kimi_delta", "n_heads": 2, "head_dim": 8, "conv_kernel": 4,
                  "chunk_size": 4},
        "position": {"kind": "none"}, "attention": _MLA,
        "layers": [{"select": [1], "mixer": "attention"}]},
    # Ling 3: KDA with full-rank gates and a bounded decay, MLA with RoPE and a head gate
    "kimi-delta-full-rank-head-gated-mla": {
        "mixer": {"kind": "kimi_delta", "n_heads": 2, "head_dim": 8, "conv_kernel": 4,
                  "chunk_size": 4, "gates": "full_rank", "gate_lower_bound": -5.0},
        "attention": {**_MLA, "head_gate": True},
        "layers": [{"select": [1], "mixer": "attention"}]},
    # LFM2: the gated short conv (biases on) on layer 0, attention on layer 1
    "short-conv-hybrid": {"mixer": {"kind": "short_conv", "width": 32, "conv_kernel": 3,
                                    "bias": True},
                          "layers": [{"select": [1], "mixer": "attention"}]},
    # Mamba-1 (Jamba's: weighted dt/B/C norms) beside an attention layer
    "mamba1-hybrid": {"mixer": {"kind": "mamba1", "d_inner": 64, "dt_rank": 3, "d_state": 6,
                                "conv_kernel": 3, "dt_bc_norm": "weighted"},
                      "position": {"kind": "none"},
                      "layers": [{"select": [1], "mixer": "attention"}]},
    # Falcon-H1: attention and Mamba-2 side by side on one layer (a KV cache and a state),
    # Mamba-2 without its gated norm, µP multipliers around each sublayer and over in_proj
    "hybrid-layer-mamba2-mup": {
        "mixer": {**_MAMBA2, "gated_norm": False, "proj_multipliers": [0.5, 2.0, 1.0, 1.5, 0.25]},
        "layers": [{"select": [0], "mixer": "hybrid"}],
        "multipliers": {"attention_in": 2.0, "attention_out": 0.5, "mixer_in": 0.5,
                        "mixer_out": 2.0, "ffn_gate": 1.5, "ffn_out": 0.75}},
    # Zamba 2: the model's attention and FFN as two shared blocks used in turn at three Mamba-2
    # layers, with q/k/v and gate_up adapters; no FFN in the layers themselves
    "shared-blocks": {"n_layers": 4, "mixer": _MAMBA2,
                      "attention": {"n_kv_heads": 4, "head_dim": 16},
                      "ffn": {"activation": "gelu", "fused_gate_up": True},
                      "layers": [{"select": "0:4", "ffn": "none"}],
                      "shared": {"at": [1, 2, 3], "copies": 2, "adapter_rank": 4,
                                 "ffn_adapter": True, "attention_adapter": True}},
    # one block, GQA, no adapters, layers that keep their FFN, no RoPE
    "shared-block-plain": {"mixer": _MAMBA2, "position": {"kind": "none"},
                           "shared": {"at": [0, 1]}},
    # Zamba's Mamba-1: two heads, each with its own x_proj and dt_proj; proj and conv biases
    "mamba1-heads": {"mixer": {"kind": "mamba1", "d_inner": 64, "n_heads": 2, "dt_rank": 3,
                               "d_state": 6, "conv_kernel": 3, "proj_bias": True},
                     "position": {"kind": "none"},
                     "layers": [{"select": [1], "mixer": "attention"}]},
}


def kind_spec(case: str) -> ModelSpec:
    return from_mapping(ModelSpec, {**deep_merge(BASE, KIND_CASES[case]), "name": case})
