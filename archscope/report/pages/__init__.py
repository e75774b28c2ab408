"""Markdown pages: records -> tables -> the files under reports/ (`archscope report`)."""
