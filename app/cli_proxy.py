"""``compactscope proxy`` (the recording proxy) and ``compactscope record`` (the
built-in s08 agent in the terminal), both recording to a Compactscope recording.
No Qt."""
from __future__ import annotations

import sys
import time
from pathlib import Path


def default_record_path() -> Path:
    from compactscope.core.files.workspace import default_root
    return default_root().parent / "recordings" / f"proxy-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def add_keep_shape(p) -> None:
    from compactscope.core.live.secret_scrub import SHAPES
    p.add_argument("--keep-secret-shape", action="append", metavar="SHAPE", choices=list(SHAPES),
                   help="keep text of this credential shape in the recording on purpose (repeatable; by default "
                        f"every one is scrubbed): {', '.join(SHAPES)}; see docs/recording-format.md")


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    p = sub.add_parser("proxy", help="a recording proxy for any Anthropic client (ANTHROPIC_BASE_URL=http://127.0.0.1:PORT)")
    p.add_argument("--port", type=int, default=8788, help="port to listen on (default 8788; 0 = any free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, loopback only)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow --host to be an address other machines can reach (they would use your API key)")
    p.add_argument("--upstream", default=None,
                   help="the real API base URL (default https://api.anthropic.com; ANTHROPIC_BASE_URL is not "
                        "read, since clients point it at this proxy)")
    p.add_argument("--record", metavar="FILE", default=None,
                   help="recording file to append to (default: a new file under the user cache)")
    p.add_argument("--quiet", action="store_true", help="no line per call")
    add_keep_shape(p)

    def cmd_proxy(args) -> int:
        from compactscope.core.model.conversation import Usage
        from compactscope.core.live.proxy import DEFAULT_UPSTREAM, ProxyError, RecordingProxy, redact_url
        from compactscope.core.live.recorder import RecordingWriter
        upstream = args.upstream or DEFAULT_UPSTREAM
        shown = redact_url(upstream)          # a user name and password in the URL are never printed or recorded
        path = Path(args.record) if args.record else default_record_path()
        try:
            from compactscope.core.live.proxy import check_bind, parse_upstream
            check_bind(args.host, args.allow_remote)
            parse_upstream(upstream)
        except ProxyError as e:
            raise CliError(str(e)) from None
        try:
            rec = RecordingWriter(path, source="proxy", meta={"upstream": shown},
                                  keep_shapes=args.keep_secret_shape or ())
        except OSError as e:
            raise CliError(f"{path}: cannot write the recording: {e.strerror or e}") from None

        def on_call(r: dict) -> None:
            if args.quiet:
                return
            req = r.get("request") or {}
            u = Usage.from_dict(r.get("usage")) or Usage()
            err = r.get("error")
            what = f"error: {err.get('kind')}: {err.get('message', '')}"[:120] if err else \
                f"context {u.context_tokens:,} tokens, output {u.output_tokens:,}"
            print(f"{time.strftime('%H:%M:%S')} {req.get('model', '?')}: {len(req.get('messages') or [])} messages, "
                  f"{what}", flush=True)
        try:
            proxy = RecordingProxy(upstream, host=args.host, port=args.port, recorder=rec,
                                   allow_remote=args.allow_remote, on_call=on_call)
        except ProxyError as e:
            rec.close()
            raise CliError(str(e)) from None
        from compactscope.core.live.proxy import is_loopback
        if not is_loopback(args.host):
            print(f"warning: listening on {args.host}: any machine that can reach it may send API requests "
                  "through it (with their own key) and they are recorded here; stop it when done", file=sys.stderr)
        print(f"compactscope proxy on {proxy.url} -> {shown}\nrecording to {path}\n"
              f"point a client at it: ANTHROPIC_BASE_URL={proxy.url} claude\nCtrl+C stops.", flush=True)
        try:
            proxy.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            proxy.server.server_close()
            rec.close()
            print(f"\nstopped; {proxy.calls} call(s) recorded in {path}", file=sys.stderr)
        return 0

    p.set_defaults(fn=cmd_proxy)
    register_record(sub, CliError)


def register_record(sub, CliError) -> None:
    p = sub.add_parser("record", help="run the built-in s08 agent in the terminal and record every model call")
    p.add_argument("prompt", nargs="*", help="one turn per prompt; without any, read prompts from stdin")
    p.add_argument("--workspace", required=True, metavar="DIR",
                   help="the folder the agent may read, write and run commands in")
    p.add_argument("--record", metavar="FILE", help="recording file (default: a new file under the user cache)")
    p.add_argument("--model", help="model (default: COMPACTSCOPE_MODEL or claude-sonnet-4-6)")
    p.add_argument("--base-url", help="API base URL (default: ANTHROPIC_BASE_URL or the Anthropic API)")
    p.add_argument("--strategy", default="s08", help="the pipeline run before every call (default s08)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a strategy parameter")
    p.add_argument("--summarizer", default="api", choices=("api", "offline"),
                   help="who writes compact_history's summary: the API (the seed's way, default) or offline")
    p.add_argument("--allow-bash", action="store_true", help="run bash commands without asking")
    p.add_argument("--max-retries", type=int, default=2, help="SDK retries on 429/5xx/529 (default 2)")
    add_keep_shape(p)

    def cmd_record(args) -> int:
        from compactscope.core.live.agent import Agent, AgentError, AgentStopped, ask_terminal, confirmation
        from compactscope.core.live.recorder import RecordingWriter
        params = {}
        for kv in args.set or []:
            if "=" not in kv:
                raise CliError(f"--set takes NAME=VALUE, not {kv!r}")
            k, v = kv.split("=", 1)
            params[k.strip()] = v.strip()
        ws = Path(args.workspace).expanduser()
        if not ws.is_dir():
            raise CliError(f"{ws}: no such folder (the agent's workspace must exist)")
        path = Path(args.record) if args.record else default_record_path().with_name(
            f"agent-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
        try:
            rec = RecordingWriter(path, source="agent", meta={"strategy": args.strategy, "workdir": str(ws)},
                                  keep_shapes=args.keep_secret_shape or ())
        except OSError as e:
            raise CliError(f"{path}: cannot write the recording: {e.strerror or e}") from None

        def ask(command: str) -> str:
            if args.allow_bash:
                return "once"
            # asked on the terminal, never read from stdin (piped prompts must not answer it)
            answer = ask_terminal(f"run `{command}`? [y]es / [a]lways this session / [N]o: ")
            if answer is None:
                print(f"  no terminal to confirm `{command}`: not run (pass --allow-bash to run commands "
                      "without asking)", file=sys.stderr, flush=True)
            return confirmation(answer)

        def on_event(kind: str, d: dict) -> None:
            if kind == "stream":
                print(d["text"], end="", flush=True)
            elif kind == "response":
                print(flush=True)
            elif kind == "tool":
                out = str(d["output"]).replace("\n", " | ")
                print(f"  [{d['name']}] {str(d['input'])[:100]} -> {out[:160]}", flush=True)
            elif kind == "compaction":
                tr = d["trace"]
                print(f"  [{d['kind']}] {len(tr.input)} -> {len(tr.output)} messages", flush=True)
            elif kind == "trace":
                for s in d["trace"].steps:
                    if s.changed or s.error:
                        print(f"  [{s.layer}] {s.explain()}", flush=True)
        try:
            agent = Agent(ws, strategy=args.strategy, params=params, model=args.model, base_url=args.base_url,
                          recorder=rec, on_event=on_event, confirm_bash=ask, max_retries=args.max_retries,
                          summarizer=None if args.summarizer == "offline" else "api")
        except (AgentError, KeyError, ValueError) as e:
            rec.close()
            raise CliError(str(e.args[0] if isinstance(e, KeyError) else e)) from None
        print(f"recording to {path}", file=sys.stderr)
        prompts = list(args.prompt)
        interactive = not prompts
        code = 0
        try:
            while True:
                if interactive:
                    try:
                        text = input("> ").strip()
                    except EOFError:
                        break
                    if not text:
                        continue
                elif prompts:
                    text = prompts.pop(0)
                else:
                    break
                try:
                    agent.send(text)
                except AgentError as e:
                    print(f"compactscope: {e.message}\n  what to do: {e.hint}", file=sys.stderr)
                    code = 1
                    if not interactive:
                        break
        except KeyboardInterrupt:
            agent.stop()
            code = 130
        except AgentStopped:
            code = 130
        finally:
            rec.close()
            print(f"{len(agent.calls)} call(s) recorded in {path}", file=sys.stderr)
        return code

    p.set_defaults(fn=cmd_record)
