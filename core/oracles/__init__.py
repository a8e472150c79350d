"""Cross-checks against the real packages (hermes-agent, inspect-ai) when they are installed."""
