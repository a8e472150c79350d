"""Marks an agent writes into its own history, which a loader finds and a layer writes again: defined once here.

hermes-agent flags its summary message with an in-process key (kept in its JSON snapshots), and when it merges
a summary into the first kept message it separates the two with a delimiter line.
"""
from __future__ import annotations

HERMES_SUMMARY_FLAG = "_compressed_summary"
HERMES_MERGED_SUMMARY_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
