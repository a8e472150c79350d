"""Small English helpers for text people read: a count with its noun in the right number, a noun with its
article ("an int", "an anthropic-messages file", "a user message"). Pure functions, no Qt."""
from __future__ import annotations

# words that start with a vowel letter but a consonant sound ("a user", "a one-message file")
_CONSONANT_SOUND = ("one", "once", "uni", "usa", "use", "usu", "uti", "ura", "eu")
# words that start with a consonant letter but a vowel sound
_VOWEL_SOUND = ("hour", "honest", "heir")


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 message``, ``2 messages``, ``1,234 tool pairs``: the noun's last word in the number ``n`` needs."""
    many = plural or (noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s"))
    return f"{n:,} {noun if n == 1 else many}"


def article(word: str) -> str:
    """``a`` or ``an`` for ``word`` as it is spoken ("an int", "an Inspect log", "a user message")."""
    w = str(word).lstrip("`'\"(").lower()
    if not w:
        return "a"
    if w.startswith(_VOWEL_SOUND):
        return "an"
    if w.startswith(_CONSONANT_SOUND):
        return "a"
    return "an" if w[0] in "aeiou" else "a"


def a(word: str) -> str:
    """``word`` with its article: ``a(type(x).__name__)`` -> "an int", "a list"."""
    return f"{article(word)} {word}"


def value(v) -> str:
    """A parameter value as ``--set NAME=VALUE`` takes it: true/false, none, numbers and words as they are
    (never Python's True, False, None or quotes)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    return str(v)
