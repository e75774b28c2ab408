"""archscope profile: the static cache, the decode loop against transformers' greedy generate,
the fixed-shape fast step, the roofline, and the CLI's JSON contract and refusals."""

from __future__ import annotations

import json

import pytest
import torch

from archscope.estimate import kv_cache_bytes, weights_bytes
from archscope.measure import roofline
from archscope.measure.fast import device_position_step
from archscope.measure.generate import generate
from archscope.nn import build_model
from archscope.spec import load_spec
from parity import tiny_spec, twins

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

FAMILIES = {
    "llama": {},
    "mistral-window": dict(attention=dict(window=5)),
    "gpt2": dict(norm=dict(kind="layernorm", eps=1e-5), position=dict(kind="learned"),
                 attention=dict(kind="gqa", n_heads=4, n_kv_heads=4, head_dim=16, bias=True),
                 ffn=dict(kind="mlp", d_ff=128, activation="gelu_tanh", bias=True),
                 tie_embeddings=True),
    "deepseek-mla-moe": dict(
        attention=dict(kind="mla", n_heads=4, q_lora_rank=16, kv_lora_rank=12,
                       qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8),
        ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=16, n_shared_experts=1,
                 router=dict(method="greedy", normalize=False, scaling_factor=1.0))),
    "mixtral-moe": dict(ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=16,
                                 router=dict(method="greedy", normalize=True))),
}


def prompt(spec, batch=2, length=7, seed=1):
    return torch.randint(0, spec.vocab_size, (batch, length),
                         generator=torch.Generator().manual_seed(seed))


# -- the cache ---------------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [{}, dict(attention=dict(window=4))], ids=["full", "window"])
def test_cache_sized_for_prompt_and_new_tokens_equals_the_estimate(changes):
    spec = tiny_spec(**changes)
    model = build_model(spec)
    cache = model.new_cache(batch=3, max_len=7 + 9)
    generate(model, prompt(spec, batch=3), 9, cache=cache)
    assert cache.length == 15  # the last new token is never fed back
    assert cache.nbytes() == kv_cache_bytes(spec, 16, 3, "fp32")


def test_a_reset_cache_reproduces_the_same_generation():
    spec = tiny_spec(attention=dict(window=4))
    model = build_model(spec)
    cache = model.new_cache(2, 20)
    first = generate(model, prompt(spec), 13, cache=cache)
    cache.reset()
    assert torch.equal(generate(model, prompt(spec), 13, cache=cache), first)


# -- the decode loop ---------------------------------------------------------------------------

@pytest.mark.parametrize("family", list(FAMILIES))
def test_greedy_decoding_gives_transformers_tokens(family):
    spec = tiny_spec(**FAMILIES[family])
    hf, ours = twins(spec)
    hf.generation_config.eos_token_id = None
    ids = prompt(spec)
    with torch.no_grad():
        theirs = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=12)[:, ids.shape[1]:]
    assert torch.equal(generate(ours, ids, 12), theirs)


@pytest.mark.parametrize("changes", [{}, dict(attention=dict(window=4))], ids=["full", "window"])
def test_fixed_shape_step_matches_the_eager_step(changes):
    """The device-position step (what CUDA graphs and torch.compile capture) on the CPU."""
    spec = tiny_spec(**changes)
    model = build_model(spec)
    eager = generate(model, prompt(spec), 15)
    assert torch.equal(generate(model, prompt(spec), 15, step=device_position_step(model)), eager)


def test_sampling_is_pluggable():
    spec = tiny_spec()
    model = build_model(spec)
    out = generate(model, prompt(spec), 5, next_token=lambda logits: logits.argmin(-1))
    assert out.shape == (2, 5) and not torch.equal(out, generate(model, prompt(spec), 5))


# -- the roofline ------------------------------------------------------------------------------

def test_decode_prediction_is_bytes_over_bandwidth_when_memory_bound():
    spec = load_spec("llama-3.2-1b")
    hw = roofline.preset("h200")
    pred = roofline.predict_decode(spec, hw, prompt_len=512, new_tokens=2, batch=1, dtype="bf16")
    # One step at context 513: all weights (tied: the head reads the embedding) + the cache.
    moved = weights_bytes(spec, "bf16") + kv_cache_bytes(spec, 513, 1, "bf16")
    assert pred.bytes == moved and pred.bound == "memory"
    assert pred.extra["tokens_per_s"] == pytest.approx(hw.bandwidth / moved)


def test_moe_decode_reads_only_the_routed_experts():
    spec = load_spec("mixtral-8x7b")
    one = roofline.weights_read_bytes(spec, "bf16", tokens=1)
    assert one < 0.4 * weights_bytes(spec, "bf16")  # 2 of 8 experts: ~13B of ~47B parameters
    # Every expert touched; the untied embedding table is only looked up, never read whole.
    assert roofline.weights_read_bytes(spec, "bf16", tokens=10_000) == pytest.approx(
        weights_bytes(spec, "bf16") - 2 * spec.vocab_size * spec.d_model, rel=1e-6)


def test_prefill_prediction_counts_the_head_once():
    spec = tiny_spec()
    hw = roofline.Hardware("toy", {"fp32": 1e9}, 1e15, "test")
    pred = roofline.predict_prefill(spec, hw, prompt_len=10, batch=1, dtype="fp32")
    assert pred.bound == "compute"
    head = 2 * spec.d_model * spec.vocab_size
    from archscope.estimate import prefill_flops

    assert pred.flops == prefill_flops(spec, 10).total - 9 * head


def test_local_calibration_measures_something_plausible():
    hw = roofline.calibrate("cpu", "fp32", seconds=0.05)
    assert hw.name == "local-cpu" and 1e8 < hw.bandwidth < 1e13
    assert 1e8 < hw.peak_flops("fp32") < 1e14


# -- the breakdown -----------------------------------------------------------------------------

def test_breakdown_names_modules_and_operators():
    from archscope.measure.breakdown import breakdown
    from archscope.measure.generate import decode, eager_step, greedy, prefill

    spec = tiny_spec()
    model = build_model(spec)
    cache = model.new_cache(2, 20)
    first = greedy(prefill(model, prompt(spec), cache))
    out = breakdown(model, lambda: decode(eager_step(model), first, cache, 4), 4,
                    torch.device("cpu"), top=50)
    names = {row["name"] for row in out["modules"]}
    assert {"lm_head", "layers.*.self_attn", "layers.*.mlp.down_proj"} <= names
    assert next(r for r in out["modules"] if r["name"] == "layers.*.self_attn")[
        "calls_per_step"] == spec.n_layers
    assert any(row["name"] in ("aten::mm", "aten::addmm") for row in out["ops"])


# -- the command line --------------------------------------------------------------------------

CONTRACT = ["model", "device", "dtype", "weights", "prompt_len", "new_tokens", "batch",
            "prefill_ms", "decode_tokens_per_s", "peak_memory_bytes", "kv_cache_bytes_measured",
            "kv_cache_bytes_estimated", "predicted_decode_tokens_per_s", "predicted_prefill_ms",
            "hardware", "torch_version", "hf_decode_tokens_per_s", "max_abs_logit_diff"]


@pytest.mark.slow
def test_profile_json_contract(run_cli, tmp_path):
    code, out, err = run_cli(
        "profile", "llama-3.2-1b", "--device", "cpu", "--dtype", "fp32", "--set", "n_layers=1",
        "--prompt-len", "16", "--new-tokens", "4", "--compare-hf", "--format", "json",
        "--repeats", "2", "--save", "--save-dir", str(tmp_path))
    assert code == 0, err
    record = json.loads(out)
    assert [k for k in CONTRACT if k not in record] == []
    assert record["weights"] == "random-init" and record["model"] == "llama-3.2-1b"
    assert record["kv_cache_bytes_measured"] == record["kv_cache_bytes_estimated"] > 0
    assert record["max_abs_logit_diff"] < 1e-4
    assert record["decode_tokens_per_s"] > 0 and record["hf_decode_tokens_per_s"] > 0
    assert record["peak_memory_bytes"] >= record["weights_bytes_measured"] * 0.9
    assert record["weights_bytes_measured"] == record["weights_bytes_estimated"]
    assert record["overrides"] == ["n_layers=1"]  # the what-if, recorded as given
    saved = tmp_path / "profile-llama-3.2-1b-n_layers-1-cpu-fp32.json"
    assert json.loads(saved.read_text()) == record
    from archscope.report.pages.profiles import load_profiles, profiles_page

    page = profiles_page(load_profiles(tmp_path))
    assert "| llama-3.2-1b (--set n_layers=1) |" in page  # in both tables
    assert page.count("llama-3.2-1b (--set n_layers=1)") == 2


def test_save_names_keep_variants_apart():
    from archscope.report.pages.profiles import profile_file_name

    def name(*overrides, device="cpu"):
        return profile_file_name({"model": "llama-3.2-1b", "device": device, "dtype": "bf16",
                                  "overrides": list(overrides)})

    assert name() == "profile-llama-3.2-1b-cpu-bf16.json"
    assert name(device="cuda:1") == "profile-llama-3.2-1b-cuda1-bf16.json"
    assert name("n_layers=2") == "profile-llama-3.2-1b-n_layers-2-cpu-bf16.json"
    assert name("attention.n_kv_heads=32", "n_layers=2") == (
        "profile-llama-3.2-1b-attention.n_kv_heads-32-n_layers-2-cpu-bf16.json")
    long = ("attention.n_kv_heads=32", "n_layers=2", "vocab_size=512")  # cut short, hashed
    odd = ("attention={kind: mla, kv_lora_rank: 64}",)
    names = {name(), name("n_layers=2"), name("n_layers=1"), name(*long), name(*long[::-1]),
             name(*odd)}
    assert len(names) == 6
    assert all(len(n) < 80 and " " not in n and "{" not in n for n in names)
    # A record from before `overrides` existed keeps its old name and its plain label.
    from archscope.report.terminal.profile import model_label

    assert profile_file_name({"model": "gpt2", "device": "cpu", "dtype": "fp32"}) == (
        "profile-gpt2-cpu-fp32.json")
    # a compiled run, and one on packed weights, beside the eager run on the weights as they are
    assert profile_file_name({"model": "gpt2", "device": "cpu", "dtype": "bf16", "compiled": True,
                              "pack_weights": True}) == "profile-gpt2-cpu-bf16-compiled-packed.json"
    assert profile_file_name({"model": "gpt2", "device": "cpu", "dtype": "bf16",
                              "compiled": False}) == "profile-gpt2-cpu-bf16.json"
    assert model_label({"model": "gpt2"}) == "gpt2"


@pytest.mark.slow
def test_profile_table_has_the_breakdown(run_cli):
    code, out, err = run_cli("profile", "llama-3.2-1b", "--set", "n_layers=1",
                             "--set", "vocab_size=512", "--prompt-len", "8", "--new-tokens", "3",
                             "--repeats", "1")
    assert code == 0, err
    assert out.startswith("llama-3.2-1b (--set n_layers=1 --set vocab_size=512) on cpu")
    assert "decode (tokens/s)" in out and "module (inclusive)" in out and "lm_head" in out


def test_refuses_a_run_that_will_not_fit_before_allocating(run_cli, monkeypatch):
    import archscope.measure.profile as prof

    def no_build(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(prof, "build_model", no_build)
    code, _, err = run_cli("profile", "llama-3.2-1b", "--set", "n_layers=1",
                           "--batch", "1000000", "--prompt-len", "16", "--new-tokens", "4")
    assert code == 2
    assert "will not fit" in err and "Nothing was allocated" in err


@pytest.mark.parametrize("args, message", [
    (["--new-tokens", "1"], "new_tokens must be an integer >= 2, got 1"),
    (["--prompt-len", "200000"], "max_seq_len"),
    (["--weights", "no/such/dir"], "no/such/dir: the checkpoint folder does not exist"),
])
@pytest.mark.slow
def test_bad_options_exit_2(run_cli, args, message):
    code, _, err = run_cli("profile", "llama-3.2-1b", "--set", "n_layers=1", *args)
    assert code == 2 and message in err


@pytest.mark.slow
def test_profile_a_checkpoint_folder(run_cli, tmp_path):
    from archscope.weights.writer import write_checkpoint

    folder = tmp_path / "tiny-ckpt"
    write_checkpoint(tiny_spec(vocab_size=300), folder, dtype=torch.float32)
    args = ["profile", str(folder), "--weights", str(folder), "--prompt-len", "8",
            "--new-tokens", "3", "--repeats", "1", "--format", "json"]
    code, out, err = run_cli(*args, "--compare-hf")
    assert code == 0, err
    record = json.loads(out)
    assert record["weights"] == str(folder) and record["max_abs_logit_diff"] < 1e-4
    code, _, err = run_cli(*args, "--set", "n_layers=1")  # not the checkpoint's network
    assert code == 2 and "n_layers" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_without_a_gpu_exits_2(run_cli):
    code, _, err = run_cli("profile", "llama-3.2-1b", "--set", "n_layers=1", "--device", "cuda")
    assert code == 2 and "no CUDA device" in err


# -- CUDA (skipped without a GPU) -----------------------------------------------------------------

@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("compile", [False, True], ids=["graph", "compiled-graph"])
def test_cuda_graph_step_matches_eager(compile):
    from archscope.measure.fast import CUDAGraphStep

    spec = tiny_spec(attention=dict(window=6))
    model = build_model(spec, device="cuda")
    ids = prompt(spec).cuda()
    eager = generate(model, ids, 20)
    cache = model.new_cache(2, 27)
    step = CUDAGraphStep(model, compile=compile)
    assert torch.equal(generate(model, ids, 20, step=step, cache=cache), eager)
    cache.reset()  # the graph stays bound to the cache across prompts
    assert torch.equal(generate(model, ids, 20, step=step, cache=cache), eager)


@pytest.mark.cuda
@cuda
def test_cuda_profile_record(run_cli):
    code, out, err = run_cli("profile", "llama-3.2-1b", "--device", "cuda", "--dtype", "bf16",
                             "--set", "n_layers=2", "--prompt-len", "32", "--new-tokens", "8",
                             "--compare-hf", "--compile", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["gpu_name"] and record["peak_memory_bytes"] > 0
    assert record["kv_cache_bytes_measured"] == record["kv_cache_bytes_estimated"]
    assert record["compiled_tokens_match_eager"]


TINY_MLA = ("--set", "n_layers=2", "--set", "vocab_size=256", "--set", "d_model=64",
            "--set", "attention.n_heads=4", "--set", "attention.kv_lora_rank=16",
            "--set", "attention.qk_nope_head_dim=8", "--set", "attention.qk_rope_head_dim=4",
            "--set", "attention.v_head_dim=8", "--set", "ffn.d_expert=16",
            "--set", "ffn.n_experts=8",
            "--set", 'layers=[{select: "0:1", ffn: {kind: swiglu, d_ff: 96}}]')


@pytest.mark.slow
def test_profile_runs_the_mla_decode_form_it_records(run_cli):
    """`--mla-flops recompute` decodes as transformers does (same logits), the record names the
    form, and the estimated side (the record's cache) equals what the cache holds."""
    code, out, err = run_cli("profile", "deepseek-v2-lite", *TINY_MLA, "--prompt-len", "8",
                             "--new-tokens", "4", "--repeats", "1", "--compare-hf",
                             "--mla-flops", "recompute", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["mla_flops"] == "recompute"
    assert record["kv_cache_bytes_measured"] == record["kv_cache_bytes_estimated"] > 0
    assert record["max_abs_logit_diff"] < 1e-4
