"""ObjFact.values: the values of a list of objects, each as get() gives it (the fast pass when all are known,
one by one otherwise)."""
from compactscope.core.pipeline.facts import Facts, ObjFact


def test_values_equal_get_known_missing_and_mixed():
    calls = []

    def compute(o):
        calls.append(o["n"])
        return ("v", o["n"])

    fact = ObjFact("t_values", compute, Facts())
    objs = [{"n": i} for i in range(50)]
    assert fact.values(objs[:10]) == [("v", i) for i in range(10)]        # all missing: computed
    assert calls == list(range(10))
    assert fact.values(objs[:10]) == [("v", i) for i in range(10)]        # all known: none computed again
    assert calls == list(range(10))
    mixed = objs[5:20]
    assert fact.values(mixed) == [fact.get(o) for o in mixed]
    assert calls == list(range(20))
    assert fact.values([]) == []


def test_values_not_fooled_by_a_reused_id():
    fact = ObjFact("t_values_id", lambda o: len(o), Facts())
    a = [1, 2, 3]
    assert fact.values([a]) == [3]
    b = [1]
    assert fact.values([b, a]) == [1, 3]
    fact.forget(a)
    assert fact.values([a, b]) == [3, 1]


def test_bytes_joined_fast_pass_equals_the_loop():
    from compactscope.core.pipeline.facts import BytesFact
    fact = BytesFact("t_joined", 4, lambda o: bytes([o["n"] % 256]) * 4, Facts())
    objs = [{"n": i} for i in range(300)]
    assert fact.joined(objs[:100], compute=False) is None             # none known
    first = fact.joined(objs[:100])                                    # computed
    assert first == b"".join(bytes([i]) * 4 for i in range(100))
    assert fact.joined(objs[:100]) == first                            # all known
    assert fact.joined(iter(objs[:100])) == first                      # an iterator
    assert fact.joined(objs[50:150]) == b"".join(bytes([i % 256]) * 4 for i in range(50, 150))
    assert fact.joined([]) == b""
    assert fact.joined(objs[:3] + [{"n": 7}], compute=False) is None


def test_values_of_objects_with_a_slot_but_no_value_of_this_fact():
    table = Facts()
    other = ObjFact("t_other", lambda o: "other", table)
    calls = []
    fact = ObjFact("t_this", lambda o: calls.append(o["n"]) or o["n"] * 2, table)
    objs = [{"n": i} for i in range(12)]
    fact.values(objs[:3])
    assert other.values(objs) == ["other"] * 12           # slots for all, this fact's value for three
    assert fact.values(objs) == [2 * i for i in range(12)]
    assert calls == list(range(12))                       # each made once, the known ones not again
    assert fact.values(objs[::-1]) == [2 * i for i in range(12)][::-1] and calls == list(range(12))
