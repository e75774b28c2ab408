"""Weight formats priced tensor by tensor: block formats exactly, GGUF mixes as llama.cpp types
them, gpt-oss's experts-only rule, and unknown names refused."""

from __future__ import annotations

import subprocess
import sys

import pytest

from archscope.estimate import storage as st
from archscope.estimate.formats import (FORMATS, UnknownFormatError, weight_format,
                                        weights_in_format)
from archscope.estimate.gguf import Q4_K, Q6_K, gguf_storage, use_more_bits
from archscope.estimate.params import count_params
from archscope.estimate.tensors import weight_tensors
from archscope.spec import load_spec, preset_names

# A hand-sized Llama: vocab 256, d_model 64, 2 layers, 4 query / 2 KV heads of 16, d_ff 40
# (40 is not a multiple of 16 or 32, so down_proj's rows end in a padded block), untied head.
TINY = ["vocab_size=256", "d_model=64", "n_layers=2", "attention.n_heads=4",
        "attention.n_kv_heads=2", "attention.head_dim=16", "ffn.d_ff=40", "tie_embeddings=false"]


@pytest.fixture(scope="module")
def tiny():
    return load_spec("llama-3.2-1b", TINY)


def test_nvfp4_and_mxfp4_blocks_on_hand_made_tensors():
    # NVFP4: per row ceil(cols / 16) blocks of 16 x 4 bits + one e4m3 scale = 9 bytes, plus one
    # fp32 global scale (4 bytes) per tensor.
    assert st.NVFP4.nbytes(64, 48) == 64 * 3 * 9 + 4 == 1732      # 48 = 3 whole blocks
    assert st.NVFP4.nbytes(10, 100) == 10 * 7 * 9 + 4 == 634      # 100 -> 7 blocks (6.25 padded)
    # MXFP4: per row ceil(cols / 32) blocks of 32 x 4 bits + one e8m0 scale = 17 bytes.
    assert st.MXFP4.nbytes(64, 48) == 64 * 2 * 17 == 2176         # 48 -> 2 blocks (1.5 padded)
    assert st.MXFP4.nbytes(10, 100) == 10 * 4 * 17 == 680         # 100 -> 4 blocks (3.125)
    assert st.NVFP4.bits_per_weight == 4.5 and st.MXFP4.bits_per_weight == 4.25


def test_nvfp4_prices_a_tiny_model_exactly(tiny):
    # Each linear: rows x ceil(cols / 16) x 9 bytes + 4 (fp32 global scale).
    q = o = 64 * 4 * 9 + 4           # 64 x 64            = 2,308
    k = v = 32 * 4 * 9 + 4           # 32 x 64            = 1,156
    gate = up = 40 * 4 * 9 + 4       # 40 x 64            = 1,444
    down = 64 * 3 * 9 + 4            # 64 x 40, 3 blocks  = 1,732
    layer = q + k + v + o + gate + up + down                 # 11,548
    kept = 2 * (256 * 64 * 2) + 2 * (2 * 64 * 2) + 64 * 2    # embedding, lm_head, norms: bf16
    w = weights_in_format(tiny, "nvfp4")
    assert w.total_bytes == 2 * layer + kept == 89_272
    assert set(w.kept) == {"embedding", "lm_head", "norms"}


def test_mxfp4_prices_a_tiny_model_exactly(tiny):
    # Each linear: rows x ceil(cols / 32) x 17 bytes; no per-tensor scale.
    q = o = 64 * 2 * 17              # 2,176
    k = v = 32 * 2 * 17              # 1,088
    gate = up = 40 * 2 * 17          # 1,360
    down = 64 * 2 * 17               # 40 columns -> 2 blocks: 2,176
    layer = q + k + v + o + gate + up + down                 # 11,424
    kept = 2 * (256 * 64 * 2) + 2 * (2 * 64 * 2) + 64 * 2
    assert weights_in_format(tiny, "mxfp4").total_bytes == 2 * layer + kept == 89_024


def test_other_block_formats_on_one_tensor():
    # DeepSeek-V3 fp8: 7168 x 2048 bytes + one fp32 per 128 x 128 tile: 56 x 16 tiles.
    assert st.FP8_BLOCK.nbytes(7168, 2048) == 7168 * 2048 + 56 * 16 * 4
    # GPTQ/AWQ int4 group 128: per group 64 bytes of values + 2 (fp16 scale) + 0.5 (4-bit zero).
    assert st.INT4_G128.nbytes(4096, 4096) == 4096 * 32 * (64 * 8 + 16 + 4) // 8
    assert st.INT4_G128.bits_per_weight == 4.15625
    assert st.INT8.nbytes(4096, 4096) == 4096 * 4096 + 4096 * 2  # + a 16-bit scale per row
    assert st.FP8.nbytes(4096, 4096) == 4096 * 4096 + 4


@pytest.mark.parametrize("name", preset_names())
def test_tensors_add_up_to_the_parameter_count(name):
    spec = load_spec(name)
    tensors, params = weight_tensors(spec), count_params(spec)
    assert sum(t.elements * t.copies for t in tensors) == params.total
    assert sum(t.elements * t.active for t in tensors) == params.active
    assert weights_in_format(spec, "bf16").total_bytes == 2 * params.total


def test_use_more_bits_picks_sixteen_of_thirty_two_layers():
    chosen = [i for i in range(32) if use_more_bits(i, 32)]
    # n/8 = 4: layers 0-3 and 28-31, and (i - 4) % 3 == 2 between: 6, 9, ..., 27.
    assert chosen == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]


def test_llama_3_1_8b_q4_k_m_matches_the_published_gguf():
    spec = load_spec("llama-3.1-8b")
    tensors = weight_tensors(spec)
    types = [s.name for s in gguf_storage("q4_k_m", spec, tensors)]
    # llama.cpp's own load log of bartowski's Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf
    # (github.com/mozilla-ai/llamafile/issues/516): "type f32: 66 tensors, type q4_K: 193
    # tensors, type q6_K: 33 tensors". The 66th f32 is rope_freqs (64 numbers), not a weight.
    assert types.count("q6_K") == 33   # output + 16 attn_v + 16 ffn_down (use_more_bits)
    assert types.count("q4_K") == 193  # token_embd + 6 x 32 others
    assert types.count("f32") == 65    # 2 norms per layer + the final norm
    w = weights_in_format(spec, "q4_k_m")
    # By hand: token_embd 128256 x 4096 in Q4_K = 525,336,576 / 256 x 144 = 295,501,824 B;
    # output in Q6_K = 2,052,096 blocks x 210 = 430,940,160 B; 32 layers of Q4_K
    # (q, o 16,777,216; k, v 4,194,304; gate, up, down 58,720,256 values: 122,683,392 B a layer);
    # Q6_K instead of Q4_K on 16 attn_v (+1,081,344 B each) and 16 ffn_down (+15,138,816 B);
    # 65 f32 norms of 4096 (1,064,960 B).
    assert w.total_bytes == (295_501_824 + 430_940_160 + 32 * 122_683_392
                             + 16 * (1_081_344 + 15_138_816) + 1_064_960) == 4_912_898_048
    # Published: bartowski/Meta-Llama-3.1-8B-Instruct-GGUF README, file table,
    # "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf | Q4_K_M | 4.92GB" (the file also holds the
    # tokenizer and metadata, a few MB). 4,912,898,048 / 4.92e9 - 1 = -0.14%.
    published = 4.92e9
    assert abs(w.total_bytes / published - 1) < 0.03
    assert Q4_K.bits_per_weight == 4.5 and Q6_K.bits_per_weight == 6.5625


def test_gguf_mixes_follow_llama_cpp_rules():
    mixtral = load_spec("mixtral-8x7b")
    tensors = weight_tensors(mixtral)
    typed = list(zip(tensors, gguf_storage("q4_k_m", mixtral, tensors)))
    by = {(t.name, t.layer): s.name for t, s in typed}
    # 8 experts: attn_v and attn_k in Q8_0, attn_output in Q5_K, on every layer.
    assert {by[("attention.v_proj", i)] for i in range(32)} == {"q8_0"}
    assert {by[("attention.k_proj", i)] for i in range(32)} == {"q8_0"}
    assert {by[("attention.o_proj", i)] for i in range(32)} == {"q5_K"}
    # expert down_proj by layer: Q6_K where use_more_bits, else Q4_K; the router stays F32.
    assert by[("ffn.experts.down_proj", 0)] == "q6_K" and by[("ffn.experts.down_proj", 4)] == "q4_K"
    assert by[("ffn.router", 0)] == "f32"
    # A tied embedding is typed as the head (Q6_K); norms F32; Q8_0 is 8.5 bits everywhere.
    small = load_spec("llama-3.2-1b")
    first = gguf_storage("q4_k_m", small, weight_tensors(small))[0]
    assert first is Q6_K
    assert weights_in_format(small, "q8_0").by_storage["q8_0"] * 8 / 8.5 == \
        sum(t.elements for t in weight_tensors(small) if t.rows > 1)


def test_gpt_oss_rule_quantizes_only_the_experts_of_a_moe(tiny):
    spec = load_spec("mixtral-8x7b")  # 32 layers, 8 experts of 14336, d_model 4096
    w = weights_in_format(spec, "mxfp4-experts")
    # Per expert: gate and up 14336 rows x 4096/32 = 128 blocks; down 4096 rows x 448 blocks;
    # 17 bytes per block (16 bytes of e2m1 + one e8m0 scale).
    expert = (2 * 14336 * 128 + 4096 * 448) * 17
    experts = 32 * 8 * expert
    expert_params = 32 * 8 * 3 * 14336 * 4096
    rest = 2 * (count_params(spec).total - expert_params)  # everything else stays bf16
    assert w.by_role["experts"] == experts
    assert w.total_bytes == experts + rest
    assert w.active_bytes == 32 * 2 * expert + rest  # top-2: two experts a layer per token
    assert set(w.kept) == {"embedding", "attention", "router", "norms", "lm_head"}
    assert w.by_storage == {"bf16": rest, "mxfp4": experts}
    # On a dense model there is nothing to quantize: the rule leaves it all bf16.
    assert weights_in_format(tiny, "mxfp4-experts").total_bytes == \
        weights_in_format(tiny, "bf16").total_bytes


def test_every_quantized_format_names_what_it_keeps():
    spec = load_spec("mixtral-8x7b")
    for name, fmt in FORMATS.items():
        kept = weights_in_format(spec, name).kept
        if fmt.keeps == "nothing":
            assert kept == (), name
        else:
            assert "norms" in kept and "router" in kept, name
            assert fmt.keeps


@pytest.mark.parametrize("alias, name", [("Q4_K_M", "q4_k_m"), ("gptq", "int4-g128"),
                                         ("AWQ", "int4-g128"), ("fp8-block", "fp8-block"),
                                         ("nvfp4", "nvfp4"), ("q8_0", "q8_0")])
def test_format_names_and_aliases(alias, name):
    assert weight_format(alias).name == name


def test_unknown_formats_are_refused_with_a_did_you_mean():
    with pytest.raises(UnknownFormatError) as err:
        weight_format("q4_k_s")
    assert "unknown weight format 'q4_k_s'" in str(err.value)
    assert "did you mean" in str(err.value) and "q4_k_m" in str(err.value)


def test_formats_never_import_torch():
    code = ("import sys; import archscope.estimate.formats, archscope.hardware.catalog; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
