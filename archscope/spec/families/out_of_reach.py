"""Families whose defining component archscope does not build yet: each is declared (so that
`archscope families`, `show` and the reader name what is missing, never just the model_type)
and refused by its reader, naming the config.json key and the component. Each is a line here
until its component is built; then it becomes a module of its own.
"""

from __future__ import annotations

from archscope.spec.families.base import Family
from archscope.spec.hf_keys import Keys


def refusing(key: str, component: str):
    """A reader that refuses every config, naming `key` and what archscope lacks."""
    def read(c: Keys) -> dict:
        raise c.error(key, f"{component}, which archscope does not build")
    return read


def _declared(model_type: str, hf_class: str, key: str, component: str) -> Family:
    return Family(model_type, hf_class, read=refusing(key, component), doc=component)


FAMILIES = (
    # transformers' models/jetmoe: JetMoeAttention routes among attention experts
    _declared("jetmoe", "JetMoeForCausalLM", "num_local_experts",
              "JetMoE's mixture of attention heads (each token's attention runs top-k of "
              "num_local_experts query/output experts over one shared kv_proj)"),
    # transformers' models/longcat_flash: two attention and two MLP sublayers a layer around
    # one shortcut MoE, whose router may pick experts that compute nothing
    _declared("longcat_flash", "LongcatFlashForCausalLM", "zero_expert_num",
              "LongCat-Flash's zero-computation experts and its two-sublayer shortcut-connected "
              "MoE layers"),
    # transformers' models/deepseek_v4: hyper-connections (hc_mult residual streams mixed by
    # Sinkhorn-normalised matrices), compressed attention and a sqrt-softplus router
    _declared("deepseek_v4", "DeepseekV4ForCausalLM", "hc_mult",
              "DeepSeek-V4's hyper-connections (hc_mult residual streams) and compressed "
              "attention"),
    # transformers' models/gemma3n: per-layer input embeddings, AltUp and LAuReL blocks
    _declared("gemma3n", "Gemma3nForConditionalGeneration", "text_config.altup_num_inputs",
              "Gemma 3n's AltUp predictions, per-layer input embeddings and LAuReL blocks"),
    _declared("gemma3n_text", "Gemma3nForCausalLM", "altup_num_inputs",
              "Gemma 3n's AltUp predictions, per-layer input embeddings and LAuReL blocks"),
    # transformers' models/gemma4: per-layer input embeddings, KV shared across layers
    _declared("gemma4", "Gemma4ForConditionalGeneration",
              "text_config.hidden_size_per_layer_input",
              "Gemma 4's per-layer input embeddings and key/value caches shared across layers"),
    _declared("gemma4_text", "Gemma4ForCausalLM", "hidden_size_per_layer_input",
              "Gemma 4's per-layer input embeddings and key/value caches shared across layers"),
    # transformers' models/xlstm: every block is an mLSTM (a matrix memory per head with
    # exponential input and forget gates, soft-capped) and a gated FFN
    _declared("xlstm", "xLSTMForCausalLM", "num_blocks",
              "xLSTM's mLSTM blocks (a matrix memory per head with exponential input and "
              "forget gates)"),
)
