"""What the tool says about a list or a run: API checks, boundary explanations, divergence, file info."""
