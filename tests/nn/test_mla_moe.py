"""MLA and MoE in the builder, checked against transformers' own DeepseekV2, Mixtral, GraniteMoe
(the parity of their tiny configs, prefill and cached decoding, is the conformance cases'):

- full-size presets on the meta device: parameter counts equal transformers' classes and the
  analytic estimator; active parameters equal an independent count;
- MLA's two decode forms, absorbed and recompute, through a cached prefill, a 3-token chunk
  and single steps, against transformers' logits (fp32, max abs diff < 1e-4);
- routing is not vacuous, and group-limited routing changes picks;
- the MLA cache holds exactly n_layers x N x (kv_lora_rank + qk_rope_head_dim) values;
- the batched MoE equals the reference loop;
- GraniteMoe's older checkpoint names are read.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from archscope.estimate.kv_cache import kv_cache_bytes  # noqa: E402
from archscope.estimate.params import count_params  # noqa: E402
from archscope.nn import build_model, count_parameters  # noqa: E402
from archscope.nn.mla import DECODE_FORMS, set_mla_decode_form  # noqa: E402
from archscope.nn.moe import MoE, Router, experts_batched, experts_reference  # noqa: E402
from archscope.spec import load_spec  # noqa: E402
from archscope.spec.loader import spec_from_mapping  # noqa: E402
from archscope.spec.hf import spec_to_hf_config  # noqa: E402
from parity import max_diff, routed, twins  # noqa: E402

ATOL = 1e-4

# ---------------------------------------------------------------------------------------------
# Tiny specs. Dimensions are small but every feature is on: MLA with and without q_lora_rank,
# v_head_dim != q/k head dim, YaRN with mscale != mscale_all_dim (so both the cos/sin factor and
# the softmax-scale factor are not 1), group-limited routing with a scaling factor, a dense first
# layer, shared experts, Granite's multipliers and tied embeddings.

_YARN = {"kind": "yarn", "factor": 4.0, "original_max_seq_len": 32, "beta_fast": 32.0,
         "beta_slow": 1.0, "mscale": 0.8, "mscale_all_dim": 0.6}


def _deepseek(q_lora_rank, router) -> dict:
    attention = {"kind": "mla", "n_heads": 4, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
                 "qk_rope_head_dim": 8, "v_head_dim": 12}
    if q_lora_rank:
        attention["q_lora_rank"] = q_lora_rank
    return {
        "name": "tiny-deepseek", "source": "test", "vocab_size": 101, "d_model": 64,
        "n_layers": 3, "max_seq_len": 128, "tie_embeddings": False,
        "norm": {"kind": "rmsnorm", "eps": 1e-6},
        "position": {"kind": "rope", "theta": 10000.0, "scaling": _YARN},
        "attention": attention,
        "ffn": {"kind": "moe", "n_experts": 8, "top_k": 3, "d_expert": 32, "n_shared_experts": 2,
                "router": router},
        "layers": [{"select": "0:1", "ffn": {"kind": "swiglu", "d_ff": 96}}],
    }


TINY = {
    "deepseek_v2-q_lora-group_limited": _deepseek(
        24, {"method": "group_limited_greedy", "n_group": 4, "topk_group": 2,
             "normalize": False, "scaling_factor": 2.5}),
    "deepseek_v2-no_q_lora-greedy": _deepseek(
        None, {"method": "greedy", "normalize": False, "scaling_factor": 1.0}),
    "mixtral": {
        "name": "tiny-mixtral", "source": "test", "vocab_size": 101, "d_model": 64,
        "n_layers": 2, "max_seq_len": 128, "norm": {"kind": "rmsnorm", "eps": 1e-5},
        "position": {"kind": "rope", "theta": 10000.0},
        "attention": {"kind": "gqa", "n_heads": 4, "n_kv_heads": 2, "head_dim": 16},
        "ffn": {"kind": "moe", "n_experts": 8, "top_k": 2, "d_expert": 32,
                "router": {"method": "greedy", "normalize": True}},
    },
    "granitemoe": {
        "name": "tiny-granitemoe", "source": "test", "vocab_size": 101, "d_model": 64,
        "n_layers": 2, "max_seq_len": 128, "tie_embeddings": True,
        "norm": {"kind": "rmsnorm", "eps": 1e-6},
        "position": {"kind": "rope", "theta": 10000.0},
        "attention": {"kind": "gqa", "n_heads": 4, "n_kv_heads": 2, "head_dim": 16},
        "ffn": {"kind": "moe", "n_experts": 6, "top_k": 3, "d_expert": 32,
                "router": {"method": "greedy", "normalize": True}},
        "multipliers": {"embedding": 3.0, "attention": 0.2, "residual": 0.5, "logits": 2.0},
    },
}


def tiny_spec(name: str):
    return spec_from_mapping(TINY[name], f"<{name}>")


def paired_models(name: str):
    """(spec, transformers model, archscope model): the same random weights (std 0.2, norm
    scales 1 +- 0.1, see tests/parity.py) mapped by name; fp32, eval mode."""
    spec = tiny_spec(name)
    hf, ours = twins(spec)
    return spec, hf, ours


def hf_on_meta(spec):
    """transformers' own class for the spec's exported config.json, built on the meta device."""
    config = transformers.AutoConfig.for_model(**spec_to_hf_config(spec))
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _ids(vocab: int, batch: int = 2, length: int = 13) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(1))


# ---------------------------------------------------------------------------------------------
# (1) Full-size presets on the meta device.

FULL_PRESETS = {"deepseek-v2": 21.4e9, "deepseek-v2-lite": None, "mixtral-8x7b": 12.9e9,
                "granite-3.0-3b-a800m": None}


def _inactive_expert_params(spec) -> int:
    """Parameters of the routed experts a token does not use: per MoE layer,
    (n_experts - top_k) SwiGLU experts of gate, up (d x d_expert) and down (d_expert x d)."""
    d = spec.d_model
    return sum((layer.ffn.n_experts - layer.ffn.top_k) * 3 * d * layer.ffn.d_expert
               for layer in spec.plan if layer.is_moe)


@pytest.mark.parametrize("preset", FULL_PRESETS)
def test_meta_param_counts_match_transformers(preset):
    spec = load_spec(preset)
    hf = hf_on_meta(spec)
    assert all(p.is_meta for p in hf.parameters())
    hf_total = sum(p.numel() for p in hf.parameters())
    ours = build_model(spec, device="meta")
    assert all(p.is_meta for p in ours.parameters())
    analytic = count_params(spec)
    assert count_parameters(ours) == hf_total == analytic.total
    assert analytic.active == hf_total - _inactive_expert_params(spec)
    if FULL_PRESETS[preset]:
        assert analytic.active == pytest.approx(FULL_PRESETS[preset], abs=0.05e9)


# ---------------------------------------------------------------------------------------------
# (2) MLA's decode forms through the cache.

# MLA decodes in both forms (see archscope.nn.mla): absorbed (the default) and recompute
# (decompressing every held latent each step).
DECODE_CASES = [(name, form) for name, raw in TINY.items() if raw["attention"]["kind"] == "mla"
                for form in DECODE_FORMS]


@pytest.mark.parametrize("name, form", DECODE_CASES, ids=[f"{n}-{f}" for n, f in DECODE_CASES])
def test_mla_decode_forms_match_transformers(name, form):
    spec, hf, ours = paired_models(name)
    assert set_mla_decode_form(ours, form) == spec.n_layers
    ids = _ids(spec.vocab_size)
    prompt, chunk = 5, 3  # a prefill, a chunk of 3 after it (masked against the cache), then 1 by 1
    with torch.no_grad():
        expected = hf(ids).logits
        cache = ours.new_cache(ids.shape[0], max_len=ids.shape[1])
        steps = [ours(ids[:, :prompt], cache), ours(ids[:, prompt:prompt + chunk], cache)]
        for i in range(prompt + chunk, ids.shape[1]):
            steps.append(ours(ids[:, i:i + 1], cache))
    got = torch.cat(steps, dim=1)
    assert cache.length == ids.shape[1]
    assert max_diff(got, expected) < ATOL


@pytest.mark.parametrize("name", TINY)
def test_routing_is_not_vacuous(name):
    """Tokens pick different experts, and group-limited routing changes some picks."""
    spec, _, ours = paired_models(name)
    inputs, picks = zip(*routed(ours, _ids(spec.vocab_size)))
    for index in picks:
        assert len({tuple(sorted(row.tolist())) for row in index}) > 3
    router = next(layer.ffn.routing for layer in spec.plan if layer.is_moe)
    if router.method == "group_limited_greedy":
        gate = next(m for m in ours.modules() if isinstance(m, Router))
        x = inputs[0]
        greedy = (x @ gate.weight.T).softmax(-1).topk(gate.top_k).indices.sort().values
        assert (greedy != picks[0].sort().values).any(dim=-1).sum() > 0


# ---------------------------------------------------------------------------------------------
# (3) The MLA cache holds the latent and the RoPE key, nothing else.

def test_mla_cache_holds_latent_and_rope_key_only():
    spec = tiny_spec("deepseek_v2-q_lora-group_limited")
    a = spec.attention
    per_token = a.kv_lora_rank + a.qk_rope_head_dim
    model = build_model(spec)
    n = 11
    ids = _ids(spec.vocab_size, batch=1, length=n)
    # max_len == N: the preallocated buffers are exactly the N cached tokens.
    cache = model.new_cache(1, max_len=n)
    with torch.no_grad():
        model(ids, cache)
    assert all(set(layer.buffers) == {"latent", "k_rope"} for layer in cache.layers)
    elements = sum(b.numel() for layer in cache.layers for b in layer.buffers.values())
    assert elements == spec.n_layers * n * per_token
    assert cache.nbytes() == kv_cache_bytes(spec, n, batch=1, dtype="fp32")
    # max_len > N: count the valid slots (positions written), not the capacity.
    cache = model.new_cache(1, max_len=4 * n)
    with torch.no_grad():
        model(ids, cache)
    valid = sum(int((layer.positions >= 0).sum()) * sum(b.shape[-1] for b in layer.buffers.values())
                for layer in cache.layers)
    assert valid == spec.n_layers * n * per_token


def test_deepseek_v2_cache_is_576_values_per_token_per_layer():
    spec = load_spec("deepseek-v2")
    n = 1000
    cache = build_model(spec, device="meta").new_cache(1, max_len=n)
    elements = sum(b.numel() for layer in cache.layers for b in layer.buffers.values())
    assert elements == 60 * n * 576 == spec.n_layers * n * (512 + 64)


# ---------------------------------------------------------------------------------------------
# (4) The batched MoE equals the reference loop.

METHODS = ["padded_bmm"] + (["grouped_mm"] if hasattr(torch.nn.functional, "grouped_mm") else [])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ["deepseek_v2-q_lora-group_limited", "mixtral"])
def test_batched_moe_equals_reference(name, method):
    """Both batched paths (grouped_mm is what CUDA uses; on CPU it runs too, slowly) against
    the loop, for many tokens (every expert used) and for one token (top_k experts used)."""
    spec = tiny_spec(name)
    layer = next(layer for layer in spec.plan if layer.is_moe)
    moe = MoE(spec, layer.ffn)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in moe.parameters():
            p.copy_(0.2 * torch.randn(p.shape, generator=g))
    for n_tokens in (51, 1):
        x = torch.randn(n_tokens, spec.d_model, generator=g)
        with torch.no_grad():
            weights, index = moe.gate(x)
            ref = experts_reference(moe.experts, x, weights, index)
            fast = experts_batched(moe.experts, x, weights, index, method)
        assert ref.abs().max() > 1.0
        assert max_diff(fast, ref) < 1e-5


def test_moe_module_switches_between_reference_and_batched():
    spec = tiny_spec("mixtral")
    moe = MoE(spec, spec.ffn)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in moe.parameters():
            p.normal_(0.0, 0.2, generator=g)
        x = torch.randn(2, 9, spec.d_model, generator=g)
        moe.experts.path = "reference"
        ref = moe(x)
        moe.experts.path = "sorted"
        assert max_diff(moe(x), ref) < 1e-5


@pytest.mark.skipif("grouped_mm" not in METHODS, reason="this torch has no grouped_mm")
def test_grouped_mm_flop_formula_counts_the_routed_work():
    """FlopCounterMode has no formula for grouped_mm; FLOP_FORMULAS gives it one, and then the
    batched path counts exactly what the reference loop counts:
    2 * tokens * top_k * 3 * d * d_expert."""
    from torch.utils.flop_counter import FlopCounterMode

    from archscope.nn.moe import FLOP_FORMULAS

    spec = tiny_spec("mixtral")
    moe = MoE(spec, spec.ffn)
    with torch.no_grad():
        for p in moe.parameters():
            p.normal_(0.0, 0.2)
        x = torch.randn(13, spec.d_model)
        weights, index = moe.gate(x)
        counts = []
        for run in (lambda: experts_reference(moe.experts, x, weights, index),
                    lambda: experts_batched(moe.experts, x, weights, index, "grouped_mm")):
            with FlopCounterMode(display=False, custom_mapping=FLOP_FORMULAS) as counter:
                run()
            counts.append(counter.get_total_flops())
    f = spec.ffn
    assert counts[0] == counts[1] == 2 * 13 * f.top_k * 3 * spec.d_model * f.d_expert


# ---------------------------------------------------------------------------------------------
# (5) GraniteMoe's own checkpoint names.

def test_granitemoe_checkpoint_names_are_read():
    """GraniteMoe checkpoints say input_linear/output_linear/router.layer; transformers renames
    them on load to experts.gate_up_proj/experts.down_proj/router (same layouts)."""
    from archscope.weights import hf_to_ours, table_for

    spec, hf, ours = paired_models("granitemoe")
    renames = {"experts.gate_up_proj": "input_linear.weight",
               "experts.down_proj": "output_linear.weight", "router.weight": "router.layer.weight"}
    legacy = {}
    for key, value in hf.state_dict().items():
        for new, old in renames.items():
            key = key.replace(new, old)
        legacy[key] = value
    assert any("input_linear" in k for k in legacy)
    shapes = {k: v.shape for k, v in ours.state_dict().items()}
    mapped, unmatched = hf_to_ours(table_for("granitemoe"), legacy, shapes)
    assert not unmatched
    assert set(mapped) == set(ours.state_dict())
    assert all(torch.equal(mapped[k], v) for k, v in ours.state_dict().items())
