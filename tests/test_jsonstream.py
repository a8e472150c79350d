"""A JSON document read in chunks (issue 27, ``core/files/jsonstream.py``): the value and the element lines are
those of the whole parse, whatever the chunk size and formatting; anything not well-formed is ``Broken`` (the
loaders then read the file whole for its error's line and column); the loaders give the same conversations
streamed and whole; the probe reads the first record of a one-line document without its big values."""
from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactscope.core.files.jsonio import loads_lenient
from compactscope.core.files import jsonscan, jsonstream
from compactscope.core.files.jsonstream import SHALLOW_MAX, Broken, Pieces, probe_document, read_document, shallow_value
from compactscope.core.loaders import LoadError, base, load, read_probe
from compactscope.core.loaders.base import array_element_lines

STRINGS = st.text(alphabet=st.sampled_from(list('ab"\\\n\t ]}[{,:é漢') + ["\U0001f600", "\x00"]), max_size=12)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), STRINGS)
VALUES = st.recursive(SCALARS, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(STRINGS, c, max_size=4)),
                      max_leaves=12)
MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": VALUES}),
                    max_size=6)


def _text(value, fmt: int) -> bytes:
    """``value`` as JSON in one of several layouts (one line, indented, compact, CRLF, ASCII-only)."""
    if fmt == 0:
        s = json.dumps(value, ensure_ascii=False)
    elif fmt == 1:
        s = json.dumps(value, indent=2, ensure_ascii=False)
    elif fmt == 2:
        s = json.dumps(value, separators=(",", ":"))
    elif fmt == 3:
        s = json.dumps(value, indent=1).replace("\n", "\r\n")
    else:
        s = "\n  " + json.dumps(value, indent="\t", ensure_ascii=False) + "\n\n"
    return s.encode("utf-8", errors="surrogatepass")


def _read(raw: bytes, stream=("messages", ""), chunk: int = 7):
    return read_document(io.BytesIO(raw), Pieces(), stream, chunk_size=chunk)


def _expected_lines(raw: bytes, value, stream) -> dict:
    if isinstance(value, list):
        want = {(): array_element_lines(raw, ()).get((), [])} if "" in stream else {}
    else:
        want = {(k,): array_element_lines(raw, (k,)).get((k,), []) for k in stream
                if k and isinstance(value.get(k), list)}
    return want


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MESSAGES, st.dictionaries(st.sampled_from(["model", "system", "tools", "x"]), VALUES, max_size=3),
       st.integers(0, 4), st.integers(1, 40), st.booleans())
def test_the_value_and_lines_are_those_of_the_whole_parse(msgs, others, fmt, chunk, as_list):
    value = msgs if as_list else {**others, "messages": msgs}
    raw = _text(value, fmt)
    got, lines = _read(raw, chunk=chunk)
    assert got == loads_lenient(raw)
    assert lines == _expected_lines(raw, got, ("messages", ""))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(['"', "\\", "a", "]", ","]), max_size=30), st.integers(1, 9))
def test_escapes_across_chunk_boundaries(text, chunk):
    raw = json.dumps({"messages": [text, {"k": text}], "s": text}).encode()
    assert _read(raw, chunk=chunk)[0] == json.loads(raw)


@settings(max_examples=150, deadline=None)
@given(MESSAGES, st.integers(0, 4), st.integers(1, 64), st.data())
def test_a_cut_or_changed_document_is_broken_or_the_whole_parse(msgs, fmt, chunk, data):
    """Never a value the whole parse would not give: a truncated or mutated document either reads as the
    whole parse reads it, or is Broken (and then read whole by the loader, for the error)."""
    raw = _text({"model": "m", "messages": msgs}, fmt)
    if data.draw(st.booleans()):
        mutated = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        at = data.draw(st.integers(0, len(raw) - 1))
        mutated = raw[:at] + data.draw(st.sampled_from([b'"', b"\\", b"]", b"}", b",", b":", b"[", b"{", b"x", b""])) \
            + raw[at + 1:]
    try:
        whole = loads_lenient(mutated)
    except ValueError:
        whole = Broken
    try:
        got = _read(mutated, chunk=chunk)[0]
    except Broken:
        return
    assert whole is not Broken and got == whole


@pytest.mark.parametrize("raw", [b"[1,]", b"[,1]", b'{"a":1,}', b"{,}", b"[1 2]", b'{"a" 1}', b'{"a":1} x', b"[1]]",
                                 b"[1", b'{"messages": [1] [2]}', b'{"messages": [1], }', b"{1: 2}", b"[1}",
                                 b'{"a": [1}', b'{"messages": [1:2]}', b'{"a":1 "b":2}', b"5", b'"x"', b'{"a":"\\"}',
                                 b"", b"   ", b'{"messages": [' + b"[" * 5000])
def test_what_is_not_one_well_formed_document_is_broken(raw):
    for chunk in (1, 3, 1 << 20):
        with pytest.raises(Broken):
            _read(raw, chunk=chunk)


def test_lenient_pieces_give_the_whole_parse_and_its_notes_in_order():
    raw = (b'{"messages": [{"role": "user", "content": "a\\ud800"}, {"role": "assistant", "x": Infinity, '
           b'"big": 123456789012345678901234567890, "d": [[1e400]]}], "m": NaN}')
    whole_notes: list = []
    whole = loads_lenient(raw, whole_notes)
    pieces = Pieces()
    got, lines = read_document(io.BytesIO(raw), pieces, ("messages",), chunk_size=5)
    assert got == whole and got["m"] is None
    assert pieces.notes == list(dict.fromkeys(whole_notes))


def test_nesting_deeper_than_python_recurses_is_cut_where_the_whole_parse_cuts_it():
    """(One difference is left: beside such a piece, another nested 255 to 1,000 levels deep is read by orjson
    whole, where the whole parse cut it at 254 levels from the document's root; the load then cuts it at
    254 levels from its message, one or two levels deeper.)"""
    raw = (b'[{"role": "user", "content": "a", "d": ' + b"[" * 3000 + b"]" * 3000 + b'},\n'
           b' {"role": "assistant", "content": "b", "e": ' + b'{"k": ' * 30 + b"1" + b"}" * 30 + b"}]")
    notes: list = []
    whole = loads_lenient(raw, notes)
    pieces = Pieces()
    assert read_document(io.BytesIO(raw), pieces, ("",), chunk_size=64)[0] == whole
    assert pieces.notes == notes


def test_invalid_utf8_and_a_bom_read_as_the_whole_parse():
    raw = b'\xef\xbb\xbf{"messages": [{"role": "user", "content": "a\xff\xfe"}, "\xc3\xa9"]}'
    notes: list = []
    whole = loads_lenient(raw, notes)
    pieces = Pieces()
    assert read_document(io.BytesIO(raw), pieces, ("messages",), chunk_size=4)[0] == whole
    assert pieces.notes == notes


# ------------------------------------------------------------------ the loaders, streamed and whole
def _doc_files(tmp_path):
    oai = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
           {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                  "function": {"name": "f", "arguments": "{}"}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "r\ud83d"}, {"role": "assistant", "content": "ok"}]
    ant = [{"role": "user", "content": "hi"},
           {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x \"]}"}]},
           7, {"role": "assistant", "content": "[TextBlock(citations=None, text='ab', type='text')]"}]
    docs = {
        "list.json": (ant, 2), "body.json": ({"model": "m", "system": "s", "tools": [], "messages": ant}, None),
        "oai.json": ({"model": "gpt", "messages": oai}, 1),
        "hermes.json": ({"session_id": "s1", "system_prompt": "sp", "tools": [], "messages": oai}, 2),
        "traj.json": ({"history": oai, "trajectory": [{"a": 1}], "info": {}}, 2),
        "gemini.json": ({"sessionId": "g", "projectHash": "h", "messages": [
            {"id": "1", "type": "user", "content": "hi"},
            {"id": "2", "type": "gemini", "content": "yo", "tokens": {"input": 5, "output": 1},
             "toolCalls": [{"id": "c", "name": "ls", "args": {}}]}, 3]}, 2),
        "cycles.json": ({"prompt": "p", "cycles": [
            {"request": {"messages": ant[:1]}, "response": {"content": [{"type": "text", "text": "a"}]}},
            {"request": {"messages": ant[:3]}, "response": {"content": [{"type": "text", "text": "b"}]}}]}, 2),
    }
    for name, (value, indent) in docs.items():
        p = tmp_path / name
        p.write_bytes(json.dumps(value, indent=indent, ensure_ascii=False).encode("utf-8", errors="surrogatepass"))
        yield p
    nan = tmp_path / "nan.json"
    nan.write_text('[{"role": "user", "content": "a", "x": NaN},\n {"role": "assistant", "content": "b", "n": 1e400}]')
    yield nan


def _dump(result) -> str:
    import dataclasses

    def plain(x):
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
        if isinstance(x, dict):
            return {str(k): plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x if isinstance(x, (str, int, float, bool, type(None))) else repr(x)
    return json.dumps(plain(result), sort_keys=True, default=repr)


def test_every_document_loader_gives_the_same_conversations_streamed_and_whole(tmp_path, monkeypatch):
    for p in _doc_files(tmp_path):
        monkeypatch.setattr(base, "STREAM_BYTES", 1 << 62)
        whole = _dump(load(p))
        monkeypatch.setattr(base, "STREAM_BYTES", 0)
        assert _dump(load(p)) == whole, p.name


def test_a_broken_streamed_document_names_the_file_line_and_column(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "STREAM_BYTES", 0)
    p = tmp_path / "b.json"
    p.write_text('{"model": "m",\n "messages": [{"role": "user", "content": "a"},\n {"role": "assistant" "x"}]}')
    with pytest.raises(LoadError) as e:
        load(p)
    assert e.value.path == str(p) and e.value.line == 3 and "column" in e.value.message
    p.write_text('[{"role": "user", "content": "a"},\n {"role": "assistant", "content": "b')
    with pytest.raises(LoadError) as e:
        load(p)
    assert e.value.line == 2


def test_streamed_elements_know_their_lines_beyond_the_scan_limit(tmp_path, monkeypatch):
    """The whole parse scanned a document for its lines only up to 64 MB; the streamed read counts them as it
    goes, at any size."""
    monkeypatch.setattr(base, "STREAM_BYTES", 0)
    monkeypatch.setattr(base, "MAX_LINE_SCAN_BYTES", 10)
    p = tmp_path / "l.json"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
                            indent=2))
    assert [m.provenance.line for m in load(p).main.meta] == [3, 7]


# ------------------------------------------------------------------ the probe
def test_the_probe_reads_a_one_line_document_without_its_big_values(tmp_path):
    msgs = [{"role": "user", "content": "x" * (SHALLOW_MAX // 4)} for _ in range(8)]
    p = tmp_path / "body.json"
    p.write_text(json.dumps({"model": "m", "messages": msgs}))
    probe = read_probe(p)
    assert probe.first_line_value() == {"model": "m", "messages": []}
    assert load(p).format == "anthropic-messages" and len(load(p).main.messages) == 8
    # a JSONL file whose first record is longer than the probe: its small fields read, the rest of the file not
    cc = tmp_path / "s.jsonl"
    rec = {"type": "user", "uuid": "u1", "sessionId": "s", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z",
           "message": {"role": "user", "content": "y" * (SHALLOW_MAX + 10)}}
    cc.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "uuid": "u2", "parentUuid": "u1",
                                                      "message": {"role": "user", "content": "z"}}) + "\n")
    v = read_probe(cc).first_line_value()
    assert v["uuid"] == "u1" and v["message"] == {}
    assert load(cc).format == "claude-code"


def test_shallow_value_is_none_for_what_is_not_one_object_on_the_first_line():
    for raw in (b'{"a": 1} 2\n', b"[1]\n", b'{"a": 1', b'{"a": }\n'):
        assert shallow_value(io.BytesIO(raw), lambda r, d: loads_lenient(r)) is None
    assert shallow_value(io.BytesIO(b'\n {"a": [1, {"b": 2}]}\n{"x"'), lambda r, d: loads_lenient(r)) == \
        {"a": [1, {"b": 2}]}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MESSAGES, st.dictionaries(st.sampled_from(["model", "system", "tools", "x"]), VALUES, max_size=3),
       st.integers(0, 4), st.integers(1, 40), st.integers(8, 200), st.sampled_from([b"", b"\n", b"\n  \n", b"\n{}",
                                                                                      b" 1", b"\n{\"a\": 1}\n"]))
def test_the_load_probes_one_pass_gives_the_shallow_value_and_the_streamed_read(msgs, others, fmt, chunk, big,
                                                                                  tail):
    """``probe_document``: the shallow value ``shallow_value`` gives, and, only when the pass read the whole file
    as one document with nothing left out, the value and lines ``read_document`` gives (with any value over
    ``SHALLOW_MAX`` (here made small) left out, or more after the document, the loader must read it again)."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(jsonstream, "SHALLOW_MAX", big)
    try:
        raw = _text({**others, "messages": msgs}, fmt) + tail
        want_shallow = shallow_value(io.BytesIO(raw), lambda r, d: loads_lenient(r), chunk_size=chunk)
        try:
            got_shallow, whole = probe_document(io.BytesIO(raw), Pieces(), chunk_size=chunk)
        except Broken:
            return                                  # (the loader then asks shallow_value)
        assert got_shallow == want_shallow
        try:
            read = read_document(io.BytesIO(raw), Pieces(), ("messages",), chunk_size=chunk)
        except Broken:
            read = None
        if read is None or want_shallow is None:
            assert whole is None
        elif all(want_shallow[k] == v for k, v in read[0].items() if k != "messages"):
            assert whole == read                    # nothing but the streamed array left out of the shallow value
        else:
            assert whole is None
    finally:
        monkeypatch.undo()


def test_a_load_reads_a_one_line_document_once(tmp_path, monkeypatch):
    """The load's probe reads a one-line request body whole as it looks at its first line, and the loader takes
    that read: the file is walked once, the conversation is the one two reads give. A loader that reads the file
    its own way (Gemini's session JSON) makes the probe let go of it first."""
    walks = []
    real = jsonstream._walk
    monkeypatch.setattr(jsonstream, "_walk", lambda f, reader, *a, **k: walks.append(reader.shallow) or
                        real(f, reader, *a, **k))
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * 3000} for i in range(1000)]
    p = tmp_path / "body.json"
    p.write_text(json.dumps({"model": "m", "messages": msgs, "system": "be brief"}))
    assert p.stat().st_size >= base.STREAM_BYTES and b"\n" not in p.read_bytes()
    once = load(p)
    assert walks == [True]
    monkeypatch.setattr(base.Probe, "take_document", lambda self: None)
    walks.clear()
    twice = load(p)
    assert walks == [True, False]
    assert _dump(once) == _dump(twice) and len(once.main.messages) == 1000 and once.main.system == "be brief"
    assert [m.provenance.line for m in once.main.meta] == [1] * 1000
    assert len({id(m.provenance) for m in once.main.meta}) == 1          # one Provenance for the line, shared
    monkeypatch.undo()
    # a document that is not the whole file (more after it): read again by the loader, its error as before
    bad = tmp_path / "bad.json"
    bad.write_bytes(p.read_bytes() + b" 7")
    with pytest.raises(LoadError) as e:
        load(bad)
    assert e.value.path == str(bad) and "column" in e.value.message
    # another loader: the probe's read is dropped before it loads
    kept = []
    real_probe = base.read_probe
    import compactscope.core.loaders as loaders
    monkeypatch.setattr(loaders, "read_probe", lambda path: kept.append(real_probe(path)) or kept[-1])
    g = tmp_path / "session.json"
    g.write_text(json.dumps({"sessionId": "s1", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z",
                             "messages": [{"id": f"i{i}", "type": "user" if i % 2 == 0 else "gemini",
                                           "timestamp": "2026-01-01T00:00:00Z", "content": "y" * 3000}
                                          for i in range(1000)]}))
    dropped = []
    real_take = base.Probe.take_document
    monkeypatch.setattr(base.Probe, "take_document", lambda self: dropped.append(real_take(self)) or dropped[-1])
    from compactscope.core.loaders import gemini
    real_gemini = gemini.load
    held = []
    monkeypatch.setattr(gemini, "load", lambda probe: held.append(probe._document) or real_gemini(probe))
    got = load(g)
    assert got.format == "gemini-cli" and len(got.main.messages) == 1000 and held == [None]
    assert kept[-1].keep_document and kept[-1]._document is None
    assert dropped[0] is not None and len(dropped[0][0]["messages"]) == 1000     # read by the probe, then let go


def test_the_corpus_and_example_documents_load_the_same_streamed_and_whole(monkeypatch):
    """Every JSON document of the corpus (hermes snapshots, Inspect logs, an API trace, SWE-agent trajectories, a
    Gemini CLI session) and of the examples: the same conversations, lines and problems read either way."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    files = sorted((root / "assets" / "examples").glob("*.json"))
    corpus = root.parent / "shared" / "corpus"
    files += [corpus / n for n in ("hermes-agent/inplace/sessions/session_20261130_142434_da29ca.json",
                                   "inspect_ai/react-compaction-summary.json", "inspect_ai/2025-05-12T20-27-36-04-00_browser.json",
                                   "learn-claude-code/s01.json", "swe-agent/function_calling_simple.traj.json",
                                   "entireio-cli/ab-2b9748b105-0-full.jsonl") if (corpus / n).is_file()]
    for p in files:
        monkeypatch.setattr(base, "STREAM_BYTES", 1 << 62)
        whole = _dump(load(p))
        monkeypatch.setattr(base, "STREAM_BYTES", 0)
        assert _dump(load(p)) == whole, p.name


class _OneByOne:
    """``Pieces`` as an unknown parser: the reader then parses each element on its own (no batches)."""

    def __init__(self):
        self.pieces = Pieces()

    def __call__(self, raw: bytes, depth: int = 0):
        return self.pieces(raw, depth)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGES, min_size=1, max_size=4).map(lambda runs: [m for r in runs for m in r]),
       st.integers(0, 4), st.sampled_from([16, 256, 1 << 20]), st.booleans(), st.integers(0, 30))
def test_elements_parsed_in_batches_are_those_parsed_one_by_one(msgs, fmt, chunk, as_list, odd_at):
    """A streamed array's elements are parsed a chunk's worth at a time (one orjson call); a batch with an element
    only the lenient reader takes (NaN, a lone surrogate, a number past 64 bits) falls back to one by one. Either
    way: the values, lines and notes of the element-by-element read."""
    msgs = list(msgs)
    if msgs and odd_at < 10:
        msgs.insert(odd_at % (len(msgs) + 1), {"role": "user", "content": "@ODD@"})
    value = msgs if as_list else {"model": "m", "messages": msgs}
    raw = _text(value, fmt).replace(b'"@ODD@"', [b"NaN", b'"\\ud800"', b"123456789012345678901234567890"][odd_at % 3])
    batched = Pieces()
    one = _OneByOne()
    got = read_document(io.BytesIO(raw), batched, ("messages", ""), chunk_size=chunk)
    want = read_document(io.BytesIO(raw), one, ("messages", ""), chunk_size=chunk)
    assert got == want
    assert batched.notes == one.pieces.notes
    assert got[0] == loads_lenient(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGES, min_size=1, max_size=4).map(lambda runs: [m for r in runs for m in r]),
       st.integers(0, 4), st.integers(3, 300), st.booleans(), st.integers(0, 40), st.sampled_from([8, 40, 1 << 15]),
       st.sampled_from([(), ("messages",)]), st.booleans())
def test_elements_on_one_line_read_as_a_run_are_those_read_one_by_one(msgs, fmt, chunk, as_list, odd_at, run_bytes,
                                                                      drop, one_by_one):
    """``RUN``: the scan takes the elements on one line (each with its comma) as one token; the reader parses
    them in its batch, or tells their commas again (``split_run``) when it must read them one by one (a broken
    or odd element, elements over lines, a dropped key, a parser that is not ``Pieces``). The values, lines,
    notes and errors are those of the read without runs, cut by any chunk and run size."""
    msgs = list(msgs)
    if odd_at < 12:
        msgs.insert(odd_at % (len(msgs) + 1), {"role": "user", "content": "@ODD@"})
    value = msgs if as_list else {"model": "m", "messages": msgs, "tools": [1, 2, [3, {"a": 4}]]}
    odd = [b"NaN", b'"\\ud800"', b"123456789012345678901234567890", b"[1,,2]", b'{"a" 1}', b"1 2"][odd_at % 6]
    raw = _text(value, fmt).replace(b'"@ODD@"', odd)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(jsonstream, "GROUP_BYTES", 0)
    monkeypatch.setattr(jsonscan, "RUN_BYTES", run_bytes)

    def read(runs: bool):
        monkeypatch.setattr(jsonstream, "RUN_ELEMENTS", runs)
        parse = _OneByOne() if one_by_one else Pieces()
        try:
            got = read_document(io.BytesIO(raw), parse, ("messages", ""), chunk_size=chunk, drop=drop)
        except Broken as e:
            return "broken", str(e)
        return got, (parse.pieces if one_by_one else parse).notes
    try:
        with_runs, without = read(True), read(False)
    finally:
        monkeypatch.undo()
    assert with_runs == without
    if with_runs[0] != "broken" and not drop:
        assert with_runs[0][0] == loads_lenient(raw)


@pytest.mark.parametrize("odd", [b"NaN", b"[1,,2]", b'"\\ud800"'])
def test_a_run_after_a_held_element_is_told_again_when_its_batch_is_read_one_by_one(monkeypatch, odd):
    """Chunks cut the runs, so a batch holds elements ended by commas and runs after them; an odd element in it
    makes the reader read the batch one by one: every run in it is told again."""
    msgs = [{"role": "user", "content": f"m{i}" if i % 5 else "x" * 200} for i in range(40)]   # (no run tried
    raw = json.dumps({"messages": msgs}).encode().replace(b'"m22"', odd)                # after a long one)
    monkeypatch.setattr(jsonstream, "GROUP_BYTES", 0)
    monkeypatch.setattr(jsonscan, "RUN_BYTES", 400)
    for chunk in (*range(5, 90, 7), 1 << 20):
        got = {}
        for runs in (True, False):
            monkeypatch.setattr(jsonstream, "RUN_ELEMENTS", runs)
            try:
                got[runs] = read_document(io.BytesIO(raw), Pieces(), ("messages",), chunk_size=chunk)
            except Broken as e:
                got[runs] = str(e)
        assert got[True] == got[False], chunk


@pytest.mark.parametrize("drop", [(), ("messages",)])
def test_runs_the_scan_parses_are_the_elements_whatever_the_chunks_cut(monkeypatch, drop):
    """The scan parses a run of objects from a separator to the last "}," in one loads: numbers cut by a chunk
    (1234 read as 34 if it parsed from the chunk's start), strings holding "},", dropped keys and top-level arrays
    read as without runs, and as the whole parse."""
    msgs = []
    for i in range(60):
        msgs += [123456 + i, {"role": "user", "content": "a},{b" if i % 3 else f"m{i}"}, "s},", [{"x": 1}, 2]]
    monkeypatch.setattr(jsonstream, "GROUP_BYTES", 0)
    for value in ({"model": "m", "messages": msgs}, msgs):
        raw = json.dumps(value).encode()
        for chunk in (*range(3, 120, 5), 1 << 20):
            got = {}
            for runs in (True, False):
                monkeypatch.setattr(jsonstream, "RUN_ELEMENTS", runs)
                got[runs] = read_document(io.BytesIO(raw), Pieces(), ("messages", ""), chunk_size=chunk, drop=drop)
            assert got[True] == got[False], chunk
            if not drop:
                assert got[True][0] == value


def test_split_run_tells_the_commas_of_the_elements_only():
    piece = b'{"a": [1, 2]}, "x,y", [3, {"b": ","}], 4,'
    assert [piece[q:q + 1] for q in jsonstream.split_run(piece)] == [b","] * 4
    assert jsonstream.split_run(piece) == [13, 20, 37, 40]


def test_thousands_of_small_elements_are_parsed_in_few_calls(monkeypatch):
    from compactscope.core.files import jsonstream
    calls = []
    real = jsonstream.loads
    monkeypatch.setattr(jsonstream, "loads", lambda raw: calls.append(len(raw)) or real(raw))
    raw = json.dumps({"messages": [{"role": "user", "content": "x"}] * 20000}).encode()
    got, lines = read_document(io.BytesIO(raw), Pieces(), ("messages",), chunk_size=1 << 16)
    assert len(got["messages"]) == 20000 and lines == {("messages",): [1] * 20000}
    assert len(calls) < 100          # (one per chunk of 64 KB, not one per element)


# -- the scan without numpy (``TextScan``, every document under ``NUMPY_BYTES``) against numpy's (``Scan``)
_BYTES = st.lists(st.sampled_from([b'"', b"\\", b"\\\\", b'\\"', b"[", b"]", b"{", b"}", b",", b":", b" ", b"\n", b"a",
                                   b"\\u00e9", b"\\ud83d\\ude00", "é漢\U0001f600".encode(), b"\xef\xbb\xbf", b"\xff",
                                   b"1e400", b"NaN"]), max_size=60).map(b"".join)


def _tokens(scan_class, raw: bytes, chunk: int, level: int, *args) -> list:
    scan = scan_class(level, *args)
    out = []
    for at in range(0, len(raw), chunk):
        out.append((scan.tokens(raw[at:at + chunk], at), scan.in_str, scan.bs & 1, scan.depth))
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_BYTES, MESSAGES.map(lambda m: _text({"model": "m", "messages": m}, 0)),
                 st.tuples(MESSAGES, st.integers(0, 4), st.integers(0, 200)).map(lambda t: _text(t[0], t[1])[:t[2]])),
       st.integers(1, 50), st.integers(1, 3))
def test_the_scan_without_numpy_gives_numpys_tokens(raw, chunk, level):
    """The same tokens, levels and carried state (in a string or not, the parity of a run of backslashes, the
    depth) for any bytes, broken, cut, escaped or nested as they may be, and any chunking."""
    from compactscope.core.files.jsonscan import Scan, TextScan
    numpy = _tokens(Scan, raw, chunk, level)
    for groups in (0, 1, 2, 8):            # bracket by bracket, and whole groups up to 1, 2 and 8 deep in one match
        assert _tokens(TextScan, raw, chunk, level, groups) == numpy


def _both_scans(raw: bytes, stream=("messages", ""), chunk: int = 7):
    """read_document's answer (or Broken) with the scan without numpy and with numpy's."""
    from compactscope.core.files import jsonstream
    answers = []
    for limit in (jsonstream.NUMPY_BYTES, 0):
        saved, jsonstream.NUMPY_BYTES = jsonstream.NUMPY_BYTES, limit
        pieces = Pieces()
        try:
            answers.append((read_document(io.BytesIO(raw), pieces, stream, chunk_size=chunk), pieces.notes))
        except Broken:
            answers.append(Broken)
        finally:
            jsonstream.NUMPY_BYTES = saved
    return answers


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MESSAGES, st.integers(0, 4), st.integers(1, 64), st.data())
def test_both_scans_read_a_document_alike_whole_cut_or_changed(msgs, fmt, chunk, data):
    raw = _text({"model": "m", "messages": msgs}, fmt)
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw)))]
    if data.draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    text, numpy = _both_scans(raw, chunk=chunk)
    assert text == numpy


@pytest.mark.parametrize("raw", [
    b'{"messages": ["' + b"x\\\"" * 300_000 + b'"], "s": "' + "é".encode() * 200_000 + b'"}',   # huge strings
    b'{"messages": [' + b"[" * 3000 + b"]" * 3000 + b', {"a": "\\\\"}]}',                       # deep nesting
    b'\xef\xbb\xbf{"messages": [{"t": "\\u00e9\\ud83d\\ude00\\"\\\\"}, "\\\\\\""]}',            # BOM and escapes
    b'[{"role": "user", "content": "a\\\\"}, {"role": "user", "content": "\\"]"}]',
    b'{"messages": [{"a": 1}] , "x": [1, {"b": "]"}]}', b'{"messages": [{"a": "\\"}]}',
])
def test_both_scans_read_odd_documents_alike(raw):
    for chunk in (1, 2, 3, 5, 4096, 1 << 20):
        text, numpy = _both_scans(raw, chunk=chunk)
        assert text == numpy


def test_a_small_document_is_read_without_importing_numpy(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 100}] * 30000}))
    code = ("import sys; from compactscope.core.loaders import base; base.STREAM_BYTES = 1; "
            f"doc, lines = base.read_json_streamed(__import__('pathlib').Path({str(path)!r})); "
            "assert len(doc['messages']) == 30000 and len(lines[('messages',)]) == 30000; "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
