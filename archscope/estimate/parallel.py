"""Tensor and expert parallelism from the spec: what each GPU holds and what the split sends.

`split(spec, tp, ep, weight_format, act_dtype)` prices every stored tensor's shard on one GPU of
a tensor-parallel group of `tp` GPUs whose routed experts are spread over `ep` groups. The
conventions are Megatron-LM's (Shoeybi et al. 2019, arXiv:1909.08053, section 3) as vLLM and
TensorRT-LLM apply them to these families:

- column-parallel (output rows split by tp): q_proj, k_proj, v_proj, qkv_proj, gate_proj,
  up_proj, gate_up_proj, MLA's q_b_proj and kv_b_proj (per head), a state mixer's in_proj* and
  its depthwise conv1d (per channel), and their biases;
- row-parallel (input columns split by tp, bias kept whole on every GPU): o_proj, down_proj,
  out_proj;
- vocab-parallel: the token embedding and lm_head, rows split by tp;
- replicated on every GPU: norms, the router, learned positions, attention sinks and every
  other vector, and MLA's q_a_proj and kv_a_proj_with_mqa (the latent projections feed every
  head; TensorRT-LLM issue 15162 and vLLM's DeepseekV2 both keep them whole);
- GQA with fewer KV heads than GPUs (tp a multiple of n_kv_heads) keeps one KV head per GPU,
  each replicated tp / n_kv_heads times, as vLLM's QKVParallelLinear does; otherwise n_kv_heads
  must divide by tp;
- routed experts: n_experts / ep whole experts per expert group, each expert's matrices split
  again over the tp / ep GPUs of its group (ep = 1: every expert split tp ways, vLLM's default;
  ep = tp: whole experts, vLLM's --enable-expert-parallel); shared experts split by tp.
KV cache per GPU: a GQA layer holds its KV heads per GPU; an MLA layer's latent (kv_lora_rank
+ qk_rope_head_dim per token) is shared by all heads, so it is NOT split: every GPU holds the
whole latent cache (TensorRT-LLM issue 15162: "MLA replicates its single compressed latent KV
cache on every rank"). A state mixer's constant state is split by heads (1 / tp per GPU).

Collectives per token, at the activation dtype (bf16 unless fp32 weights):
- tp > 1: one ring all-reduce of d_model values after each mixer sublayer, each FFN sublayer
  and the vocab-parallel embedding: each GPU sends 2 (tp - 1) / tp x d_model x bytes (the ring
  algorithm's reduce-scatter + all-gather; NCCL's "busBw" convention); the sampled position's
  logits are all-gathered, (tp - 1) / tp x vocab x bytes;
- ep > 1 adds nothing: attention is tensor-parallel, so every GPU of the group already holds
  every token's hidden state (no dispatch), and each GPU's routed experts add their share into
  the FFN sublayer's partial sum, which is the all-reduce counted above (no separate combine;
  vLLM's expert parallelism without data-parallel attention does the same). An all-to-all
  dispatch and combine (GShard / DeepSpeed-MoE) belongs to data-parallel attention, which this
  module leaves out; counting it on top of the all-reduce would count the combine twice, and a
  sharded run (archscope.distributed, CommDebugMode) shows none.
`step_collectives` lists a decode step's collectives (op, payload, count) and `sent_bytes` prices
one with the ring algorithm; the per-token figures here and the sharded run's measured bytes are
both priced by them.
Left out: pipeline parallelism, sequence/context parallelism, data-parallel attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from archscope.errors import InputError
from archscope.estimate.dtypes import dtype_bytes
from archscope.estimate.formats import weight_format
from archscope.estimate.kv_cache import KVCache
from archscope.estimate.shared_blocks import use_index
from archscope.estimate.tensors import Tensor, weight_tensors
from archscope.spec import ModelSpec

COLUMN = ("q_proj", "k_proj", "v_proj", "qkv_proj", "gate_proj", "up_proj", "gate_up_proj",
          "q_b_proj", "kv_b_proj", "conv1d", "conv")  # conv: the short conv's (LFM2)
ROW = ("o_proj", "down_proj", "out_proj")
VOCAB = ("embedding", "lm_head")
LOOKUP = ("embedding", "positional")  # a decode step reads a few rows, not the table


@dataclass(frozen=True)
class ExpertShard:
    """Routed experts of one shape class on one GPU: what a decode step may read of them."""

    n_experts: int  # per layer, the model's
    top_k: int
    bytes_per_gpu: int  # all layers' routed experts of this class held by one GPU


@dataclass(frozen=True)
class ParallelSplit:
    """One GPU's share of a model under tp x ep, and the bytes the split sends per token."""

    model: str
    tp: int
    ep: int
    weight_format: str
    weights_bytes_per_gpu: int  # every tensor's shard, in the weight format
    lookup_bytes_per_gpu: int  # embedding / learned positions (untied): read by row, not whole
    experts: tuple[ExpertShard, ...]  # routed experts held per GPU, by (n_experts, top_k)
    kv_heads_per_gpu: tuple[int | None, ...]  # per layer: GQA KV heads held; None = whole (MLA)
    kv_heads: tuple[int | None, ...]  # per layer: the model's KV heads (None: MLA / no cache)
    state_share: float  # fraction of a state mixer's state one GPU holds (1 / tp)
    params_per_gpu: int  # every tensor's shard, counted in parameters (unique, like the model's)
    allreduce_bytes_per_token: int  # sent per GPU per token (ring), all sublayers
    logits_gather_bytes_per_token: int  # per sampled token
    all_to_all_bytes_per_token: int  # 0 under tensor-parallel attention (module doc)
    replicated: tuple[str, ...]  # matrices every GPU holds whole (for people)
    n_layers: int = 0  # layers a step runs through (each a few kernels: fit's launch gaps)
    collectives_per_step: int = 0  # all-reduces and the logits gather of one step (tp > 1)
    dispatched_layers: int = 0  # MoE layers whose tokens go to experts on other GPUs (ep > 1)

    @property
    def expert_bytes_per_gpu(self) -> int:
        return sum(e.bytes_per_gpu for e in self.experts)

    @property
    def collective_bytes_per_token(self) -> int:
        return self.allreduce_bytes_per_token + self.all_to_all_bytes_per_token

    def weights_read_bytes(self, tokens: int) -> float:
        """Bytes of weights one GPU reads in a forward over `tokens` tokens: everything it holds
        but the lookup tables, the routed experts at the expected share touched,
        1 - (1 - top_k / n)^tokens (uniform routing: n (1 - (1 - k/n)^B) distinct experts)."""
        dense = self.weights_bytes_per_gpu - self.lookup_bytes_per_gpu - self.expert_bytes_per_gpu
        touched = sum(e.bytes_per_gpu * (1 - (1 - e.top_k / e.n_experts) ** tokens)
                      for e in self.experts)
        return dense + touched

    def kv_bytes_per_gpu(self, cache: KVCache, block: int = 1) -> int:
        """One GPU's share of `cache` (kv_cache's per-layer figures), each layer's tokens held
        rounded up to whole blocks of `block` tokens (a paged cache's last block)."""
        total = 0
        for held, per_token, mine, heads in zip(cache.tokens_held, cache.bytes_per_token_per_layer,
                                                self.kv_heads_per_gpu, self.kv_heads):
            rounded = -(-held // block) * block
            layer = cache.batch * rounded * per_token
            total += layer if mine is None or heads is None else layer * mine // heads
        return total


def _kv_heads_per_gpu(n_kv: int, tp: int) -> int:
    return n_kv // tp if n_kv >= tp else 1  # fewer KV heads than GPUs: one each, replicated


def check_divisible(spec: ModelSpec, tp: int, ep: int) -> None:
    """Raise InputError naming every dimension the split does not divide."""
    for name, value in (("--tp", tp), ("--ep", ep)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    wrong: dict[str, str] = {}

    def need(ok: bool, what: str, value: int, by: int) -> None:
        if not ok:
            wrong.setdefault(what, f"{what} ({value}) by {by}")

    need(spec.vocab_size % tp == 0, "vocab", spec.vocab_size, tp)
    if ep > 1 and not spec.moe:
        raise InputError(f"--ep {ep}: {spec.name} has no routed experts to split")
    need(tp % ep == 0, "--tp (GPUs per expert group)", tp, ep)
    uses = use_index(spec)
    for layer in spec.plan:
        a, f, s = layer.attention or (spec.attention if layer.index in uses else None), \
            layer.ffn, layer.state
        if a is not None:
            need(a.n_heads % tp == 0, "attention heads", a.n_heads, tp)
            if a.kind != "mla":
                kv = a.n_kv_heads
                need(kv % tp == 0 or tp % kv == 0, "KV heads", kv, tp)
        if s is not None:
            heads = getattr(s, "n_heads", None) or getattr(s, "n_value_heads", None)
            groups = (getattr(s, "n_groups", None) or getattr(s, "n_key_heads", None)
                      or heads)  # no groups (Kimi's KDA): each head its own
            if heads is None:  # no heads (Mamba-1, the short conv): its channels split (Mamba-1's
                # B and C replicated)
                need(s.conv_dim % tp == 0, "state-mixer channels", s.conv_dim, tp)
            else:
                need(heads % tp == 0, "state-mixer heads", heads, tp)
                need(groups % tp == 0 or tp % groups == 0, "state-mixer groups", groups, tp)
        if f is not None and f.kind == "moe":
            need(f.n_experts % ep == 0, "experts", f.n_experts, ep)
            shared = f.d_shared or (f.n_shared_experts or 0) * f.d_expert
            need(shared % tp == 0, "shared-expert width", shared, tp)
            need(f.d_expert % (tp // ep or 1) == 0, "expert width (d_expert)", f.d_expert,
                 tp // ep or 1)
        elif f is not None:
            need(f.d_ff % tp == 0, "d_ff", f.d_ff, tp)
    if wrong:
        raise InputError(f"{spec.name}: --tp {tp}" + (f" --ep {ep}" if ep > 1 else "")
                         + " does not divide " + "; ".join(wrong.values())
                         + ". Pick a split that divides every dimension named.")


def _shard(t: Tensor, spec: ModelSpec, tp: int, ep: int) -> tuple[int, int, int]:
    """(rows, cols, copies) of `t` on one GPU."""
    kind = t.kind
    bias = t.name.endswith(".bias")
    if t.role == "experts":
        inner = tp // ep
        if bias or t.rows == 1:
            return t.rows, t.cols // inner if t.cols % inner == 0 else t.cols, t.copies // ep
        if kind == "down_proj":
            return t.rows, t.cols // inner, t.copies // ep
        return t.rows // inner, t.cols, t.copies // ep
    if t.role in VOCAB:
        return t.rows // tp, t.cols, t.copies
    if kind in ("conv1d", "conv") and not bias:  # depthwise, per channel: its elements split by tp
        return 1, t.rows * t.cols // tp, t.copies
    if (kind in ("k_proj", "v_proj", "qkv_proj") and t.layer is not None
            and spec.plan[t.layer].attention is not None):  # (a KDA's k/v: split as columns)
        if t.rows == 1:  # the projection's bias: its length is the rows'
            return 1, _kv_rows(t, spec, tp), t.copies
        return _kv_rows(t, spec, tp), t.cols, t.copies
    if kind in COLUMN or kind.startswith("in_proj"):
        if bias:
            return t.rows, t.cols // tp, t.copies
        return t.rows // tp, t.cols, t.copies
    if kind in ROW and not bias:
        return t.rows, t.cols // tp, t.copies
    return t.rows, t.cols, t.copies


def _kv_rows(t: Tensor, spec: ModelSpec, tp: int) -> int:
    """A k/v (or fused qkv) projection's rows (a bias's length) on one GPU: its KV heads per
    GPU, and for qkv_proj the query heads split by tp."""
    a = spec.plan[t.layer].attention or spec.attention  # (a shared block's: the model's)
    size = t.cols if t.rows == 1 else t.rows
    kv_rows = (2 if t.kind == "qkv_proj" else 1) * a.n_kv_heads * a.head_dim
    q_rows = size - kv_rows if t.kind == "qkv_proj" else 0
    mine = kv_rows * _kv_heads_per_gpu(a.n_kv_heads, tp) // a.n_kv_heads
    return q_rows // tp + mine


def _activation_bytes(weight_format_name: str) -> float:
    return dtype_bytes("fp32" if weight_format_name == "fp32" else "bf16")


@dataclass(frozen=True)
class Collective:
    """One kind of collective of a forward step: `count` of them, each over `payload_bytes`
    (an all-reduce's tensor; an all-gather's gathered output)."""

    op: str  # "all_reduce" or "all_gather"
    payload_bytes: int
    count: int = 1


_RING = {"all_reduce": lambda n: 2 * (n - 1) / n,  # reduce-scatter + all-gather
         "all_gather": lambda n: (n - 1) / n}
_OTHER = lambda n: 1  # noqa: E731  an op without a rule here (a run's surprise): its payload


def sent_bytes(collectives, group: int) -> int:
    """Bytes one GPU of a group of `group` sends for `collectives` (ring algorithms, NCCL's
    busBw convention), rounded once at the end."""
    return round(sum(c.count * _RING.get(c.op, _OTHER)(group) * c.payload_bytes for c in collectives))


def step_collectives(spec: ModelSpec, tp: int, width: float, tokens: int = 1
                     ) -> tuple[Collective, ...]:
    """A forward step over `tokens` tokens (a decode step of `tokens` sequences) whose last
    position is sampled: one all-reduce after the embedding and after every mixer and FFN
    sublayer, then the sampled logits gathered. None at tp = 1."""
    if tp == 1:
        return ()
    sublayers = 1 + sum((p.mixer is not None) + (p.ffn is not None) for p in spec.plan)
    return (Collective("all_reduce", round(tokens * spec.d_model * width), sublayers),
            Collective("all_gather", round(tokens * spec.vocab_size * width)))


def _collectives(spec: ModelSpec, tp: int, width: float) -> tuple[int, int]:
    """(all-reduce, logits gather) bytes one GPU sends per token."""
    reduce, gather = step_collectives(spec, tp, width)
    return sent_bytes([reduce], tp), sent_bytes([gather], tp)


def split(spec: ModelSpec, tp: int = 1, ep: int = 1, fmt: str = "bf16") -> ParallelSplit:
    """One GPU's share of `spec` in weight format `fmt` under tensor parallelism `tp` with the
    routed experts in `ep` groups (see the module doc); InputError names what does not divide."""
    check_divisible(spec, tp, ep)
    wf = weight_format(fmt)
    tensors = weight_tensors(spec)
    total = lookup = params = 0
    experts: dict[tuple[int, int], int] = {}
    replicated: dict[str, None] = {}
    for t, storage in zip(tensors, wf.storages(spec, tensors)):
        rows, cols, copies = _shard(t, spec, tp, ep)
        held = storage.nbytes(rows, cols) * copies
        total += held
        params += rows * cols * copies
        if t.role in LOOKUP and not (t.role == "embedding" and spec.tie_embeddings):
            lookup += held  # a tied embedding is also the head, read whole every step
        elif t.role == "experts" and t.copies > t.active:
            experts[(t.copies, t.active)] = experts.get((t.copies, t.active), 0) + held
        if tp > 1 and t.rows > 1 and (rows, cols) == (t.rows, t.cols) and t.role != "experts":
            replicated[t.kind] = None
    uses = use_index(spec)  # a layer that runs a shared block caches its attention's KV
    attention = [p.attention or (spec.attention if p.index in uses else None) for p in spec.plan]
    width = _activation_bytes(wf.name)
    allreduce, gather = _collectives(spec, tp, width) if tp > 1 else (0, 0)
    return ParallelSplit(
        model=spec.name, tp=tp, ep=ep, weight_format=wf.name, weights_bytes_per_gpu=total,
        lookup_bytes_per_gpu=lookup,
        experts=tuple(ExpertShard(n, k, b) for (n, k), b in experts.items()),
        kv_heads_per_gpu=tuple(None if a is None or a.kind == "mla"
                               else _kv_heads_per_gpu(a.n_kv_heads, tp) for a in attention),
        kv_heads=tuple(None if a is None or a.kind == "mla" else a.n_kv_heads
                       for a in attention),
        state_share=1 / tp, params_per_gpu=params, allreduce_bytes_per_token=allreduce,
        logits_gather_bytes_per_token=gather, all_to_all_bytes_per_token=0,
        replicated=tuple(replicated), n_layers=spec.n_layers,
        collectives_per_step=sum(c.count for c in step_collectives(spec, tp, width)),
        dispatched_layers=sum(p.is_moe for p in spec.plan) if ep > 1 else 0)
