"""A parameter change re-runs a layer over nearly the same list and resumes what it can from the chunks of messages
it read before (``core.pipeline.chunkmemo``: the offline summary's totals, hermes's summary key and its search
for an earlier summary; the checker's chunks): the resumed result equals a from-scratch one, including after a
change of the first message, of a middle one and of the list's length."""
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

import compactscope.core.analysis.checker as checker
import compactscope.core.layers.hermes_rules as hermes_rules
import compactscope.core.layers.hermes_summary as hermes_summary
import compactscope.core.summarizers.offline as offline
from compactscope.core.files.workspace import Workspace
from compactscope.core.pipeline.align import align
from compactscope.core.pipeline.chunkmemo import ChunkMemo
from compactscope.core.session.model import Session
from compactscope.core.summarizers import CachedSummarizer, OfflineSummarizer, SummaryRequest

SMALL = 16          # chunk size in these tests: many chunk boundaries in a few hundred messages


@pytest.fixture
def small_chunks(monkeypatch):
    for memo in (offline._TOTALS, hermes_summary._chunk_digests, hermes_rules._SUMMARY_AT):
        monkeypatch.setattr(memo, "size", SMALL)
        memo.clear()
    monkeypatch.setattr(checker, "CHECK_CHUNK", SMALL)
    checker._OPENAI_CHUNKS.clear()
    yield
    for memo in (offline._TOTALS, hermes_summary._chunk_digests, hermes_rules._SUMMARY_AT):
        memo.clear()
    checker._OPENAI_CHUNKS.clear()


def _session(n: int, seed: int = 0) -> list:
    """Anthropic-style turns: user asks, tool calls reading, writing and mentioning paths, errors."""
    out: list = [{"role": "user", "content": f"Fix the parser in src/parse{seed}.py please"}]
    for i in range(n):
        name = ("Read", "Edit", "Bash", "Write")[(i + seed) % 4]
        inp = {"command": f"cat src/m{i % 9}.py docs/x{i % 5}.md"} if name == "Bash" else {"file_path": f"src/m{i % 11}.py"}
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"step {i}"},
                                                     {"type": "tool_use", "id": f"t{i}", "name": name, "input": inp}]})
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                 "content": f"boom {i}", "is_error": i % 5 == 0}]})
        if i % 13 == 0:
            out.append({"role": "user", "content": f"now also look at item {i}"})
    return out


def _reference_summary_facts(msgs: list) -> tuple:
    """The offline summary's figures read in one pass over the messages (as it was before the chunks)."""
    facts = [offline._facts_of(m) for m in msgs]
    tools: Counter = Counter()
    files: dict = {}
    errors: list = []
    for _u, _t, calls, errs in facts:
        for name, named, mentioned in calls:
            tools[name] += 1
            for v, verb in named:
                if files.get(v) != "written":
                    files[v] = verb
            for p in mentioned:
                files.setdefault(p, "mentioned")
        errors += errs
    return (next((f[0] for f in facts if f[0]), None), next((f[0] for f in reversed(facts) if f[0]), None),
            tools.most_common(), list(files.items()), len(errors), errors[-5:],
            next((f[1] for f in reversed(facts) if f[1]), None))


def _chunked(msgs: list) -> tuple:
    first, last, tools, files, n, errs, text = offline._totals(msgs)
    return first, last, tools.most_common(), list(files.items()), n, errs, text


def test_chunk_memo_computes_only_the_chunks_that_changed():
    memo: ChunkMemo = ChunkMemo(lambda chunk: sum(m["v"] for m in chunk), size=4)
    msgs = [{"v": i} for i in range(18)]
    assert memo.results(msgs) == [6, 22, 38, 54, 33]
    assert memo.computed == 5
    assert memo.results(list(msgs)) == [6, 22, 38, 54, 33] and memo.computed == 5     # another list, same messages
    changed = msgs[:9] + [{"v": 100}] + msgs[10:]
    assert memo.results(changed) == [6, 22, 38 - 9 + 100, 54, 33] and memo.computed == 6
    assert memo.results(msgs[:10]) == [6, 22, 17] and memo.computed == 7              # a shorter list
    kept = len(memo)
    assert memo.results(msgs[:4]) == [6] and memo.results([]) == [] and len(memo) == kept   # one chunk: not kept


@pytest.mark.parametrize("edit", ["none", "first", "middle", "shorter", "longer"])
def test_offline_summary_resumed_equals_one_pass(small_chunks, edit):
    msgs = _session(120)
    assert _chunked(msgs) == _reference_summary_facts(msgs)
    if edit == "first":
        msgs = [{"role": "user", "content": "a different first request in lib/other.py"}] + msgs[1:]
    elif edit == "middle":
        k = len(msgs) // 2
        msgs = msgs[:k] + [{"role": "assistant", "content": [
            {"type": "tool_use", "id": "x", "name": "Write", "input": {"file_path": "src/m3.py"}}]}] + msgs[k + 1:]
    elif edit == "shorter":
        msgs = msgs[:len(msgs) - 37]
    elif edit == "longer":
        msgs = msgs + _session(20, seed=3)
    computed = offline._TOTALS.computed
    assert _chunked(msgs) == _reference_summary_facts(msgs)
    if edit in ("middle", "shorter"):
        assert offline._TOTALS.computed - computed <= 2            # only the changed chunk and the last one
    fresh_text = OfflineSummarizer().summarize(SummaryRequest("", tuple(msgs))).text
    offline._TOTALS.clear()
    assert OfflineSummarizer().summarize(SummaryRequest("", tuple(msgs))).text == fresh_text


def test_a_summary_key_is_equal_exactly_when_the_prompts_are(small_chunks):
    turns = [{"role": "user", "content": f"turn {i}"} for i in range(100)]
    def key(ts, budget=500):
        req = SummaryRequest.lazy(hermes_summary.summary_prompt_lazy(ts, None, budget, None), messages=tuple(ts))
        return CachedSummarizer.key("x", req)
    k = key(turns)
    assert key([dict(m) for m in turns]) == k                         # equal messages, other objects
    assert key(turns[:99]) != k and key(turns[1:]) != k and key(turns, 501) != k
    assert key([{"role": "user", "content": "turn 0!"}] + turns[1:]) != k
    assert key(turns[:50] + [{"role": "user", "content": "other"}] + turns[51:]) != k


def test_latest_summary_found_as_in_one_pass(small_chunks):
    msgs = [{"role": "user", "content": f"turn {i}"} for i in range(100)]
    summary = {"role": "user", "content": hermes_rules.with_summary_prefix("what happened")}
    for at in (0, 15, 16, 17, 63, 99):
        lst = msgs[:at] + [summary] + msgs[at + 1:]
        for start, end in ((0, 100), (1, 100), (0, at + 1), (0, at), (at, at + 1), (5, 40)):
            want = next(((i, "what happened") for i in range(end - 1, start - 1, -1) if lst[i] is summary),
                        (None, ""))
            got = hermes_rules.latest_summary(lst, start, end)
            assert (got[0], got[1].strip() if got[0] is not None else "") == want, (at, start, end)


def _findings(msgs, before=()):
    return [f.to_json() for f in checker.check(msgs, "openai", before_file=before)]


def test_the_checker_resumed_equals_a_fresh_check(small_chunks, monkeypatch):
    msgs: list = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    for i in range(60):
        msgs.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": f"d{i}", "type": "function", "function": {"name": "g", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
        if i % 7:
            msgs.append({"role": "tool", "tool_call_id": f"d{i}", "content": "ok"})
        if i % 11 == 0:
            msgs.append({"role": "user", "content": ""})
    variants = [msgs, msgs[:len(msgs) - 5], [{"role": "assistant", "content": "first"}] + msgs[1:],
                msgs[:40] + [{"role": "tool", "tool_call_id": "zz", "content": "?"}] + msgs[40:],
                msgs[:41] + msgs[42:], msgs + [{"role": "user", "content": "end"}]]
    got = [_findings(v) for v in variants] + [_findings(msgs[:30] + msgs[31:], frozenset({"d4"}))]
    monkeypatch.setattr(checker, "CHECK_CHUNK", 1 << 30)          # one chunk: the one pass it was
    checker._OPENAI_CHUNKS.clear()
    want = [_findings(v) for v in variants] + [_findings(msgs[:30] + msgs[31:], frozenset({"d4"}))]
    assert got == want
    assert any(f["code"] == "unanswered_tool_use" for f in want[0])


def _rows(step) -> list:
    return [tuple(r) for r in align(step)]


def _summary(step) -> str:
    return json.dumps({k: v for k, v in (step.summary or {}).items() if k != "cached"}, sort_keys=True, default=str)


def _same_trace(a, b, what) -> None:
    assert [st.layer for st in a.steps] == [st.layer for st in b.steps]
    for x, y in zip(a.steps, b.steps):
        assert json.dumps(x.messages, sort_keys=True, default=str) == \
            json.dumps(y.messages, sort_keys=True, default=str), (what, x.layer)
        assert (x.size_after, x.tokens_after, x.changed, x.origin) == (y.size_after, y.tokens_after, y.changed,
                                                                        y.origin), (what, x.layer)
        assert [f.to_json() for f in x.findings] == [f.to_json() for f in y.findings], (what, x.layer)
        assert _summary(x) == _summary(y), (what, x.layer)      # (a summary asked before is a cached one)
        assert _rows(x) == _rows(y), (what, x.layer)


@pytest.mark.parametrize("changes", [
    [("summary_target_ratio", 0.25), ("summary_target_ratio", 0.2), ("protect_last_n", 4)],
    [("protect_first_n", 0), ("protect_first_n", 5)],          # the head: the summary's first turn moves
])
def test_a_hermes_parameter_change_resumed_equals_a_fresh_run(tmp_path, small_chunks, changes):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_memory import write_session
    path = tmp_path / "s.jsonl"
    write_session(path, 700)
    s = Session(Workspace(tmp_path / "ws"), strategy="hermes")
    s.setup.pin_strategy()
    assert s.source.open(str(path))
    for k, (name, value) in enumerate(changes):
        s.setup.set_param(name, value)
        assert s.result is not None and not s.error, s.error
        fresh = Session(Workspace(tmp_path / f"ws{k}"), strategy="hermes", params=dict(s.setup.params))
        fresh.setup.pin_strategy()
        assert fresh.source.open(str(path))
        summ = [st for st in s.trace.steps if st.layer == "hermes_summarize"]
        assert summ and summ[0].changed, "the change should compact"
        _same_trace(s.trace, fresh.trace, f"{name}={value}")


def test_rows_of_a_list_changed_in_place_packed_or_not_equal_the_loops():
    """A layer that replaced messages in place (hermes's prune: origin [0..n-1] or SameOrigin, an edit per
    message): its rows, packed (the columns set directly) or as a list, equal those of the loop per row."""
    import random

    import compactscope.core.pipeline.align as A
    from compactscope.core.pipeline.trace import Edit, SameOrigin
    rnd = random.Random(7)

    class Step:
        pass
    for n in (1, 5, 60, 300):
        inp = [{"role": "tool", "content": f"m{i}"} for i in range(n)]
        for trial in range(6):
            outp = [m if rnd.random() < 0.6 else {"role": "tool", "content": "short"} for m in inp]
            origin = SameOrigin(n) if trial % 2 else list(range(n))
            edits = [Edit("replace", f"e{i}", message=i, old_len=9, new_len=5,
                          block=0 if trial % 3 == 0 else None) for i in range(n) if outp[i] is not inp[i]]
            edits += [Edit("boundary", "b", start=0, end=rnd.randrange(1, n + 1)), Edit("note", "o", out=n - 1)]
            step = Step()
            step.input, step.messages, step.origin, step.edits = inp, outp, origin, edits
            loop, _, _ = A._align(n, list(origin), lambda i, j, o=outp, p=inp: o[j] is p[i], None, None)
            want = [tuple(r) for r in A._edit_rows(step, loop, *A._align(n, list(origin), None, None, None)[1:])]
            old_pack = A.PACK_ROWS
            try:
                for pack in (1, 1 << 30):
                    A.PACK_ROWS = pack
                    assert [tuple(r) for r in A.align(step)] == want, (n, trial, pack)
            finally:
                A.PACK_ROWS = old_pack


def test_a_big_change_derived_from_the_same_layers_list_before_equals_a_fresh_sizing():
    """``SizeMeter.derive`` with a big reported change (half the messages replaced) takes the totals of a list
    measured before that shares nearly all of the new one (the layer's output before a parameter change)."""
    from compactscope.core.pipeline.facts import Facts
    from compactscope.core.pipeline.size import SizeMeter
    meter = SizeMeter(facts=Facts())
    inp = [{"role": "user", "content": "x" * (i % 17 + 1)} for i in range(2000)]
    def replaced(lst, upto):
        return [{"role": "user", "content": "short"} if i % 2 and i < upto else m for i, m in enumerate(lst)]
    meter.size(inp)
    old = replaced(inp, 1900)
    changed = [i for i in range(2000) if old[i] is not inp[i]]
    meter.derive(inp, old, [inp[i] for i in changed], [old[i] for i in changed])
    new = old[:1800] + replaced(inp, 1950)[1800:]                  # the same layer, its cut moved
    changed = [i for i in range(2000) if new[i] is not inp[i]]
    for _ in range(3):                                              # other lists measured since
        meter.size([inp[0]] + [{"role": "user", "content": "y"}] * 300)
    meter.derive(inp, new, [inp[i] for i in changed], [new[i] for i in changed])
    assert meter.size(new) == SizeMeter(facts=Facts()).size(new)
    assert meter.size(old) == SizeMeter(facts=Facts()).size(old)
