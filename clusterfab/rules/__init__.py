"""Validation rules (codes BPnnn), their findings and renderers."""
