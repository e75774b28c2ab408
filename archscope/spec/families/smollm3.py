"""SmolLM3 (transformers' `smollm3`): Llama + NoPE layers (no_rope_layers, or every
no_rope_layer_interval-th) + a window on the layers layer_types marks. NoPE changes no weight."""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _check_types, _patch, _select
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    out = read_llama(c)
    n = out["n_layers"]
    uses = c.switches("no_rope_layers", n)
    if uses is None or "no_rope_layer_interval" in c.raw:  # checked whenever the file has it
        interval = c.size("no_rope_layer_interval")
    if uses is None:  # transformers' rule: layer i is NoPE when (i + 1) % interval == 0
        uses = [int((i + 1) % interval != 0) for i in range(n)]
    window = c.size("sliding_window", null=True)
    on = bool(c.flag("use_sliding_window")) and window is not None
    types = c.get("layer_types", None)
    if types is None:  # SmolLM3Config's rule: the window goes on the NoPE layers
        types = ["sliding_attention" if on and not uses[i] else "full_attention"
                 for i in range(n)]
    _check_types(c, types, n)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and not on:  # the mask would slide (config.sliding_window), the kernel would not
        raise c.error("layer_types", f"marks layer {sliding[0]} sliding_attention, but "
                                     "use_sliding_window is false or sliding_window null: "
                                     "transformers' SmolLM3 masks such layers by sliding_window "
                                     "yet passes the kernel no window; archscope refuses the "
                                     "ambiguity")
    layers = [{"select": _select(nope), "attention": {"rope": False}}
              for nope in [[i for i in range(n) if not uses[i]]] if nope]
    if sliding and len(sliding) == n:
        out = _patch(out, attention={"window": window})
    elif sliding:
        layers.append({"select": _select(sliding), "attention": {"window": window}})
    return {**out, "layers": layers} if layers else out


def write(s: ModelSpec) -> dict:
    """Llama's keys + which layers rotate (no_rope_layers, 1 = RoPE) and the windowed layers
    as layer_types (SmolLM3's window: one size, on the layers marked sliding_attention)."""
    windows = [layer.window for layer in s.plan]
    window = next((w for w in windows if w is not None), None)
    # As Phi-3's: the class's default token ids (pad 128004) are out of range in a smaller
    # vocabulary, where nn.Embedding refuses the padding row; a spec has none, so say none.
    return {**write_llama(s), "bos_token_id": None, "eos_token_id": None, "pad_token_id": None,
            "no_rope_layers": [int(layer.attention.rope) for layer in s.plan],
            "use_sliding_window": window is not None, "sliding_window": window,
            "layer_types": [layer.layer_type for layer in s.plan]}


SMOLLM3 = LLAMA.but(
    "smollm3", "SmolLM3ForCausalLM", read=read, write=write,
    # Llama + NoPE layers: only SmolLM3's class turns RoPE off per layer (Llama 4's too, with
    # its own structure, which its family claims)
    exports=lambda s: any(not layer.attention.rope for layer in s.plan),
    spec_keys=LLAMA.key_table(**{"attention.rope": "no_rope_layers", "layers": "no_rope_layers"}),
    names=("smollm",), doc="Llama + NoPE layers")
FAMILIES = (SMOLLM3,)
