"""The estimators against transformers' own classes: parameters of every full-size preset on the
meta device, and FLOPs of a tiny variant of every preset under torch's FlopCounterMode.

The HF configs are written here from the spec (branching on kinds, never on names), so this
check does not depend on archscope's own HF export.
"""

from __future__ import annotations

import pytest

from archscope.estimate import count_params, prefill_flops
from archscope.spec import ModelSpec, load_spec, preset_names

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _llama_family(spec: ModelSpec, a, f) -> transformers.PretrainedConfig:
    """Llama = the base; Mistral = + window; Granite = + multipliers; Mixtral/GraniteMoe = + MoE."""
    common = dict(vocab_size=spec.vocab_size, hidden_size=spec.d_model,
                  num_hidden_layers=spec.n_layers, num_attention_heads=a.n_heads,
                  num_key_value_heads=a.n_kv_heads, max_position_embeddings=spec.max_seq_len,
                  rms_norm_eps=spec.norm.eps, tie_word_embeddings=spec.tie_embeddings)
    if spec.multipliers is not None:
        assert a.head_dim * a.n_heads == spec.d_model  # Granite has no head_dim key
        mults = dict(embedding_multiplier=spec.mults.embedding, logits_scaling=spec.mults.logits,
                     residual_multiplier=spec.mults.residual,
                     attention_multiplier=spec.mults.attention, attention_bias=a.bias)
        if f.kind == "moe":
            return transformers.GraniteMoeConfig(intermediate_size=f.d_expert,
                                                 num_local_experts=f.n_experts,
                                                 num_experts_per_tok=f.top_k, **mults, **common)
        return transformers.GraniteConfig(intermediate_size=f.d_ff, mlp_bias=f.bias, **mults,
                                          **common)
    if f.kind == "moe":
        return transformers.MixtralConfig(intermediate_size=f.d_expert, head_dim=a.head_dim,
                                          num_local_experts=f.n_experts,
                                          num_experts_per_tok=f.top_k, **common)
    if a.window:
        return transformers.MistralConfig(intermediate_size=f.d_ff, head_dim=a.head_dim,
                                          sliding_window=a.window, **common)
    return transformers.LlamaConfig(intermediate_size=f.d_ff, head_dim=a.head_dim,
                                    attention_bias=a.bias, mlp_bias=f.bias, **common)


def _deepseek_v2(spec: ModelSpec, a, f) -> transformers.PretrainedConfig:
    dense = [layer for layer in spec.plan if not layer.is_moe]
    assert all(not layer.is_moe for layer in spec.plan[:len(dense)])  # dense layers lead
    router = f.routing
    return transformers.DeepseekV2Config(
        vocab_size=spec.vocab_size, hidden_size=spec.d_model, num_hidden_layers=spec.n_layers,
        num_attention_heads=a.n_heads, num_key_value_heads=a.n_heads,
        max_position_embeddings=spec.max_seq_len, rms_norm_eps=spec.norm.eps,
        tie_word_embeddings=spec.tie_embeddings, attention_bias=a.bias,
        q_lora_rank=a.q_lora_rank, kv_lora_rank=a.kv_lora_rank,
        qk_nope_head_dim=a.qk_nope_head_dim, qk_rope_head_dim=a.qk_rope_head_dim,
        v_head_dim=a.v_head_dim,
        intermediate_size=dense[0].ffn.d_ff if dense else 1, first_k_dense_replace=len(dense),
        moe_intermediate_size=f.d_expert, n_routed_experts=f.n_experts,
        num_experts_per_tok=f.top_k, n_shared_experts=f.shared_experts,
        topk_method=router.method, n_group=router.n_group, topk_group=router.topk_group)


def _gpt2(spec: ModelSpec, a, f) -> transformers.PretrainedConfig:
    assert a.n_kv_heads == a.n_heads and a.head_dim * a.n_heads == spec.d_model
    assert a.bias and f.kind == "mlp" and f.bias and spec.norm.has_bias
    return transformers.GPT2Config(
        vocab_size=spec.vocab_size, n_positions=spec.max_seq_len, n_embd=spec.d_model,
        n_layer=spec.n_layers, n_head=a.n_heads, n_inner=f.d_ff,
        layer_norm_epsilon=spec.norm.eps, tie_word_embeddings=spec.tie_embeddings,
        bos_token_id=None, eos_token_id=None)


def hf_config(spec: ModelSpec) -> transformers.PretrainedConfig:
    a = spec.attention
    moe = [layer.ffn for layer in spec.plan if layer.is_moe]
    f = moe[0] if moe else spec.plan[-1].ffn
    if spec.position.kind == "learned":
        return _gpt2(spec, a, f)
    if a.kind == "mla":
        return _deepseek_v2(spec, a, f)
    return _llama_family(spec, a, f)


@pytest.mark.parametrize("name", preset_names())
def test_params_match_transformers_on_meta(name):
    spec = load_spec(name)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config(spec))
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", preset_names())
def test_full_prefill_flops_match_transformers_on_a_tiny_variant(name, tiny_variant):
    from torch.utils.flop_counter import FlopCounterMode

    spec = tiny_variant(load_spec(name))
    cfg = hf_config(spec)
    model = transformers.AutoModelForCausalLM.from_config(
        cfg, attn_implementation="eager", experts_implementation="eager").eval()
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    ids = torch.randint(0, spec.vocab_size, (2, 10))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids)
    assert prefill_flops(spec, 10, batch=2, attention="full").total == counter.get_total_flops()
