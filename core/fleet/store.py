"""The results file: one Parquet file, one row per session (docs/fleet.md lists every column).

* the **sessions** table is the file's flat columns;
* the **compactions** table (real and simulated, one row per compaction) is the ``compactions``
  column, a list of structs per session: ``read_compactions`` flattens it (DuckDB:
  ``SELECT path, unnest(compactions, recursive := true) FROM 'RESULTS.parquet'``);
* the **per-call series** are list<int32> columns (``series_context``, ``series_real``), stored
  with Parquet's delta encoding, so a 10,000-session fleet keeps its whole token history in a few
  megabytes and a threshold is re-evaluated without replaying (``core.fleet.model``).

Rows are written as they arrive (``ResultsWriter``), a row group every few sessions, so memory
stays bounded whatever the fleet's size; the file appears under its name only when complete
(``core.safeio.atomic_path``: written beside it, then renamed). The run's configuration is in the schema metadata.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .config import FleetConfig, FleetError

META_KEY = b"compactscope.fleet"

COMPACTION = pa.struct([
    ("kind", pa.string()), ("run", pa.string()), ("call", pa.int32()), ("message_index", pa.int32()),
    ("trigger", pa.string()), ("pre_tokens", pa.int64()), ("tokens_before", pa.int64()),
    ("tokens_after", pa.int64()), ("messages_dropped", pa.int32()), ("tool_results_dropped", pa.int32()),
    ("dropped_tools", pa.string()), ("layers", pa.string()),
])

# (name, type, what it is): the order is the file's column order; docs/fleet.md documents the same list
SESSION_COLUMNS = [
    ("path", pa.string(), "the session file (absolute)"),
    ("size", pa.int64(), "its size in bytes when replayed (with mtime_ns: a resumed run skips an unchanged file)"),
    ("mtime_ns", pa.int64(), "its modification time, nanoseconds since the epoch"),
    ("conversation", pa.int32(), "which conversation of the file the row is (the other commands' --conversation K): "
                                 "each Inspect sample and each hermes chain is a row; 0 for a session file"),
    ("sample", pa.string(), "what the row is within a file of several sessions: an Inspect sample and epoch, a "
                            "hermes chain's first session id"),
    ("project", pa.string(), "the folder the file is in (for Claude Code: the project)"),
    ("format", pa.string(), "the detected format (claude-code, inspect-log, hermes-db, ...)"),
    ("session_id", pa.string(), "the session id the file records (Claude Code's sessionId, hermes' session id)"),
    ("identity", pa.string(), "the keys that identify the session across files, space-separated (a session id, "
                              "an Inspect eval and sample, a hash of the messages)"),
    ("duplicate_of", pa.string(), "PATH#K of the row holding the same session (a hermes snapshot of its state.db, "
                                  "the .json of an Inspect .eval): left out of the figures; null for the row that "
                                  "stands for the session"),
    ("cwd", pa.string(), "the working directory the session ran in"),
    ("version", pa.string(), "the highest Claude Code version in the file"),
    ("versions", pa.string(), "every version seen, comma-separated (a session can be upgraded mid-way)"),
    ("model", pa.string(), "the model"),
    ("title", pa.string(), "the session's title or first prompt"),
    ("started", pa.timestamp("ms", tz="UTC"), "the first message's time"),
    ("ended", pa.timestamp("ms", tz="UTC"), "the last message's time"),
    ("messages", pa.int32(), "messages of the main conversation"),
    ("calls", pa.int32(), "model calls replayed"),
    ("user_turns", pa.int32(), "user turns (user messages with text)"),
    ("subagents", pa.int32(), "subagent, sidechain and side-thread conversations of the session (not replayed)"),
    ("problems", pa.int32(), "problems the loader reported (corrupt lines, ...); the session still loaded"),
    ("findings", pa.int32(), "API-checker errors in the recorded conversation"),
    ("real_compactions", pa.int32(), "compactions the file records"),
    ("real_auto_compactions", pa.int32(), "of them, automatic (Claude Code trigger auto)"),
    ("real_manual_compactions", pa.int32(), "of them, manual (/compact)"),
    ("first_real_auto_call", pa.int32(), "the call before which the first automatic compaction happened"),
    ("first_real_pre_tokens", pa.int64(), "its preTokens"),
    ("peak_context_tokens", pa.int64(), "the largest real context (usage: input + cache creation + cache read)"),
    ("total_input_tokens", pa.int64(), "real context tokens summed over the calls (what the session sent)"),
    ("strategy", pa.string(), "the main run's strategy"),
    ("strategy_reason", pa.string(), "why: the file's own pipeline, or chosen with --strategy"),
    ("not_replayed", pa.string(), "why the main run did not replay the session: --strategy names another agent's "
                                  "pipeline than its format's (null when it was replayed)"),
    ("threshold", pa.float64(), "the main run's threshold for this session (after inferred defaults)"),
    ("threshold_unit", pa.string(), "tokens or size (chars)"),
    ("params", pa.string(), "JSON: the main run's parameters that differ from the strategy's defaults"),
    ("inferred", pa.string(), "JSON: the session-inferred defaults ({params, reasons}), null when none"),
    ("first_simulated_call", pa.int32(), "the first call at which the main run compacted"),
    ("distance_calls", pa.int32(), "the first real auto compaction's pair (core.replay.pairing) - first_real_auto_call "
                                   "(positive: the simulation fires later than the real session did)"),
    ("replay_mode", pa.string(), "how the main run's columns were replayed: free (its own summaries all the way, "
                                 "what the threshold slider re-evaluates); the real compactions are paired in both "
                                 "modes (pairs, free_pairs)"),
    ("pairs", pa.string(), "JSON, following reality (the default replay: after each real compaction it goes on from "
                           "the real context): per real compaction the simulated one paired with it "
                           "(core.replay.pairing): [{real_call, trigger, simulated_call, calls_apart, late, "
                           "token_error_share}]; null without real compactions"),
    ("free_pairs", pa.string(), "JSON: the same pairs in the free-running main run"),
    ("follow_sim_compactions", pa.int32(), "compactions of the replay following reality (sessions with real "
                                           "compactions)"),
    ("follow_distance_calls", pa.int32(), "following reality: the first real auto compaction's pair - "
                                          "first_real_auto_call (a late one found by the own context carried past)"),
    ("sim_compactions", pa.int32(), "compactions the main run made (summaries, passes that drop or clear)"),
    ("sim_peak_tokens", pa.int64(), "the main run's largest context sent"),
    ("sim_tokens_sent", pa.int64(), "the main run's context tokens summed over the calls"),
    ("sim_messages_dropped", pa.int64(), "messages that left the main run's context"),
    ("sim_tool_results_dropped", pa.int64(), "tool results dropped or cleared by the main run"),
    ("calibration_fixed", pa.int64(), "tokens the API saw beyond the recorded messages (system prompt, tools)"),
    ("calibration_hidden", pa.int64(), "history from before the file starts, carried until the first summary"),
    ("post_compaction", pa.int64(), "where the main run's summaries brought the context back to (median; the "
                                    "threshold re-evaluation resets to it)"),
    ("error", pa.string(), "why the session could not be loaded or replayed (null when it was)"),
    ("seconds", pa.float32(), "time the worker spent on the session"),
    ("worker_peak_mb", pa.float32(), "the worker process's peak resident memory after it (MB; a worker is replaced "
                                     "every 100 sessions)"),
]
COMPARE_COLUMNS = [
    ("compactions", pa.int32(), "compactions this run made"),
    ("first_call", pa.int32(), "its first compaction's call"),
    ("tokens_sent", pa.int64(), "its context tokens summed over the calls"),
    ("peak_tokens", pa.int64(), "its largest context"),
    ("threshold", pa.float64(), "its threshold for this session"),
    ("error", pa.string(), "why this run failed on the session"),
]
NESTED_COLUMNS = [
    ("compactions", pa.list_(COMPACTION), "one entry per compaction, real and simulated (see the table below)"),
    ("series_context", pa.list_(pa.int32()), "per call: the main run's threshold input had no summary been made"),
    ("series_real", pa.list_(pa.int32()), "per call: the real context tokens (null where not recorded)"),
    ("manual_calls", pa.list_(pa.int32()), "calls before which the user ran /compact"),
    ("post_levels", pa.list_(pa.int32()), "where each of the main run's summaries left the context, in order"),
]
SERIES = ("series_context", "series_real", "manual_calls", "post_levels")


def schema(cfg: FleetConfig) -> pa.Schema:
    fields = [pa.field(n, t) for n, t, _ in SESSION_COLUMNS]
    for run in cfg.compare:
        fields += [pa.field(f"cmp_{run.key}_{n}", t) for n, t, _ in COMPARE_COLUMNS]
    fields += [pa.field(n, t) for n, t, _ in NESTED_COLUMNS]
    meta = {META_KEY: json.dumps({"config": cfg.to_json(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})}
    return pa.schema(fields, metadata=meta)


def _timestamp(v):
    if v is None:
        return None
    return int(v * 1000)


def rows_to_batch(rows: list[dict], sch: pa.Schema) -> pa.RecordBatch:
    cols = []
    for f in sch:
        vals = [r.get(f.name) for r in rows]
        if pa.types.is_timestamp(f.type):
            vals = [_timestamp(v) for v in vals]
        elif pa.types.is_list(f.type) and f.name != "compactions":
            vals = [v if v is not None else [] for v in vals]
        elif f.name == "compactions":
            vals = [v or [] for v in vals]
        cols.append(pa.array(vals, type=f.type))
    return pa.RecordBatch.from_arrays(cols, schema=sch)


def read_config(path: str | os.PathLike) -> FleetConfig:
    meta = read_meta(path)
    return FleetConfig.from_json(meta.get("config") or {})


def read_meta(path: str | os.PathLike) -> dict:
    try:
        sch = pq.read_schema(str(path))
    except (OSError, pa.ArrowInvalid) as e:
        raise FleetError(f"{path}: not a fleet results file ({e})") from None
    raw = (sch.metadata or {}).get(META_KEY)
    if raw is None:
        raise FleetError(f"{path}: a Parquet file, but not one written by compactscope fleet")
    return json.loads(raw)


_DICT_COLUMNS = ("project", "format", "version", "versions", "model", "strategy", "threshold_unit", "cwd",
                 "strategy_reason")
_IDENTITY = ("path", "conversation", "identity", "calls", "messages", "format", "duplicate_of")


def _parquet_writer(path, sch: pa.Schema) -> pq.ParquetWriter:
    return pq.ParquetWriter(str(path), sch, compression="zstd",
                            use_dictionary=[n for n, _, _ in SESSION_COLUMNS if n in _DICT_COLUMNS],
                            column_encoding={n: "DELTA_BINARY_PACKED" for n in SERIES}, write_statistics=True)


class ResultsWriter:
    """Streams session rows into ``path``: row groups of ``batch`` sessions, written beside the
    target and renamed over it by ``close``. ``keep`` (a previous results file) contributes its
    rows for the paths in ``keep_paths`` first, batch by batch (a resumed run). At the end the rows that
    hold the same session (``identity.duplicates``) get their ``duplicate_of``: the file is rewritten once,
    row group by row group, when that changes anything."""

    def __init__(self, path: str | os.PathLike, cfg: FleetConfig, *, batch: int = 64):
        from ..files.safeio import UnsafePath, atomic_path, new_file_mode
        self.path = Path(path)
        self.schema = schema(cfg)
        self.batch = batch
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # core.safeio: a temporary file beside the target takes its name at the end (never through a symlink)
        self._target = atomic_path(self.path, mode=new_file_mode(self.path))
        try:
            self.tmp = self._target.__enter__()
        except UnsafePath as e:
            raise FleetError(str(e)) from None
        self._lock = _hold(self.tmp)      # a live writer's temporary file: never taken for a stale one
        self._w = _parquet_writer(self.tmp, self.schema)
        self._rows: list[dict] = []
        self._ident: list[dict] = []      # per row written, in order: what the duplicates pass reads
        self.written = 0

    def copy_from(self, old: str | os.PathLike, keep_paths: set[str]) -> int:
        """Copy the rows of ``old`` whose path is in ``keep_paths`` (same columns required)."""
        n = 0
        f = pq.ParquetFile(str(old))
        if f.schema_arrow.remove_metadata() != self.schema.remove_metadata():
            raise FleetError(f"{old}: its columns differ from this run's; write to a new --out")
        keep = pa.array(sorted(keep_paths), type=pa.string())
        import pyarrow.compute as pc
        for b in f.iter_batches(batch_size=self.batch):
            mask = pc.is_in(b.column(0), value_set=keep)
            sub = b.filter(mask)
            if sub.num_rows:
                self._w.write_batch(pa.RecordBatch.from_arrays(sub.columns, schema=self.schema))
                self._ident += sub.select(list(_IDENTITY)).to_pylist()
                n += sub.num_rows
        self.written += n
        return n

    def add(self, row: dict) -> None:
        self._rows.append(row)
        self._ident.append({k: row.get(k) for k in _IDENTITY})
        if len(self._rows) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            self._w.write_batch(rows_to_batch(self._rows, self.schema))
            self.written += len(self._rows)
            self._rows = []

    def close(self) -> None:
        self.flush()
        self._w.close()
        self._mark_duplicates()
        self._target.__exit__(None, None, None)
        _release(self._lock)
        self.stale_removed = remove_stale_temporaries(self.path)

    def _mark_duplicates(self) -> None:
        from .identity import duplicates, row_id
        dup = duplicates(self._ident)
        new = [dup.get(row_id(r["path"], r.get("conversation"))) for r in self._ident]
        self.duplicates = sum(1 for d in new if d)
        if new == [r.get("duplicate_of") for r in self._ident]:
            return
        tmp2 = Path(str(self.tmp) + ".dup")
        f = pq.ParquetFile(str(self.tmp))
        at = self.schema.get_field_index("duplicate_of")
        w = _parquet_writer(tmp2, self.schema)
        try:
            k = 0
            for g in range(f.num_row_groups):
                b = f.read_row_group(g)
                col = pa.array(new[k:k + b.num_rows], type=pa.string())
                k += b.num_rows
                w.write_table(b.set_column(at, self.schema.field(at), col))
        except BaseException:
            w.close()
            tmp2.unlink(missing_ok=True)
            raise
        w.close()
        os.replace(tmp2, self.tmp)

    def abort(self) -> None:
        try:
            self._w.close()
        finally:
            self._target.__exit__(FleetError, FleetError("aborted"), None)   # removes the temporary file
            _release(self._lock)


def _hold(path) -> int | None:
    """An exclusive lock on ``path`` held while this process writes it (released when the process dies, even
    by kill -9): what tells a live writer's temporary file from one a killed run left."""
    try:
        import fcntl
        fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except (ImportError, OSError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _release(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def remove_stale_temporaries(out: str | os.PathLike) -> int:
    """Remove the temporary files a killed run left beside ``out`` (``.NAME.*.tmp`` and their ``.dup``):
    those no live writer holds locked. How many were removed."""
    out = Path(out)
    try:
        import fcntl
    except ImportError:            # no locks here: nothing can tell a stale file from a live one
        return 0
    prefix = f".{out.name[:60]}."
    n = 0
    try:
        names = [e.name for e in os.scandir(out.parent) if e.name.startswith(prefix)
                 and (e.name.endswith(".tmp") or e.name.endswith(".tmp.dup")) and e.is_file(follow_symlinks=False)]
    except OSError:
        return 0
    for name in names:
        p = out.parent / name
        base = p.with_name(name[:-len(".dup")]) if name.endswith(".dup") else p
        try:
            fd = os.open(str(base if base.exists() else p), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue               # a live writer holds it
        finally:
            os.close(fd)
        try:
            p.unlink()
            n += 1
        except OSError:
            pass
    return n


# ------------------------------------------------------------------ reading
def read_sessions(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """The sessions table: every flat column (or ``columns``), without the nested ones."""
    read_meta(path)
    f = pq.ParquetFile(str(path))
    nested = {n for n, _, _ in NESTED_COLUMNS}
    cols = columns or [n for n in f.schema_arrow.names if n not in nested]
    return f.read(columns=cols)


def read_compactions(path: str | os.PathLike) -> pa.Table:
    """The compactions table, flat: ``path`` and ``conversation`` (the session's row) plus one column per field
    of a compaction."""
    import pyarrow.compute as pc
    read_meta(path)
    names = pq.read_schema(str(path)).names
    t = pq.read_table(str(path), columns=["path", "compactions"] + (["conversation"] if "conversation" in names
                                                                    else []))
    lists = t.column("compactions").combine_chunks()
    parent = pc.list_parent_indices(lists)
    flat = pc.list_flatten(lists)
    paths = pc.take(t.column("path").combine_chunks(), parent)
    conv = pc.take(t.column("conversation").combine_chunks(), parent) if "conversation" in names else \
        pa.array([0] * len(paths), type=pa.int32())
    cols = {"path": paths, "conversation": conv}
    for i, field in enumerate(COMPACTION):
        cols[field.name] = flat.field(i)
    return pa.table(cols)
