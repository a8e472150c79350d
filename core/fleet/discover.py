"""Find every session file under the paths a fleet run is given.

A session is one file a loader opens (Claude Code JSONL, recordings, Inspect logs, Hermes
``state.db``, ...). Subagent files belong to their session and never become rows of their own:

* newer Claude Code writes them to ``<sessionId>/subagents/agent-*.jsonl`` next to the session
  (the loader reads them with it), so nothing under ``<X>/`` is a session when ``<X>.jsonl`` is;
* older Claude Code wrote ``agent-<id>.jsonl`` beside the sessions, carrying the parent's
  ``sessionId``: such a file is attached to the session file of that id in the same folder.

Only names are looked at while walking (plus one line of each old-style agent file), so finding
a hundred thousand sessions costs a directory walk; the format is detected by the worker that
loads the file. Nothing is ever written.
"""
from __future__ import annotations

import os
from pathlib import Path
from ..runtime.record import field, record

# Extensions a transcript may have when found by walking a folder (a file named directly is
# taken whatever its name: formats are detected by content).
SESSION_SUFFIXES = (".jsonl", ".json", ".eval", ".db")
AGENT_PREFIX = "agent-"
# folders full of JSON that is never a transcript (a fleet run over a whole home or code folder)
SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "dist-packages"}


@record
class SessionFile:
    path: str                       # absolute
    size: int
    mtime_ns: int
    subagent_files: list[str] = field(default_factory=list)   # old-style agent-*.jsonl of this session


@record
class Discovery:
    sessions: list[SessionFile]
    orphan_agents: list[str]        # agent-*.jsonl whose session is not among the files found
    missing: list[str]              # PATH arguments that do not exist
    unreadable: list[str]           # folders or files that could not be listed or stat'ed

    @property
    def total_bytes(self) -> int:
        return sum(s.size for s in self.sessions)


def claude_projects_dir() -> Path:
    """The user's Claude Code projects folder (``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``)."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".claude"
    return root / "projects"


def _session_id_of(path: Path) -> str | None:
    """The ``sessionId`` on the first lines of an old-style agent file (None when unreadable)."""
    from ..loaders.base import loads
    try:
        with path.open("rb") as f:
            for _ in range(5):
                line = f.readline(1 << 20)
                if not line:
                    break
                try:
                    rec = loads(line)
                except Exception:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("sessionId"), str):
                    return rec["sessionId"]
    except OSError:
        return None
    return None


def _is_request_log(p: Path) -> bool:
    """A request log (``core.loaders.side_files``), told by content; only a file whose first 4 KB name a
    ``request_index`` is read further."""
    try:
        with open(p, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if b'"request_index"' not in head:
        return False
    from ..loaders import LoadError, not_transcript
    from ..loaders.side_files import REQUEST_LOG
    try:
        return not_transcript(p) == REQUEST_LOG
    except LoadError:
        return False


def _is_candidate(name: str) -> bool:
    return name.lower().endswith(SESSION_SUFFIXES) and not name.startswith(".")


def discover(paths: list[str | os.PathLike] | None = None) -> Discovery:
    """Every session file under ``paths`` (files or folders, walked recursively; hidden folders and
    files, and ``SKIP_DIRS`` such as node_modules, are skipped). With no paths: the user's Claude Code
    projects folder. Each session once, in a stable order (sorted by path)."""
    roots = [Path(p).expanduser() for p in paths] if paths else [claude_projects_dir()]
    found: dict[str, SessionFile] = {}
    agents: list[Path] = []
    missing, unreadable = [], []

    def add(p: Path, st=None):
        try:
            st = st or p.stat()
        except OSError:
            unreadable.append(str(p))
            return
        key = str(p.resolve())
        if key not in found:
            found[key] = SessionFile(key, st.st_size, st.st_mtime_ns)

    for root in roots:
        if not root.exists():
            missing.append(str(root))
            continue
        if root.is_file():
            add(root)
            continue
        for dirpath, dirnames, filenames in os.walk(root, onerror=lambda e: unreadable.append(str(e.filename))):
            here = set(filenames)
            # <X>/ beside <X>.jsonl is that session's own folder (subagents, tool results): not sessions
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and f"{d}.jsonl" not in here
                                 and d not in SKIP_DIRS)
            for name in sorted(filenames):
                if not _is_candidate(name):
                    continue
                p = Path(dirpath) / name
                if name.startswith(AGENT_PREFIX) and name.endswith(".jsonl"):
                    agents.append(p)
                    continue
                if _is_request_log(p):
                    continue           # the requests an agent sent, logged beside its session: not a session
                try:
                    st = p.stat()
                except OSError:
                    unreadable.append(str(p))
                    continue
                add(p, st)
    # old-style agent files: attach to the session of their sessionId in the same folder
    orphans = []
    for a in agents:
        sid = _session_id_of(a)
        parent = str((a.parent / f"{sid}.jsonl").resolve()) if sid else None
        if parent in found:
            found[parent].subagent_files.append(str(a.resolve()))
        else:
            orphans.append(str(a))
    sessions = sorted(found.values(), key=lambda s: s.path)
    return Discovery(sessions, orphans, missing, unreadable)
