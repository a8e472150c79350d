"""Streamed JSON (core.jsonout): the same document json.loads reads back, strict whatever the values,
written in pieces (a trace of many messages is never one string)."""
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.files.jsonout import write_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 62, 2 ** 62) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=40)


def written(value, **kw) -> tuple[str, list]:
    pieces = []
    write_json(value, pieces.append, **kw)
    return "".join(pieces), pieces


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(1, 5))
def test_round_trips_like_json(value, depth):
    text, _ = written(value, depth=depth)
    assert json.loads(text) == json.loads(json.dumps(value))


def test_strict_for_values_json_would_refuse_or_orjson_cannot_write():
    value = {"surrogate": "cut \ud83d emoji", "nan": math.nan, "inf": [math.inf], "big": 2 ** 70,
             2: "int key", None: "none key", True: "bool key", "obj": object.__new__(type("Thing", (), {})),
             "nested": {"deep": [{"x": "\udc00"}]}}
    text, _ = written(value)
    d = json.loads(text)                    # strict: no NaN, no lone surrogates
    assert d["surrogate"] == "cut \ufffd emoji" and d["nan"] is None and d["inf"] == [None]
    assert d["big"] == float(2 ** 70) and d["2"] == "int key" and d["null"] == "none key" and d["true"] == "bool key"
    assert d["nested"]["deep"][0]["x"] == "\ufffd" and d["obj"].startswith("<")


def test_generators_are_written_as_lists_one_item_at_a_time():
    made = []

    def items():
        for k in range(5000):
            made.append(k)
            yield {"k": k, "text": "x" * 50}
    text, pieces = written({"steps": [{"messages": items()}]})
    assert json.loads(text)["steps"][0]["messages"][4999] == {"k": 4999, "text": "x" * 50}
    assert len(pieces) > 3 and max(map(len, pieces)) < 200_000       # handed over in chunks, not at once


def test_run_json_shared_holds_each_message_once_and_rebuilds_every_step(capsys, examples, tmp_path):
    """``run --json --shared``: the input once, each step only the messages it made; following the origin
    maps rebuilds exactly the lists of the full output."""
    from compactscope.app.cli import main
    args = ["run", str(examples / "long_session.json"), "--json", "--workdir", str(tmp_path),
            "--summarizer", "fixed:S", "--set", "max_messages=30", "--set", "context_limit=1000000"]
    assert main(args) == 0
    full = json.loads(capsys.readouterr().out)
    assert main(args + ["--shared"]) == 0
    out = capsys.readouterr().out
    shared = json.loads(out)
    written_full = sum(len(s["messages"]) for s in full["steps"])
    written_shared = len(shared["input_messages"]) + sum(len(s["new"]) for s in shared["steps"])
    assert written_shared < 0.6 * written_full
    current = shared["input_messages"]
    for f, s in zip(full["steps"], shared["steps"]):
        assert s["messages"] == len(f["messages"]) and s["origin"] == f["origin"]
        new = {int(k): m for k, m in s["new"].items()}
        current = [new[j] if j in new else current[o] for j, o in enumerate(s["origin"])]
        assert current == f["messages"], s["layer"]
    assert any(s["new"] for s in shared["steps"]) and not all(s["new"] for s in shared["steps"])
