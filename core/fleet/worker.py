"""One session of a fleet: load it, replay every run over it, and return its row.

``replay_session`` is what the process pool and the Dask workers call. It never raises: a file
that cannot be loaded or replayed comes back as a row with its ``error``. Its result is small
(scalars, the compactions, and a few integer arrays per call), so shipping it back to the writer
costs little whatever the size of the session.

The per-call series (see docs/fleet.md, "Re-evaluating a threshold"):

* ``series_context[k]``: what the main run's threshold was compared with at call ``k`` (the context
  the summary layer saw, in the strategy's threshold unit) had no summary ever been made. Before
  the first simulated summary it is exactly what the replay saw; after it, the growth per call is
  added to it. ``post_levels`` are where each of the replay's summaries brought the context back to
  (``post_compaction``: their median).
* ``series_real[k]``: the real context tokens of call ``k`` (usage), null where not recorded.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
import traceback
from collections import Counter

from ..runtime.record import record
from .. import strategies
from ..layers.base import MANUAL
from .config import FleetConfig, Run, version_key


@record(frozen=True)
class SessionTask:
    path: str
    size: int
    mtime_ns: int
    subagent_files: tuple[str, ...] = ()


def infer_params(strategy, conversation) -> tuple[dict, dict]:
    """The strategy's session-inferred defaults: (overrides, reasons). ``core.strategies.infer_params``
    when it exists; a failure there is a reason, never the end of the session."""
    fn = getattr(strategies, "infer_params", None)
    if fn is None:
        return {}, {}
    try:
        r = fn(strategy, conversation)
    except Exception as e:  # inference is advice: the replay goes on with the defaults
        return {}, {"error": f"inference failed: {type(e).__name__}: {e}"}
    return dict(getattr(r, "params", None) or {}), {k: str(v) for k, v in (getattr(r, "reasons", None) or {}).items()}


# ------------------------------------------------------------------ helpers
def _tools_in(messages) -> tuple[Counter, int]:
    """Tool calls by name among ``messages`` and the number of tool results."""
    from ..model.messages import block_type, blocks
    names: Counter[str] = Counter()
    results = 0
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            results += 1
            continue
        for tc in m.get("tool_calls") or []:
            if isinstance(tc, dict):
                names[str((tc.get("function") or {}).get("name") or tc.get("name") or "?")] += 1
        for b in blocks(m):
            t = block_type(b)
            if t == "tool_use":
                names[str(b.get("name") or "?")] += 1
            elif t == "tool_result":
                results += 1
    return names, results


def _tools_text(names: Counter, limit: int = 8) -> str:
    return ", ".join(f"{n} {c}" for n, c in names.most_common(limit))


def _is_auto(trigger) -> bool:
    """Real compactions the threshold decided: all but the user's (``manual``, ``/compact``) and those an
    overflow forced (Inspect's ``forced``); a trigger that names the kind of compaction counts as automatic."""
    return trigger not in ("manual", "forced")


def _check_layer(res) -> str | None:
    """The layer whose decision is the threshold's: the first one that reports ``triggered``."""
    for c in res.calls[:1]:
        for lr in c.layers:
            if lr.triggered is not None:
                return lr.layer
    return None


# ------------------------------------------------------------------ series
def context_series(res) -> tuple[list[int], list[int]]:
    """(series_context, post_levels) of a replay: see the module doc."""
    unit_size = res.threshold_unit == "size"
    layer = _check_layer(res)
    fixed = (res.calibration or {}).get("fixed", 0) or 0
    series: list[int] = []
    posts: list = []
    prev_after = None
    prev_ov = 0
    prev_summary = False
    total = 0
    for c in res.calls:
        rec = next((lr for lr in c.layers if lr.layer == layer), None) if layer else None
        if rec is not None:
            check = rec.size_before if unit_size else rec.tokens_before
        else:
            check = c.size_before if unit_size else c.tokens_before
        after = c.size_after if unit_size else c.tokens_after
        ov = 0 if unit_size else (c.overhead or 0)
        if prev_after is None:
            total = check
        else:
            x = check - prev_after
            if prev_summary:               # the summary also dropped the history from before the file
                x += prev_ov - ov
            total += x
        series.append(int(total))
        if prev_summary and not unit_size:
            posts[-1] -= prev_ov - ov
        if c.compacted:
            posts.append(after)
        prev_after, prev_ov, prev_summary = after, ov, bool(c.summaries)
    if prev_summary and not unit_size and res.calibration:
        posts[-1] -= prev_ov - fixed
    return series, [int(p) for p in posts]


# ------------------------------------------------------------------ the session
def _engine(run: Run, conv, cfg: FleetConfig, workspace, name: str | None = None):
    """The engine of ``run`` over ``conv``: its strategy (``name``: the one chosen for this session when the
    run is the file's own pipeline), the session-inferred defaults, then the run's --set (those the strategy
    has, when each file runs its own: a --set can only name a parameter of some of them)."""
    from ..pipeline.engine import Engine
    from ..summarizers import make_summarizer
    from ..files.workspace import Workspace
    strat = strategies.get(name or run.strategy or "")
    inferred, reasons = infer_params(strat, conv) if cfg.infer else ({}, {})
    own = {p.name for p in strat.params}
    user = run.params if run.strategy else {k: v for k, v in run.params.items() if k in own}
    params = {**{k: v for k, v in inferred.items() if k in own}, **user}
    resolved = strat.resolve(params)
    eng = Engine(strat, resolved, workspace=Workspace(workspace), summarizer=make_summarizer(cfg.summarizer),
                 check=False)
    return eng, inferred, reasons


def _loadable(names) -> list:
    """The --compare runs' strategies that load (one that does not has its error in its own column)."""
    out = []
    for n in names:
        try:
            out.append(strategies.get(n))
        except Exception:  # noqa: BLE001 - reported by the run itself
            pass
    return out


def _first(xs):
    return xs[0] if xs else None


def ready() -> int:
    """A worker's first task: importing this module is most of a worker's start-up (see engines)."""
    return os.getpid()


def _base_row(task: SessionTask) -> dict:
    return {"path": task.path, "size": task.size, "mtime_ns": task.mtime_ns,
            "project": os.path.basename(os.path.dirname(task.path)), "error": None, "conversation": 0,
            "subagents": len(task.subagent_files), "compactions": [], "series_context": [], "series_real": [],
            "manual_calls": [], "post_levels": []}


def replay_session(task: SessionTask, cfg: FleetConfig) -> list[dict]:
    """The file's rows, one per session it holds (``identity.session_rows``: every Inspect sample, every hermes
    chain, a session file's main conversation with its subagents counted in it). Never raises: a file that
    cannot be loaded is one row with its ``error``; a session that cannot be replayed is its row with one."""
    from .identity import identity_keys, sample_label, session_rows
    t0 = time.perf_counter()
    rows: list[dict] = []
    try:
        from ..loaders import LoadError, load
        try:
            result = load(task.path)
        except LoadError as e:
            row = _base_row(task)
            row["error"] = str(e)
            rows.append(row)
            return rows
        except MemoryError:
            row = _base_row(task)
            row["error"] = f"{task.path}: out of memory during the load"
            rows.append(row)
            return rows
        sessions = session_rows(result)
        for k, attached in sessions:
            t1 = time.perf_counter()
            conv = result.conversations[k]
            row = _base_row(task)
            row.update(conversation=k, sample=sample_label(conv, result.format),
                       identity=" ".join(identity_keys(conv, result.format)) or None,
                       subagents=len(attached) + (len(task.subagent_files) if k == 0 else 0),
                       # a file of several sessions: each its own problems (a session file: the file's)
                       problems=len(conv.problems if len(sessions) > 1 else result.problems))
            try:
                _fill(row, result, conv, cfg)
            except MemoryError:
                row["error"] = f"{task.path}: out of memory during the replay"
            except Exception as e:  # one bad session is a row, never the end of the run
                tb = traceback.extract_tb(e.__traceback__)
                where = f" ({os.path.basename(tb[-1].filename)}:{tb[-1].lineno})" if tb else ""
                what = f" ({row['sample']})" if row.get("sample") else ""
                row["error"] = f"{task.path}{what}: the replay failed: {type(e).__name__}: {e}{where}"
            row["seconds"] = round(time.perf_counter() - t1, 4)
            rows.append(row)
    except Exception as e:  # a bug outside one session's replay: still a row for the file
        row = _base_row(task)
        row["error"] = f"{task.path}: the load failed: {type(e).__name__}: {e}"
        rows.append(row)
    finally:
        if rows and len(rows) == 1:
            rows[0]["seconds"] = round(time.perf_counter() - t0, 4)
        forget_session()
        peak = _peak_mb()
        for row in rows:
            row["worker_peak_mb"] = peak
            row.setdefault("seconds", round(time.perf_counter() - t0, 4))
    return rows


def replay_batch(tasks: list[SessionTask], cfg: FleetConfig) -> list[list[dict]]:
    """``replay_session`` of each task in turn, their rows in the same order: what a Dask worker runs, so that
    thousands of small sessions cost a few hundred scheduler round trips, not one each. Nothing of a session
    outlives its rows: the loaded transcript and its replays are dropped before the next session, the shared
    caches let go of them (``forget_session``), and a collection after the batch frees what reference cycles
    they left (a long-lived worker must not grow with the sessions it has replayed)."""
    import gc
    out = [replay_session(t, cfg) for t in tasks]
    gc.collect()
    return out


def forget_session() -> None:
    """Let go of what the caches shared by a process still hold of the sessions replayed: the per-message facts
    (``FACTS``, bounded by four times the longest list measured: with the biggest session first, thousands of
    other sessions' messages) keep only what is still referred to elsewhere, and the image figures (they hold
    their blocks) are dropped. The engine freezes what each run made out of the cyclic GC (``core.runtime.gcpause``:
    right for a command or a window that keeps its result); a worker that goes on to the next session hands it back
    to the GC, so that reference cycles the session left are collected, not pinned."""
    import gc
    from ..model import images
    from ..pipeline.facts import FACTS
    from ..runtime.forget import forget
    forget()                                   # (what layers remember per session: hermes' pruned lists)
    FACTS.collect()
    images.forget()
    gc.unfreeze()


def _peak_mb() -> float | None:
    """The worker process's peak resident memory so far (MB): what a fleet costs per worker."""
    try:
        import resource
        import sys
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)
    except (ImportError, OSError, ValueError):
        return None


def choose(conv, cfg: FleetConfig):
    """(the strategy choice for this session, why it is not replayed or None): the one rule every command
    follows (``strategies.choose_strategy``: the file's own pipeline unless --strategy names one); a named
    strategy replays only the sessions it fits (``strategies.fits``: another agent's pipeline does not)."""
    choice = strategies.choose_strategy(conv, cfg.strategy)
    if strategies.fits(choice):
        return choice, None
    return choice, (f"{choice.name} is {strategies.agent_of(choice.name)}'s pipeline and this is {choice.own.why}, "
                    f"whose own is {choice.own.name}: leave out --strategy to replay every file with its own, or "
                    f"--compare {choice.name} to set it beside")


def _fill(row: dict, result, conv, cfg: FleetConfig) -> None:
    from ..analysis.checker import check_conversation
    from ..replay import replay
    from ..replay.calibration import default_calibration
    extra = conv.extra if isinstance(conv.extra, dict) else {}
    versions = sorted({v for v in extra.get("versions") or [] if isinstance(v, str)}, key=version_key)
    stamps = [m.timestamp for m in conv.meta if m.timestamp is not None]
    row.update(format=result.format, session_id=extra.get("session_id"), cwd=extra.get("cwd"),
               version=versions[-1] if versions else None, versions=",".join(versions) or None,
               model=conv.model, title=(conv.title or "")[:200], messages=len(conv.messages),
               findings=sum(1 for f in check_conversation(conv) if f.severity == "error"),
               started=min(stamps) if stamps else None, ended=max(stamps) if stamps else None)
    choice, skip = choose(conv, cfg)
    row.update(strategy=choice.name, strategy_reason=choice.reason())
    if skip is not None:
        events = list(conv.events)
        row.update(not_replayed=skip, calls=len(conv.calls()), real_compactions=len(events),
                   real_auto_compactions=sum(1 for e in events if _is_auto(e.trigger)),
                   real_manual_compactions=sum(1 for e in events if e.trigger == "manual"))
        return
    comps: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="compactscope-fleet-") as tmp:
        main = cfg.main
        eng, inferred, reasons = _engine(main, conv, cfg, os.path.join(tmp, "main"), choice.name)
        # the runs of one session decide the calibration together (the rule of replay and the timeline)
        calibrate = default_calibration(conv, [eng.strategy] + _loadable(r.strategy for r in cfg.compare))
        # the columns the threshold slider re-evaluates are a free-running replay's (its model resets only at its
        # own compactions); the real compactions are paired in both modes below
        res = replay(conv, engine=eng, keep_inputs=False, calibrate=calibrate, free=True)
        calls = res.calls
        real = [c.real_tokens for c in calls if c.real_tokens is not None]
        events = res.real_events
        autos = [e for e in events if _is_auto(e.get("trigger")) and e.get("call") is not None]
        manual = [e["call"] for e in events if e.get("trigger") == "manual" and e.get("call") is not None]
        sims = [c.index for c in calls if c.compacted]        # summaries, and passes that drop or clear (qa #5)
        auto_sims = [c.index for c in calls if c.compacted and not _manual_summary(c)]
        first_real = autos[0]["call"] if autos else None
        first_sim = _first(auto_sims)
        series, posts = context_series(res)
        tot = res.totals()
        row.update(
            calls=len(calls), user_turns=calls[-1].turn if calls else 0,
            real_compactions=len(events), real_auto_compactions=len(autos),
            real_manual_compactions=sum(1 for e in events if e.get("trigger") == "manual"),
            first_real_auto_call=first_real,
            first_real_pre_tokens=autos[0].get("pre_tokens") if autos else None,
            peak_context_tokens=max(real) if real else None,
            total_input_tokens=sum(real) if real else None,
            strategy=res.strategy, threshold=res.threshold, threshold_unit=res.threshold_unit,
            params=json.dumps(_changed(eng), sort_keys=True),
            inferred=json.dumps({"params": {k: _plain(v) for k, v in inferred.items()}, "reasons": reasons},
                                sort_keys=True) if (inferred or reasons) else None,
            first_simulated_call=first_sim,
            distance_calls=_first_distance(res, first_real, first_sim),
            sim_compactions=len(sims), sim_peak_tokens=tot["peak_tokens"],
            sim_tokens_sent=tot["total_input_tokens"], sim_messages_dropped=tot["messages_dropped"],
            sim_tool_results_dropped=tot["tool_results_dropped"],
            calibration_fixed=(res.calibration or {}).get("fixed"),
            calibration_hidden=(res.calibration or {}).get("hidden"),
            post_compaction=sorted(posts)[len(posts) // 2] if posts else None, post_levels=posts,
            series_context=series,
            series_real=[c.real_tokens for c in calls], manual_calls=sorted(set(manual)),
        )
        row.update(replay_mode=res.mode, free_pairs=_pairs_json(res, conv))
        if events:          # both modes where they differ: following reality too (the default replay)
            e_fol, _, _ = _engine(main, conv, cfg, os.path.join(tmp, "follow"), choice.name)
            r_fol = replay(conv, engine=e_fol, keep_inputs=False, calibrate=calibrate)
            row.update(pairs=_pairs_json(r_fol, conv),
                       follow_sim_compactions=sum(1 for c in r_fol.calls if c.compacted),
                       follow_distance_calls=_first_distance(r_fol, first_real, None))
            del r_fol
        comps += _real_compactions(conv, res)
        comps += _sim_compactions(conv, res, "")
        del res
        for run in cfg.compare:
            p = f"cmp_{run.key}_"
            try:
                e2, _, _ = _engine(run, conv, cfg, os.path.join(tmp, run.key))
                r2 = replay(conv, engine=e2, keep_inputs=False, calibrate=calibrate, free=True)
            except Exception as e:
                row[p + "error"] = f"{type(e).__name__}: {e}"
                continue
            t2 = r2.totals()
            s2 = [c.index for c in r2.calls if c.compacted]
            row.update({p + "compactions": len(s2),
                        p + "first_call": _first([c.index for c in r2.calls if c.compacted and not _manual_summary(c)]),
                        p + "tokens_sent": t2["total_input_tokens"], p + "peak_tokens": t2["peak_tokens"],
                        p + "threshold": r2.threshold})
            comps += _sim_compactions(conv, r2, run.label)
    row["compactions"] = comps


def _first_distance(res, first_real, first_sim):
    """The first real auto compaction's pair, calls apart (``core.replay.pairing``: following reality a late one
    is found by the replay's own context carried past it); None when it has none."""
    if first_real is None:
        return None
    from ..replay.pairing import pairs
    for ev, p in zip(res.real_events, pairs(res), strict=True):
        if ev.get("call") == first_real:
            return None if p is None else p["call"] - first_real
    return (first_sim - first_real) if first_sim is not None else None


def _pairs_json(res, conv) -> str | None:
    """Per real compaction its pair (``divergence.report``) as JSON; None without real compactions."""
    from ..analysis.divergence import report
    if not res.real_events:
        return None
    return json.dumps([{"real_call": r["real_call"], "trigger": r["trigger"], "simulated_call": r["simulated_call"],
                        "calls_apart": r["calls_apart"], "late": r["late"],
                        "token_error_share": r.get("token_error_share")}
                       for r in report(res, conv)["compactions"]])


def _plain(v):
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def _changed(eng) -> dict:
    """The effective parameters that differ from the strategy's defaults."""
    d = eng.strategy.defaults()
    return {k: _plain(v) for k, v in eng.params.items() if d.get(k) != v}


def _manual_summary(call) -> bool:
    """The summary of this call was the user's /compact replayed, not the threshold's."""
    return any(layer.summary and layer.role == MANUAL for layer in call.layers)


def _sim_compactions(conv, res, run: str) -> list[dict]:
    out = []
    msgs = conv.messages
    for c in res.calls:
        if not c.compacted:
            continue
        summ = next((layer for layer in c.layers if layer.summary), None) or next((layer for layer in c.layers if layer.triggered), None)
        names, _ = _tools_in(msgs[i] for i in c.dropped if 0 <= i < len(msgs))
        out.append({"kind": "simulated", "run": run, "call": c.index, "message_index": c.message_index,
                    "trigger": "manual" if _manual_summary(c) else "auto",
                    "pre_tokens": summ.tokens_before if summ else c.tokens_before,
                    "tokens_before": c.tokens_before, "tokens_after": c.tokens_after,
                    "messages_dropped": len(c.dropped), "tool_results_dropped": c.results_dropped + c.results_cleared,
                    "dropped_tools": _tools_text(names), "layers": ",".join(c.fired)})
    return out


def _real_compactions(conv, res) -> list[dict]:
    out = []
    starts = sorted(set(conv.segments or [0]) | {0})
    msgs = conv.messages
    summaries = {e.summary_index for e in conv.events if e.summary_index is not None}
    for ev in res.real_events:
        mi = ev.get("message_index") or 0
        prev = max((s for s in starts if s < mi), default=0)
        seg = [msgs[i] for i in range(prev, min(mi, len(msgs))) if i not in summaries]
        names, results = _tools_in(seg)
        call = ev.get("call")
        after = res.calls[call].real_tokens if call is not None and call < len(res.calls) else None
        before = res.calls[call - 1].real_tokens if call else None
        out.append({"kind": "real", "run": "", "call": call, "message_index": mi, "trigger": ev.get("trigger"),
                    "pre_tokens": ev.get("pre_tokens"), "tokens_before": before,
                    "tokens_after": ev.get("post_tokens") or after, "messages_dropped": len(seg),
                    "tool_results_dropped": results, "dropped_tools": _tools_text(names), "layers": ""})
    return out
