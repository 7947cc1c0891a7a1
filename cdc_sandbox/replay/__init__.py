"""Replaying a production incident from its recorded change events (`sandbox record`, `sandbox replay`)."""
