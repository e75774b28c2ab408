"""Records -> tables (archscope.tables) -> markdown/text; figures; mermaid diagrams. Pure: nothing is written."""
