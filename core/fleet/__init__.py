"""Fleet: replay a whole archive of sessions and look at the distribution.

``run_fleet(paths, config, out)`` finds every session file (``discover``), replays each with the
strategy's session-inferred defaults on an engine (this process, a local process pool, or a Dask
cluster: ``engines``) and streams one row per session into a Parquet file (``store``). ``model``
reads a results file back and re-evaluates another threshold over the whole fleet from the stored
per-call series, without replaying; ``report`` renders it as a self-contained HTML page.
Pure Python (pyarrow and numpy; ``dask.distributed`` only for a cluster), no Qt.
"""
from .config import FleetConfig, FleetError, Run, make_config
from .discover import Discovery, SessionFile, claude_projects_dir, discover
from .run import FleetSummary, Progress, run_fleet
from .worker import SessionTask, replay_session

__all__ = ["FleetConfig", "FleetError", "Run", "make_config", "Discovery", "SessionFile", "claude_projects_dir",
           "discover", "SessionTask", "replay_session", "run_fleet", "FleetSummary", "Progress"]
