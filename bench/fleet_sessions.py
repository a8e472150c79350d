"""Make a Claude Code projects folder of realistic sessions from the corpus, for the fleet benchmark.

We do not have 500 real sessions; we have a dozen. This recombines and mutates them: every real
session is cut into turns (a user prompt and everything up to the next one: the assistant records
sharing a ``message.id``, tool results, progress, hooks, file-history snapshots), and each
generated session strings sampled turns together under its own ids, version, project, model and
timestamps. What a session records about its context is made consistent with its content: usage
per call (cache read / creation grow with what was sent), and an automatic ``compact_boundary``
with its ``isCompactSummary`` record wherever the context passes that version's threshold
(155k up to 2.1.14, 167k after; a corpus summary as the text), now and then a manual ``/compact``.
Sizes are log-normal (a few KB to tens of MB), some sessions have subagent files, a few carry a
corrupt line and one is not JSON at all: an archive as users have them.

Two size profiles. ``--profile bench`` (the default; the 500-session figures of docs/fleet.md): sigma
1.25, at least 8 KB, at most 40x the median, whole corpus turns (so a small session often overshoots its
size). ``--profile projects``: a real ``~/.claude/projects`` folder of many sessions, mostly small (a
median of a few tens of KB: a question or two, an aborted start), log-normal with sigma 1.6 and a
long tail up to ``--max-mb`` (a few sessions of tens of MB); each session picks turns that fit what is
left of its size, so small ones stay small and the total is close to ``--mb``.

    python bench/fleet_sessions.py OUT_DIR [--sessions 500] [--mb 600] [--seed 1]
    python bench/fleet_sessions.py OUT_DIR --profile projects --sessions 10000 --mb 1500

Writes OUT_DIR/projects/<project>/<sessionId>.jsonl; never touches the corpus.
"""
from __future__ import annotations

import argparse
import bisect
import random
import sys
import time
import uuid
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
SOURCES = ["entireio-cli", "claude-code-viewer"]
VERSIONS = [("1.0.108", 155_000), ("2.0.76", 155_000), ("2.1.5", 155_000), ("2.1.14", 155_000),
            ("2.1.29", 167_000), ("2.1.90", 167_000), ("2.1.143", 167_000)]
MODELS = ["claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-sonnet-4-20250514"]
SKIP_TYPES = {"summary", "custom-title", "pr-link", "tag", "agent-name", "last-prompt"}


def _is_prompt(rec: dict) -> bool:
    if rec.get("type") != "user" or rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("isSidechain"):
        return False
    c = (rec.get("message") or {}).get("content")
    if isinstance(c, str):
        return bool(c.strip())
    return isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "text" for b in c)


def read_turns(corpus: Path = CORPUS) -> tuple[list[list[dict]], list[str]]:
    """The corpus sessions cut into turns, and the real compaction summaries' texts."""
    turns, summaries = [], []
    for src in SOURCES:
        for f in sorted((corpus / src).glob("*.jsonl")):
            if f.name.startswith("agent-"):
                continue
            cur: list[dict] = []
            for line in f.read_bytes().splitlines():
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(rec, dict) or rec.get("type") in SKIP_TYPES or rec.get("isSidechain"):
                    continue
                if rec.get("subtype") == "compact_boundary":
                    continue
                if rec.get("isCompactSummary"):
                    c = (rec.get("message") or {}).get("content")
                    if isinstance(c, str):
                        summaries.append(c)
                    continue
                if _is_prompt(rec) and cur:
                    turns.append(cur)
                    cur = []
                cur.append(rec)
            if cur:
                turns.append(cur)
    turns = [t for t in turns if any(r.get("type") == "assistant" for r in t)]
    return turns, summaries or ["This session is being continued from a previous conversation that ran out of "
                                "context. The conversation is summarized below:\n(summary)"]


class _Session:
    def __init__(self, rnd: random.Random, project: str, cwd: str, summaries: list[str]):
        self.rnd = rnd
        self.sid = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
        self.version, self.threshold = rnd.choice(VERSIONS)
        self.threshold += rnd.randint(0, 1_200)
        self.model = rnd.choice(MODELS)
        self.cwd, self.project = cwd, project
        self.branch = rnd.choice(["main", "dev", f"feature/{rnd.randint(1, 999)}"])
        self.t = 1_760_000_000.0 + rnd.random() * 20_000_000
        self.overhead = rnd.randint(14_000, 48_000)        # system prompt, tools, CLAUDE.md, MCP
        self.context = 0                                    # tokens of the messages since the last compaction
        self.sent = 0                                       # context already counted in earlier calls
        self.parent: str | None = None
        self.summaries = summaries
        self.lines: list[bytes] = []
        self.size = 0
        self.compactions = 0

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rnd.getrandbits(128), version=4))

    def _stamp(self, gap: float) -> str:
        self.t += gap
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.t)) + f".{int(self.t % 1 * 1000):03d}Z"

    def _emit(self, rec: dict) -> None:
        line = orjson.dumps(rec)
        self.lines.append(line)
        self.size += len(line) + 1

    def _base(self, rec: dict, gap: float) -> dict:
        u = self._uuid()
        out = {**rec, "uuid": u, "parentUuid": self.parent, "sessionId": self.sid, "version": self.version,
               "cwd": self.cwd, "gitBranch": self.branch, "timestamp": self._stamp(gap), "isSidechain": False}
        self.parent = u
        return out

    def compact(self, trigger: str) -> None:
        boundary = self._base({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                               "isMeta": False, "level": "info",
                               "compactMetadata": {"trigger": trigger, "preTokens": self.overhead + self.context}},
                              self.rnd.uniform(20, 90))
        boundary["logicalParentUuid"], boundary["parentUuid"] = boundary["parentUuid"], None
        self._emit(boundary)
        text = self.rnd.choice(self.summaries)
        self._emit(self._base({"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
                               "message": {"role": "user", "content": text}}, 0.01))
        self.context = len(text) // 4 + self.rnd.randint(2_000, 30_000)     # the summary + restored files
        self.sent = 0
        self.compactions += 1

    def add_turn(self, turn: list[dict]) -> None:
        ids: dict[str, str] = {}

        def new_id(old, prefix):
            if old not in ids:
                ids[old] = prefix + "".join(self.rnd.choice("0123456789abcdefghijklmnopqrstuvwxyz")
                                            for _ in range(24))
            return ids[old]
        last_call = None
        for rec in turn:
            kind = rec.get("type")
            msg = rec.get("message")
            gap = self.rnd.uniform(0.2, 40) if kind != "assistant" else self.rnd.uniform(1, 25)
            if kind == "assistant" and isinstance(msg, dict):
                mid = msg.get("id") or "x"
                if mid != last_call:          # a new model call: compact first when over the threshold
                    if self.overhead + self.context >= self.threshold:
                        self.compact("auto")
                    last_call = mid
                content = [{**b, "id": new_id(b["id"], "toolu_")} if isinstance(b, dict) and b.get("type") ==
                           "tool_use" and "id" in b else b for b in msg.get("content") or []] \
                    if isinstance(msg.get("content"), list) else msg.get("content")
                new_ctx = self.overhead + self.context
                usage = {"input_tokens": self.rnd.randint(3, 12),
                         "cache_creation_input_tokens": max(0, new_ctx - self.sent),
                         "cache_read_input_tokens": min(self.sent, new_ctx),
                         "output_tokens": ((msg.get("usage") or {}).get("output_tokens") or 50)}
                self.sent = new_ctx
                m = {**msg, "id": new_id(mid, "msg_"), "model": self.model, "content": content, "usage": usage}
                out = self._base({**rec, "message": m, "requestId": new_id(rec.get("requestId") or mid, "req_")}, gap)
                self.context += len(orjson.dumps(m.get("content"))) // 4
            elif kind == "user" and isinstance(msg, dict):
                c = msg.get("content")
                if isinstance(c, list):
                    c = [{**b, "tool_use_id": new_id(b["tool_use_id"], "toolu_")} if isinstance(b, dict) and
                         b.get("type") == "tool_result" and "tool_use_id" in b else b for b in c]
                out = self._base({**rec, "message": {**msg, "content": c}}, gap)
                self.context += len(orjson.dumps(c)) // 4
            else:
                out = self._base(rec, gap)
                if kind in ("progress", "file-history-snapshot", "queue-operation"):
                    self.parent = out.get("parentUuid")      # not part of the message chain
                    out["uuid"] = self._uuid()
            self._emit(out)


def _targets(rnd: random.Random, sessions: int, total_mb: float, profile: str, max_mb: float) -> list[int]:
    """Each session's size in bytes: log-normal, scaled to the total (see the module doc's profiles)."""
    if profile == "bench":
        raw = [min(max(rnd.lognormvariate(0, 1.25), 0.02), 40) for _ in range(sessions)]
        scale = total_mb * 1e6 * 0.8 / sum(raw)      # a session ends on a whole turn: about 20% over its target
        return [max(8_000, int(r * scale)) for r in raw]
    raw = [rnd.lognormvariate(0, 1.6) for _ in range(sessions)]
    lo, hi, want = 3_000, max_mb * 1e6, total_mb * 1e6
    scale = want / sum(raw)
    for _ in range(20):                               # the clamped sizes sum to the total
        got = sum(min(max(r * scale, lo), hi) for r in raw)
        scale *= want / got
    return [int(min(max(r * scale, lo), hi)) for r in raw]


class _Turns:
    """The corpus turns by size: a random one, or one that fits what is left of a session (``projects``)."""

    def __init__(self, turns: list[list[dict]], fit: bool):
        self.turns = sorted(turns, key=lambda t: sum(len(orjson.dumps(r)) for r in t)) if fit else turns
        self.sizes = [sum(len(orjson.dumps(r)) for r in t) for t in self.turns] if fit else []
        self.fit = fit

    def pick(self, rnd: random.Random, left: int) -> list[dict]:
        if not self.fit:
            return rnd.choice(self.turns)
        n = bisect.bisect_right(self.sizes, max(left, self.sizes[0]))
        return self.turns[rnd.randrange(n)]


def generate(out_dir: str | Path, sessions: int = 500, total_mb: float = 600, seed: int = 1,
             corpus: Path = CORPUS, say=print, profile: str = "bench", max_mb: float = 40) -> dict:
    rnd = random.Random(seed)
    turns, summaries = read_turns(corpus)
    if not turns:
        raise SystemExit(f"no Claude Code sessions under {corpus}")
    if profile not in ("bench", "projects"):
        raise SystemExit(f"--profile is bench or projects, not {profile}")
    root = Path(out_dir) / "projects"
    projects = [f"-home-dev-{w}" for w in ("api", "web", "cli", "infra", "docs", "ml", "mobile", "data", "auth",
                                          "billing", "search", "sdk")]
    targets = _targets(rnd, sessions, total_mb, profile, max_mb)
    pool = _Turns(turns, profile == "projects")
    t0 = time.perf_counter()
    written = compactions = 0
    for i, target in enumerate(targets):
        proj = rnd.choice(projects)
        s = _Session(rnd, proj, "/home/dev/" + proj.rsplit("-", 1)[-1], summaries)
        while s.size < target:
            s.add_turn(pool.pick(rnd, target - s.size))
            if s.overhead + s.context > 60_000 and rnd.random() < 0.01:
                s.compact("manual")
        folder = root / proj
        folder.mkdir(parents=True, exist_ok=True)
        lines = s.lines
        if i % 97 == 13 and len(lines) > 10:          # a corrupt line, as real archives have
            k = len(lines) // 2
            lines = lines[:k] + [lines[k][: len(lines[k]) // 2]] + lines[k + 1:]
        (folder / f"{s.sid}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        if i % 20 == 7:                               # a subagent file, in the newer layout
            sub = folder / s.sid / "subagents"
            sub.mkdir(parents=True, exist_ok=True)
            agent = rnd.choice(turns)[:6]
            body = [orjson.dumps({**r, "isSidechain": True, "sessionId": s.sid, "agentId": "a1b2c3"}) for r in agent]
            (sub / "agent-a1b2c3.jsonl").write_bytes(b"\n".join(body) + b"\n")
        written += s.size
        compactions += s.compactions
        if say and (i + 1) % (100 if sessions <= 2_000 else 1_000) == 0:
            say(f"  {i + 1}/{sessions} sessions, {written / 1e6:,.0f} MB")
    (root / projects[0]).mkdir(parents=True, exist_ok=True)     # (few sessions: maybe none landed there)
    (root / projects[0] / "not-a-session.jsonl").write_bytes(b"\x00\x01 binary garbage, not JSON\n")
    return {"sessions": sessions + 1, "bytes": written, "compactions": compactions,
            "seconds": time.perf_counter() - t0, "root": str(root)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--mb", type=float, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", choices=("bench", "projects"), default="bench",
                    help="the sizes: bench (the 500-session figures) or projects (a real projects folder)")
    ap.add_argument("--max-mb", type=float, default=40, help="projects: the largest session (MB)")
    a = ap.parse_args(argv)
    r = generate(a.out_dir, a.sessions, a.mb, a.seed, profile=a.profile, max_mb=a.max_mb)
    print(f"{r['sessions']} files, {r['bytes'] / 1e6:,.0f} MB, {r['compactions']} compactions, "
          f"{r['seconds']:.1f} s -> {r['root']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
