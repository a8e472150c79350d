"""Figures for live recording: proxy overhead, recording load time, follow reload time.

    python bench/bench_live.py [--calls 300] [--requests 100]

Runs everything on loopback against the tests' fake Messages API; prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compactscope.core.live.follow import Follower                      # noqa: E402
from compactscope.core.loaders import load                          # noqa: E402
from compactscope.core.live.proxy import RecordingProxy                  # noqa: E402
from compactscope.core.live.recorder import RecordingWriter             # noqa: E402
from tests.fakeapi import FakeAnthropic, message, reply, text_block   # noqa: E402


def timed_stream(port: int, body: bytes) -> tuple[float, float]:
    """(seconds to the first body byte, seconds to the end) of one streamed POST."""
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-api-key: k\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    first = None
    buf = b""
    while not buf.endswith(b"0\r\n\r\n"):
        c = s.recv(65536)
        if not c:
            break
        if first is None and b"\r\n\r\n" in buf + c:
            first = time.perf_counter() - t0
        buf += c
    s.close()
    return first or 0.0, time.perf_counter() - t0


def bench_proxy(n: int) -> None:
    text = "lorem ipsum dolor sit amet " * 200      # ~5.4 KB of text, ~770 SSE events
    body = (b'{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"'
            + b"x" * 50_000 + b'"}]}')
    with FakeAnthropic(handler=lambda r: reply(message([text_block(text)]))) as fake:
        port = int(fake.url.rsplit(":", 1)[1])
        direct = [timed_stream(port, body) for _ in range(n)]
        with tempfile.TemporaryDirectory() as d, RecordingWriter(Path(d) / "p.jsonl", source="proxy") as rec, \
                RecordingProxy(fake.url, port=0, recorder=rec) as proxy:
            via = [timed_stream(proxy.port, body) for _ in range(n)]
            size = (Path(d) / "p.jsonl").stat().st_size
    md = statistics.median(t for _, t in direct)
    mv = statistics.median(t for _, t in via)
    print(f"proxy: {n} streamed calls (50 KB request, ~770 SSE events each): median {md * 1000:.1f} ms direct, "
          f"{mv * 1000:.1f} ms through the proxy (+{(mv - md) * 1000:.1f} ms incl. recording); "
          f"first byte {statistics.median(f for f, _ in via) * 1000:.1f} ms; recording {size / n / 1024:.0f} KB/call")


def bench_loader(calls: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "big.jsonl"
        msgs = []
        t0 = time.perf_counter()
        with RecordingWriter(p, source="proxy") as w:
            for i in range(calls):
                msgs = msgs + [{"role": "user", "content": [{"type": "text", "text": f"q{i} " + "y" * 1000}]}]
                if i and i % 100 == 0:
                    msgs = [{"role": "user", "content": "summary " * 50}]      # a compaction
                w.call(request={"model": "m", "system": "S", "messages": msgs},
                       response={"content": [{"type": "text", "text": f"a{i}"}], "stop_reason": "end_turn"},
                       usage={"input_tokens": 10 * len(msgs), "output_tokens": 5})
                msgs = msgs + [{"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}]}]
        tw = time.perf_counter() - t0
        size = p.stat().st_size
        t0 = time.perf_counter()
        res = load(p)
        tl = time.perf_counter() - t0
    c = res.main
    print(f"recording: {calls} calls, {size / 1e6:.1f} MB written in {tw:.2f} s; loaded in {tl:.2f} s "
          f"({size / 1e6 / tl:.0f} MB/s): {len(c.messages):,} messages, {len(c.segments)} segments, "
          f"{len(c.events)} compactions")


def bench_follow() -> None:
    corpus = ROOT.parent / "shared" / "corpus" / "entireio-cli"
    files = sorted(corpus.glob("*.jsonl"), key=lambda p: p.stat().st_size)[-3:] if corpus.is_dir() else []
    for f in files:
        data = f.read_bytes()
        with tempfile.TemporaryDirectory() as d:
            live = Path(d) / f.name
            live.write_bytes(data[: len(data) - 1000])        # the last line still being written
            fol = Follower(live)
            times = []
            for k in range(5):
                with live.open("ab") as fh:
                    fh.write(data[len(data) - 1000 + 200 * k: len(data) - 1000 + 200 * (k + 1)])
                u = fol.poll(force=True)
                times.append(u.seconds)
        print(f"follow: {f.name} ({len(data) / 1e6:.1f} MB): reload on growth {statistics.median(times) * 1000:.0f} ms "
              f"(median of 5)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--requests", type=int, default=50)
    a = ap.parse_args()
    bench_proxy(a.requests)
    bench_loader(a.calls)
    bench_follow()


if __name__ == "__main__":
    main()
