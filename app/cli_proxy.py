"""``compactscope proxy``: the recording proxy from the command line (no Qt)."""
from __future__ import annotations

import sys
import time
from pathlib import Path


def default_record_path() -> Path:
    from core.workspace import default_root
    return default_root().parent / "recordings" / f"proxy-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    p = sub.add_parser("proxy", help="a recording proxy for any Anthropic client (ANTHROPIC_BASE_URL=http://127.0.0.1:PORT)")
    p.add_argument("--port", type=int, default=8788, help="port to listen on (default 8788; 0 = any free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, loopback only)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow --host to be an address other machines can reach (they would use your API key)")
    p.add_argument("--upstream", default=None,
                   help="the real API base URL (default https://api.anthropic.com)")
    p.add_argument("--record", metavar="FILE", default=None,
                   help="recording file to append to (default: a new file under the user cache)")
    p.add_argument("--quiet", action="store_true", help="no line per call")

    def cmd_proxy(args) -> int:
        from core.proxy import DEFAULT_UPSTREAM, ProxyError, RecordingProxy
        from core.recording import RecordingWriter
        upstream = args.upstream or DEFAULT_UPSTREAM
        path = Path(args.record) if args.record else default_record_path()
        try:
            from core.proxy import check_bind, parse_upstream
            check_bind(args.host, args.allow_remote)
            parse_upstream(upstream)
        except ProxyError as e:
            raise CliError(str(e)) from None
        try:
            rec = RecordingWriter(path, source="proxy", meta={"upstream": upstream})
        except OSError as e:
            raise CliError(f"{path}: cannot write the recording: {e.strerror or e}") from None

        def on_call(r: dict) -> None:
            if args.quiet:
                return
            req = r.get("request") or {}
            u = r.get("usage") or {}
            ctx = sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens"))
            err = r.get("error")
            what = f"error: {err.get('kind')}: {err.get('message', '')}"[:120] if err else \
                f"context {ctx:,} tokens, output {int(u.get('output_tokens') or 0):,}"
            print(f"{time.strftime('%H:%M:%S')} {req.get('model', '?')}: {len(req.get('messages') or [])} messages, "
                  f"{what}", flush=True)
        try:
            proxy = RecordingProxy(upstream, host=args.host, port=args.port, recorder=rec,
                                   allow_remote=args.allow_remote, on_call=on_call)
        except ProxyError as e:
            rec.close()
            raise CliError(str(e)) from None
        print(f"compactscope proxy on {proxy.url} -> {upstream}\nrecording to {path}\n"
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
