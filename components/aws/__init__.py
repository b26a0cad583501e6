"""AWS components."""
