"""Input limits, stated once. Bad input is refused before any work is done on it.

Each bound is far above any real model (the comment names the largest real value it must
admit, and the largest among the presets in model_specs/), and far below what would make
archscope hang, exhaust memory or crash in torch. The spec layer enforces them:
`fields.convert` checks every integer key (YAML, --set, config.json) against INT_LIMITS and
every list against LIST_LIMITS, the loader checks the YAML limits before the document is built,
and `ModelSpec.validate` checks LAYER_PICKS_MAX before the per-layer plan is made.
Raising a bound is a one-line change here; tests/spec/test_hostile_specs.py checks the presets
all fit.
"""

from __future__ import annotations

import yaml

from archscope.errors import MESSAGE_MAX, QUOTE_MAX, SpecError, quote, shorten

WHERE = "archscope/spec/limits.py"  # named in every message that cites a limit

# The largest value each integer spec key admits (keyed by the field name, wherever it sits).
INT_LIMITS: dict[str, int] = {
    # Decoder layers: the deepest public decoders have ~128 (Llama 3.1 405B: 126; presets:
    # GPT-3 175B, 96); DeepNet trained 1,000. Work is per layer (the plan, the estimators,
    # `show`'s meta-device build: ~4 ms a layer), so 4,096 would make `show` take ~20 s.
    "n_layers": 1_024,
    "mtp_layers": 1_024,  # MTP modules: decoder layers too
    # Residual width: the widest public decoders are ~20K (Llama 3.1 405B: 16,384; MT-NLG:
    # 20,480; presets: GPT-3, 12,288).
    "d_model": 65_536,
    # Vocabulary: 2**22 (~4.2M); the largest public vocabulary is Gemma 3's 262,144 (presets:
    # Llama 3, 128,256).
    "vocab_size": 4_194_304,
    # Context: 2**27 tokens (134M); the longest public context is Llama 4 Scout's 10M (presets:
    # DeepSeek-V2, 163,840). A window and RoPE's original context are contexts too.
    "max_seq_len": 134_217_728,
    "original_max_seq_len": 134_217_728,
    "window": 134_217_728,  # Gemma 2/3, Mistral: 4,096
    "chunk": 134_217_728,  # Llama 4: 8,192
    "temperature_floor": 134_217_728,  # Llama 4's floor_scale, in tokens: 8,192
    "topk": 134_217_728,  # keys a sparse-attention indexer selects: DeepSeek-V3.2, 2,048
    # Heads: public decoders have at most 128 query heads (DeepSeek-V3, Llama 3.1 405B;
    # presets: DeepSeek-V2, 128 query heads; GPT-3, 96 KV heads).
    "n_heads": 1_024,
    "n_kv_heads": 1_024,
    # Per-head widths: the widest public heads are 256 (Gemma; presets: 128, and MLA's
    # qk_nope 128 / qk_rope 64 / v 128).
    "head_dim": 4_096,
    "qk_nope_head_dim": 4_096,
    "qk_rope_head_dim": 4_096,
    "v_head_dim": 4_096,
    # MLA's low ranks are below d_model (DeepSeek-V3: q 1,536, kv 512; presets: the same).
    "q_lora_rank": 65_536,
    "kv_lora_rank": 65_536,
    # FFN hidden sizes: 2**20; the widest public is PaLM's 73,728 (Llama 3.1 405B: 53,248;
    # presets: GPT-3's d_ff 49,152, Mixtral's d_expert 14,336).
    "d_ff": 1_048_576,
    "d_expert": 1_048_576,
    # Experts: the most in a public decoder is Kimi K2's 384 (DeepSeek-V3: 256; presets:
    # DeepSeek-V2, 160 routed and 2 shared, 8 groups of which 3 are eligible).
    "n_experts": 16_384,
    "n_shared_experts": 1_024,
    "n_group": 16_384,
    "topk_group": 16_384,
    # Experts per token: public MoEs use at most 8 (DeepSeek-V3, Kimi K2; presets: Granite 8).
    "top_k": 1_024,
    # The shared experts' width (Granite 4.0-H's shared_intermediate_size: 1,024 in h-tiny).
    "d_shared": 1_048_576,
    # State mixers (Mamba-2: Nemotron-H's 128 heads of 64 with d_state 128 and 8 groups;
    # Gated DeltaNet: Qwen3-Next's 16 key / 32 value heads of 128; convs of 4 taps; scans in
    # chunks of 64 to 256 tokens).
    "d_state": 65_536,
    "n_groups": 1_024,
    "n_key_heads": 1_024,
    "n_value_heads": 1_024,
    "key_head_dim": 4_096,
    "value_head_dim": 4_096,
    "conv_kernel": 1_024,
    "chunk_size": 1_048_576,
    # A layer index in `layers[K].select`: below n_layers (checked against the model later).
    "select": 1_024,
}
# An integer key missing from INT_LIMITS (a field added later): still far from any overflow.
FALLBACK_INT_MAX = 2**31 - 1

# The most entries a list key admits.
LIST_LIMITS: dict[str, int] = {
    # Per-layer overrides: one per layer, as a spec whose every layer differs needs (OpenELM:
    # 36 layers, all different); presets use at most 1.
    "layers": 1_024,
    "select": 1_024,  # indices in one override's list: at most every layer
}
# Layers picked by all the `layers` overrides together: each layer patched 16 times at the
# largest n_layers (presets: 48, GPT-3's "1::2"). Bounds the plan's work to ~16K patches.
LAYER_PICKS_MAX = 16_384

# YAML documents (specs, --set values, claims files).
YAML_BYTES_MAX = 1_048_576  # 1 MiB; the largest preset is 2.4 KB, the largest claims file 56 KB
# Nested mappings/lists: presets nest 4 deep (layers -> list -> override -> ffn), claims
# files 4. Checked on the event stream, before the document is composed, so libyaml's
# recursive composer never sees a deep document (it overflows the C stack at ~40,000).
YAML_DEPTH_MAX = 64
# Nodes with aliases expanded (an alias counts as a copy of what it names, as the conversion
# walks it): presets have ~100, the largest claims file ~4,900. Stops "billion laughs".
YAML_NODES_MAX = 100_000
EXTENDS_MAX = 16  # `extends` chain length; presets use 0 or 1

# Messages (defined in archscope/errors.py, which every InputError can use): a quoted bad
# value is cut to QUOTE_MAX characters with "...", a whole message to MESSAGE_MAX.
__all__ = ["WHERE", "INT_LIMITS", "LIST_LIMITS", "LAYER_PICKS_MAX", "YAML_BYTES_MAX",
           "YAML_DEPTH_MAX", "YAML_NODES_MAX", "EXTENDS_MAX", "QUOTE_MAX", "MESSAGE_MAX",
           "field_name", "int_limit_error", "list_limit_error", "check_yaml"]


def field_name(key: str) -> str:
    """`layers[2].attention.n_heads` -> `n_heads`; `layers[0].select[3]` -> `select`."""
    last = key.rsplit(".", 1)[-1]
    return last.split("[", 1)[0]


def int_limit_error(key: str, value: int) -> str | None:
    """Why integer `value` at `key` is out of range, or None when it fits."""
    limit = INT_LIMITS.get(field_name(key), FALLBACK_INT_MAX)
    if -limit <= value <= limit:
        return None
    bound = f"{limit:,}" if value > 0 else f"-{limit:,}"
    return f"{quote(value)} is beyond the limit {bound} ({WHERE})"


def list_limit_error(key: str, length: int) -> str | None:
    limit = LIST_LIMITS.get(field_name(key))
    if limit is None or length <= limit:
        return None
    return f"{length:,} entries is beyond the limit {limit:,} ({WHERE})"


_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def check_yaml(text: str, loader, where: str, key: str | None) -> None:
    """Refuse YAML text beyond YAML_BYTES_MAX, nesting beyond YAML_DEPTH_MAX, or more than
    YAML_NODES_MAX nodes with aliases expanded (memoised per anchor: an alias adds the size of
    what it names), before anything is composed. One pass over `loader`'s event stream, which
    libyaml makes without recursion: no document can overflow a stack here, and the composer
    that follows never sees a deep or exploding one. yaml.YAMLError for malformed text.
    """
    if len(text) > YAML_BYTES_MAX:  # characters: at most the bytes
        raise SpecError(f"{len(text):,} characters is beyond the limit {YAML_BYTES_MAX:,} "
                        f"({WHERE})", where=where, key=key)
    try:
        _walk(yaml.parse(text, Loader=loader), where, key)
    except yaml.scanner.ScannerError as err:
        if "nesting depth" not in str(err.problem):
            raise
        # libyaml 0.2.6 (in PyYAML 6.0.4's wheels) refuses flow nesting past 1,000 levels
        # itself, while it looks ahead for a key, before this walk sees the 64th level, so
        # its message names no key. Python's own scanner (iterative too; at most 1 MiB of
        # text) has no such limit: walk its events to refuse at our limit, naming the key.
        _walk(yaml.parse(text, Loader=yaml.SafeLoader), where, key)
        raise


def _walk(events, where: str, key: str | None) -> None:
    stack: list[list] = []  # per open collection: [is_mapping, children, last key, start, anchor]
    sizes: dict[str, int] = {}  # anchor -> expanded node count; -1 while still open
    total = 0  # nodes so far, aliases expanded
    for event in events:
        if isinstance(event, _OPEN):
            if len(stack) >= YAML_DEPTH_MAX:
                _shape_error(f"nested deeper than {YAML_DEPTH_MAX} levels", event, stack, where,
                             key)
            if stack and stack[-1][0] and stack[-1][1] % 2 == 0:  # a mapping's complex key
                stack[-1][2] = "?"
            stack.append([isinstance(event, yaml.MappingStartEvent), 0, "?", total, event.anchor])
            if event.anchor:
                sizes[event.anchor] = -1
            size = 1
        elif isinstance(event, _CLOSE):
            *_, start, anchor = stack.pop()
            if anchor:
                sizes[anchor] = total - start
            size = 0
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor, 1)  # an unknown anchor: the composer says so
            if size < 0:
                raise SpecError(f"alias *{shorten(event.anchor)} is inside the node it names",
                                where=where, key=_path(stack, key))
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        else:  # stream and document start and end
            continue
        total += size
        if total > YAML_NODES_MAX:
            _shape_error(f"more than {YAML_NODES_MAX:,} YAML nodes once aliases are expanded",
                         event, stack, where, key)
        if stack and not isinstance(event, _OPEN):  # a child of stack[-1] is complete
            parent = stack[-1]
            if parent[0] and parent[1] % 2 == 0 and isinstance(event, yaml.ScalarEvent):
                parent[2] = shorten(str(event.value))  # a mapping's key
            parent[1] += 1


def _shape_error(what: str, event, stack: list[list], where: str, key: str | None):
    mark = event.start_mark
    raise SpecError(f"{what}, the limit (line {mark.line + 1}, column {mark.column + 1}; "
                    f"{WHERE})", where=where, key=_path(stack, key))


def _path(stack: list[list], key: str | None) -> str | None:
    """The dotted key of the node being read, such as `layers[0].ffn`."""
    out = key or ""
    for is_mapping, children, last, *_ in stack:
        if is_mapping:
            part = last if children % 2 else "?"  # an odd count: a value follows its key
            out = f"{out}.{part}" if out else part
        else:
            out += f"[{children}]"
    return shorten(out) if out else None
