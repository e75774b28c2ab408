"""How one 2-D weight is stored, scales included: the unit every weight format is priced in.

A weight of `rows` output features by `cols` input features is stored row by row, each row in
blocks of `block` values along its input features (the reduction axis every block-scaled format
groups along), each block costing `block_bits` with its scales. Rounding rule: a row whose length
is not a whole number of blocks is padded to one (ceil), as the packed layouts require; GGUF
never pads (llama.cpp picks another type instead, see gguf.py); a format that packs several
output rows together (BitNet's ternary, `row_group`) pads the rows. On top of the blocks come
scales per row (int8's per-channel scale), per 2-D tile (DeepSeek-V3's 128 x 128 fp8 blocks) and per
tensor (NVFP4's fp32 global scale, fp8's per-tensor scale). Bytes round up once per tensor.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Storage:
    name: str  # 'bf16', 'nvfp4', 'q4_K'
    block: int = 1  # values per block along a row
    block_bits: int = 16  # bits one block costs, its own scales and zero points included
    row_bits: int = 0  # per output row
    tile: int = 0  # side of the square 2-D scale tiles (0: none)
    tile_bits: int = 0  # per tile
    tensor_bits: int = 0  # per tensor
    # output rows packed together (BitNet's ternary weights: 4 rows' values share a byte); the
    # rows are padded to a whole number of groups, and block_bits is per value of each row
    row_group: int = 1

    def nbytes(self, rows: int, cols: int) -> int:
        """Bytes of one rows x cols weight (a vector is 1 x n)."""
        rows = -(-rows // self.row_group) * self.row_group
        bits = rows * (-(-cols // self.block) * self.block_bits + self.row_bits)
        if self.tile:
            bits += -(-rows // self.tile) * -(-cols // self.tile) * self.tile_bits
        return -(-(bits + self.tensor_bits) // 8)

    @property
    def bits_per_weight(self) -> float:
        """Bits per value of full blocks; per-row, per-tile and per-tensor scales come on top
        (nbytes counts them)."""
        return self.block_bits / self.block

    def divides(self, cols: int) -> bool:
        return cols % self.block == 0


# Plain dtypes: every value stored alone.
F32 = Storage("f32", block_bits=32)
F16 = Storage("f16")
BF16 = Storage("bf16")
# FP8 e4m3 with one fp32 scale per tensor (llm-compressor / vLLM "FP8" per-tensor checkpoints).
FP8 = Storage("fp8", block_bits=8, tensor_bits=32)
# FP8 e4m3 with one fp32 weight_scale_inv per 128 x 128 tile: DeepSeek-V3's weight_block_size
# [128, 128] (github.com/deepseek-ai/DeepSeek-V3, README_WEIGHTS.md, "FP8 Weight Documentation").
FP8_BLOCK = Storage("fp8-block128", block_bits=8, tile=128, tile_bits=32)
# int8, symmetric, one scale per output channel. The scale is assumed 16-bit (the checkpoint's
# dtype); an fp32 scale would add 16/cols bits per weight (under 0.01 at 2,048+ columns).
INT8 = Storage("int8", block_bits=8, row_bits=16)
# GPTQ / AWQ int4, group 128 along the input: 128 4-bit values + one fp16 scale + one 4-bit zero
# point per group = 532 bits = 4.15625 bits per weight (qweight, qzeros packed 8 per int32,
# scales fp16: docs.rs/ferrum-quantization gptq layout; overhead (16 + 4) / g:
# dev.to/multigrid/group-size-in-gptq-and-awq-quantization-1525). GPTQ's optional g_idx (one
# int32 per input column, act-order checkpoints only) is left out: 4 bytes per column.
INT4_G128 = Storage("int4-g128", block=128, block_bits=128 * 4 + 16 + 4)
# NVFP4: e2m1 values, one fp8 e4m3 scale per 16, one fp32 global scale per tensor = 4.5 bits
# per weight + 32 bits per tensor (ModelOpt layout: weight, weight_scale, weight_scale_2;
# docs.nvidia.com/nemo/automodel .../quantization/nvfp4; intel.github.io/neural-compressor
# PT_NVFP4Quant). The activation input_scale (one fp32 per linear) is not a weight: left out.
NVFP4 = Storage("nvfp4", block=16, block_bits=16 * 4 + 8, tensor_bits=32)
# MXFP4 (OCP Microscaling): e2m1 values, one e8m0 scale per 32 = 4.25 bits per weight
# (ggml's block_mxfp4: 1 + 16 bytes per 32; gpt-oss's *_blocks + *_scales tensors).
MXFP4 = Storage("mxfp4", block=32, block_bits=32 * 4 + 8)
# Ternary (BitNet b1.58): each weight is -1, 0 or +1 (log2 3 = 1.58 bits of information), stored
# as 2 bits, four output rows' values packed into one uint8 ([ceil(rows / 4), cols] bytes), plus
# one weight_scale per tensor in the model's dtype (bf16: 16 bits). That is how transformers'
# BitNet quantizer stores and reads a checkpoint (transformers/integrations/bitnet.py:
# VALUES_PER_ITEM = 4, pack_weights / unpack_weights along dim 0, BitLinear's weight buffer
# [out_features // 4, in_features] uint8 and weight_scale [1]), the layout of
# microsoft/bitnet-b1.58-2B-4T (quantization_config quant_method bitnet): 2 bits per weight.
TERNARY = Storage("ternary", block_bits=2, row_group=4, tensor_bits=16)
