"""GCP components."""
