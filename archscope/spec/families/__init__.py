"""One module per transformers family (model_type): its reader and writer, what it exports, its
weight names and the names documents use for it, as its difference from a base family. The
registry (registry.py) collects them; nothing outside this package lists families."""
