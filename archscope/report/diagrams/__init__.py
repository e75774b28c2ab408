"""Mermaid diagrams of a model and of its decoder blocks, generated from the spec."""
