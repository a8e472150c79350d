"""The built-in s08 agent: the course's coding agent, against the Anthropic API.

Tools ``bash``, ``read_file``, ``write_file``, ``edit_file``, ``glob`` and
``compact``, confined to a workspace folder. Before every model call the
selected strategy's pipeline runs through ``core.pipeline.Engine`` (the seed's
order: budget -> snip -> micro -> compact_history over the limit). On the API's
prompt-too-long error, ``Engine.reactive`` runs at most once per turn, then the
error is raised. The ``compact`` tool runs ``Engine.compact_tool`` after the
tool batch. The circuit breaker lives in ``Engine.state``.

Everything the UI needs arrives through ``on_event(kind, data)`` after every
step (see ``EVENTS``). Nothing here imports Qt; ``Agent.send`` blocks and is
meant to run in a worker thread. ``Agent.stop()`` is safe from any thread.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..runtime.record import record
from .. import strategies
from ..model.messages import ANTHROPIC, to_anthropic
from ..pipeline.engine import Engine
from .recorder import RecordingWriter, trace_summary
from ..files.safeio import atomic_write
from ..summarizers.base import CachedSummarizer, SummaryError
from ..files.workspace import Workspace, WorkspaceError

DEFAULT_MODEL = "claude-sonnet-4-6"
MAX_REACTIVE_RETRIES = 1
OUTPUT_LIMIT = 50_000
BASH_TIMEOUT = 120
DANGEROUS = ("rm -rf /", "sudo", "shutdown", "reboot", "> /dev/")
SYSTEM_TEMPLATE = "You are a coding agent at {workdir}. Use tools to solve tasks. Act, don't explain."

EVENTS = (
    "user",          # {"text"}
    "trace",         # {"trace", "messages", "call"}: the pipeline ran; messages = the context about to be sent
    "stream",        # {"text"}: a piece of streamed assistant text
    "response",      # {"message", "usage", "stop_reason", "call", "seconds", "messages"}
    "tool",          # {"name", "input", "output", "is_error", "id"}
    "compaction",    # {"kind": "reactive" | "compact_tool", "trace", "messages"}
    "retry",         # {"status", "text"}: an attempt failed with a status the SDK retries
    "error",         # {"error": AgentError, "call"}
    "done",          # {"text", "calls"}
    "stopped",       # {"calls"}
)

TOOLS = [
    {"name": "bash", "description": "Run a shell command in the workspace folder.",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "read_file", "description": "Read file contents.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                      "required": ["path"]}},
    {"name": "write_file", "description": "Write content to file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                      "required": ["path", "content"]}},
    {"name": "edit_file", "description": "Replace exact text in file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "old_text": {"type": "string"},
                                                       "new_text": {"type": "string"}},
                      "required": ["path", "old_text", "new_text"]}},
    {"name": "glob", "description": "Find files matching a glob pattern, relative to the workspace.",
     "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}},
    {"name": "compact", "description": "Trigger manual conversation compression.",
     "input_schema": {"type": "object", "properties": {}}},
]


# ------------------------------------------------------------------ errors
class AgentError(Exception):
    """What went wrong and what the user can do. ``kind``: no_key, auth, network,
    rate_limit, overloaded, prompt_too_long, bad_request, api, summary, error."""

    def __init__(self, message: str, hint: str = "", kind: str = "error", status: int | None = None):
        super().__init__(message)
        self.message, self.hint, self.kind, self.status = message, hint, kind, status

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def to_json(self) -> dict:
        d: dict[str, Any] = {"kind": self.kind, "message": self.message, "hint": self.hint}
        if self.status is not None:
            d["status"] = self.status
        return d


class AgentStopped(Exception):
    """The user pressed Stop."""


_HINTS = {
    "auth": "the key was refused: check ANTHROPIC_API_KEY or type the right key in the live panel",
    "network": "cannot reach the API: check the network connection and the base URL (ANTHROPIC_BASE_URL)",
    "rate_limit": "rate limited even after the SDK's retries: wait a minute, then send again",
    "overloaded": "the API is overloaded even after the SDK's retries: wait a little, then send again",
    "prompt_too_long": "the context is over the model's window even after reactive compact: lower context_limit "
                       "or max_messages, or start a new session",
    "bad_request": "the API refused the request: check the model name; the checker's findings on the context "
                   "show whether the message list is valid",
}


def api_message(e: BaseException) -> str:
    """The API's own words from an SDK error (body.error.message), else the exception text."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if not isinstance(err, dict):
            err = body
        if isinstance(err.get("message"), str) and err["message"]:
            return err["message"]
    return str(getattr(e, "message", None) or e) or type(e).__name__


def classify(e: BaseException) -> AgentError:
    """An SDK exception as an AgentError with what to do."""
    if isinstance(e, AgentError):
        return e
    from ..summarizers.anthropic_api import classify_api_error
    se = classify_api_error(e) if not isinstance(e, SummaryError) else e
    status = getattr(e, "status_code", None)
    kind = se.kind
    msg = api_message(e)
    http = f"HTTP {status}: " if status else ""
    text = {
        "auth": f"The API rejected the key ({http}{msg})",
        "rate_limit": f"Rate limited ({http}{msg})",
        "overloaded": f"The API is overloaded ({http}{msg})",
        "network": f"Cannot reach the API ({msg})",
        "prompt_too_long": f"The prompt is too long ({http}{msg})",
        "bad_request": f"The API refused the request ({http}{msg})",
    }.get(kind, f"API error ({http}{msg})" if status else f"{type(e).__name__}: {msg}")
    return AgentError(text, _HINTS.get(kind, se.hint or "retry; if it persists, check the settings"), kind, status)


# ------------------------------------------------------------------ tools
class ToolError(Exception):
    pass


# confirm_bash(command) -> "once" | "session" | "deny" (True/False accepted too)
ConfirmFn = Callable[[str], Any]

TTY = "/dev/tty"


def ask_terminal(question: str, tty: str = TTY) -> str | None:
    """Ask on the controlling terminal and return the answer line, or None when there is no terminal.

    Confirmations are read from the terminal only, never from stdin: with prompts piped in, the next prompt
    line must not answer "run this command?" (and a prompt starting with "a" must not approve every
    command for the session)."""
    try:
        fd = os.open(tty, os.O_RDWR | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        os.write(fd, question.encode("utf-8", "replace"))
        data = b""
        while not data.endswith(b"\n") and len(data) < 4096:
            chunk = os.read(fd, 1)
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace") if data else None


def confirmation(answer: str | None) -> str:
    """"once", "session" or "deny" for a typed answer: only y/yes run the command once and a/always allow
    commands for the session; anything else (or no terminal) denies."""
    a = (answer or "").strip().lower()
    if a in ("y", "yes"):
        return "once"
    if a in ("a", "always"):
        return "session"
    return "deny"


class WorkspaceTools:
    """The agent's tools, confined to ``root``. Paths outside are rejected; bash
    runs in ``root`` and asks ``confirm_bash`` first unless allowed for the session."""

    def __init__(self, root: str | os.PathLike, confirm_bash: ConfirmFn | None = None,
                 bash_timeout: float = BASH_TIMEOUT, output_limit: int = OUTPUT_LIMIT):
        self.root = Path(root).resolve()
        self.confirm_bash = confirm_bash
        self.bash_allowed = False          # "allow for this session"
        self.bash_timeout = bash_timeout
        self.output_limit = output_limit

    def safe_path(self, p: Any) -> Path:
        if not isinstance(p, str) or not p.strip():
            raise ToolError("path must be a non-empty string")
        path = (self.root / p).resolve()
        if path != self.root and self.root not in path.parents:
            raise ToolError(f"Path escapes workspace: {p} (the agent may only touch {self.root})")
        return path

    def run(self, name: str, args: Any, cancel: threading.Event | None = None) -> tuple[str, bool]:
        """(output, is_error). Never raises."""
        if not isinstance(args, dict):
            return f"Error: the input of {name} must be an object", True
        tools: dict[str, Callable[..., str]] = {"bash": self.bash, "read_file": self.read_file,
                                                "write_file": self.write_file, "edit_file": self.edit_file,
                                                "glob": self.glob}
        fn = tools.get(name)
        if fn is None:
            return f"Unknown tool: {name}", True
        try:
            out = fn(cancel=cancel, **args) if name == "bash" else fn(**args)
            return out, out.startswith("Error:")
        except ToolError as e:
            return f"Error: {e}", True
        except TypeError as e:
            return f"Error: bad arguments for {name}: {e}", True
        except Exception as e:  # a tool failure goes back to the model, never up the stack
            return f"Error: {type(e).__name__}: {e}", True

    def _confirm(self, command: str) -> bool:
        if self.bash_allowed:
            return True
        if self.confirm_bash is None:
            return False
        ans = self.confirm_bash(command)
        if ans == "session":
            self.bash_allowed = True
            return True
        return ans is True or ans == "once"

    def bash(self, command: str, cancel: threading.Event | None = None) -> str:
        if not isinstance(command, str) or not command.strip():
            return "Error: command must be a non-empty string"
        if any(d in command for d in DANGEROUS):
            return "Error: Dangerous command blocked"
        if not self._confirm(command):
            return "Error: the user declined to run this command"
        env = {k: v for k, v in os.environ.items()
               if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "COMPACTSCOPE_API_KEY")}
        proc = subprocess.Popen(command, shell=True, cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        deadline = time.monotonic() + self.bash_timeout
        out = b""
        while True:
            try:
                out, _ = proc.communicate(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                why = "cancelled by the user" if cancel is not None and cancel.is_set() else \
                    (f"Timeout ({self.bash_timeout:g}s)" if time.monotonic() > deadline else None)
                if why:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except (OSError, AttributeError):
                        proc.kill()
                    proc.communicate()
                    return f"Error: {why}"
        text = out.decode("utf-8", errors="replace").strip()
        return text[:self.output_limit] if text else "(no output)"

    def read_file(self, path: str, limit: int | None = None) -> str:
        p = self.safe_path(path)
        if not p.is_file():
            return f"Error: no such file: {path}"
        lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
        if isinstance(limit, int) and 0 < limit < len(lines):
            lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
        return "\n".join(lines)[:self.output_limit]

    def write_file(self, path: str, content: str) -> str:
        if not isinstance(content, str):
            return "Error: content must be a string"
        p = self.safe_path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        self.safe_path(path)               # (a folder on the way was not swapped for a symlink meanwhile)
        atomic_write(p, content)
        return f"Wrote {len(content)} bytes to {path}"

    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        p = self.safe_path(path)
        if not p.is_file():
            return f"Error: no such file: {path}"
        content = p.read_text(encoding="utf-8", errors="replace")
        if not isinstance(old_text, str) or not isinstance(new_text, str) or old_text not in content:
            return f"Error: Text not found in {path}"
        atomic_write(p, content.replace(old_text, new_text, 1))
        return f"Edited {path}"

    def glob(self, pattern: str, limit: int = 200) -> str:
        if not isinstance(pattern, str) or not pattern.strip():
            return "Error: pattern must be a non-empty string"
        if pattern.startswith(("/", "\\")) or ".." in Path(pattern).parts or ":" in pattern[:3]:
            return f"Error: Path escapes workspace: {pattern}"
        hits = []
        for p in sorted(self.root.glob(pattern)):
            try:
                rp = p.resolve()
            except OSError:
                continue
            if rp == self.root or self.root in rp.parents:
                hits.append(str(p.relative_to(self.root)))
            if len(hits) >= limit:
                hits.append(f"... (stopped at {limit} matches)")
                break
        return "\n".join(hits) if hits else "(no matches)"


# ------------------------------------------------------------------ the agent
def block_to_dict(b: Any) -> dict:
    if isinstance(b, dict):
        return b
    return b.model_dump(mode="json", exclude_none=True)


@record
class CallInfo:
    """One model call as the UI sees it."""
    n: int
    messages: int
    size: int
    seconds: float = 0.0
    usage: dict | None = None
    error: AgentError | None = None


class Agent:
    """The s08 agent loop. ``send(text)`` runs one turn (until the model stops
    calling tools) and returns the final text; raises AgentError or AgentStopped."""

    def __init__(self, workdir: str | os.PathLike, *, engine: Engine | None = None, strategy: str = "s08",
                 params: dict | None = None, model: str | None = None, api_key: str | None = None,
                 base_url: str | None = None, client: Any = None, summarizer: Any = "api",
                 recorder: RecordingWriter | None = None, on_event: Callable[[str, dict], None] | None = None,
                 confirm_bash: ConfirmFn | None = None, max_tokens: int = 8000, system: str | None = None,
                 max_retries: int = 2, timeout: float = 600.0, max_calls_per_turn: int = 200, stream: bool = True):
        self.workdir = Path(workdir).resolve()
        if not self.workdir.is_dir():
            raise AgentError(f"the workspace folder {self.workdir} does not exist", "pick an existing folder",
                             "workspace")
        self.model = model or os.environ.get("COMPACTSCOPE_MODEL") or DEFAULT_MODEL
        self._api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.max_retries, self.timeout = max_retries, timeout
        self._client = client
        self.tools = WorkspaceTools(self.workdir, confirm_bash)
        self.system = system or SYSTEM_TEMPLATE.format(workdir=self.workdir)
        self.max_tokens = max_tokens
        self.max_calls_per_turn = max_calls_per_turn
        self.stream = stream
        self.recorder = recorder
        if recorder is not None and self._api_key:
            recorder.add_secret(self._api_key)
        self.on_event = on_event
        self.cancel = threading.Event()
        self.messages: list = []
        self.calls: list[CallInfo] = []
        if engine is None:
            strat = strategies.get(strategy)
            summ = None
            if summarizer == "api":
                summ = CachedSummarizer(_LazyClientSummarizer(self))
            elif summarizer is not None and summarizer != "offline":
                summ = summarizer
            engine = Engine(strat, params or {}, workspace=Workspace(self.workdir), summarizer=summ)
        self.engine = engine

    @property
    def tool_specs(self) -> list:
        """The tools offered to the model: ``compact`` only when the strategy has a compact-tool layer."""
        if self.engine.strategy.compact_tool_layer:
            return TOOLS
        return [t for t in TOOLS if t["name"] != "compact"]

    def _as_anthropic(self, trace) -> list:
        """The pipeline's output, in the Messages API dialect (a strategy may work in another one)."""
        if trace.dialect == ANTHROPIC:
            return list(trace.output)
        return list(to_anthropic(trace.output).messages)

    # -- settings
    def configure(self, model: str | None = None, api_key: str | None = None, base_url: str | None = None) -> list:
        """Take a new model, key or base URL for the next call (the conversation is kept); returns
        what changed. A new key is also kept out of the recording."""
        changed = []
        if model and model != self.model:
            self.model = model
            changed.append("model")
        if api_key and api_key != self._api_key:
            self._api_key, self._client = api_key, None
            if self.recorder is not None:
                self.recorder.add_secret(api_key)
            changed.append("api_key")
        if base_url and base_url != self.base_url:
            self.base_url, self._client = base_url, None
            changed.append("base_url")
        return changed

    def client(self):
        if self._client is None:
            if not self._api_key:
                raise AgentError("no API key is set",
                                 "set ANTHROPIC_API_KEY before starting, or type a key in the live panel "
                                 "(kept for this session only)", "no_key")
            import anthropic
            kw: dict = {"api_key": self._api_key, "max_retries": self.max_retries, "timeout": self.timeout}
            if self.base_url:
                kw["base_url"] = self.base_url
            import inspect
            if "middleware" in inspect.signature(anthropic.Anthropic.__init__).parameters:
                kw["middleware"] = [self._watch_attempt]      # SDK 2.x: see each attempt, incl. retried ones
            self._client = anthropic.Anthropic(**kw)
        return self._client

    def _watch_attempt(self, request, call_next):
        """Runs inside the SDK's retry loop, once per HTTP attempt: tells the UI about
        responses the SDK will retry (429, 5xx, 529) while it waits."""
        resp = call_next(request)
        status = getattr(resp, "status_code", 200)
        if status in (408, 409, 429) or status >= 500:
            name = {429: "rate limited", 529: "overloaded"}.get(status, "server error")
            self._emit("retry", status=status, text=f"HTTP {status} ({name}): the SDK retries "
                                                    f"(up to {self.max_retries} time(s))")
        return resp

    def _emit(self, _event: str, **data) -> None:
        if self.on_event is not None:
            try:
                self.on_event(_event, data)
            except Exception:  # a broken view must not break the agent
                pass

    def stop(self) -> None:
        self.cancel.set()

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise AgentStopped()

    # -- the loop
    def _appended(self, new: list) -> list:
        """The messages with ``new`` appended, a new list whose size and token totals the engine's meter knows
        from the last list's at the cost of ``new`` (the next run sizes its input without summing the session)."""
        return self.engine.meter.concat(self.messages, new)

    def send(self, text: str) -> str:
        self.cancel.clear()
        last = self.messages[-1] if self.messages else None
        if last is not None and last.get("role") == "user":
            # a stopped turn left a user message last: add the text to it so roles still alternate
            content = last["content"] if isinstance(last["content"], list) else \
                [{"type": "text", "text": last["content"]}]
            self.messages = self.messages[:-1] + [{"role": "user", "content": content + [{"type": "text",
                                                                                              "text": text}]}]
        else:
            self.messages = self._appended([{"role": "user", "content": text}])
        self._emit("user", text=text)
        reactive_retries = 0
        calls = 0
        try:
            while True:
                self._check_cancel()
                if calls >= self.max_calls_per_turn:
                    raise AgentError(f"stopped after {calls} model calls in one turn",
                                     "send another message to continue", "limit")
                calls += 1
                try:
                    trace = self.engine.run(self.messages, system=self.system, cancel=self.cancel,
                                            dialect=ANTHROPIC)
                except WorkspaceError as e:          # the disk filled, the folder went read-only
                    raise AgentError(str(e), "free some space or pick a folder you can write to",
                                     "workspace") from None
                self.messages = self._as_anthropic(trace)
                self._check_cancel()
                info = CallInfo(len(self.calls) + 1, len(self.messages), self.engine.meter.size(self.messages))
                self.calls.append(info)
                self._emit("trace", trace=trace, messages=self.messages, call=info)
                request = {"model": self.model, "max_tokens": self.max_tokens, "system": self.system,
                           "tools": self.tool_specs, "messages": self.messages}
                t0 = time.time()
                try:
                    resp = self._create(request)
                except AgentStopped:
                    self._record(request, t0, trace, error={"kind": "stopped", "message": "stopped by the user"})
                    raise
                except Exception as e:
                    err = classify(e)
                    if err.kind == "bad_request":
                        err.hint = self._bad_request_hint(trace) or err.hint
                    info.error, info.seconds = err, time.time() - t0
                    self._record(request, t0, trace, error=err.to_json())
                    self._emit("error", error=err, call=info)
                    if err.kind == "prompt_too_long" and not self.engine.strategy.reactive_layer:
                        err.hint = (f"the {self.engine.strategy.name} strategy has no reactive compaction: lower its "
                                    "threshold, or start a new session")
                    elif err.kind == "prompt_too_long" and reactive_retries < MAX_REACTIVE_RETRIES:
                        reactive_retries += 1
                        self._compaction("reactive", self.engine.reactive(self.messages, system=self.system,
                                                                          cancel=self.cancel))
                        continue
                    raise err from e
                assistant: dict[str, Any] = {"role": "assistant", "content": [block_to_dict(b) for b in resp.content]}
                usage = resp.usage.model_dump(mode="json", exclude_none=True) if resp.usage is not None else None
                info.seconds, info.usage = time.time() - t0, usage
                response = {"id": resp.id, "model": resp.model, "role": "assistant", "content": assistant["content"],
                            "stop_reason": resp.stop_reason, "stop_sequence": resp.stop_sequence}
                self._record(request, t0, trace, response=response, usage=usage)
                self.messages = self._appended([assistant])
                self._emit("response", message=assistant, usage=usage, stop_reason=resp.stop_reason, call=info,
                           seconds=info.seconds, messages=self.messages)
                if resp.stop_reason != "tool_use":
                    dangling = [b for b in assistant["content"] if b.get("type") == "tool_use"]
                    if dangling:
                        # e.g. max_tokens in the middle of a tool call: answer every tool_use so the list
                        # stays valid for the next turn, without running a possibly cut-off call
                        self.messages = self._appended([{"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": b.get("id"), "is_error": True,
                             "content": f"[not run: the response stopped ({resp.stop_reason}) before the call "
                                        "was complete]"} for b in dangling]}])
                    final = "".join(b.get("text", "") for b in assistant["content"] if b.get("type") == "text")
                    self._emit("done", text=final, calls=calls)
                    return final
                self._run_tools(assistant)
        except AgentStopped:
            self._emit("stopped", calls=calls)
            if self.recorder is not None:
                self.recorder.event("stopped", calls=calls)
            raise

    def _bad_request_hint(self, trace) -> str | None:
        """When the checker already said the API would reject the context, say so (and why)."""
        from ..analysis.checker import rejected
        findings = trace.final_findings if trace is not None else []
        if not rejected(findings):
            return None
        first = next(f for f in findings if f.severity == "error")
        hint = (f"the context sent breaks an API rule ({first}); see the API findings. Start a new session to "
                "continue")
        if self.engine.params.get("compact_tool_mode") == "teaching" and any(
                s.layer == "compact_tool" for s in getattr(self, "_last_compaction_steps", [])):
            hint += ("; this is the teaching code's compact-tool bug (results appended after the summary): set "
                     "compact_tool_mode=deferred to avoid it")
        return hint

    def reset(self) -> None:
        """Forget the conversation (a new session in the same workspace); the recording goes on."""
        self.messages = []
        self.engine.state = {}
        if self.recorder is not None:
            self.recorder.event("new_session")

    def _create(self, request: dict):
        client = self.client()
        if not self.stream:
            return client.messages.create(**request)
        with client.messages.stream(**request) as s:
            for ev in s:
                if self.cancel.is_set():
                    raise AgentStopped()
                if getattr(ev, "type", "") == "text":
                    self._emit("stream", text=ev.text)
            return s.get_final_message()

    def _run_tools(self, assistant: dict) -> None:
        results = []
        compact_called = False
        for b in assistant["content"]:
            if b.get("type") != "tool_use":
                continue
            if self.cancel.is_set():
                out, is_err = "[not run: the user stopped the agent]", True
            elif b.get("name") == "compact":
                compact_called, out, is_err = True, "Compressing...", False
            else:
                out, is_err = self.tools.run(b.get("name", ""), b.get("input"), self.cancel)
            res = {"type": "tool_result", "tool_use_id": b.get("id"), "content": out}
            if is_err:
                res["is_error"] = True
            results.append(res)
            self._emit("tool", name=b.get("name"), input=b.get("input"), output=out, is_error=is_err, id=b.get("id"))
        # every tool_use gets its result, even after Stop, so the list stays valid for the next call
        self.messages = self._appended([{"role": "user", "content": results}])
        if compact_called and not self.cancel.is_set() and self.engine.strategy.compact_tool_layer:
            self._compaction("compact_tool", self.engine.compact_tool(self.messages, system=self.system,
                                                                      cancel=self.cancel))
        self._check_cancel()

    def _compaction(self, kind: str, trace) -> None:
        step = trace.steps[-1] if trace.steps else None
        if step is not None and step.error:
            err = AgentError(f"{kind} compaction failed: {step.error}", "see the error above; the context was not "
                             "changed", "summary")
            self._emit("error", error=err, call=None)
            if self.recorder is not None:
                self.recorder.event(kind, trace=trace_summary(trace), error=step.error)
            raise err
        self.messages = self._as_anthropic(trace)
        self._last_compaction_steps = list(trace.steps)
        if self.recorder is not None:
            self.recorder.event(kind, trace=trace_summary(trace), messages_after=len(self.messages))
        self._emit("compaction", kind=kind, trace=trace, messages=self.messages)

    def _record(self, request: dict, t0: float, trace, **kw) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.call(request=request, t_start=t0, t_end=time.time(), trace=trace_summary(trace),
                               extra={"source": "agent"}, **kw)
        except (OSError, ValueError) as e:
            self._emit("error", error=AgentError(f"cannot write the recording: {e}",
                                                 "check the disk and the recording path", "recording"), call=None)


class _LazyClientSummarizer:
    """compact_history's summary call through the agent's own client (created on first use)."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self.name = f"Anthropic {agent.model}"

    def summarize(self, request, cancel=None):
        from ..summarizers.anthropic_api import AnthropicSummarizer
        try:
            client = self.agent.client()
        except AgentError as e:
            raise SummaryError(e.message, e.hint, e.kind) from None
        t0 = time.time()
        body = {"model": self.agent.model, "max_tokens": request.max_tokens,
                "messages": [{"role": "user", "content": request.prompt}]}
        if request.system:
            body["system"] = request.system
        try:
            res = AnthropicSummarizer(self.agent.model, client=client).summarize(request, cancel)
        except SummaryError as e:
            self._record(body, t0, error={"kind": e.kind, "message": str(e.args[0]) if e.args else str(e),
                                          "hint": e.hint})
            raise
        self._record(body, t0, response={"role": "assistant", "model": res.model,
                                         "content": [{"type": "text", "text": res.text}]},
                     usage={"input_tokens": res.input_tokens, "output_tokens": res.output_tokens})
        return res

    def _record(self, body: dict, t0: float, **kw) -> None:
        """The summary call is a model call too: it goes into the recording as kind "summary"."""
        rec = self.agent.recorder
        if rec is None:
            return
        try:
            rec.call(request=body, t_start=t0, t_end=time.time(), kind="summary",
                     extra={"source": "agent", "purpose": "summary"}, **kw)
        except (OSError, ValueError):
            pass
