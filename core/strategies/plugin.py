"""Plugins: a user's own compactor as a strategy (docs/plugins.md is the contract).

A strategy spec names one of

* a built-in strategy (``s08``, ``hermes``, ...) or one an installed package registers through
  the entry-point group ``compactscope.strategies`` (its name);
* ``MODULE:NAME`` (an importable module) or ``PATH.py:NAME`` (a Python file; ``PATH.py`` alone
  takes ``STRATEGY`` or ``compact`` from it).

``NAME`` may be

* a plain function ``messages -> messages`` (sync or async), which becomes ONE traced layer: it
  is handed a deep copy of the messages (its input is never mutated), its keyword arguments with
  defaults become the strategy's parameters (type from the annotation or the default;
  ``Annotated[int, "help", {"minimum": 0, "unit": "tokens"}]`` and ``Literal[...]`` understood;
  help texts also from the docstring), and what it did is inferred (``core.blackbox``);
* a list or tuple of such functions, or an object with a ``layers`` attribute (plus optional
  ``title``, ``description``, ``dialect``, ``threshold_param``, ``threshold_unit``): a
  multi-layer strategy, one traced layer per function (``Layer`` objects are used as they are);
* a ``Strategy`` (``compactscope.core.strategies.base``), used as it is.

Dialect: ``fn.dialect`` / the object's ``dialect`` / the module's ``DIALECT`` ("anthropic" or
"openai": the engine converts the input first), else "any": the function gets the messages
in the conversation's own dialect (and when it returns the other dialect, that is detected from
its output, so the checker checks the right one). A function may take a ``summarize`` keyword: it is handed
a callable ``summarize(messages_or_text, instructions="") -> str`` backed by the engine's
summarizer (offline, fixed text or a real model, cached), so its summaries are traced.

A plugin that fails to load raises ``PluginError`` (a ``KeyError``, like an unknown strategy)
naming the file and line; one that raises, returns something that is not a message list, or
does not stop when cancelled makes a step with an ``error`` naming ``file:function``, never a
crash of the caller.
"""
from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import inspect
import os
import pickle
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import orjson

from ..runtime.record import record, replace
from ..analysis.blackbox import infer_output
from ..layers.base import Layer, LayerContext
from ..model.messages import ANTHROPIC, OPENAI, block_type, blocks, detect_dialect, message_text
from ..summarizers import SummaryError, SummaryRequest
from ..pipeline.trace import LayerOutput
from .base import ANY, Param, Strategy
from .plugin_params import PluginError, function_params
from . import plugin_worker as _pw
from ..i18n import english as words
from .entry import ENTRY_POINT_GROUP, entry_points  # noqa: F401 - where they were

DIALECTS = (ANTHROPIC, OPENAI, ANY)
DEFAULT_NAMES = ("STRATEGY", "compact")
CANCEL_GRACE = 2.0               # seconds a cancelled plugin gets to return before it is abandoned


# ------------------------------------------------------------------ spec parsing
@record(frozen=True)
class Spec:
    kind: str                    # "file" or "module"
    target: str                  # absolute path, or module name
    attr: str | None             # None: a file's default (STRATEGY or compact)

    @property
    def text(self) -> str:
        """The canonical spec: resolvable again from anywhere (absolute path)."""
        return self.target + (f":{self.attr}" if self.attr else "")

    @property
    def short(self) -> str:
        """What to call it in a title: ``file.py:compact`` or ``module:compact``."""
        where = Path(self.target).name if self.kind == "file" else self.target
        return where + (f":{self.attr}" if self.attr else "")


_ATTR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_MODULE = _ATTR


def looks_like_plugin(spec: str) -> bool:
    """Whether ``spec`` is written as a plugin (``X:NAME`` or ``PATH.py``), not a strategy name."""
    spec = spec.strip()
    return spec.endswith(".py") or (":" in spec and bool(_ATTR.match(spec.rsplit(":", 1)[1].strip())))


def split_params(text: str) -> tuple[str, str]:
    """``SPEC[:K=V,...]`` -> (strategy spec, parameter text), where SPEC may itself hold a colon
    (``MODULE:NAME``, ``PATH.py:NAME``, a Windows drive): the parameters are what follows the
    first colon whose next segment assigns (``K=V``)."""
    segs = text.split(":")
    k = 1
    if len(segs) > 1 and len(segs[0]) == 1 and segs[1].startswith(("\\", "/")):
        k = 2                                           # C:\path\plugin.py
    while k < len(segs) and "=" not in segs[k]:
        k += 1
    return ":".join(segs[:k]).strip(), ":".join(segs[k:]).strip()


def parse_spec(spec: str) -> Spec:
    """``PATH.py[:NAME]`` or ``MODULE:NAME`` -> Spec. PluginError says what is wrong."""
    text = spec.strip()
    if not text:
        raise PluginError("an empty strategy spec: use NAME, MODULE:NAME or PATH.py:NAME")
    target, attr = text, None
    if ":" in text:
        head, tail = text.rsplit(":", 1)
        if _ATTR.match(tail.strip()) and not (len(head) == 1 and tail.startswith(("\\", "/"))):
            target, attr = head.strip(), tail.strip()
    is_file = target.endswith(".py") or os.sep in target or "/" in target or Path(target).is_file()
    if is_file:
        p = Path(target).expanduser()
        if not p.is_file():
            raise PluginError(f"{target}: no such plugin file (a strategy spec is NAME, MODULE:NAME or PATH.py:NAME)")
        return Spec("file", str(p.resolve()), attr)
    if attr is None:
        raise PluginError(f"unknown strategy {text!r}")
    if not _MODULE.match(target):
        raise PluginError(f"{text!r}: {target!r} is neither a Python file nor a module name")
    return Spec("module", target, attr)


# ------------------------------------------------------------------ loading
def _module_name(path: str) -> str:
    return "compactscope_plugin_" + Path(path).stem.replace("-", "_") + "_" + \
        hashlib.sha1(path.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _load_error(where: str, e: BaseException) -> PluginError:
    if isinstance(e, SyntaxError):
        return PluginError(f"{e.filename or where} line {e.lineno}: SyntaxError: {e.msg}")
    tb = traceback.extract_tb(e.__traceback__)
    line = next((f" (line {f.lineno} of {Path(f.filename).name})" for f in reversed(tb)
                 if not f.filename.startswith("<") and "importlib" not in f.filename), "")
    return PluginError(f"{where}: importing it raised {type(e).__name__}: {e}{line}")


def _import_file(path: str):
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"{path}: cannot be imported as a Python file")
    mod = importlib.util.module_from_spec(spec)
    folder = str(Path(path).parent)
    sys.modules[name] = mod
    _pw.FILE_MODULES[name] = path             # so a plugin process imports it under the same name
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)            # so the plugin can import its neighbours
    try:
        spec.loader.exec_module(mod)
    except BaseException as e:  # noqa: BLE001 - a broken plugin is the user's error, said in words
        sys.modules.pop(name, None)
        if isinstance(e, KeyboardInterrupt):
            raise
        raise _load_error(path, e) from None
    finally:
        if added:
            try:
                sys.path.remove(folder)
            except ValueError:
                pass
    return mod


def _import_module(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise PluginError(f"no module named {name!r} (is it installed, or did you mean a .py file?)") from None
        raise _load_error(name, e) from None
    except Exception as e:  # noqa: BLE001
        raise _load_error(name, e) from None


def _getattr_path(obj, attr: str, where: str):
    cur = obj
    for part in attr.split("."):
        try:
            cur = getattr(cur, part)
        except AttributeError:
            public = sorted(k for k, v in vars(obj).items() if not k.startswith("_") and
                            (callable(v) or isinstance(v, (list, tuple, Strategy))) and
                            getattr(v, "__module__", obj.__name__) == obj.__name__)
            raise PluginError(f"{where} has no {attr!r}" + (f" (it defines: {', '.join(public)})" if public
                                                            else "")) from None
    return cur


_file_cache: dict[tuple, Strategy] = {}
_lock = threading.Lock()


def load(spec: str | Spec) -> Strategy:
    """The strategy a plugin spec names. A file is loaded again when it changed on disk."""
    sp = parse_spec(spec) if isinstance(spec, str) else spec
    key: tuple = (sp.kind, sp.target, sp.attr)
    if sp.kind == "file":
        try:
            st = os.stat(sp.target)
        except OSError as e:
            raise PluginError(f"{sp.target}: {e.strerror}") from None
        key += (st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _file_cache.get(key)
    if hit is not None:
        return hit
    mod = _import_file(sp.target) if sp.kind == "file" else _import_module(sp.target)
    where = sp.target if sp.kind == "file" else f"module {sp.target}"
    attr = sp.attr
    if attr is None:
        own = [k for k, v in vars(mod).items() if not k.startswith("_") and inspect.isfunction(v)
               and v.__module__ == mod.__name__]
        attr = next((n for n in DEFAULT_NAMES if hasattr(mod, n)), None) or (own[0] if len(own) == 1 else None)
        if attr is None:
            raise PluginError(f"{where}: name the compactor (PATH.py:NAME); the file defines neither "
                              f"{' nor '.join(DEFAULT_NAMES)}" + (f" (its functions: {', '.join(own)})" if own else ""))
        sp = Spec(sp.kind, sp.target, attr)
    obj = _getattr_path(mod, attr, where)
    strategy = from_object(obj, sp.text, title_hint=sp.short, module=mod,
                           origin=f"file {sp.target}" if sp.kind == "file" else f"module {sp.target}")
    with _lock:
        _file_cache[key] = strategy
    return strategy


def candidates(path: str) -> list[str]:
    """The names in a plugin file that can be a strategy (its own public functions, lists of them,
    objects with ``layers``, Strategies), default names first: for a "which one?" question.
    PluginError when the file does not load."""
    sp = parse_spec(path if path.endswith(".py") or ":" not in path else path.rsplit(":", 1)[0])
    mod = _import_file(sp.target)
    out = []
    for k, v in vars(mod).items():
        if k.startswith("_"):
            continue
        own = getattr(v, "__module__", None) == mod.__name__
        if (inspect.isfunction(v) and own) or isinstance(v, Strategy) or \
                (isinstance(v, (list, tuple)) and v and all(callable(x) for x in v)) or \
                (own and isinstance(v, type) and isinstance(getattr(v, "layers", None), (list, tuple))):
            out.append(k)
    return sorted(out, key=lambda k: (k not in DEFAULT_NAMES, DEFAULT_NAMES.index(k) if k in DEFAULT_NAMES else 0))


def short_label(spec: str) -> str:
    """How a strategy spec is shown in a list: a plugin file as ``file.py:NAME``, anything else as it is."""
    if not looks_like_plugin(spec):
        return spec
    try:
        return parse_spec(spec).short
    except PluginError:
        return spec


# ------------------------------------------------------------------ running a function
def _where(fn: Callable) -> str:
    """``file.py:function`` (or ``module:function``) for messages about the plugin."""
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    if code is not None and code.co_filename and not code.co_filename.startswith("<"):
        return f"{Path(code.co_filename).name}:{name}"
    mod = getattr(fn, "__module__", None)
    return f"{mod}:{name}" if mod else str(name)


class _Cancelled(Exception):
    pass


def _handed(messages: list) -> list:
    """A deep copy of ``messages`` for the plugin (JSON data: fast; anything else: copy.deepcopy)."""
    try:
        out = orjson.loads(orjson.dumps(messages))
        if out == messages:
            return out
    except (TypeError, orjson.JSONEncodeError, orjson.JSONDecodeError):
        pass
    return copy.deepcopy(messages)


def call_plugin(fn: Callable, args: tuple, kwargs: dict, cancel: threading.Event | None, who: str,
                grace: float = CANCEL_GRACE) -> Any:
    """Call ``fn`` (sync, or async: run on its own event loop) on a worker thread, waiting for it
    so that ``cancel`` is honoured: an async plugin's task is cancelled, a sync one is given
    ``grace`` seconds and then abandoned. Raises ``_Cancelled`` (with the reason) or the
    plugin's own exception."""
    import asyncio          # here, not at the top: asyncio (and ssl) would cost every command ~25 ms to import
    box: dict = {}
    done = threading.Event()

    def target():
        loop = None
        try:
            res = fn(*args, **kwargs)
            if inspect.isawaitable(res):
                loop = asyncio.new_event_loop()
                box["loop"] = loop

                async def _run(aw=res):
                    return await aw
                task = loop.create_task(_run())
                box["task"] = task
                res = loop.run_until_complete(task)
            box["result"] = res
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = e
        finally:
            if loop is not None:
                try:
                    loop.close()
                except Exception:  # noqa: BLE001
                    pass
            done.set()

    t = threading.Thread(target=target, name=f"compactscope plugin {who}", daemon=True)
    t.start()
    deadline = time.monotonic() + _pw.time_limit()
    while not done.wait(0.05):
        if time.monotonic() > deadline:
            _stop_thread(t, box)
            raise _pw.PluginTimeout(f"did not return within {_pw.time_limit():g} s (the plugin time limit: "
                                    f"--plugin-timeout or {_pw.TIMEOUT_ENV}); it was abandoned")
        if cancel is not None and cancel.is_set():
            loop, task = box.get("loop"), box.get("task")
            if loop is not None and task is not None:
                try:
                    loop.call_soon_threadsafe(task.cancel)
                except RuntimeError:
                    pass
            if done.wait(grace):
                if "error" in box and isinstance(box["error"], asyncio.CancelledError):
                    raise _Cancelled(f"{who} was cancelled")
                break
            raise _Cancelled(f"{who} did not stop within {grace:g} s of the cancel; it was abandoned (it may still "
                             f"be running in the background)")
    if "error" in box:
        e = box["error"]
        if isinstance(e, asyncio.CancelledError):
            raise _Cancelled(f"{who} was cancelled")
        if isinstance(e, KeyboardInterrupt) and not isinstance(e, _pw.PluginInterrupted):
            raise _pw.PluginInterrupted(f"raised KeyboardInterrupt{_raised_where(e, fn)}")
        raise e
    return box.get("result")


def _stop_thread(t: threading.Thread, box: dict) -> None:
    """Ask a plugin thread past its time limit to stop: its task is cancelled (async), and an exception is
    raised in it at its next Python instruction (a loop stops; a blocking C call cannot be interrupted and is
    abandoned)."""
    loop, task = box.get("loop"), box.get("task")
    if loop is not None and task is not None:
        try:
            loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:
            pass
    if t.ident is not None:
        import ctypes
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(SystemExit))


def _raised_where(e: BaseException, fn: Callable) -> str:
    """`` (line N of file.py)``: the deepest frame in the plugin's file."""
    code = getattr(fn, "__code__", None)
    fname = code.co_filename if code is not None else None
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if fname and f.filename == fname] or frames[-1:]
    if not mine:
        return ""
    f = mine[-1]
    return f" (line {f.lineno} of {Path(f.filename).name})"


def _too_many(res: Any, messages: list) -> str | None:
    """Why ``res`` is more than a compactor makes (a million messages for a hundred), or None."""
    cap = 4 * len(messages) + 1000
    if isinstance(res, (list, tuple)) and len(res) > cap:
        return (f"returned {len(res):,} messages for {len(messages):,}: more than a compactor makes (at most 4 x "
                f"its input + 1,000)")
    return None


def _not_messages(res: Any) -> str | None:
    """Why ``res`` is not a message list, or None."""
    if not isinstance(res, (list, tuple)):
        what = "nothing (None)" if res is None else words.a(type(res).__name__)
        hint = " (did it forget to return the list?)" if res is None else ""
        return f"returned {what}, not a list of messages{hint}"
    for k, m in enumerate(res):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            shown = repr(m)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            return f"returned a list whose item {k} is not a message (a dict with a 'role'): {shown}"
    return None


def _turned_dialect(before: list, after: list) -> str | None:
    """The dialect an undeclared plugin's output is in when it is not its input's: detected from the
    output's own marks (OpenAI ``tool`` messages or ``tool_calls``; Anthropic tool blocks)."""
    d_in, d_out = detect_dialect(before), detect_dialect(after)
    if d_in == d_out:
        return None
    marked = any(isinstance(m, dict) and (m.get("role") in ("tool", "system", "developer") or "tool_calls" in m)
                 for m in after) if d_out == OPENAI else \
        any(block_type(b) in ("tool_use", "tool_result") for m in after for b in blocks(m))
    return d_out if marked else None


def _summarize_fn(ctx: LayerContext, who: str, made: list):
    """The ``summarize`` a plugin may take: the engine's summarizer, traced."""
    def summarize(what, instructions: str = "", max_tokens: int = 2000) -> str:
        msgs: tuple = ()
        if isinstance(what, str):
            body = what
        else:
            msgs = tuple(what)
            body = "\n\n".join(f"{m.get('role', '?')}: {message_text(m)}" if isinstance(m, dict) else str(m)
                               for m in msgs)
        prompt = ("Summarise this conversation so that the work can continue from the summary alone: the task, "
                  "decisions, files, errors and their fixes, and what is in progress."
                  + (f"\n\n{instructions}" if instructions else "") + "\n\n" + body)
        res = ctx.summarizer.summarize(SummaryRequest(prompt, msgs, None, int(max_tokens), f"plugin {who}"),
                                       ctx.cancel)
        made.append(res)
        return res.text
    return summarize


class _Failed(Exception):
    """A plugin call that made no result: the step's note, its error, whether it is the plugin's failure."""

    def __init__(self, note: str, error: str, plugin_failed: bool = True):
        super().__init__(error)
        self.note, self.error, self.plugin_failed = note, error, plugin_failed


def _isolable(fn: Callable) -> tuple[str, bytes, tuple | None] | None:
    """(worker key, the function pickled by reference, the plugin file to import first) when a plugin
    process can run ``fn``; None for a lambda, a closure, something of ``__main__`` (run in this process)."""
    mod = getattr(fn, "__module__", None)
    if not isinstance(mod, str) or mod == "__main__":
        return None
    try:
        ref = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - not picklable: run in this process
        return None
    if len(ref) > 65536:                     # a callable object with a big state: not worth copying per call
        return None
    path = _pw.FILE_MODULES.get(mod)
    return (path or mod.split(".")[0]), ref, ((mod, path) if path else None)


def _decode(payload: tuple | list, messages: list) -> tuple[Any, list]:
    """The plugin process's result as the caller's objects: a message handed back unchanged is the input
    message itself; (the result, what stands for each input message as handed: for ``infer_output``)."""
    tag, body = payload
    handed = list(messages)
    if tag != "items":
        return body, handed
    res = []
    for item in body:
        if item[0] == "ref":
            res.append(messages[item[1]])
        elif item[0] == "changed":
            handed[item[1]] = item[2]
            res.append(item[2])
        else:
            res.append(item[1])
    return res, handed


def _call_isolated(iso: tuple, messages: list, values: dict, summarize: Callable | None,
                   cancel: threading.Event | None) -> tuple[Any, list, bool]:
    key, ref, module = iso
    payload, mutated = _pw.worker_for(key).call(ref, module, messages, values, summarize, cancel, CANCEL_GRACE)
    res, handed = _decode(payload, messages)
    return res, handed, mutated


def _call(fn: Callable, iso: dict, messages: list, values: dict, summarize: Callable | None,
          cancel: threading.Event | None, who: str) -> tuple[Any, list, bool]:
    """(the plugin's result, the messages as handed, whether it changed them in place): in a plugin process
    when it can run there (time limit and memory bound), else on a thread here (time limit). ``_Failed``
    when it made no result; ``PluginInterrupted`` (a KeyboardInterrupt) when it raised KeyboardInterrupt."""
    if iso.get("hung"):
        # it hung before: not run again in this process (a replay would wait the limit at every call)
        raise _Failed("the plugin did not return in time before; not run again", f"{who} {iso['hung']}")
    try:
        if iso["ref"] is not None and _pw.isolated():
            try:
                return _call_isolated(iso["ref"], messages, values, summarize, cancel)
            except _pw.NotIsolable:
                iso["ref"] = None                # the plugin process cannot import it: here from now on
        handed = _handed(messages)
        refs = list(handed)
        kwargs = {**values, "summarize": summarize} if summarize is not None else values
        res = call_plugin(fn, (handed,), kwargs, cancel, who)
        mutated = refs != messages or len(handed) != len(refs) or any(x is not y for x, y in zip(handed, refs))
        return res, refs, mutated
    except _pw.PluginInterrupted as e:
        raise _pw.PluginInterrupted(f"{who} {e}") from None
    except BaseException as e:  # noqa: BLE001 - a plugin's bug is a finding, never a crash
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, _pw.PluginTimeout):
            iso["hung"] = f"{e} (an earlier call; it is not run again until it changes)"
        raise _failure(e, fn, who) from None


def _failure(e: BaseException, fn: Callable, who: str) -> _Failed:
    if isinstance(e, _Cancelled):
        return _Failed("the plugin was cancelled; messages kept", str(e), False)
    if isinstance(e, _pw.PluginCancelled):
        return _Failed("the plugin was cancelled; messages kept", f"{who} {e}", False)
    if isinstance(e, SummaryError):
        return _Failed("the plugin's summary failed; messages kept", f"{who}: summary failed: {e}", False)
    if isinstance(e, _pw.PluginTimeout):
        return _Failed("the plugin did not return in time; messages kept", f"{who} {e}")
    if isinstance(e, _pw.PluginMemory):
        return _Failed("the plugin ran out of memory; messages kept", f"{who} {e}")
    if isinstance(e, _pw.PluginRaised):
        return _Failed("the plugin raised; messages kept", f"{who} raised {e.name}: {e.message}{e.where}")
    if isinstance(e, _pw.WorkerGone):
        return _Failed("the plugin's process ended; messages kept", f"{who}: {e}")
    return _Failed("the plugin raised; messages kept", f"{who} raised {type(e).__name__}: {e}{_raised_where(e, fn)}")


def plugin_layer(fn: Callable, *, name: str | None = None, who: str | None = None,
                 dialect: str | None = None, label: str = "") -> tuple[Layer, list[Param]]:
    """One traced layer running the plain function ``fn`` (see the module docstring)."""
    who = who or _where(fn)
    params, names, wants_summarize = function_params(fn, who)
    layer_name: str = name or getattr(fn, "__name__", None) or "plugin"
    out_dialect = dialect if dialect in (ANTHROPIC, OPENAI) else None

    iso: dict = {"ref": _isolable(fn)}

    def run(messages: list, ctx: LayerContext) -> LayerOutput:
        if ctx.cancelled():
            return LayerOutput.unchanged(messages, "cancelled before the plugin ran", error=f"{who} was cancelled")
        values = {k: ctx.params[k] for k in names if k in ctx.params}
        made: list = []
        summarize = _summarize_fn(ctx, who, made) if wants_summarize else None
        try:
            res, refs, mutated = _call(fn, iso, messages, values, summarize, ctx.cancel, who)
        except _Failed as e:
            return LayerOutput.unchanged(messages, e.note, error=e.error, plugin_failed=e.plugin_failed)
        why = _too_many(res, messages) or _not_messages(res)
        if why is not None:
            return LayerOutput.unchanged(messages, "the plugin's result is not a message list; messages kept",
                                         error=f"{who} {why}", plugin_failed=True)
        res = list(res)
        summary = None
        if made:
            last = made[-1]
            summary = {**last.to_json(), "text": last.text, "calls": len(made)}
        out = infer_output(messages, res, handed=refs, who=who, summary=summary,
                           summary_texts=tuple(r.text for r in made))
        if mutated:
            from ..pipeline.trace import NOTE, Edit
            out.edits.append(Edit(NOTE, f"{who} changed the messages it was handed in place (it got a copy: "
                                        f"the conversation is untouched)"))
        if out.messages is not messages:
            out.dialect = out_dialect or _turned_dialect(messages, out.messages)
        out.vars = {**out.vars, "plugin": who, **({"params": values} if names else {})}
        return out

    doc = (inspect.getdoc(fn) or "").strip().split("\n\n")[0].replace("\n", " ")
    layer = Layer(layer_name, run, f"plugin {who}" + (f": {doc}" if doc else ""),
                  llm=wants_summarize, label=label or layer_name)
    return layer, params


# ------------------------------------------------------------------ objects -> strategies
def _declared_dialect(obj, module, who: str) -> str:
    d = getattr(obj, "dialect", None) or (getattr(module, "DIALECT", None) if module is not None else None)
    if d is None:
        return ANY
    if d not in DIALECTS:
        raise PluginError(f"{who}: dialect must be one of {', '.join(DIALECTS)}, not {d!r}")
    return d


def _merge_params(groups: list[list[Param]]) -> tuple[Param, ...]:
    out: dict[str, Param] = {}
    for ps in groups:
        for p in ps:
            out.setdefault(p.name, p)           # a name shared by two layers is one parameter
    return tuple(out.values())


def from_object(obj: Any, name: str, *, title_hint: str = "", module=None, origin: str = "") -> Strategy:
    """A Strategy for a plugin object (function, list of functions, object with ``layers``,
    or a Strategy)."""
    who = title_hint or name
    if isinstance(obj, Strategy):
        notes = {**obj.notes, "plugin": name, "origin": origin} if isinstance(obj.notes, dict) else \
            {"plugin": name, "origin": origin}
        return replace(obj, name=name, notes=notes)
    if isinstance(obj, type) and hasattr(obj, "layers"):
        try:
            obj = obj()
        except TypeError:
            pass                                # class attributes are enough
    if callable(obj) and not hasattr(obj, "layers") and not isinstance(obj, (list, tuple)):
        dialect = _declared_dialect(obj, module, who)
        layer, params = plugin_layer(obj, who=_where(obj) if hasattr(obj, "__code__") else who, dialect=dialect)
        doc = (inspect.getdoc(obj) or "").strip()
        return Strategy(name=name, title=getattr(obj, "title", None) or f"{who} (plugin)",
                        description=getattr(obj, "description", None) or (doc.split("\n\n")[0].replace("\n", " ")
                                                                          or f"the plain function {who}"),
                        layers=(layer,), params=tuple(params), dialect=dialect,
                        threshold_param=_threshold_param(obj, params, who),
                        threshold_unit=getattr(obj, "threshold_unit", "size"),
                        notes={"plugin": name, "origin": origin, "kind": "function"})
    layers_src = obj if isinstance(obj, (list, tuple)) else getattr(obj, "layers", None)
    if not isinstance(layers_src, (list, tuple)) or not layers_src:
        raise PluginError(f"{who} is {words.a(type(obj).__name__)}: a compactor is a function messages -> messages, a "
                          f"list of such functions, an object with a 'layers' list, or a Strategy")
    holder = None if isinstance(obj, (list, tuple)) else obj
    dialect = _declared_dialect(holder, module, who) if holder is not None else \
        _declared_dialect(layers_src[0], module, who)
    layers: list[Layer] = []
    groups: list = []
    seen: dict[str, int] = {}
    for k, item in enumerate(layers_src):
        if isinstance(item, Layer):
            layers.append(item)
            continue
        if not callable(item):
            raise PluginError(f"{who}: layer {k} is {words.a(type(item).__name__)}, not a function")
        base = getattr(item, "__name__", f"layer{k + 1}")
        seen[base] = seen.get(base, 0) + 1
        lname = base if seen[base] == 1 else f"{base}_{seen[base]}"
        layer, layer_params = plugin_layer(item, name=lname, dialect=dialect, label=f"P{k + 1} {lname}")
        layers.append(layer)
        groups.append(layer_params)
    merged = _merge_params(groups)
    doc = _own_doc(holder, module)
    title = getattr(holder, "title", None) or f"{who} (plugin, {len(layers)} layers)"
    description = getattr(holder, "description", None) or (doc.split("\n\n")[0].replace("\n", " ") if doc else "") \
        or " -> ".join(item.name for item in layers)
    return Strategy(name=name, title=title, description=description, layers=tuple(layers), params=merged,
                    dialect=dialect, threshold_param=_threshold_param(holder, merged, who),
                    threshold_unit=getattr(holder, "threshold_unit", "size") if holder is not None else "size",
                    notes={"plugin": name, "origin": origin, "kind": "layers"})


def _own_doc(holder, module) -> str:
    """The docstring the plugin wrote for its strategy object (not one of a library class)."""
    if holder is None:
        return ""
    cls = holder if isinstance(holder, type) else type(holder)
    if module is not None and getattr(cls, "__module__", None) != getattr(module, "__name__", None):
        return (getattr(holder, "__doc__", None) or "") if "__doc__" in getattr(holder, "__dict__", {}) else ""
    return inspect.getdoc(cls) or ""


def _threshold_param(obj, params: list | tuple, who: str) -> str | None:
    tp = getattr(obj, "threshold_param", None) if obj is not None else None
    if tp is None:
        return None
    if tp not in {p.name for p in params}:
        raise PluginError(f"{who}: threshold_param {tp!r} is not one of its parameters")
    return tp


# ------------------------------------------------------------------ entry points
def entry_point_origin(ep) -> str:
    dist = getattr(ep, "dist", None)
    pkg = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "an installed package"
    return f"entry point {ep.name} = {ep.value} ({pkg})"


def load_entry_point(name: str, ep) -> Strategy:
    try:
        obj = ep.load()
    except Exception as e:  # noqa: BLE001
        raise PluginError(f"strategy {name!r} ({entry_point_origin(ep)}) failed to load: "
                          f"{type(e).__name__}: {e}") from None
    return from_object(obj, name, title_hint=name, module=sys.modules.get(ep.value.split(":")[0]),
                       origin=entry_point_origin(ep))
