"""Tiny specs for the sharded runs: a dense GQA model (tied head), a MoE model (experts split
whole over the ranks), an MLA + MoE model (DeepSeek-V3's routing, shared experts, a dense
first layer) and Nemotron-H's latent MoE. Every dimension divides by 2 ranks."""

from archscope.spec.loader import spec_from_mapping

DENSE = {"name": "tiny-dense", "source": "test", "vocab_size": 96, "d_model": 64, "n_layers": 2,
         "max_seq_len": 64, "norm": {"kind": "rmsnorm", "eps": 1e-5},
         "position": {"kind": "rope", "theta": 10000.0},
         "attention": {"kind": "gqa", "n_heads": 4, "n_kv_heads": 2, "head_dim": 16},
         "ffn": {"kind": "swiglu", "d_ff": 128}, "tie_embeddings": True}
MOE = {**DENSE, "name": "tiny-moe", "tie_embeddings": False,
       "ffn": {"kind": "moe", "n_experts": 4, "top_k": 2, "d_expert": 32,
               "router": {"method": "greedy", "normalize": True}}}
MLA = {**DENSE, "name": "tiny-mla", "n_layers": 3, "tie_embeddings": False,
       "attention": {"kind": "mla", "n_heads": 4, "q_lora_rank": 24, "kv_lora_rank": 32,
                     "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 12},
       "ffn": {"kind": "moe", "n_experts": 8, "top_k": 3, "d_expert": 32, "n_shared_experts": 2,
               "router": {"method": "noaux_tc", "scoring": "sigmoid", "correction_bias": True,
                          "n_group": 4, "topk_group": 2, "normalize": True,
                          "scaling_factor": 2.5}},
       "layers": [{"select": "0:1", "ffn": {"kind": "swiglu", "d_ff": 96}}]}
# Nemotron-H's latent MoE: ungated squared-ReLU experts in a 32-wide latent, one shared expert
LATENT = {**MOE, "name": "tiny-latent-moe",
          "ffn": {"kind": "moe", "expert": "relu2", "n_experts": 4, "top_k": 2, "d_expert": 32,
                  "d_latent": 32, "n_shared_experts": 1, "d_shared": 48,
                  "router": {"method": "noaux_tc", "scoring": "sigmoid", "correction_bias": True,
                             "n_group": 1, "topk_group": 1}}}


def spec(raw: dict):
    return spec_from_mapping(raw, f"<{raw['name']}>")
