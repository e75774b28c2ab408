"""Spec -> HF config.json: the spec's structure (never its name) picks the transformers class,
among the families that claim it (each family module's `exports`, archscope/spec/families/).

The output is read back with `hf_import` and compared with the spec; SpecError names the key
when no class would build that network. What HF's schema cannot hold (name, source, notes, a
different spelling) goes under one extra key.
"""

from __future__ import annotations

import json
from pathlib import Path

from archscope.errors import SpecError
from archscope.spec.families.base import Family, is_hybrid
from archscope.spec.families.registry import exporters
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.hf_import import EXTRA_KEY, mapping_from_raw
from archscope.spec.hf_writers_base import without
from archscope.spec.resolved import differences
from archscope.spec.schema import ModelSpec

# FFN kinds that no class written here has after a state mixer in the same layer: kind -> why
_NO_HF_CLASS = {"relu2": "a squared-ReLU MLP in a layer with a state mixer (transformers' "
                         "NemotronH builds one only as a layer of its own: `mixer: none`)"}


def model_family(spec: ModelSpec) -> str:
    """The spec's architectural family: the transformers `model_type` it exports as, read off
    its structure (never its name), e.g. 'llama', 'gpt2', 'deepseek_v2', 'nemotron_h'; for a
    spec no class builds, the family that comes closest (its export names the key at fault)."""
    return _export(spec)[0].model_type


def _export(spec: ModelSpec) -> tuple[Family, dict | None, SpecError | None]:
    """(family, its config.json, None) for the first family that claims `spec` and writes it
    exactly; else (the first claimant, None, why it cannot). A family claims a spec that has
    what its class is for (its `exports`); claimants are tried most specific first
    (registry.exporters), those whose class builds every component kind of the spec are
    written and read back, and the first exact one wins. A hybrid spec is claimed only by the
    families that build state mixers, and those claim nothing else."""
    hybrid = is_hybrid(spec)
    claims = [(family, family.unbuilt(spec)) for family in exporters()
              if hybrid == family.writes_hybrids() and family.exports(spec)]
    # a specific class that builds the spec's kinds first; one that does not explains a
    # failure before a generic class does (gpt-oss's sinks on a dense FFN: "builds moe only")
    claims.sort(key=lambda claim: (claim[0].generic, claim[1] is not None))
    first: tuple[Family, SpecError] | None = None
    for family, unbuilt in claims:
        if unbuilt is not None:
            key, why = unbuilt
            error = SpecError(f"transformers' {family.model_type} class ({family.hf_class}) "
                              f"cannot build this: {why}", where=spec.name, key=key)
        else:
            config, error = _written(spec, family)
            if config is not None:
                return family, config, None
        first = first or (family, error)
    return first[0], None, first[1]  # the root family (Llama) claims every spec


def _written(spec: ModelSpec, family: Family) -> tuple[dict | None, SpecError | None]:
    """`family`'s config.json for `spec`, read back and compared; or the error naming the key
    when that class would build a different network."""
    model_type, arch = family.model_type, family.hf_class
    try:
        cfg = {"model_type": model_type, "architectures": [arch], **family.write(spec)}
        back = from_mapping(ModelSpec, mapping_from_raw(cfg, model_type, spec.name, spec.source))
    except SpecError as err:
        return None, SpecError(f"cannot be written as transformers' {model_type} config "
                               f"({arch}): {err.detail}", where=spec.name, key=err.key)
    for key, layer, ours, theirs in differences(spec, back):
        at = "the model" if layer is None else f"layer {layer}"
        return None, SpecError(f"transformers' {model_type} config ({arch}) cannot express "
                               f"this: {at} would get {theirs!r} instead of {ours!r}",
                               where=spec.name, key=key)
    cfg[EXTRA_KEY] = {"name": spec.name, "source": spec.source,
                      **_diff(without(to_mapping(spec), "extends"), to_mapping(back))}
    return cfg, None


def spec_to_hf_config(spec: ModelSpec) -> dict:
    """The config.json (current `rope_parameters` layout) of the HF class that builds `spec`.

    Raises SpecError naming the key when no class archscope writes would build that network.
    """
    _check_ffn_kinds(spec)
    family, config, error = _export(spec)
    if error is not None:
        raise error
    return config


def _check_ffn_kinds(spec: ModelSpec) -> None:
    """Refuse, naming the key, an FFN kind that no class written here builds."""
    for layer in spec.plan:
        if layer.state is None or layer.ffn is None:  # after attention: Arcee's class
            continue
        if (what := _NO_HF_CLASS.get(layer.ffn.kind)) is not None:
            top = layer.ffn.kind == spec.ffn.kind
            raise SpecError(f"kind '{layer.ffn.kind}'{'' if top else f' (layer {layer.index})'} "
                            f"cannot be written as a transformers config: none of the classes "
                            f"archscope writes "
                            f"({', '.join(f.model_type for f in exporters())}) has {what}",
                            where=spec.name, key="ffn.kind" if top else "layers")


def write_hf_config(spec: ModelSpec, folder: str | Path) -> Path:
    """Write `folder/config.json` for `spec` atomically (archscope.writes): the destination is
    checked first, and nothing is half-written if anything fails (an InputError names it)."""
    from archscope.writes import write_file_atomic

    text = json.dumps(spec_to_hf_config(spec), indent=2) + "\n"
    return write_file_atomic(Path(folder) / "config.json", text.encode("utf-8"),
                             what="HF config")


def _diff(ours: dict, theirs: dict) -> dict:
    """The patch that turns `theirs` into `ours` under `hf_import._merge` (None removes a key)."""
    out = {}
    for key in dict.fromkeys([*ours, *theirs]):
        a, b = ours.get(key), theirs.get(key)
        if a != b:
            out[key] = _diff(a, b) if isinstance(a, dict) and isinstance(b, dict) else a
    return out
