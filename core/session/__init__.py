"""The observable session model the window shows, and lessons over it."""
