"""How the core's models are observed and run: evented models and background jobs."""
