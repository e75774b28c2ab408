"""Shared harness: the same spec built by transformers and by archscope, with the same weights."""

from __future__ import annotations

import torch
import transformers

from archscope.nn import build_model
from archscope.spec.fields import from_mapping
from archscope.spec.hf import spec_to_hf_config
from archscope.spec.schema import ModelSpec
from archscope.weights import hf_to_ours, table_for


def tiny_spec(**changes) -> ModelSpec:
    """A small Llama-like spec; keyword arguments replace top-level keys (mappings merge)."""
    base = dict(name="tiny", source="test", vocab_size=97, d_model=64, n_layers=2,
                max_seq_len=64, norm=dict(kind="rmsnorm", eps=1e-5),
                position=dict(kind="rope", theta=10000.0),
                attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16),
                ffn=dict(kind="swiglu", d_ff=96))
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict) and "kind" not in value:
            value = {**base[key], **value}
        base[key] = value
    return from_mapping(ModelSpec, base)


def randomised(model, seed: int = 0, std: float = 0.2):
    """`model` (eval mode) with random weights of `std` and norm weights 1 +- 0.1.

    A large std (and perturbed norm weights) keeps the logits far from trivial, so a wrong
    mask, scale or rotation shows up well above the tolerance.
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "ln_" in name:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(std * torch.randn(p.shape, generator=generator))
    return model.eval()


# Changes to tiny_spec for a small MoE and an MLA + MoE model, shared by the tests that run one
# of each (their checkpoints, their compiled decode).
TINY_MOE = dict(ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=16,
                         router=dict(method="greedy", normalize=True)))
TINY_MLA_MOE = dict(
    attention=dict(kind="mla", n_heads=4, q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=8,
                   qk_rope_head_dim=4, v_head_dim=8),
    ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=16, n_shared_experts=1,
             router=dict(method="greedy", normalize=False, scaling_factor=1.0)))


def hf_model(spec: ModelSpec, seed: int = 0, std: float = 0.2):
    """transformers' own class for the spec's exported config, randomised (`randomised`)."""
    config_dict = spec_to_hf_config(spec)
    config = transformers.AutoConfig.for_model(**config_dict)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return randomised(model, seed, std), config_dict["model_type"]


def load_same_weights(spec: ModelSpec, hf, model_type: str):
    """archscope's model for `spec` with the HF model's weights, mapped by name."""
    ours = build_model(spec)
    shapes = {k: v.shape for k, v in ours.state_dict().items()}
    mapped, unmatched = hf_to_ours(table_for(model_type), hf.state_dict(), shapes)
    assert not unmatched, f"no mapping rule for {unmatched}"
    ours.load_state_dict(mapped, strict=True)
    return ours


def twins(spec: ModelSpec, seed: int = 0, prepare=None):
    """transformers' model (random weights) and archscope's with the same state; `prepare(hf)`,
    if given, changes transformers' model first (under no_grad), e.g. a buffer hf_model leaves
    alone."""
    hf, model_type = hf_model(spec, seed)
    if prepare is not None:
        with torch.no_grad():
            prepare(hf)
    return hf, load_same_weights(spec, hf, model_type)


def random_correction_bias(hf, seed: int = 7) -> None:
    """DeepSeek-V3's and GLM-4.5's selection-only e_score_correction_bias, random (hf_model
    leaves the buffer at zero, where leaving it out of the choice would change nothing)."""
    generator = torch.Generator().manual_seed(seed)
    # a buffer, or (ERNIE 4.5's) a parameter
    for name, b in [*hf.named_buffers(), *hf.named_parameters()]:
        if name.endswith("e_score_correction_bias"):
            b.copy_(0.5 * torch.randn(b.shape, generator=generator))


def larger_sinks(hf) -> None:
    """gpt-oss's attention sinks of a few units (x10): a head's attention visibly leaks to them."""
    for layer in hf.model.layers:
        layer.self_attn.sinks.mul_(10)


def logits_case(spec: ModelSpec, hf, ours, tokens: int):
    """What a family's parity fixture returns, (spec, hf, ours, ids, reference): two random
    prompts of `tokens` ids and transformers' logits for them."""
    ids = torch.randint(0, spec.vocab_size, (2, tokens), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        reference = hf(ids).logits
    return spec, hf, ours, ids, reference


def twin_case(spec: ModelSpec, tokens: int, prepare=None):
    """A family's parity fixture: logits_case of `spec`'s twins (twins(spec, prepare=prepare))."""
    hf, ours = twins(spec, prepare=prepare)
    return logits_case(spec, hf, ours, tokens)


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@torch.no_grad()
def decode_stepwise(model, ids: torch.Tensor, prefill: int) -> torch.Tensor:
    """Logits from a prefill of `prefill` tokens then one token at a time through the cache."""
    cache = model.new_cache(ids.shape[0], ids.shape[1])
    outs = [model(ids[:, :prefill], cache)]
    for i in range(prefill, ids.shape[1]):
        outs.append(model(ids[:, i:i + 1], cache))
    return torch.cat(outs, dim=1)


def hf_decode_stepwise(hf, ids: torch.Tensor, prefill: int) -> torch.Tensor:
    """decode_stepwise through transformers' model and its own cache: a prefill of `prefill`
    tokens, then one token a forward call."""
    with torch.no_grad():
        out = hf(ids[:, :prefill], use_cache=True)
        outs, cache = [out.logits], out.cache
        for i in range(prefill, ids.shape[1]):
            out = hf(ids[:, i:i + 1], cache=cache, use_cache=True)
            outs.append(out.logits)
            cache = out.cache
    return torch.cat(outs, dim=1)


def hf_eager_prefill_flops(spec: ModelSpec, batch: int = 2, tokens: int = 10, **implementation):
    """FlopCounterMode's count of one prefill of transformers' own eager model, built from the
    spec's exported config (random ids; `implementation`: e.g. experts_implementation)."""
    from torch.utils.flop_counter import FlopCounterMode

    config = transformers.AutoConfig.for_model(**spec_to_hf_config(spec))
    eager = transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation="eager", **implementation).eval()
    ids = torch.randint(0, spec.vocab_size, (batch, tokens))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        eager(ids)
    return counter.get_total_flops()


def slots_in_use_bytes(cache) -> int:
    """Bytes of the per-token (KV) slots that hold a token (a static cache is allocated larger
    than what it has seen); a state mixer's constant state is `cache.state_nbytes()`."""
    from archscope.nn.cache import LayerCache, held_parts

    return sum(int((layer.positions >= 0).sum())
               * sum(b.numel() // layer.capacity * b.element_size() for b in layer.buffers.values())
               for layer in held_parts(cache.layers) if isinstance(layer, LayerCache))


def held_cache_bytes(model, ids: torch.Tensor, capacity: int) -> int:
    """Bytes archscope's own per-token (KV) cache holds after a real prefill of `ids`."""
    cache = model.new_cache(ids.shape[0], capacity)
    with torch.no_grad():
        model(ids, cache)
    return slots_in_use_bytes(cache)


def shrunk_cache_bytes(preset: ModelSpec, shrunk: ModelSpec, dtype: str = "fp32",
                       batch: int = 2, tokens: int = 9) -> int:
    """A preset's cache checked on `shrunk`, a 2-layer variant with the preset's attention: the
    bytes archscope's cache holds after a real prefill (random weights) equal the estimate,
    and the preset's estimate is that times its layers over 2. Returns the bytes held."""
    from archscope.estimate import kv_cache_bytes

    assert shrunk.attention == preset.attention and shrunk.n_layers == 2
    torch.manual_seed(0)
    model = build_model(shrunk, dtype={"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.02)
    ids = torch.randint(0, shrunk.vocab_size, (batch, tokens))
    held = held_cache_bytes(model.eval(), ids, 2 * tokens)
    assert held == kv_cache_bytes(shrunk, tokens, batch, dtype)
    assert kv_cache_bytes(preset, tokens, batch, dtype) == held * preset.n_layers // 2
    return held


def meta_param_counts(spec: ModelSpec) -> tuple[int, int, object]:
    """(archscope's count, transformers' count, transformers' model) of `spec` on meta."""
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**spec_to_hf_config(spec)))
    ours = build_model(spec, device="meta")
    return (sum(p.numel() for p in ours.parameters()),
            sum(p.numel() for p in theirs.parameters()), theirs)


def checked_preset(name: str, hf_class: str):
    """A full-size preset built on the meta device by archscope and by transformers' class for
    its exported config (which must be `hf_class`), checked: both hold the estimate's total
    parameters, and the built modules less the routed experts a token skips hold its active
    ones. Returns (spec, the estimate's ParamCount, transformers' model), for the preset's own
    figures."""
    from archscope.estimate import count_params
    from archscope.spec import load_spec

    spec = load_spec(name)
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**spec_to_hf_config(spec)))
    ours = build_model(spec, device="meta")
    p = count_params(spec)
    assert type(theirs).__name__ == hf_class
    assert sum(x.numel() for x in ours.parameters()) == p.total == \
        sum(x.numel() for x in theirs.parameters())
    assert p.active == active_params_from_modules(ours)
    return spec, p, theirs


def routed(model, ids: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each router's (input, chosen experts) in one forward of `ids`, in layer order."""
    from archscope.nn.moe import Router

    calls = []
    hooks = [m.register_forward_hook(lambda m, args, out: calls.append((args[0], out[1])))
             for m in model.modules() if isinstance(m, Router)]
    try:
        with torch.no_grad():
            model(ids)
    finally:
        for h in hooks:
            h.remove()
    return calls


def their_active_params(model, top_k: int) -> int:
    """transformers' parameters less, in each MoE layer, the experts a token skips (the fused
    3-D expert tensors: n_experts copies, of which top_k run)."""
    total = sum(p.numel() for p in model.parameters())
    for module in model.modules():
        fused = getattr(module, "gate_up_proj", None)
        if isinstance(fused, torch.nn.Parameter) and fused.dim() == 3:
            n = fused.shape[0]
            total -= sum(p.numel() for p in module.parameters(recurse=False)) // n * (n - top_k)
    return total


def active_params_from_modules(model) -> int:
    """All parameters, less each MoE layer's unused experts: of its fused expert tensors
    (n_experts copies), a token uses top_k. Buffers (a correction bias) are not parameters."""
    from archscope.nn.moe import MoE

    total = sum(p.numel() for p in model.parameters())
    for m in model.modules():
        if isinstance(m, MoE):
            experts = sum(p.numel() for p in m.experts.parameters())
            n = m.experts.down_proj.shape[0]
            total -= experts // n * (n - m.gate.top_k)
    return total


def theirs_loads_here(hf, folder, ids: torch.Tensor):
    """transformers' save_pretrained of `hf`, loaded by archscope: (our model, our spec, the
    max abs difference of the logits on `ids`)."""
    from archscope.weights import load_checkpoint

    hf.save_pretrained(folder)
    ours, spec = load_checkpoint(folder)
    with torch.no_grad():
        return ours, spec, max_diff(ours(ids), hf(ids).logits)


def ours_loads_there(spec: ModelSpec, folder, ids: torch.Tensor) -> float:
    """A checkpoint archscope writes for `spec` (random weights, fp32), loaded by transformers'
    class and by archscope: the max abs difference of the two models' logits on `ids`."""
    from archscope.weights import load_checkpoint
    from archscope.weights.writer import write_checkpoint

    write_checkpoint(spec, folder, dtype=torch.float32)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    mine, _ = load_checkpoint(folder)
    with torch.no_grad():
        return max_diff(mine(ids), theirs(ids).logits)


def counted_flops(run) -> int:
    """FlopCounterMode's count of `run()` (no grad), attention on SDPA's math backend: on a CPU
    the fused kernel GQA's `enable_gqa` selects has no FLOP formula and would count zero."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


def uncounted_solves(spec: ModelSpec, tokens: int = 10) -> int:
    """The chunked delta rule's triangular solves (kinds/gated_deltanet.py's ut_solve), one
    sequence: real multiply-adds that FlopCounterMode has no rule for, so it counts none."""
    from archscope.kinds import mixer_kind

    return sum(mixer_kind(layer.state.kind).scan_flops(layer.state, tokens).get("ut_solve", 0)
               for layer in spec.plan if layer.state is not None)


def reference_experts(model) -> None:
    """Routed experts on their reference loop (one F.linear per expert): the sorted path's
    grouped_mm has no FLOP formula, and its padded-bmm fallback computes padding too."""
    from archscope.nn.moe import RoutedExperts

    for module in model.modules():
        if isinstance(module, RoutedExperts):
            module.path = "reference"


def their_cache_per_layer(cache) -> list[dict]:
    """What transformers' own cache object holds after a forward, per decoder layer: the
    tensors it keeps for the keys and values (and a DSA indexer's keys) ({'kv_bytes',
    'tokens'}: bytes and tokens held)
    and for a constant state ({'state_bytes'}: conv windows, recurrent matrices...). A layer
    object's tensor attributes are read by their names: keys/values are the per-token cache,
    any other floating-point tensor a state."""
    out = []
    for layer in cache.layers:
        kv, state, tokens = 0, 0, 0
        for name, value in vars(layer).items():
            tensors = (list(value.values()) if isinstance(value, dict)
                       else list(value) if isinstance(value, (list, tuple)) else [value])
            for t in tensors:
                # integer tensors are bookkeeping (a sliding layer's count of tokens seen)
                if not isinstance(t, torch.Tensor) or t.numel() == 0 or \
                        not t.is_floating_point():
                    continue
                if name in ("keys", "values", "indexer_keys"):  # DSA's indexer keys: per token
                    kv += t.nbytes
                    tokens = t.shape[-2] if name == "keys" else tokens
                else:
                    state += t.nbytes
        out.append({"kv_bytes": kv, "tokens": tokens, "state_bytes": state})
    # a cache that keeps a state beside its layers, one entry per layer index (MiniMaxCache's
    # linear_cache; an empty list where a layer has none)
    for name, value in vars(cache).items():
        if name == "layers" or not isinstance(value, list):
            continue
        for i, t in enumerate(value):
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                while len(out) <= i:
                    out.append({"kv_bytes": 0, "tokens": 0, "state_bytes": 0})
                out[i]["state_bytes"] += t.nbytes
    return out
def their_cache_bytes(cache) -> tuple[int, int]:
    """(KV bytes, state bytes) transformers' own cache object holds, all layers
    (their_cache_per_layer summed)."""
    layers = their_cache_per_layer(cache)
    return sum(x["kv_bytes"] for x in layers), sum(x["state_bytes"] for x in layers)


@torch.no_grad()
def prompt_then_steps(call, x: torch.Tensor, prompt: int, steps: int) -> torch.Tensor:
    """call(x[:, :prompt]), then call(x[:, t:t+1]) token by token for `steps` more tokens,
    the outputs concatenated along the tokens (a stateful module: its cache carried by `call`)."""
    outs = [call(x[:, :prompt])] + [call(x[:, t:t + 1]) for t in range(prompt, prompt + steps)]
    return torch.cat(outs, 1)


def linear_attention_state(cache, layer: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(conv window, recurrent state) of one sequence-batch that transformers' cache holds for a
    state layer (its LinearAttentionLayer's conv_states and recurrent_states)."""
    held = cache.layers[layer]
    return held.conv_states[0], held.recurrent_states[0]

