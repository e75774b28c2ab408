"""The family cases of the conformance suite: one tiny config.json per transformers family (on
top of its class's defaults), run through the standard checks in test_families.py. A family's
quirks (a documented FLOP difference, a buffer to randomise) are data here; its own test file
keeps only what no other family has.

Sizes are small and odd where it helps (vocabulary 97: a wrong split shows), windows and chunks
shorter than the prompt plus the decode steps (the cached decode crosses them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from parity import larger_sinks, random_correction_bias  # (a case's prepare)

# shapes most cases share: 2 layers, width 64, 4 query and 2 KV heads of 16
SHAPE = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             max_position_embeddings=64, tie_word_embeddings=False)
NO_IDS = dict(bos_token_id=None, eos_token_id=None, pad_token_id=None)  # defaults beyond 97


@dataclass(frozen=True)
class FamilyCase:
    model_type: str  # what the config.json says
    config: dict  # its keys (on top of the class's defaults)
    name: str = ""  # the test id (default: model_type)
    hf_type: str | None = None  # the registered type whose class builds it (kimi_k2's)
    text_config: bool = False  # a multimodal wrapper: its text model is built and compared
    # transformers builds the text model only inside its multimodal class (Qwen3-VL): the
    # checks run that class on text alone, its vision tower's parameters (the family's
    # skipped_prefixes) left out
    multimodal_only: bool = False
    tolerance: float = 1e-4
    # the cached decode's, where a recurrent state sums in another order than the reference's
    # chunked scan (transformers' full-sequence forward) and rounding grows along the steps
    decode_tolerance: float = 1e-4
    # the cached decode is compared with transformers' own cached decode (same prefill, then a
    # token a call), not with its full forward: where a call's RoPE depends on the call (Phi-3's
    # longrope picks short or long factors by the call's last position), keys cached before
    # the switch keep the short rotation and the two legitimately differ
    stepwise_reference: bool = False
    # estimated prefill FLOPs less what FlopCounterMode counts over transformers' eager model,
    # where the two differ by design: (spec, batch, tokens) -> FLOPs
    flops_gap: Callable | None = None
    prepare: Callable | None = None  # changes transformers' model before its weights are copied
    # (transformers' model) -> {layer index: bytes of the state its modules hold}, where a
    # class keeps its state in its modules, not in its cache object (RecurrentGemma's blocks);
    # the conformance check then passes it a DynamicCache for the keys and values
    module_state: Callable | None = None
    notes: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.name or self.model_type


def griffin_state(hf) -> dict[int, int]:
    """RecurrentGemma's recurrent blocks: conv1d_state and rg_lru.recurrent_states."""
    return {i: sum(t.nbytes for t in (layer.temporal_block.conv1d_state,
                                      layer.temporal_block.rg_lru.recurrent_states))
            for i, layer in enumerate(hf.model.layers) if hasattr(layer.temporal_block, "rg_lru")}


def dropped_conv_outputs(layers_of_spec: Callable) -> Callable:
    """transformers' causal conv (Mamba-2, Gated DeltaNet, the RG-LRU) pads K-1 columns on both ends and
    keeps T of its T+K-1 outputs: per such layer 2 * batch * conv_dim * K * (K - 1) FLOPs the
    estimate does not count (tests/nn/test_mamba2_mixer.py::test_flops)."""
    def gap(spec, batch: int, tokens: int) -> int:
        m = spec.mixer
        return -layers_of_spec(spec) * 2 * batch * m.conv_dim * m.conv_kernel * (m.conv_kernel - 1)
    return gap


def _mamba_layers(spec) -> int:
    return sum(layer.state is not None for layer in spec.plan)


def _qwen3_next_gap(spec, batch: int, tokens: int) -> int:
    """Per DeltaNet layer and sequence: the estimate's chunked triangular solve (transformers'
    torch path runs it as a row loop the counter does not see) less the conv's dropped outputs
    (tests/nn/test_qwen3_next.py)."""
    from archscope.kinds import gated_deltanet as gdn

    m = spec.mixer
    padded = 2 * (m.conv_kernel - 1) * m.conv_kernel * m.conv_dim
    return _mamba_layers(spec) * batch * (gdn.prefill_flops(m, spec.d_model, tokens)["ut_solve"]
                                          - padded)


def _every_expert_runs(spec, batch: int, tokens: int) -> int:
    """transformers' Llama4TextExperts runs every expert on every token (the unchosen ones on a
    zero-weighted input); the estimate counts top_k (tests/nn/test_llama4.py)."""
    gap = 0
    for layer in spec.plan:
        if layer.is_moe:
            f = layer.ffn
            gap -= (f.n_experts - f.top_k) * 2 * batch * tokens * 3 * spec.d_model * f.d_expert
    return gap


_MLA = dict(q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8,
            v_head_dim=16)
_DEEPSEEK = dict({k: v for k, v in SHAPE.items() if k != "head_dim"}, **_MLA,
                 num_key_value_heads=4, moe_intermediate_size=32,
                 n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                 first_k_dense_replace=1, n_group=2, topk_group=1, routed_scaling_factor=1.5)
# YaRN over a 32-token original context (the cases' mscale pairs added)
_YARN = dict(rope_type="yarn", rope_theta=1e4, factor=4.0, beta_fast=32.0, beta_slow=1.0,
             original_max_position_embeddings=32)
_GRANITE_MULTIPLIERS = dict(embedding_multiplier=4.0, attention_multiplier=0.2,
                            residual_multiplier=0.5, logits_scaling=2.0)
# Qwen3-VL: its text RoPE's M-RoPE sections (4 + 2 + 2 pairs of a 16-dim head) and a small
# vision tower, which the checks leave out
_MROPE = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [4, 2, 2],
          "mrope_interleaved": True}
_QWEN3_VL_VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                        out_hidden_size=64, deepstack_visual_indexes=[0])
_QWEN3_5_MIXER = dict(linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                      linear_value_head_dim=8, linear_conv_kernel_dim=4,
                      full_attention_interval=2)
_QWEN3_5_ROPE = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 1, 1],
                 "mrope_interleaved": True, "partial_rotary_factor": 0.5}
_QWEN3_5_VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                       out_hidden_size=64)
# LongRoPE over half of each 16-dim head (4 pairs) from an 8-token original context, so the
# cached decode (5-token prefill, 13 steps) switches from the short factors to the long ones
_LONGROPE = dict(rope_type="longrope", rope_theta=1e4, partial_rotary_factor=0.5,
                 short_factor=[1.0, 1.3, 2.1, 3.7], long_factor=[1.1, 2.5, 6.0, 14.0])
_MAMBA = dict(mamba_n_heads=4, mamba_d_head=32, mamba_expand=2, mamba_d_state=8,
              mamba_n_groups=2, mamba_d_conv=4, mamba_chunk_size=8)

def random_expert_bias(hf, seed: int = 7) -> None:
    """LFM2-MoE's selection-only expert_bias (a buffer hf_model leaves at zero), random."""
    generator = torch.Generator().manual_seed(seed)
    for name, b in hf.named_buffers():
        if name.endswith("feed_forward.expert_bias"):
            b.copy_(0.5 * torch.randn(b.shape, generator=generator))


FAMILY_CASES = [
    FamilyCase("llama", dict(SHAPE, attention_bias=True, mlp_bias=True)),
    FamilyCase("llama", dict(SHAPE, tie_word_embeddings=True,
                             rope_parameters={"rope_type": "llama3", "rope_theta": 5e5,
                                              "factor": 8.0, "low_freq_factor": 1.0,
                                              "high_freq_factor": 4.0,
                                              "original_max_position_embeddings": 16}),
               name="llama-tied-llama3-rope"),
    FamilyCase("mistral", dict(SHAPE, sliding_window=6)),
    FamilyCase("mixtral", dict(SHAPE, num_local_experts=4, num_experts_per_tok=2,
                               sliding_window=None)),
    FamilyCase("qwen2", dict(SHAPE, use_sliding_window=True, sliding_window=6,
                             max_window_layers=1)),
    FamilyCase("qwen3", dict(SHAPE)),
    FamilyCase("qwen3_moe", dict(SHAPE, num_experts=4, num_experts_per_tok=2,
                                 moe_intermediate_size=32, decoder_sparse_step=1,
                                 mlp_only_layers=[0], norm_topk_prob=True)),
    FamilyCase("olmo2", dict(SHAPE)),
    FamilyCase("smollm3", dict(SHAPE, no_rope_layer_interval=2, **NO_IDS)),
    FamilyCase("phi3", dict(SHAPE, sliding_window=6, **NO_IDS)),
    FamilyCase("granite", dict(SHAPE, embedding_multiplier=4.0, attention_multiplier=0.2,
                               residual_multiplier=0.5, logits_scaling=2.0)),
    FamilyCase("granitemoe", dict(SHAPE, num_local_experts=4, num_experts_per_tok=2,
                                  embedding_multiplier=4.0, attention_multiplier=0.2,
                                  residual_multiplier=0.5, logits_scaling=2.0)),
    FamilyCase("granitemoehybrid", dict(SHAPE, **_MAMBA, num_hidden_layers=3,
                                        layer_types=["mamba", "attention", "mamba"],
                                        shared_intermediate_size=96, num_local_experts=4,
                                        num_experts_per_tok=2, position_embedding_type="rope",
                                        embedding_multiplier=4.0, attention_multiplier=0.2,
                                        residual_multiplier=0.5, logits_scaling=2.0, **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    FamilyCase("bamba", dict(SHAPE, **_MAMBA, num_hidden_layers=3, attn_layer_indices=[1],
                             **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    FamilyCase("deepseek_v2", dict(_DEEPSEEK, topk_method="greedy")),
    FamilyCase("deepseek_v3", dict(_DEEPSEEK), prepare=random_correction_bias),
    FamilyCase("kimi_k2", dict(_DEEPSEEK), hf_type="deepseek_v3", prepare=random_correction_bias),
    FamilyCase("glm4_moe", dict(SHAPE, moe_intermediate_size=32, n_routed_experts=4,
                                num_experts_per_tok=2, n_shared_experts=1,
                                first_k_dense_replace=1, n_group=2, topk_group=1,
                                use_qk_norm=True, attention_bias=True),
               prepare=random_correction_bias),
    FamilyCase("gpt_oss", dict(SHAPE, num_local_experts=4, num_experts_per_tok=2,
                               sliding_window=6, layer_types=["sliding_attention",
                                                              "full_attention"])),
    FamilyCase("gemma3_text", dict(SHAPE, sliding_window=6, query_pre_attn_scalar=16,
                                   layer_types=["sliding_attention", "full_attention"])),
    FamilyCase("gemma3", dict(text_config=dict(SHAPE, sliding_window=6, query_pre_attn_scalar=16,
                                               layer_types=["sliding_attention",
                                                            "full_attention"]),
                              vision_config=dict(hidden_size=16, intermediate_size=32,
                                                 num_hidden_layers=1, num_attention_heads=2,
                                                 image_size=28, patch_size=14),
                              mm_tokens_per_image=4, tie_word_embeddings=False),
               text_config=True),
    FamilyCase("llama4_text", dict(SHAPE, intermediate_size_mlp=96, num_local_experts=4,
                                   num_experts_per_tok=1, interleave_moe_layer_step=2,
                                   attention_chunk_size=4, no_rope_layer_interval=2, **NO_IDS),
               flops_gap=_every_expert_runs),
    FamilyCase("llama4", dict(text_config=dict(SHAPE, intermediate_size_mlp=96,
                                               num_local_experts=4, num_experts_per_tok=1,
                                               interleave_moe_layer_step=2,
                                               attention_chunk_size=4,
                                               no_rope_layer_interval=2, **NO_IDS),
                              vision_config=dict(hidden_size=32, intermediate_size=64,
                                                 num_hidden_layers=1, num_attention_heads=2,
                                                 image_size=28, patch_size=14,
                                                 vision_output_dim=32, projector_input_dim=32,
                                                 projector_output_dim=32),
                              tie_word_embeddings=False),
               text_config=True, flops_gap=_every_expert_runs),
    FamilyCase("gpt2", dict(vocab_size=97, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                            n_inner=96)),
    FamilyCase("nemotron_h", dict(SHAPE, hybrid_override_pattern="M*-", mamba_num_heads=4,
                                  mamba_head_dim=16, ssm_state_size=8, n_groups=2,
                                  conv_kernel=4, chunk_size=8),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    FamilyCase("cwm", dict(SHAPE, sliding_window=6, mlp_bias=True)),
    FamilyCase("ernie4_5", dict(SHAPE, use_bias=True)),
    FamilyCase("helium", dict(SHAPE, attention_bias=True, mlp_bias=True)),
    FamilyCase("ministral", dict(SHAPE, sliding_window=6,
                                 layer_types=["sliding_attention", "full_attention"])),
    FamilyCase("ministral3", dict(SHAPE, sliding_window=6, rope_parameters=dict(
        rope_type="yarn", rope_theta=1e6, factor=4.0, original_max_position_embeddings=16,
        llama_4_scaling_beta=0.0))),
    FamilyCase("seed_oss", dict(SHAPE, attention_bias=True, attention_out_bias=False,
                                mlp_bias=True)),
    FamilyCase("olmo3", dict(SHAPE, sliding_window=6,
                             layer_types=["sliding_attention", "full_attention"],
                             rope_parameters={"sliding_attention": dict(rope_type="default",
                                                                        rope_theta=1e4),
                                              "full_attention": dict(
                                                  rope_type="yarn", rope_theta=5e5, factor=4.0,
                                                  original_max_position_embeddings=16,
                                                  attention_factor=0.1 * math.log(4.0) + 1)})),
    FamilyCase("gemma", dict(SHAPE, attention_bias=True, hidden_act="gelu")),
    FamilyCase("exaone4", dict(SHAPE, sliding_window=6, sliding_window_pattern=2)),
    FamilyCase("arcee", dict(SHAPE, attention_bias=True, mlp_bias=True, **NO_IDS)),
    FamilyCase("granite_swa", dict(SHAPE, num_hidden_layers=3, sliding_window=6,
                                   layer_rope_theta=[1e4, 0, 5e4], embedding_multiplier=4.0,
                                   attention_multiplier=0.2, residual_multiplier=0.5,
                                   logits_scaling=2.0, **NO_IDS)),
    FamilyCase("apertus", dict(SHAPE, attention_bias=True, hidden_act="relu2"),
               name="apertus-relu2"),
    FamilyCase("mistral3", dict(text_config=dict(SHAPE, model_type="mistral", sliding_window=6),
                                vision_config=dict(hidden_size=16, intermediate_size=32,
                                                   num_hidden_layers=1, num_attention_heads=2,
                                                   head_dim=8, image_size=28, patch_size=14),
                                tie_word_embeddings=False),
               text_config=True),
    FamilyCase("qwen3_next", dict(SHAPE, num_hidden_layers=4, num_experts=4,
                                  num_experts_per_tok=2, moe_intermediate_size=32,
                                  shared_expert_intermediate_size=48, linear_num_key_heads=2,
                                  linear_num_value_heads=4, linear_key_head_dim=8,
                                  linear_value_head_dim=8, linear_conv_kernel_dim=4,
                                  full_attention_interval=2),
               flops_gap=_qwen3_next_gap, decode_tolerance=2e-4),
    FamilyCase("olmo", dict({k: v for k, v in SHAPE.items() if k != "head_dim"},
                            clip_qkv=0.5, attention_bias=True)),
    # the configurations the per-family parity tests (tests/nn/test_<family>.py) reached and the
    # cases above do not: routing variants, scaled RoPE, wide heads, tied heads, NoPE, clamps
    FamilyCase("deepseek_v3", dict(_DEEPSEEK, num_hidden_layers=3, n_routed_experts=16,
                                   num_experts_per_tok=4, n_group=4, topk_group=2,
                                   norm_topk_prob=False, routed_scaling_factor=2.5,
                                   max_position_embeddings=128,
                                   rope_parameters=dict(_YARN, mscale=1.0, mscale_all_dim=1.0)),
               name="deepseek_v3-unnormalised-yarn", prepare=random_correction_bias),
    FamilyCase("deepseek_v2", dict(_DEEPSEEK, num_hidden_layers=3, q_lora_rank=None,
                                   n_routed_experts=8, num_experts_per_tok=3, n_shared_experts=2,
                                   topk_method="group_limited_greedy", n_group=4, topk_group=2,
                                   norm_topk_prob=False, routed_scaling_factor=2.5,
                                   max_position_embeddings=128,
                                   rope_parameters=dict(_YARN, mscale=0.8, mscale_all_dim=0.6)),
               name="deepseek_v2-group-limited-no-q-lora-yarn"),
    FamilyCase("gemma3_text", dict(SHAPE, num_hidden_layers=3, sliding_window=4,
                                   query_pre_attn_scalar=24, tie_word_embeddings=True,
                                   layer_types=["sliding_attention", "sliding_attention",
                                                "full_attention"],
                                   rope_parameters={
                                       "sliding_attention": {"rope_type": "default",
                                                             "rope_theta": 1e4},
                                       "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                          "rope_theta": 1e6}}),
               name="gemma3_text-tied-scaled-global-rope"),
    FamilyCase("gpt_oss", dict(SHAPE, num_local_experts=8, num_experts_per_tok=2,
                               swiglu_limit=1.5, sliding_window=4,
                               layer_types=["sliding_attention", "full_attention"],
                               rope_parameters=dict(_YARN, truncate=False,
                                                    original_max_position_embeddings=4096)),
               name="gpt_oss-clamped-sinks-untruncated-yarn", prepare=larger_sinks),
    FamilyCase("granitemoehybrid", {**SHAPE, **_MAMBA, "num_hidden_layers": 3,
                                    "mamba_chunk_size": 4, "tie_word_embeddings": True,
                                    "layer_types": ["mamba", "attention", "mamba"],
                                    "shared_intermediate_size": 96, "num_local_experts": 0,
                                    "num_experts_per_tok": 0, "position_embedding_type": "nope",
                                    "embedding_multiplier": 4.0, "attention_multiplier": 0.2,
                                    "residual_multiplier": 0.5, "logits_scaling": 2.0, **NO_IDS},
               name="granitemoehybrid-dense-nope", flops_gap=dropped_conv_outputs(_mamba_layers)),
    FamilyCase("llama4_text", dict(SHAPE, num_hidden_layers=4, intermediate_size_mlp=96,
                                   num_local_experts=4, num_experts_per_tok=1, moe_layers=[0, 3],
                                   attention_chunk_size=4, no_rope_layer_interval=2,
                                   floor_scale=2, attn_scale=0.5, **NO_IDS),
               name="llama4_text-tuned-temperature", flops_gap=_every_expert_runs),
    FamilyCase("phi3", dict(SHAPE, head_dim=24, sliding_window=None, **NO_IDS),
               name="phi3-wide-heads"),
    FamilyCase("qwen3_moe", dict(SHAPE, num_hidden_layers=3, head_dim=24, num_experts=8,
                                 num_experts_per_tok=3, moe_intermediate_size=32,
                                 mlp_only_layers=[1], norm_topk_prob=False),
               name="qwen3_moe-unnormalised-wide-heads"),
    FamilyCase("qwen3", dict(SHAPE, head_dim=24, tie_word_embeddings=True),
               name="qwen3-tied-wide-heads"),
    FamilyCase("olmo2", dict(SHAPE, head_dim=24), name="olmo2-wide-heads"),
    FamilyCase("smollm3", dict(SHAPE, num_hidden_layers=4, no_rope_layer_interval=2,
                               tie_word_embeddings=True, **NO_IDS), name="smollm3-tied"),
    FamilyCase("granite", dict(SHAPE, tie_word_embeddings=True, embedding_multiplier=12.0,
                               attention_multiplier=0.015625, residual_multiplier=0.22,
                               logits_scaling=8.0), name="granite-tied"),
    FamilyCase("granitemoe", dict(SHAPE, num_local_experts=6, num_experts_per_tok=3,
                                  tie_word_embeddings=True, embedding_multiplier=3.0,
                                  attention_multiplier=0.2, residual_multiplier=0.5,
                                  logits_scaling=2.0), name="granitemoe-tied"),
    FamilyCase("qwen2_moe", dict(SHAPE, num_hidden_layers=3, num_experts=4,
                                 num_experts_per_tok=2, moe_intermediate_size=32,
                                 shared_expert_intermediate_size=48, mlp_only_layers=[1],
                                 use_sliding_window=True, sliding_window=6, max_window_layers=2,
                                 norm_topk_prob=False)),
    FamilyCase("olmoe", dict(SHAPE, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True,
                             attention_bias=True, **NO_IDS)),
    FamilyCase("flex_olmo", dict(SHAPE, num_experts=4, num_experts_per_tok=2, **NO_IDS)),
    FamilyCase("granitemoeshared", dict(SHAPE, num_local_experts=4, num_experts_per_tok=2,
                                        shared_intermediate_size=48, **_GRANITE_MULTIPLIERS,
                                        **NO_IDS)),
    FamilyCase("granitemoe_swa", dict(SHAPE, num_hidden_layers=3, num_local_experts=4,
                                      num_experts_per_tok=2, shared_intermediate_size=48,
                                      sliding_window=6, layer_rope_theta=[0, 1e4, 5e5],
                                      **_GRANITE_MULTIPLIERS, **NO_IDS)),
    FamilyCase("dots1", dict(SHAPE, num_hidden_layers=3, moe_intermediate_size=32,
                             n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                             first_k_dense_replace=1, n_group=2, topk_group=1,
                             routed_scaling_factor=1.5, norm_topk_prob=True, sliding_window=6,
                             max_window_layers=1),
               prepare=random_correction_bias),
    FamilyCase("exaone_moe", dict(SHAPE, num_hidden_layers=3, moe_intermediate_size=32,
                                  num_experts=4, num_experts_per_tok=2, num_shared_experts=1,
                                  n_group=2, topk_group=1, mlp_layer_types=["sparse", "dense",
                                                                            "sparse"],
                                  sliding_window=6, sliding_window_pattern=2, **NO_IDS),
               prepare=random_correction_bias),
    FamilyCase("minimax_m2", dict(SHAPE, num_local_experts=4, num_experts_per_tok=2,
                                  rotary_dim=8, **NO_IDS),
               prepare=random_correction_bias),
    FamilyCase("solar_open", dict(SHAPE, moe_intermediate_size=32, n_routed_experts=4,
                                  num_experts_per_tok=2, n_shared_experts=1, n_group=2,
                                  topk_group=1, attention_bias=True),
               prepare=random_correction_bias),
    FamilyCase("glm4_moe_lite", dict({k: v for k, v in _DEEPSEEK.items()
                                      if k != "first_k_dense_replace"},
                                     mlp_layer_types=["dense", "sparse"]),
               prepare=random_correction_bias),
    FamilyCase("qwen3_vl", dict(text_config=dict(SHAPE, attention_bias=True,
                                                 rope_parameters=_MROPE),
                                vision_config=_QWEN3_VL_VISION, tie_word_embeddings=False),
               multimodal_only=True),
    FamilyCase("qwen3_vl_moe", dict(text_config=dict(SHAPE, num_hidden_layers=3, num_experts=4,
                                                     num_experts_per_tok=2,
                                                     moe_intermediate_size=32,
                                                     mlp_only_layers=[1],
                                                     rope_parameters=_MROPE),
                                    vision_config=_QWEN3_VL_VISION, tie_word_embeddings=True),
               multimodal_only=True),
    FamilyCase("cohere", dict(SHAPE, logit_scale=0.25, use_qk_norm=True, attention_bias=True)),
    FamilyCase("cohere2", dict(SHAPE, logit_scale=0.5, sliding_window=6,
                               layer_types=["sliding_attention", "full_attention"])),
    FamilyCase("gemma2", dict(SHAPE, sliding_window=6, query_pre_attn_scalar=12,
                              attn_logit_softcapping=4.0, final_logit_softcapping=3.0)),
    FamilyCase("vaultgemma", dict(SHAPE, sliding_window=6, query_pre_attn_scalar=12,
                                  attn_logit_softcapping=4.0, final_logit_softcapping=3.0,
                                  layer_types=["full_attention", "sliding_attention"])),
    FamilyCase("phi", dict(SHAPE, qk_layernorm=True)),
    FamilyCase("stablelm", dict(SHAPE, use_qkv_bias=True, use_parallel_residual=True,
                                partial_rotary_factor=0.5)),
    FamilyCase("starcoder2", dict(SHAPE, sliding_window=6, **NO_IDS)),
    FamilyCase("jais2", dict(SHAPE, **NO_IDS)),
    FamilyCase("nemotron", dict(SHAPE, attention_bias=True, mlp_bias=True, **NO_IDS)),
    FamilyCase("nanochat", dict(SHAPE, attention_bias=True, final_logit_softcapping=3.0,
                                **NO_IDS)),
    FamilyCase("dbrx", dict(vocab_size=97, d_model=64, n_heads=4, n_layers=2, max_seq_len=64,
                            attn_config=dict(kv_n_heads=2, clip_qkv=0.15, rope_theta=5e5),
                            rope_parameters=dict(rope_type="default", rope_theta=5e5),
                            ffn_config=dict(ffn_hidden_size=32, moe_num_experts=4,
                                            moe_top_k=2))),
    FamilyCase("phimoe", dict(SHAPE, num_local_experts=4, num_experts_per_tok=2,
                              router_jitter_noise=0.3, attention_bias=True, lm_head_bias=True,
                              sliding_window=6, **NO_IDS)),
    FamilyCase("bitnet", dict({k: v for k, v in SHAPE.items() if k != "head_dim"},
                              attention_bias=True, **NO_IDS)),
    FamilyCase("nemotron_h", dict(SHAPE, hybrid_override_pattern="ME*-E", mamba_num_heads=4,
                                  mamba_head_dim=16, ssm_state_size=8, n_groups=2,
                                  conv_kernel=4, chunk_size=8, n_routed_experts=6,
                                  num_experts_per_tok=2, moe_intermediate_size=32,
                                  moe_shared_expert_intermediate_size=48, n_group=2,
                                  topk_group=1, routed_scaling_factor=1.5),
               name="nemotron_h-moe", prepare=random_correction_bias,
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    FamilyCase("nemotron_h", dict(SHAPE, hybrid_override_pattern="E*E", n_routed_experts=4,
                                  num_experts_per_tok=2, moe_intermediate_size=32,
                                  moe_shared_expert_intermediate_size=48, moe_latent_size=40,
                                  n_group=1, topk_group=1, norm_topk_prob=False),
               name="nemotron_h-latent-moe", prepare=random_correction_bias),
    # factor derived (64 / 8) and so the attention factor (sqrt(1 + ln 8 / ln 8)); the decode
    # switches at its 4th step (position 8), as transformers' own cached decode does; a window
    # past the context (Phi-4-mini's 262144 at 131072) masks nothing and reads as none
    FamilyCase("phi3", dict(SHAPE, original_max_position_embeddings=8, rope_parameters=_LONGROPE,
                            sliding_window=100, **NO_IDS),
               name="phi3-longrope-partial", stepwise_reference=True),
    # factor and attention factor given, 3/4 of each head (6 pairs), a window, and a 4-token
    # original context the 5-token prefill is already past: every call takes the long factors,
    # so the reference stays transformers' full forward
    FamilyCase("phi3", dict(SHAPE, original_max_position_embeddings=4, sliding_window=6,
                            rope_parameters=dict(_LONGROPE, factor=3.0, attention_factor=1.25,
                                                 partial_rotary_factor=0.75,
                                                 short_factor=[1.0, 1.2, 1.5, 2.0, 3.0, 4.0],
                                                 long_factor=[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]),
                            **NO_IDS), name="phi3-longrope-given-factors"),
    # the NTK-alpha RoPE (Hunyuan's published "dynamic" with alpha: a larger fixed base)
    FamilyCase("hunyuan_v1_dense", dict(SHAPE, attention_bias=True,
                                        rope_parameters={"rope_type": "dynamic", "alpha": 8.0,
                                                         "factor": 1.0,
                                                         "rope_theta": 10000.0})),
    # moe_topk per layer; the published keys transformers' class leaves unread, at the
    # values it builds (moe_intermediate_size = intermediate_size, one shared MLP)
    FamilyCase("hunyuan_v1_moe", dict(SHAPE, num_experts=4, moe_topk=[2, 3],
                                      moe_intermediate_size=[96, 96], num_shared_expert=[1, 1],
                                      use_mixed_mlp_moe=True, use_qk_norm=True,
                                      rope_parameters={"rope_type": "dynamic", "alpha": 8.0,
                                                       "factor": 1.0,
                                                       "rope_theta": 10000.0})),
    # DeepSeek Sparse Attention: each query attends to the indexer's best 6 keys of up to 18;
    # 8 indexer heads make exact ties among the ReLU'd scores (which torch.topk breaks its own
    # way, differently for a whole prompt and one step) unlikely; the dense layer by
    # mlp_layer_types; GLM-5's indexer on adjacent pairs, layer 1 sharing layer 0's selection
    FamilyCase("deepseek_v32", dict(_DEEPSEEK, index_n_heads=8, index_head_dim=12, index_topk=6,
                                    mlp_layer_types=["sparse", "dense"], **NO_IDS),
               prepare=random_correction_bias),
    FamilyCase("glm_moe_dsa", dict(_DEEPSEEK, num_hidden_layers=3, index_n_heads=8,
                                   index_head_dim=12, index_topk=6,
                                   indexer_types=["full", "shared", "full"], **NO_IDS),
               prepare=random_correction_bias),
    FamilyCase("ernie4_5_moe", dict(SHAPE, num_hidden_layers=3, moe_num_experts=4, moe_k=2,
                                    moe_intermediate_size=32, moe_num_shared_experts=1,
                                    moe_layer_start_index=0, moe_layer_interval=2, **NO_IDS),
               prepare=random_correction_bias),
    FamilyCase("ernie4_5_moe", dict(SHAPE, moe_num_experts=4, moe_k=2, moe_intermediate_size=32,
                                    moe_num_shared_experts=0, use_bias=True, **NO_IDS),
               name="ernie4_5_moe-biased", prepare=random_correction_bias),
    FamilyCase("glm", dict(SHAPE, attention_bias=True, partial_rotary_factor=0.75, **NO_IDS)),
    FamilyCase("glm4", dict(SHAPE, attention_bias=True, **NO_IDS)),
    FamilyCase("cohere2_moe", dict(SHAPE, num_hidden_layers=4, logit_scale=0.5, sliding_window=6,
                                   layer_types=["sliding_attention", "full_attention",
                                                "sliding_attention", "full_attention"],
                                   mlp_layer_types=["dense", "dense", "sparse", "sparse"],
                                   prefix_dense_intermediate_size=80, num_experts=4,
                                   num_experts_per_tok=2, num_shared_experts=1,
                                   shared_expert_combination_strategy="sum", rms_norm_eps=1e-5,
                                   **NO_IDS)),
    FamilyCase("cohere2_moe", dict(SHAPE, logit_scale=0.25, sliding_window=6,
                                   sliding_window_pattern=2, num_experts=4,
                                   num_experts_per_tok=2, expert_selection_fn="sigmoid",
                                   norm_topk_prob=False, **NO_IDS), name="cohere2_moe-sigmoid"),
    FamilyCase("ministral3", dict(SHAPE, sliding_window=6, rope_parameters=dict(
        rope_type="yarn", rope_theta=1e6, factor=4.0, original_max_position_embeddings=4,
        llama_4_scaling_beta=0.5)), name="ministral3-scaled"),
    FamilyCase("minicpm3", dict(SHAPE, num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=24,
                                qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12,
                                scale_emb=3.0, scale_depth=1.4, dim_model_base=16,
                                attention_bias=True, **NO_IDS)),
    FamilyCase("apertus", dict(SHAPE, attention_bias=True, hidden_act="xielu")),
    # Griffin: recurrent, attention, recurrent (block_types cycled), MQA windowed to 6 tokens,
    # an RG-LRU narrower than the model (lru_width 48), soft-capped logits
    FamilyCase("recurrent_gemma", dict(SHAPE, num_hidden_layers=3, num_key_value_heads=1,
                                       lru_width=48, attention_window_size=6, conv1d_width=4,
                                       block_types=["recurrent", "attention"],
                                       logits_soft_cap=5.0, attention_bias=True),
               flops_gap=dropped_conv_outputs(_mamba_layers), module_state=griffin_state),
    # Qwen3.5: Qwen3-Next's text model with split DeltaNet projections (in_proj_qkv, _z, _b,
    # _a), a dense MLP or a MoE on every layer (always renormalised), interleaved M-RoPE over
    # half of each head (plain RoPE on text); the wrapper run as its multimodal class
    FamilyCase("qwen3_5_text", dict(SHAPE, num_hidden_layers=4, **_QWEN3_5_MIXER,
                                    rope_parameters=_QWEN3_5_ROPE),
               flops_gap=_qwen3_next_gap, decode_tolerance=2e-4),
    FamilyCase("qwen3_5_moe_text", dict(SHAPE, num_hidden_layers=4, num_experts=4,
                                        num_experts_per_tok=2, moe_intermediate_size=32,
                                        shared_expert_intermediate_size=48, **_QWEN3_5_MIXER,
                                        rope_parameters=_QWEN3_5_ROPE),
               flops_gap=_qwen3_next_gap, decode_tolerance=2e-4),
    FamilyCase("qwen3_5", dict(text_config=dict(SHAPE, num_hidden_layers=4, **_QWEN3_5_MIXER,
                                                rope_parameters=_QWEN3_5_ROPE,
                                                tie_word_embeddings=True),
                               vision_config=_QWEN3_5_VISION, tie_word_embeddings=True),
               multimodal_only=True, flops_gap=_qwen3_next_gap, decode_tolerance=2e-4),
    FamilyCase("qwen3_5_moe", dict(text_config=dict(SHAPE, num_hidden_layers=4, num_experts=4,
                                                    num_experts_per_tok=2,
                                                    moe_intermediate_size=32,
                                                    shared_expert_intermediate_size=48,
                                                    **_QWEN3_5_MIXER,
                                                    rope_parameters=_QWEN3_5_ROPE),
                                   vision_config=_QWEN3_5_VISION, tie_word_embeddings=False),
               multimodal_only=True, flops_gap=_qwen3_next_gap, decode_tolerance=2e-4),
    # MiniMax-01: lightning layers in blocks of 4 (the 5-token prefill and the 18-token
    # reference cross blocks), softmax attention on the middle layer, DeepNorm's alpha and beta
    FamilyCase("minimax", dict(SHAPE, num_hidden_layers=3, num_local_experts=4,
                               num_experts_per_tok=2, block_size=4,
                               layer_types=["linear_attention", "full_attention",
                                            "linear_attention"],
                               **{f"{sub}_alpha_factor": 1.5 for sub in
                                  ("full_attn", "linear_attn", "mlp")},
                               **{f"{sub}_beta_factor": 0.75 for sub in
                                  ("full_attn", "linear_attn", "mlp")})),
]


def _kimi_linear_gap(spec, batch: int, tokens: int) -> int:
    """Per KDA layer and sequence: the estimate's intra-chunk k.k and q.k products and its
    triangular solve, which transformers' torch path forms as elementwise products summed over
    the channels and a row loop (FlopCounterMode counts neither), plus the two matmuls that
    path runs with the solved system instead (attn @ v_beta, attn @ k_beta: 2 * P*C*2h*H,
    counted there, not in the estimate), less the conv's dropped outputs (tests/nn/
    test_kimi_delta.py)."""
    from archscope.kinds import kimi_delta as kda

    m = spec.mixer
    scan = kda.scan_flops(m, tokens)
    padded = kda.n_chunks(m, tokens) * m.chunk_size
    theirs_only = 2 * padded * m.chunk_size * 2 * m.head_dim * m.n_heads
    conv = 2 * (m.conv_kernel - 1) * m.conv_kernel * m.conv_dim
    return _mamba_layers(spec) * batch * (scan["intra_kk"] + scan["intra_qk"] + scan["ut_solve"]
                                          - theirs_only - conv)


FAMILY_CASES += [
    FamilyCase("kimi_linear", dict({k: v for k, v in _DEEPSEEK.items()
                                    if k not in ("n_routed_experts", "first_k_dense_replace")},
                                   num_local_experts=4, num_hidden_layers=4, q_lora_rank=None,
                                   layer_types=["linear_attention", "full_attention",
                                                "linear_attention", "full_attention"],
                                   mlp_layer_types=["dense", "sparse", "sparse", "sparse"],
                                   linear_num_heads=2, linear_head_dim=8,
                                   linear_conv_kernel_dim=4, **NO_IDS),
               flops_gap=_kimi_linear_gap, decode_tolerance=2e-4,
               prepare=random_correction_bias),
    # Ling 3: full-rank KDA gates, the bounded decay; MLA with RoPE and a head gate on every
    # second layer, a dense first layer
    FamilyCase("bailing_hybrid", dict(SHAPE, num_hidden_layers=4, num_attention_heads=2,
                                      head_dim=8, short_conv_kernel_size=4, layer_group_size=2,
                                      first_k_dense_replace=1, num_local_experts=4,
                                      num_experts_per_tok=2, n_group=2, topk_group=1,
                                      moe_intermediate_size=32, kv_lora_rank=16,
                                      qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
                                      num_mtp_layers=0, **NO_IDS),
               flops_gap=_kimi_linear_gap, decode_tolerance=2e-4,
               prepare=random_correction_bias),
    # LFM2: short-conv layers (conv_bias on) but layer 1, Lfm2MLP's width computed from
    # intermediate_size: int(2 * 144 / 3) = 96, * 1.25 = 120, up to a multiple of 32: 128
    FamilyCase("lfm2", dict(SHAPE, num_hidden_layers=3, intermediate_size=144, full_attn_idxs=[1],
                            conv_bias=True, conv_L_cache=3, block_multiple_of=32,
                            block_ffn_dim_multiplier=1.25, norm_eps=1e-5, **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    # LFM2-MoE: a dense first layer, then a sigmoid router choosing by score + expert_bias
    FamilyCase("lfm2_moe", dict(SHAPE, num_hidden_layers=4, num_dense_layers=1, num_experts=4,
                                num_experts_per_tok=2, moe_intermediate_size=32,
                                routed_scaling_factor=1.5, conv_L_cache=4,
                                layer_types=["conv", "full_attention", "conv", "conv"], **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers), prepare=random_expert_bias),
    # LFM2-MoE without the expert bias (plain top-k of sigmoid scores, not renormalised), every
    # layer MoE; LFM2 from layer_types and the older tie_embedding key
    FamilyCase("lfm2_moe", dict(SHAPE, num_hidden_layers=3, num_dense_layers=0, num_experts=4,
                                num_experts_per_tok=2, moe_intermediate_size=32,
                                use_expert_bias=False, norm_topk_prob=False,
                                layer_types=["full_attention", "conv", "conv"], **NO_IDS),
               name="lfm2_moe-unbiased", flops_gap=dropped_conv_outputs(_mamba_layers)),
    FamilyCase("lfm2", dict(SHAPE, num_hidden_layers=3, block_auto_adjust_ff_dim=False,
                            layer_types=["conv", "conv", "full_attention"], tie_embedding=True,
                            **NO_IDS),
               name="lfm2-types", flops_gap=dropped_conv_outputs(_mamba_layers)),
    # Mamba-1: a pure stack, projection biases, dt_rank away from ceil(64 / 16), a 3-tap conv
    FamilyCase("mamba", dict(vocab_size=97, hidden_size=64, num_hidden_layers=2, state_size=8,
                             expand=2, conv_kernel=3, time_step_rank=6, use_bias=True,
                             tie_word_embeddings=False, **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    # Falcon-Mamba: Mamba + weightless dt/B/C norms, an eps large enough to matter, tied head;
    # expand 16 beside an intermediate_size that wins (as TII's files have them), no multiple
    FamilyCase("falcon_mamba", dict(vocab_size=97, hidden_size=64, num_hidden_layers=2,
                                    state_size=6, expand=16, intermediate_size=96, conv_kernel=4,
                                    mixer_rms_eps=1e-3, **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    # Jamba: Mamba-1 with weighted dt/B/C norms, attention (no RoPE) at 1 and 3, MoE (softmax
    # top-2, not renormalised) at 0 and 2, MLPs elsewhere; head_dim derived from the width
    FamilyCase("jamba", dict({k: v for k, v in SHAPE.items() if k != "head_dim"},
                             num_hidden_layers=4, attn_layer_period=2, attn_layer_offset=1,
                             expert_layer_period=2, expert_layer_offset=0, num_experts=4,
                             num_experts_per_tok=2, mamba_d_state=8, mamba_expand=2,
                             mamba_dt_rank=5, mamba_d_conv=3, rms_norm_eps=1e-5, **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    # Mamba-2 as a whole model: every layer x + mixer(norm(x)); chunks of 8 under the 18-token
    # prompt, two groups of B/C, a tied head, and the time-step clamp, which transformers applies
    # in a prompt's scan only (not in a decode step): the cached decode is compared with its own
    FamilyCase("mamba2", dict(vocab_size=97, hidden_size=64, num_hidden_layers=2, num_heads=8,
                              head_dim=16, expand=2, state_size=8, n_groups=2, conv_kernel=4,
                              chunk_size=8, time_step_limit=[0.0, 0.5], use_bias=True,
                              tie_word_embeddings=True, **NO_IDS),
               stepwise_reference=True, flops_gap=dropped_conv_outputs(_mamba_layers)),
    # Falcon-H1: attention and Mamba-2 side by side in every layer, summed, then a SwiGLU; the
    # class's defaults (no gated norm, every µP multiplier 1), then a gated norm normalising
    # before the gate, in_proj/out_proj biases and every multiplier away from 1 (dyadic, so
    # that 1 / lm_head_multiplier and key_multiplier / sqrt(head_dim) round-trip exactly)
    FamilyCase("falcon_h1", dict(SHAPE, mamba_d_ssm=64, mamba_n_heads=4, mamba_d_head=16,
                                 mamba_d_state=8, mamba_n_groups=2, mamba_d_conv=4,
                                 mamba_chunk_size=8, **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    FamilyCase("falcon_h1", dict(SHAPE, mamba_d_ssm=64, mamba_n_heads=8, mamba_d_head=8,
                                 mamba_d_state=8, mamba_n_groups=2, mamba_d_conv=4,
                                 mamba_chunk_size=8, mamba_rms_norm=True,
                                 mamba_norm_before_gate=True, mamba_proj_bias=True,
                                 projectors_bias=True, embedding_multiplier=2.0,
                                 lm_head_multiplier=0.5, attention_in_multiplier=2.0,
                                 attention_out_multiplier=0.5, key_multiplier=0.5,
                                 ssm_in_multiplier=0.5, ssm_out_multiplier=2.0,
                                 mlp_multipliers=[1.5, 0.75],
                                 ssm_multipliers=[0.5, 1.5, 0.75, 1.25, 2.0], **NO_IDS),
               name="falcon_h1-mup-gated-norm", flops_gap=dropped_conv_outputs(_mamba_layers)),
]
FAMILY_CASES += [
    # Zamba 2: Mamba-2 layers, two shared blocks used in turn at four hybrid layers, q/k/v and
    # MLP adapters, RoPE on the shared attention, a tied head
    FamilyCase("zamba2", dict(vocab_size=97, hidden_size=32, num_hidden_layers=6,
                              layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid",
                                                 "hybrid"],
                              mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_ngroups=2,
                              n_mamba_heads=4, chunk_size=8, intermediate_size=48,
                              num_attention_heads=4, num_key_value_heads=4, num_mem_blocks=2,
                              use_shared_attention_adapter=True, adapter_rank=4,
                              use_mem_rope=True, max_position_embeddings=64,
                              tie_word_embeddings=True, hidden_act="gelu", **NO_IDS),
               # fp32 rounding through six Mamba layers and four block uses (their 2d-wide
               # concat at std 0.2): 1.1e-4 on logits of ~5; one use alone 2.5e-5
               tolerance=2e-4, decode_tolerance=2e-4,
               flops_gap=dropped_conv_outputs(_mamba_layers)),
    # Zamba: Mamba-1 layers of two heads (per-head x_proj and dt_proj, proj and conv biases),
    # one shared block (attention over concat(hidden, embeddings), no RoPE, a gelu MLP) used
    # at three hybrid layers, a tied head
    FamilyCase("zamba", dict(vocab_size=97, hidden_size=32, num_hidden_layers=5,
                             layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"],
                             mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, n_mamba_heads=2,
                             mamba_dt_rank=3, mamba_proj_bias=True, intermediate_size=48,
                             num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=64, tie_word_embeddings=True,
                             hidden_act="gelu", **NO_IDS),
               flops_gap=dropped_conv_outputs(_mamba_layers)),
]
