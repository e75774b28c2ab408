"""MLA's decode form (archscope.nn.mla): a prefill decompresses, cached steps absorb by default.

- logits equal transformers' DeepseekV2 (fp32, max abs diff < 1e-4) for a prefill and 14 cached
  single-token steps, in both decode forms, and the path taken is the one the rule names:
  start == 0 decompresses (`_naive`), start > 0 runs `_absorbed` unless the form is "recompute";
- FLOPs under torch's FlopCounterMode: one archscope decode step at context N equals
  decode_flops(spec, N, mla="absorbed") by default and mla="recompute" in the recompute form;
  one step of transformers' own DeepseekV2 over its DynamicCache equals mla="recompute";
- set_mla_decode_form validates its argument and reaches every MLA layer.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from archscope.errors import InputError  # noqa: E402
from archscope.estimate import decode_flops, prefill_flops  # noqa: E402
from archscope.measure.reference import cache_kwargs, returned_cache  # noqa: E402
from archscope.nn import build_model  # noqa: E402
from archscope.nn.mla import DECODE_FORMS, MLAttention, set_mla_decode_form  # noqa: E402
from archscope.spec.loader import spec_from_mapping  # noqa: E402
from parity import max_diff, tiny_spec as tiny_gqa_spec, twins  # noqa: E402

ATOL = 1e-4
PREFILL, STEPS = 5, 14

_YARN = {"kind": "yarn", "factor": 4.0, "original_max_seq_len": 32, "beta_fast": 32.0,
         "beta_slow": 1.0, "mscale": 0.8, "mscale_all_dim": 0.6}


def _mla(q_lora_rank: int | None, ffn: dict, layers: list | None = None) -> dict:
    attention = {"kind": "mla", "n_heads": 4, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
                 "qk_rope_head_dim": 8, "v_head_dim": 12}
    if q_lora_rank:
        attention["q_lora_rank"] = q_lora_rank
    raw = {"name": "tiny-mla", "source": "test", "vocab_size": 101, "d_model": 64,
           "n_layers": 3, "max_seq_len": 128, "tie_embeddings": False,
           "norm": {"kind": "rmsnorm", "eps": 1e-6},
           "position": {"kind": "rope", "theta": 10000.0, "scaling": _YARN},
           "attention": attention, "ffn": ffn}
    if layers:
        raw["layers"] = layers
    return raw


# Dense FFN everywhere (no MoE layer: FLOP counts stay simple), and DeepSeek-V2's MoE layout
# without q_lora_rank (V2-Lite's plain q_proj), for parity.
TINY = {
    "mla-dense-q_lora": _mla(24, {"kind": "swiglu", "d_ff": 96}),
    "mla-moe-no_q_lora": _mla(
        None, {"kind": "moe", "n_experts": 8, "top_k": 3, "d_expert": 32, "n_shared_experts": 2,
               "router": {"method": "greedy", "normalize": False, "scaling_factor": 1.0}},
        [{"select": "0:1", "ffn": {"kind": "swiglu", "d_ff": 96}}]),
}


def spec_of(name: str):
    return spec_from_mapping(TINY[name], f"<{name}>")


def _ids(vocab: int, batch: int, length: int) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(7))


class PathSpy:
    """Counts the calls of MLAttention._naive and _absorbed (all layers), still running them."""

    def __init__(self, monkeypatch):
        self.calls = {"_naive": 0, "_absorbed": 0}
        for name in self.calls:
            original = getattr(MLAttention, name)

            def spy(module, *args, _name=name, _original=original):
                self.calls[_name] += 1
                return _original(module, *args)

            monkeypatch.setattr(MLAttention, name, spy)

    def take(self) -> dict[str, int]:
        out, self.calls = self.calls, dict.fromkeys(self.calls, 0)
        return out


def test_default_form_is_absorbed():
    model = build_model(spec_of("mla-dense-q_lora"))
    forms = {m.decode_form for m in model.modules() if isinstance(m, MLAttention)}
    assert forms == {"absorbed"} == {DECODE_FORMS[0]}


# ---------------------------------------------------------------------------------------------
# Logit parity with transformers, and which path each call takes.

@pytest.mark.parametrize("form", [None, *DECODE_FORMS], ids=["default", *DECODE_FORMS])
@pytest.mark.parametrize("name", TINY)
def test_prefill_then_cached_steps_match_transformers(name, form, monkeypatch):
    spec = spec_of(name)
    hf, ours = twins(spec)
    if form is not None:
        assert set_mla_decode_form(ours, form) == spec.n_layers
    absorbs = form in (None, "absorbed")
    layers = spec.n_layers
    ids = _ids(spec.vocab_size, batch=2, length=PREFILL + STEPS)
    spy = PathSpy(monkeypatch)
    with torch.no_grad():
        expected = hf(ids).logits  # one full forward: the reference
        cache = ours.new_cache(ids.shape[0], max_len=ids.shape[1])
        steps = [ours(ids[:, :PREFILL], cache)]
        assert spy.take() == {"_naive": layers, "_absorbed": 0}  # a prefill always decompresses
        for i in range(PREFILL, ids.shape[1]):
            steps.append(ours(ids[:, i:i + 1], cache))
            assert spy.take() == ({"_naive": 0, "_absorbed": layers} if absorbs
                                  else {"_naive": layers, "_absorbed": 0})
    got = torch.cat(steps, dim=1)
    assert cache.length == PREFILL + STEPS
    assert expected.abs().max() > 1.0  # not vacuous
    assert max_diff(got, expected) < ATOL
    # transformers' own cached decode (DynamicCache) agrees as well, step by step
    with torch.no_grad():
        out = hf(ids[:, :PREFILL], use_cache=True)
        hf_steps, past = [out.logits], returned_cache(out)
        for i in range(PREFILL, ids.shape[1]):
            out = hf(ids[:, i:i + 1], use_cache=True, **cache_kwargs(hf, past))
            hf_steps.append(out.logits)
            past = returned_cache(out)
    assert max_diff(got, torch.cat(hf_steps, dim=1)) < ATOL


def test_paths_of_plain_forward_chunk_and_device_position(monkeypatch):
    """No cache: decompress. A chunk after a prefill (start > 0, several tokens): absorbed.
    Steps at a device-side position (KVCache.keep_length_on_device): absorbed, same logits."""
    spec = spec_of("mla-dense-q_lora")
    hf, ours = twins(spec)
    layers = spec.n_layers
    ids = _ids(spec.vocab_size, batch=2, length=12)
    spy = PathSpy(monkeypatch)
    with torch.no_grad():
        expected = hf(ids).logits
        assert max_diff(ours(ids), expected) < ATOL
        assert spy.take() == {"_naive": layers, "_absorbed": 0}
        cache = ours.new_cache(2, max_len=12)
        parts = [ours(ids[:, :4], cache), ours(ids[:, 4:7], cache)]
        assert spy.take() == {"_naive": layers, "_absorbed": layers}
        cache.keep_length_on_device()
        for i in range(7, 12):
            parts.append(ours(ids[:, i:i + 1], cache))
        assert spy.take() == {"_naive": 0, "_absorbed": 5 * layers}
    assert max_diff(torch.cat(parts, dim=1), expected) < ATOL


# ---------------------------------------------------------------------------------------------
# FLOPs of one decode step against the estimator's conventions.

BATCH, CONTEXT = 2, 10  # a prefill of CONTEXT - 1 tokens, then the step at context CONTEXT


def counted(run) -> int:
    """FLOPs torch counts (matmuls), with SDPA on its math backend: the fused CPU kernel has no
    FLOP formula in FlopCounterMode and would count as zero."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as c:
        run()
    return c.get_total_flops()


def _archscope_step_flops(spec, form: str | None) -> tuple[int, int]:
    """(prefill FLOPs, decode-step FLOPs) of archscope's model in `form` (None: default)."""
    model = build_model(spec).eval()
    if form is not None:
        set_mla_decode_form(model, form)
    ids = _ids(spec.vocab_size, BATCH, CONTEXT)
    cache = model.new_cache(BATCH, max_len=CONTEXT)
    prefill = counted(lambda: model(ids[:, :-1], cache))
    step = counted(lambda: model(ids[:, -1:], cache))
    assert cache.length == CONTEXT
    return prefill, step


@pytest.mark.parametrize("form, convention", [(None, "absorbed"), ("absorbed", "absorbed"),
                                              ("recompute", "recompute")],
                         ids=["default", "absorbed", "recompute"])
def test_archscope_decode_step_flops_equal_the_estimate(form, convention):
    spec = spec_of("mla-dense-q_lora")
    assert not any(layer.is_moe for layer in spec.plan)
    prefill, step = _archscope_step_flops(spec, form)
    # the prefill decompresses whatever the form: the naive convention, every pair counted
    assert prefill == prefill_flops(spec, CONTEXT - 1, BATCH, attention="full", mla="naive").total
    assert step == decode_flops(spec, CONTEXT, batch=BATCH, mla=convention).total
    # and the three conventions really differ here, so the equality picks one
    totals = {c: decode_flops(spec, CONTEXT, batch=BATCH, mla=c).total
              for c in ("naive", "recompute", "absorbed")}
    assert len(set(totals.values())) == 3


def test_transformers_decode_step_flops_equal_the_recompute_estimate():
    """transformers' DeepseekV2 caches the latent (DynamicCache) and decompresses every cached
    latent through kv_b_proj at each step: the "recompute" convention."""
    from parity import hf_model

    spec = spec_of("mla-dense-q_lora")
    hf, _ = hf_model(spec)  # eager attention
    assert hf.config._attn_implementation == "eager"
    ids = _ids(spec.vocab_size, BATCH, CONTEXT)
    state = {}

    def prefill():
        state["past"] = returned_cache(hf(ids[:, :-1], use_cache=True))

    def step():
        state["out"] = hf(ids[:, -1:], use_cache=True, **cache_kwargs(hf, state["past"]))

    assert counted(prefill) == prefill_flops(spec, CONTEXT - 1, BATCH, attention="full").total
    assert isinstance(state["past"], transformers.DynamicCache)
    assert state["past"].get_seq_length() == CONTEXT - 1
    assert counted(step) == decode_flops(spec, CONTEXT, batch=BATCH, mla="recompute").total
    assert state["out"].logits.shape == (BATCH, 1, spec.vocab_size)


# ---------------------------------------------------------------------------------------------
# set_mla_decode_form

def test_set_mla_decode_form_validates_and_reaches_every_layer():
    model = build_model(spec_of("mla-moe-no_q_lora"))
    with pytest.raises(InputError, match=r"form.*'absorbed'.*'recompute'.*'fast'"):
        set_mla_decode_form(model, "fast")
    assert {m.decode_form for m in model.modules() if isinstance(m, MLAttention)} == {"absorbed"}
    assert set_mla_decode_form(model, "recompute") == 3
    assert {m.decode_form for m in model.modules() if isinstance(m, MLAttention)} == {"recompute"}
    assert set_mla_decode_form(build_model(tiny_gqa_spec()), "recompute") == 0  # no MLA layer


def test_an_invalid_form_set_by_hand_is_refused_at_the_next_call():
    model = build_model(spec_of("mla-dense-q_lora"))
    next(m for m in model.modules() if isinstance(m, MLAttention)).decode_form = "naive"
    ids = _ids(101, 1, 3)
    with torch.no_grad(), pytest.raises(InputError, match="decode_form"):
        model(ids)
