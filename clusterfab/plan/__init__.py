"""The offline plan engine (Pulumi mocks), plans of blueprints, and plan diffs."""
