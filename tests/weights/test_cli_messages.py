"""Checkpoints through the CLI's shared vocabulary and its messages: --new-tokens, make-checkpoint
--weights, run dtypes, a folder that does not exist, NaN/inf weights, memory refusals that
suggest only what the caller can change, --device-map without a GPU, the loading bar."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from archscope.errors import CheckpointError, InputError
from archscope.weights import load_checkpoint
from weights_helpers import family_spec, write_spec_yaml

UP = "model.layers.0.mlp.up_proj.weight"


def _refused(result, *needles, absent=()):
    code, out, err = result
    assert code == 2, (code, out, err)
    assert "Traceback" not in err
    message = err.strip().splitlines()[-1]
    assert len(err.strip()) < 400, err
    for needle in needles:
        assert needle in err, err
    for needle in absent:
        assert needle not in err, err
    return message


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny fp32 checkpoint written by archscope's own writer (copied by each test)."""
    from archscope.weights.writer import write_checkpoint

    folder = tmp_path_factory.mktemp("made") / "tiny"
    write_checkpoint(family_spec("llama"), folder, dtype=torch.float32)
    return folder


@pytest.fixture
def ckpt(made, tmp_path):
    folder = tmp_path / "tiny"
    shutil.copytree(made, folder)
    return folder


# -- item 1: --new-tokens everywhere -------------------------------------------------------------

def test_generate_takes_new_tokens(run_cli, ckpt):
    code, out, err = run_cli("generate", "--weights", str(ckpt), "--new-tokens", "3", "Hi")
    assert code == 0, err
    assert "new in" in err and ("3 new" in err or "stopped: eos" in err)


def test_max_new_tokens_is_gone(run_cli, ckpt):
    code, out, _ = run_cli("generate", "--help")
    assert code == 0 and "--new-tokens" in out and "max-new-tokens" not in out
    code, _, err = run_cli("generate", "--weights", str(ckpt), "--max-new-tokens", "2", "Hi")
    assert code == 2 and "No such option" in err


# -- item 3: make-checkpoint MODEL --weights DIR ---------------------------------------------------

def test_make_checkpoint_writes_the_weights_folder(run_cli, tmp_path):
    spec = write_spec_yaml(tmp_path / "tiny.yaml", family_spec("llama"))
    folder = tmp_path / "out"
    code, out, err = run_cli("make-checkpoint", str(spec), "--weights", str(folder), "--dtype",
                             "fp32")
    assert code == 0, err
    assert out.startswith(f"wrote {folder}") and (folder / "model.safetensors").is_file()
    model, _ = load_checkpoint(folder)
    assert next(model.parameters()).dtype == torch.float32


def test_make_checkpoint_needs_the_weights_folder(run_cli, tmp_path):
    spec = write_spec_yaml(tmp_path / "tiny.yaml", family_spec("llama"))
    code, _, err = run_cli("make-checkpoint", str(spec))
    assert code == 2 and "--weights" in err and "Traceback" not in err
    code, _, err = run_cli("make-checkpoint", str(spec), str(tmp_path / "a"))
    assert code == 2 and "Traceback" not in err  # no positional folder any more
    assert not (tmp_path / "a").exists()


def test_make_checkpoint_help_names_only_the_option(run_cli):
    code, out, _ = run_cli("make-checkpoint", "--help")
    assert code == 0 and "Usage: archscope make-checkpoint [OPTIONS] MODEL\n" in out
    assert "FOLDER" not in out and "--weights DIR" in out


# -- item 4: the run commands take fp32, fp16 or bf16 ---------------------------------------------

@pytest.mark.parametrize("command, dtype", [("generate", "int8"), ("make-checkpoint", "fp8"),
                                            ("profile", "int4")])
def test_run_commands_refuse_other_dtypes_saying_what_they_run(run_cli, tmp_path, command,
                                                               dtype):
    args = {"generate": ["generate", "--weights", str(tmp_path), "Hi"],
            "make-checkpoint": ["make-checkpoint", "gpt2", "--weights", str(tmp_path / "x")],
            "profile": ["profile", "gpt2"]}[command]
    _refused(run_cli(*args, "--dtype", dtype),
             f"dtype {dtype}: {command} runs fp32, fp16 or bf16 weights")
    assert not (tmp_path / "x").exists()


def test_run_dtypes_accept_torch_names(run_cli, ckpt):
    code, _, err = run_cli("generate", "--weights", str(ckpt), "--dtype", "bfloat16",
                           "--new-tokens", "2", "Hi")
    assert code == 0 and "(bfloat16)" in err


# -- item 8: messages ----------------------------------------------------------------------------

@pytest.mark.slow
def test_a_folder_that_does_not_exist_says_so(run_cli, tmp_path):
    missing = tmp_path / "nonexistent"
    message = _refused(run_cli("generate", "--weights", str(missing), "Hi"), str(missing),
                       "does not exist", absent=("tokenizer",))
    assert message.startswith("error: ")
    _refused(run_cli("profile", "gpt2", "--weights", str(missing)), "does not exist")


def test_a_file_given_as_the_folder_says_so(run_cli, ckpt):
    _refused(run_cli("generate", "--weights", str(ckpt / "config.json"), "Hi"), "not a folder")


def test_make_checkpoint_of_a_model_too_large_suggests_what_make_checkpoint_can_change(
        run_cli, tmp_path, monkeypatch):
    """gpt3-175b in bf16 (349 GB): not "a 16-bit dtype" (it is one), not device_map (not an
    argument of the writer); fewer layers or more memory. Refused before anything is built."""
    import archscope.weights.placement as placement

    monkeypatch.setattr(placement, "available_bytes", lambda device: 64 * 10**9)
    message = _refused(run_cli("make-checkpoint", "gpt3-175b", "--weights", str(tmp_path / "g")),
                       "349.21 GB (bfloat16)", "64.00 GB", "n_layers=2", "more memory",
                       absent=("16-bit", "device_map", "--"))
    assert "nothing was" in message
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("dtype, suggested", [("fp32", True), ("bf16", False)])
def test_a_checkpoint_too_large_suggests_a_16_bit_dtype_only_when_wider(run_cli, ckpt,
                                                                        monkeypatch, dtype,
                                                                        suggested):
    import archscope.weights.placement as placement

    monkeypatch.setattr(placement, "available_bytes", lambda device: 1000)
    message = _refused(run_cli("generate", "--weights", str(ckpt), "--dtype", dtype, "Hi"),
                       "nothing was loaded", "more memory", absent=("n_layers", "--"))
    assert ("16-bit dtype" in message) == suggested
    assert "device_map" not in message  # no GPU to spread over (see the next test)


def test_a_checkpoint_too_large_suggests_a_device_map_where_there_are_gpus(ckpt, monkeypatch):
    import archscope.weights.placement as placement

    monkeypatch.setattr(placement, "available_bytes", lambda device: 1000)
    monkeypatch.setattr(placement, "cuda_available", lambda: True)
    with pytest.raises(InputError, match="device_map='auto'"):
        load_checkpoint(ckpt, dtype=torch.bfloat16)


# -- item 9: --device-map without a GPU ----------------------------------------------------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present")
def test_device_map_without_a_gpu_is_refused(run_cli, ckpt):
    _refused(run_cli("generate", "--weights", str(ckpt), "--device-map", "auto", "Hi"),
             "no CUDA GPU is available", "device 'cpu'")
    with pytest.raises(InputError, match="no CUDA GPU"):
        load_checkpoint(ckpt, device_map="balanced")


# -- item 11: NaN/inf weights --------------------------------------------------------------------

def _poke(folder, name, values):
    path = folder / "model.safetensors"
    tensors = load_file(path)
    flat = tensors[name].view(-1)
    for i, value in enumerate(values):
        flat[i * 7] = value
    save_file(tensors, path, metadata={"format": "pt"})


@pytest.mark.slow
def test_nan_and_inf_weights_are_refused_naming_the_tensor(run_cli, ckpt):
    _poke(ckpt, UP, [float("nan"), float("inf"), float("-inf")])
    with pytest.raises(CheckpointError, match=rf"^{UP} has 3 NaN/inf values"):
        load_checkpoint(ckpt)
    _refused(run_cli("generate", "--weights", str(ckpt), "--new-tokens", "2", "Hi"),
             f"{UP} has 3 NaN/inf values", "model.safetensors")
    _refused(run_cli("profile", str(ckpt), "--weights", str(ckpt), "--prompt-len", "4",
                     "--new-tokens", "2", "--repeats", "1", "--format", "json"),
             f"{UP} has 3 NaN/inf values")


def test_a_bf16_checkpoint_with_a_nan_is_refused(run_cli, tmp_path):
    from archscope.weights.writer import write_checkpoint

    folder = tmp_path / "bf16"
    write_checkpoint(family_spec("llama"), folder, dtype=torch.bfloat16)
    _poke(folder, "model.norm.weight", [float("nan")])
    with pytest.raises(CheckpointError, match=r"model\.norm\.weight has 1 NaN/inf"):
        load_checkpoint(folder)


# -- item 7: a progress bar while loading ----------------------------------------------------------

def test_loading_counts_every_tensor_on_a_bar_shown_only_on_a_terminal(ckpt, monkeypatch):
    import archscope.progress as progress

    monkeypatch.delenv(progress.ENV, raising=False)  # (ARCHSCOPE_PROGRESS=1 would force it)

    bars = []

    class Bar:
        def __init__(self, **kwargs):
            self.kwargs, self.n = kwargs, 0
            bars.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n=1):
            self.n += n

    monkeypatch.setattr(progress, "tqdm", Bar)
    load_checkpoint(ckpt)
    (bar,) = bars
    assert bar.kwargs["disable"] is None and bar.kwargs["total"] == bar.n == 21
    load_checkpoint(ckpt, progress=False)
    assert bars[-1].kwargs["disable"] is True


def test_the_loading_bar_stays_off_stderr_when_it_is_not_a_terminal(run_cli, ckpt):
    code, _, err = run_cli("generate", "--weights", str(ckpt), "--new-tokens", "2", "Hi")
    assert code == 0 and "loading" not in err and "tensor/s" not in err
