"""The replaced context's text searched in chunks (``retention.Joined``: no 100 MB string built and searched in one
call while the window waits for the interpreter lock) finds exactly what the one joined string finds."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from compactscope.core.analysis.retention import Joined, judge, Item, PATH

_TEXT = st.text(alphabet="ab\n/.x", max_size=12)


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(_TEXT, max_size=12), chunk=st.integers(1, 20), probes=st.lists(_TEXT, max_size=6),
       cuts=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=6))
def test_a_search_in_chunks_is_a_search_in_the_joined_text(texts, chunk, probes, cuts):
    whole = "\n".join(texts)
    joined = Joined(texts, chunk=chunk)
    assert "\n".join(joined.chunks) == whole
    # every piece of the text (those across the places where chunks meet among them), and strings that may not be
    for x in probes + [whole[a:a + n] for a, n in cuts] + [whole, whole + "a", ""]:
        assert (x in joined) == (x in whole), (x, texts, chunk)


def test_judge_takes_the_chunks_as_it_takes_the_string():
    texts = ["fix src/app/main.py please", "read " + "y" * 50, "src/lib/util.py done"]
    items = [Item(PATH, "src/app/main.py"), Item(PATH, "src/lib/util.py"), Item(PATH, "src/gone.py")]
    replacement = "Summary: fixed src/app/main.py"
    assert judge(items, Joined(texts, chunk=8), replacement) == judge(items, "\n".join(texts), replacement)
    kept, lost = judge(items, Joined(texts, chunk=8), replacement)
    assert [i.text for i in kept] == ["src/app/main.py"] and [i.text for i in lost] == ["src/lib/util.py"]
