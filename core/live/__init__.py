"""Live sources: the built-in s08 agent, the recording proxy, recordings as written, follow mode."""
