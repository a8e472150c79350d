"""Core texts in the user's language, and English helpers for counts and articles."""
