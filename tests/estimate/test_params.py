"""Parameter counts on tiny specs, computed by hand in the comments."""

from archscope.estimate import count_params

# Tiny base, per layer: q 16x16=256, k 16x8=128, v 128, o 256 (768); gate/up/down 3 x 16x32
# (1536); two RMSNorms 2x16 (32). Embedding 100x16=1600, final norm 16, lm_head 1600.
TINY_UNTIED = 1600 + 2 * (768 + 1536 + 32) + 16 + 1600  # 7888


def test_tiny_gqa_untied(tiny):
    p = count_params(tiny())
    assert p.total == p.active == TINY_UNTIED
    assert p.embedding == 1600
    assert p.breakdown == {
        "embedding": 1600, "positional": 0,
        "attention.q_proj": 512, "attention.k_proj": 256, "attention.v_proj": 256,
        "attention.o_proj": 512,
        "ffn.gate_proj": 1024, "ffn.up_proj": 1024, "ffn.down_proj": 1024,
        "norms": 64, "final_norm": 16, "lm_head": 1600}
    assert p.groups == {"embedding": 1600, "attention": 1536, "ffn": 3072, "norms": 80,
                        "head": 1600}


def test_tied_embedding_counts_once(tiny):
    p = count_params(tiny(tie_embeddings=True))
    assert p.total == TINY_UNTIED - 1600
    assert p.breakdown["lm_head"] == 0
    assert p.embedding == 1600


def test_gpt2_style_biases_and_learned_positions(tiny):
    # per layer: q/k/v/o 16x16+16 = 272 each (1088); up 16x64+64 = 1088, down 64x16+16 = 1040;
    # two LayerNorms with bias 2 x 32. Positions 64x16 = 1024; final LayerNorm 32; tied head.
    p = count_params(tiny(**tiny.GPT2))
    assert p.total == 1600 + 1024 + 2 * (1088 + 1088 + 1040 + 64) + 32
    assert p.embedding == 1600 + 1024
    assert p.breakdown["positional"] == 1024


def test_out_bias_can_differ_from_qkv_bias(tiny):
    base = count_params(tiny()).total
    assert count_params(tiny(attention={"bias": True})).total == base + 2 * (16 + 8 + 8 + 16)
    assert count_params(tiny(attention={"bias": True, "out_bias": False})).total \
        == base + 2 * (16 + 8 + 8)


def test_post_norm_has_no_final_norm(tiny):
    p = count_params(tiny(norm={"position": "post"}))
    assert p.total == TINY_UNTIED - 16 and p.breakdown["final_norm"] == 0


def test_moe_active_counts_top_k_plus_shared(tiny):
    # router 16x4 = 64; each expert 3 x 16x8 = 384 (4 stored, 2 active); shared 384.
    p = count_params(tiny(ffn=tiny.MOE))
    assert p.breakdown["ffn.router"] == 2 * 64
    assert p.breakdown["ffn.experts"] == 2 * 4 * 384
    assert p.breakdown["ffn.shared_experts"] == 2 * 384
    assert p.total == TINY_UNTIED - 2 * 1536 + 2 * (64 + 4 * 384 + 384)
    assert p.active == p.total - 2 * 2 * 384
    assert p.active < p.total


def test_moe_without_shared_experts(tiny):
    p = count_params(tiny(ffn={**tiny.MOE, "n_shared_experts": 0}))
    assert "ffn.shared_experts" not in p.breakdown
    assert p.total == TINY_UNTIED - 2 * 1536 + 2 * (64 + 4 * 384)


def test_mla_with_and_without_q_lora(tiny):
    # q_a 16x8=128, q_a_layernorm 8, q_b 8x(4x6)=192, kv_a 16x(6+2)=128, kv_a_layernorm 6,
    # kv_b 6x(4x(4+3))=168, o (4x3)x16=192: 822 per layer. Without q_lora: q_proj 16x24 = 384.
    with_lora = count_params(tiny(attention=tiny.MLA))
    assert with_lora.total == TINY_UNTIED + 2 * (822 - 768)
    assert [k for k in with_lora.breakdown if k.startswith("attention.")] == [
        "attention.q_a_proj", "attention.q_a_layernorm", "attention.q_b_proj",
        "attention.kv_a_proj_with_mqa", "attention.kv_a_layernorm", "attention.kv_b_proj",
        "attention.o_proj"]
    plain = count_params(tiny(attention={**tiny.MLA, "q_lora_rank": None}))
    assert plain.total == TINY_UNTIED + 2 * (384 + 128 + 6 + 168 + 192 - 768)
    assert plain.breakdown["attention.q_proj"] == 2 * 384


def test_per_layer_kinds_are_summed_layer_by_layer(tiny):
    spec = tiny(ffn=tiny.MOE, layers=[{"select": "0:1", "ffn": {"kind": "swiglu", "d_ff": 32}}])
    p = count_params(spec)
    assert p.total == TINY_UNTIED - 1536 + (64 + 4 * 384 + 384)
    assert p.breakdown["ffn.gate_proj"] == 512 and p.breakdown["ffn.experts"] == 4 * 384
    keys = list(p.breakdown)
    assert keys.index("ffn.shared_experts") < keys.index("norms")  # grouped, not first-seen


def test_breakdown_sums_to_total_on_presets(preset):
    for name in ("llama-3.2-1b", "deepseek-v2", "gpt2", "mixtral-8x7b"):
        p = count_params(preset(name))
        assert sum(p.breakdown.values()) == sum(p.groups.values()) == p.total
        assert p.non_embedding == p.total - p.embedding


def test_known_totals(preset):
    # Published counts: Llama 3.2 1B 1.24B (tied); GPT-2 124M; Mixtral 46.7B / 12.9B active;
    # DeepSeek-V2 236B / 21B active.
    assert count_params(preset("llama-3.2-1b")).total == 1_235_814_400
    assert count_params(preset("gpt2")).total == 124_439_808
    mixtral = count_params(preset("mixtral-8x7b"))
    assert (mixtral.total, mixtral.active) == (46_702_792_704, 12_879_925_248)
    ds = count_params(preset("deepseek-v2"))
    assert round(ds.total / 1e9) == 236 and round(ds.active / 1e9) == 21
