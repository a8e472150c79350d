"""Which records of a Claude Code session make its conversations: the main one (the parent chain from the last
record, past compact boundaries, leaving out abandoned branches and what came before the file), its sidechains,
the subagents carried by progress records, and the Task prompts that name them."""
from __future__ import annotations

CONVERSATION_TYPES = ("user", "assistant")


class Record:
    """One conversation record (user/assistant line), kept light."""
    __slots__ = ("line", "rec", "uuid", "parent", "sidechain")

    def __init__(self, line: int, rec: dict):
        self.line = line
        self.rec = rec
        self.uuid = rec.get("uuid")
        self.parent = rec.get("parentUuid")
        self.sidechain = rec.get("isSidechain") is True


def main_records(conv: list[Record], others: list, parents: dict) -> tuple[list, list, int]:
    """The main-chain records in file order without abandoned branches, the compact boundaries on the
    chain (line, record), and how many records were left out."""
    main = [r for r in conv if not r.sidechain] if any(r.sidechain for r in conv) else conv
    leaf = next((r.uuid for r in reversed(main) if isinstance(r.uuid, str)), None)
    path: set = set()
    u = leaf
    get = parents.get
    add = path.add
    while u is not None and u not in path and u in parents:
        add(u)
        u = get(u)
    # which records descend from the path (fork) rather than being on it or disconnected from it
    reach: dict = {}

    def reaches(x) -> bool:
        chain: list = []
        on: set = set()          # a cycle (a record its own parent, two records each other's) ends the walk
        while isinstance(x, str) and x not in reach and x not in path and x in parents and x not in on:
            chain.append(x)
            on.add(x)
            x = parents[x]
        res = (x in path) if isinstance(x, str) and x not in reach and x not in on else reach.get(x, False)
        for c in chain:
            reach[c] = res
        return res

    # tool results answered on the chain itself: a forked record never answers one of these again
    path_answered: set = set()
    if leaf is not None and len(path) < len(main):
        for r in main:
            if r.uuid in path and r.rec.get("type") == "user":
                c = r.rec["message"].get("content")
                if isinstance(c, list):
                    path_answered.update(b.get("tool_use_id") for b in c
                                         if isinstance(b, dict) and b.get("type") == "tool_result"
                                         and isinstance(b.get("tool_use_id"), str))
    kept: list = []
    kept_msg_ids: set = set()
    kept_tool_ids: set = set()
    scanned = 0                 # kept[:scanned] is in the two id sets (filled only when a fork needs them)
    dropped = 0
    for r in main:
        u = r.uuid
        if leaf is None or u in path or u.__class__ is not str \
                or not reaches(r.parent if isinstance(r.parent, str) else None):
            kept.append(r)
            continue
        # a record that forks off the chain: a sibling of the same turn (another block of the same
        # assistant message, another tool result) or an abandoned branch
        for ki in range(scanned, len(kept)):     # (no slice copy: one pass of the file)
            krec = kept[ki].rec
            if krec.get("type") == "assistant":
                km = krec["message"]
                mid = km.get("id")
                if mid:
                    kept_msg_ids.add(mid)
                kc = km.get("content")
                if isinstance(kc, list):
                    for b in kc:
                        if isinstance(b, dict) and b.get("type") == "tool_use":
                            if isinstance(b.get("id"), str):
                                kept_tool_ids.add(b["id"])
        scanned = len(kept)
        m = r.rec["message"]
        c = m.get("content")
        if r.rec.get("type") == "assistant":
            ok = m.get("id") in kept_msg_ids
        else:
            # a sibling tool result of a parallel call; it may carry what the user typed while the
            # tools ran (text, images): the API received those with the results
            results = [b for b in c if isinstance(b, dict) and b.get("type") == "tool_result"] \
                if isinstance(c, list) else []
            ok = bool(results) and all(isinstance(b.get("tool_use_id"), str) and b["tool_use_id"] in kept_tool_ids
                                       and b["tool_use_id"] not in path_answered for b in results)
        if ok:
            kept.append(r)
        else:
            dropped += 1
    # compact boundaries: those on the chain (or all, when there is no chain)
    bounds = [(n, rec) for n, rec in others
              if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary"
              and rec.get("isSidechain") is not True
              and (leaf is None or not isinstance(rec.get("uuid"), str) or rec.get("uuid") in path
                   or not reaches(rec.get("uuid")))]
    return kept, bounds, dropped


def records_before_file(kept: list, parents: dict) -> tuple[set, str | None]:
    """(tool-call ids answered in the file but called before its first line, the first record's parent
    uuid when it lies outside the file)."""
    if not kept:
        return set(), None
    # up the chain from the first message (through system/progress records in the file) to a root, or
    # to a parent the file does not hold
    p, seen = kept[0].parent, set[str]()
    while isinstance(p, str) and p in parents and p not in seen and len(seen) < 100_000:
        seen.add(p)
        p = parents[p]
    first_parent = p if isinstance(p, str) and p not in parents else None
    if first_parent is None:
        return set(), None
    called: set = set()
    answered: list = []
    for r in kept:
        c = r.rec.get("message", {}).get("content") if isinstance(r.rec.get("message"), dict) else None
        if not isinstance(c, list):
            continue
        for b in c:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                called.add(b["id"])
            elif b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str):
                if b["tool_use_id"] not in called:
                    answered.append(b["tool_use_id"])
    return {t for t in answered if t not in called}, first_parent


def group_sidechains(conv: list[Record], parents: dict) -> list[list[Record]]:
    root: dict = {}
    groups: dict = {}
    for r in conv:
        if not r.sidechain:
            continue
        p = r.parent
        key = root.get(p) if isinstance(p, str) else None
        if key is None:
            key = r.uuid if isinstance(r.uuid, str) else f"line{r.line}"
        if isinstance(r.uuid, str):
            root[r.uuid] = key
        groups.setdefault(key, []).append(r)
    return list(groups.values())


def agent_groups(others: list) -> dict:
    """progress/agent_progress records carry subagent messages: group them by agent."""
    groups: dict = {}
    seen: set = set()
    for n, rec in others:
        if rec.get("type") != "progress":
            continue
        d = rec.get("data")
        if not isinstance(d, dict) or d.get("type") != "agent_progress":
            continue
        inner = d.get("message")
        if not isinstance(inner, dict) or inner.get("type") not in CONVERSATION_TYPES \
                or not isinstance(inner.get("message"), dict):
            continue
        u = inner.get("uuid")
        if isinstance(u, str):
            if u in seen:
                continue
            seen.add(u)
        key = d.get("agentId") or rec.get("parentToolUseID") or "agent"
        g = groups.setdefault(key, {"records": [], "parent_tool_use_id": rec.get("parentToolUseID"),
                                    "prompt": d.get("prompt")})
        g["records"].append(Record(n, inner))
    return groups


def first_text(msgs: list, limit: int = 70) -> str:
    """The first prose the user or model wrote (command wrappers like <command-name> are skipped)."""
    for m in msgs[:50]:
        t = first_text_of(m, limit)
        if t and not t.startswith("<"):
            return t
    return next((t for t in (first_text_of(m, limit) for m in msgs[:50]) if t), "")


def first_text_of(m: dict, limit: int) -> str:
    c = m.get("content")
    t = ""
    if isinstance(c, str):
        t = c.strip()
    elif isinstance(c, list):
        t = next((b["text"].strip() for b in c if isinstance(b, dict) and b.get("type") == "text"
                  and isinstance(b.get("text"), str) and b["text"].strip()), "")
    if not t:
        return ""
    t = " ".join(t.split())
    return t if len(t) <= limit else t[:limit - 1] + "…"


def task_prompts(msgs: list) -> dict:
    out: dict = {}
    for m in msgs:
        if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
            continue
        for b in m["content"]:
            if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                p = b["input"].get("prompt")
                if isinstance(p, str):
                    out.setdefault(" ".join(p.split()), b.get("id"))
    return out
