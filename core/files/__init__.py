"""Files Compactscope reads and writes: JSON in and out, safe writes, the cache and workspaces."""
