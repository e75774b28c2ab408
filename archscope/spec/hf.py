"""HF config.json <-> spec, for the transformers model types the family modules declare
(archscope/spec/families/), each written as its difference from a base family in both
directions.

Import (`hf_import`) reads the JSON as data (no code, no network); a key the file lacks takes
transformers' class default, looked up only then, so a complete config.json loads without
importing torch. Export (`hf_export`) picks the HF class from the spec's structure (never its
name), re-imports its own output and raises SpecError naming the key when that class would build
a different network. What HF's schema cannot hold (name, source, notes, a different spelling)
goes under one extra key. This module is the public face of both.
"""

from archscope.spec.hf_export import spec_to_hf_config, write_hf_config
from archscope.spec.hf_import import EXTRA_KEY, mapping_from_hf_config

__all__ = ["EXTRA_KEY", "mapping_from_hf_config", "spec_to_hf_config", "write_hf_config"]
