"""hermes_prune's pass reuses what it found in a list it has seen (core.layers.hermes_prune.PruneMemo): the result
is the pass from scratch, value for value, whatever the cut, and a list grown in place is scanned again."""
from __future__ import annotations

import json

from compactscope.core.layers import hermes_rules as R
from compactscope.core.layers.hermes_prune import PruneMemo, prune_pass
from compactscope.core.pipeline.size import SizeMeter


def _session(n_calls: int = 60) -> list:
    msgs: list = [{"role": "system", "content": "sys"}, {"role": "user", "content": "do the thing"}]
    for k in range(n_calls):
        cid = f"c{k}"
        name = ("terminal", "read_file", "write_file", "search_files")[k % 4]
        args = {"command": f"ls {k}"} if name == "terminal" else {"path": f"f{k}.py", "content": "x" * (60 * k)}
        msgs.append({"role": "assistant", "content": None,
                     "tool_calls": [{"id": cid, "type": "function",
                                     "function": {"name": name, "arguments": json.dumps(args)}}]})
        body = ("same output " * 40) if k % 7 == 0 else f"result {k} " + "y" * (40 * k)
        msgs.append({"role": "tool", "tool_call_id": cid, "content": body})
    msgs.append({"role": "tool", "tool_call_id": "c1",
                 "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]})
    msgs.append({"role": "tool", "tool_call_id": "c2", "content": {"_multimodal": True, "text_summary": "shot"}})
    msgs += [{"role": "user", "content": "next"}, {"role": "assistant", "content": "ok"}]
    return msgs


def _same(a, b) -> None:
    assert a[0] == b[0]
    assert [e.to_json() for e in a[1]] == [e.to_json() for e in b[1]]
    assert list(a[2].items()) == list(b[2].items())


def test_memo_matches_a_pass_from_scratch_for_every_cut():
    msgs, memo, meter = _session(), PruneMemo(min_len=0), SizeMeter()
    seen_kinds = set()
    for protect_n, tokens in [(20, 2000), (20, 200), (3, 0), (20, 50_000), (0, 50), (20, 2000), (200, 0)]:
        fresh = prune_pass(msgs, protect_n, tokens, meter, memo=None)
        kept = prune_pass(msgs, protect_n, tokens, meter, memo=memo)
        _same(kept, fresh)
        assert (kept[0] is msgs) == (fresh[0] is msgs)
        seen_kinds |= {k for k, v in fresh[2].items() if v and k != "prune_boundary"}
    assert seen_kinds == {"deduplicated", "summarized", "images_stripped", "args_shrunk"}
    plain = [m for m in msgs if not (m.get("role") == "tool" and str(m.get("content")).startswith("same"))]
    assert prune_pass(plain, 10_000, 0, None, memo=memo)[0] is plain      # nothing to do: the list itself


def test_a_second_pass_shares_the_messages_it_made():
    msgs, memo = _session(), PruneMemo(min_len=0)
    a = prune_pass(msgs, 20, 200, None, memo=memo)
    b = prune_pass(msgs, 20, 300, None, memo=memo)
    shared = [i for i in range(len(msgs)) if a[0][i] is not msgs[i] and b[0][i] is a[0][i]]
    assert shared and a[0][shared[0]]["content"] != msgs[shared[0]]["content"]


def test_a_list_grown_in_place_is_scanned_again():
    msgs, memo = _session(), PruneMemo(min_len=0)
    prune_pass(msgs, 20, 200, None, memo=memo)
    dup = next(m for m in msgs if m.get("role") == "tool" and str(m.get("content")).startswith("same output"))
    msgs += [{"role": "tool", "tool_call_id": "c0", "content": dup["content"]}, {"role": "user", "content": "more"}]
    _same(prune_pass(msgs, 20, 200, None, memo=memo), prune_pass(msgs, 20, 200, None, memo=None))
    assert any(m.get("content") == R.DUPLICATE_TEXT for m in prune_pass(msgs, 20, 200, None, memo=memo)[0])


def test_memo_holds_a_bounded_number_of_lists():
    memo = PruneMemo(max_lists=2, min_len=0)
    lists = [_session(5) for _ in range(4)]
    for ms in lists:
        prune_pass(ms, 3, 100, None, memo=memo)
    assert len(memo._passes) == 2


def test_small_lists_are_not_kept():
    memo = PruneMemo(min_len=1_000)
    prune_pass(_session(), 20, 200, None, memo=memo)
    assert not memo._passes


def test_summary_key_pieces_follow_the_prompt():
    from compactscope.core.layers import hermes_summary as S
    from compactscope.core.summarizers import SummaryRequest
    from compactscope.core.summarizers.base import CachedSummarizer
    turns = _session(8)

    def key(ts, prev=None, budget=500, focus=None):
        lazy = S.summary_prompt_lazy(ts, prev, budget, focus)
        assert lazy.text() == S.summary_prompt(ts, prev, budget, focus)
        return CachedSummarizer.key("x", SummaryRequest.lazy(lazy, messages=tuple(ts)))
    k = key(turns)
    assert key(list(turns)) == k                                   # the same turns in another list
    assert key([dict(m) for m in turns]) == k                      # equal messages, other objects
    assert len({k, key(turns[:-1]), key(turns, "earlier"), key(turns, budget=600), key(turns, focus="f"),
                key(turns[:1] + [{"role": "user", "content": "other"}] + turns[2:])}) == 6


def test_passes_in_threads_over_one_list_agree_with_a_pass_from_scratch():
    import threading
    msgs, memo = _session(200), PruneMemo(min_len=0)
    budgets = [150, 400, 900, 2500, 6000, 20_000] * 3
    got: dict = {}

    def one(k: int, t: int) -> None:
        got[k] = prune_pass(msgs, 20, t, None, memo=memo)
    threads = [threading.Thread(target=one, args=(k, t)) for k, t in enumerate(budgets)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k, t in enumerate(budgets):
        _same(got[k], prune_pass(msgs, 20, t, None, memo=None))


def test_a_fleet_worker_between_sessions_drops_the_pruned_lists():
    from compactscope.core.fleet.worker import forget_session
    from compactscope.core.layers.hermes_prune import MEMO
    big = _session(600)                    # (1,206 messages: kept)
    prune_pass(big, 20, 200, None, memo=MEMO)
    assert MEMO._passes
    forget_session()
    assert not MEMO._passes
