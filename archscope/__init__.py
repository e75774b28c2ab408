"""archscope: analyse and compare decoder-only LLM architectures from one YAML spec per model."""

__version__ = "0.1.0"
