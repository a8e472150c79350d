"""The retention's searches found without their slow regexes give what the regexes give: a path found only in the
runs of path characters that hold a slash (``paths_in_text``), a whole word found with ``str.find`` and the
characters either side (``_word_in``), a context's texts looked up in one call (``TextCache.many``)."""
from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from compactscope.core.analysis import retention as R
from compactscope.core.analysis.session_events import TextCache, message_text

# what paths, words and their edges are made of: path characters, the look-arounds' characters, a space, a newline,
# letters and digits outside ASCII (``\w`` of a str pattern takes them), and a character that is none of them
_ALPHABET = "ab/.~-_1 \n:é中٣,x"
_TEXT = st.text(alphabet=_ALPHABET, max_size=40)


def _word_regex(text: str, hay: str) -> bool:
    return re.search(r"(?<![\w/.-])" + re.escape(text) + r"(?![\w/-])", hay) is not None


@settings(max_examples=600, deadline=None)
@given(s=_TEXT)
def test_paths_in_text_finds_what_the_path_regex_finds(s):
    assert R.paths_in_text(s) == R.PATH_RX.findall(s)


def test_paths_in_text_on_real_shapes():
    s = "see ./src/app/main.py, ~/notes/todo.md and /etc/hosts.conf; also a.b/c_d/e-f.txt (x/y) and v1.2 or é/ü.py"
    assert R.paths_in_text(s) == R.PATH_RX.findall(s)
    assert "./src/app/main.py" in R.paths_in_text(s) and "~/notes/todo.md" in R.paths_in_text(s)
    assert R.paths_in_text("no slash here.py at all") == []


@settings(max_examples=600, deadline=None)
@given(text=st.text(alphabet=_ALPHABET, max_size=4), hay=_TEXT, at=st.integers(0, 40))
def test_word_in_is_the_word_regex(text, hay, at):
    assert R._word_in(text, hay) == _word_regex(text, hay)
    placed = hay[:at] + text + hay[at:]          # (the text surely occurs, at every kind of edge)
    assert R._word_in(text, placed) == _word_regex(text, placed)


def test_word_in_edges():
    assert R._word_in("main.py", "fixed main.py.")
    assert not R._word_in("main.py", "fixed src/main.py")           # inside a longer path
    assert not R._word_in("main", "the main_loop")                  # inside a longer name
    assert R._word_in("main", "main_loop and main")                 # a later occurrence stands alone
    assert not R._word_in("ab", "中ab")                             # a letter outside ASCII is a word character


def test_text_cache_many_is_one_lookup_each():
    a = {"role": "user", "content": "alpha"}
    b = {"role": "assistant", "content": [{"type": "text", "text": "beta"}]}
    cache = TextCache()
    assert cache.many([a, b, a]) == [message_text(a), message_text(b), message_text(a)]
    first = cache(b)
    assert cache.many([b])[0] is first                              # the text made once, given back
    c = dict(a)                                                     # an equal copy is another message
    assert cache.many([c]) == [message_text(c)]
