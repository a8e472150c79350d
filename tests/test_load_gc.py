"""A load pauses the cyclic GC while the loader builds its result and leaves it as it found it."""
from __future__ import annotations

import gc
import json

from compactscope.core.loaders import load


def test_a_load_leaves_the_gc_as_it_was(tmp_path):
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps({"messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": "x"}
                                          for i in range(2000)]}))
    assert gc.isenabled()
    res = load(p)
    assert gc.isenabled() and len(res.main.messages) == 2000
    gc.disable()
    try:
        load(p)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_load_and_a_run_in_two_threads_keep_the_gc_off_until_both_end(tmp_path):
    """A load in one thread and a pipeline run in another, overlapping, ending in either order: the GC stays off
    until the second one ends, then is back on with no pause counted. (With the loader's own pause, a load begun
    before the run and ended inside it turned the GC back on while the run was still building its result.)"""
    import threading
    from compactscope.core.runtime.gcpause import gc_paused, gc_paused_load, pauses_open
    assert gc.isenabled() and pauses_open() == 0
    for first, second in ((gc_paused, gc_paused_load), (gc_paused_load, gc_paused)):
        for first_ends_first in (True, False):
            second_in, first_out, between = threading.Event(), threading.Event(), []

            def other(second=second, second_in=second_in, first_out=first_out, between=between, late=first_ends_first):
                with second():
                    second_in.set()
                    if late:
                        first_out.wait(10)
                        between.append(gc.isenabled())      # the first one has ended, this one is still open
            outer = first()
            outer.__enter__()
            t = threading.Thread(target=other)
            t.start()
            assert second_in.wait(10)
            if not first_ends_first:
                t.join(10)
                between.append(gc.isenabled())              # the second one has ended, the first is still open
            outer.__exit__(None, None, None)
            first_out.set()
            t.join(10)
            case = (first.__name__, second.__name__, first_ends_first)
            assert between == [False], case
            assert gc.isenabled() and pauses_open() == 0, case


def test_a_load_inside_a_run_still_loads_with_the_gc_off(tmp_path):
    from compactscope.core.runtime.gcpause import gc_paused
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": "x"}]}))
    with gc_paused():
        load(p)
        assert not gc.isenabled()
    assert gc.isenabled()
