"""Core texts in the user's language, without Qt: a catalogue of templates for what the layers, the
explanations and the session say in words.

The core writes English (the CLI, the reports, the JSON). A view that shows a core text in another language
passes it through ``translate(text)``: an exact entry of the language's catalogue (``core/i18n/i18n_<lang>.json``,
``{"English template": "translation"}``), else the first template that matches the whole text. A template's
``{name}`` fields match any text (``{name:id}`` an identifier, ``{name:num}`` a number, ``{name:data}``
any text that is a value, never words to translate: a variable's dump; ``{name:path}`` a file's path or name); the translation
puts them back (as ``{name}``), each field itself translated when the catalogue knows it (a reason inside an edit, a layer's note inside "failed: ..."). Numbers, ids, paths and the
s08 placeholders ("[snipped 2 messages]") pass through unchanged. Unknown text stays English.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

LANGS = ("en", "zh_CN")
_state = {"lang": "en"}
_FIELD = re.compile(r"\{(\w+)(?::(id|num|data|path))?\}")
_KINDS = {None: ".+?", "id": r"[A-Za-z_][\w.\-/:]*", "num": r"-?[\d][\d,.]*", "data": ".+?",
          "path": r"(?:[A-Za-z]:)?[^\s:]*[/\\][^\s:]*|[^\s/\\:]+\.\w+"}


def set_language(lang: str) -> None:
    """The language ``translate`` uses by default (the window's: "en" or "zh_CN")."""
    _state["lang"] = lang if lang in LANGS else "en"


def language() -> str:
    return _state["lang"]


def catalogue_path(lang: str) -> Path:
    return Path(__file__).with_name(f"i18n_{lang}.json")


class Catalogue:
    def __init__(self, entries: dict):
        self.entries = dict(entries)
        self.exact: dict = {}
        self.templates: list = []
        for src, dst in entries.items():
            if _FIELD.search(src):
                kinds = {m.group(1): m.group(2) for m in _FIELD.finditer(src)}
                self.templates.append((self._regex(src), dst, len(_FIELD.sub("", src)), kinds))
            else:
                self.exact[src] = dst
        self.templates.sort(key=lambda t: -t[2])          # the most specific (longest literal text) first

    @staticmethod
    def _regex(src: str):
        out, pos, seen = [], 0, set()
        for m in _FIELD.finditer(src):
            out.append(re.escape(src[pos:m.start()]))
            name = m.group(1)
            out.append(f"(?P={name})" if name in seen else f"(?P<{name}>{_KINDS[m.group(2)]})")
            seen.add(name)
            pos = m.end()
        out.append(re.escape(src[pos:]))
        return re.compile("".join(out), re.S)

    def find(self, text: str):
        """(translation template, fields) or None."""
        hit = self.find_kind(text)
        return None if hit is None else hit[:2]

    def find_kind(self, text: str):
        """(translation template, fields, {field: kind}) or None; kind is None (any text), "id" or "num"."""
        if text in self.exact:
            return self.exact[text], {}, {}
        for rx, dst, _, kinds in self.templates:
            m = rx.fullmatch(text)
            if m:
                return dst, m.groupdict(), kinds


@lru_cache(maxsize=None)
def catalogue(lang: str) -> Catalogue | None:
    p = catalogue_path(lang)
    if not p.is_file():
        return None
    return Catalogue(json.loads(p.read_text(encoding="utf-8")))


@lru_cache(maxsize=50_000)
def _translate(text: str, lang: str, depth: int = 0) -> str:
    cat = catalogue(lang)
    if cat is None or not text:
        return text
    hit = cat.find(text)
    if hit is None:
        return text
    dst, fields = hit
    if depth < 4:
        fields = {k: _translate(v, lang, depth + 1) for k, v in fields.items()}
    return _FIELD.sub(lambda m: fields.get(m.group(1), m.group(0)), dst)


def translate(text: str, lang: str | None = None) -> str:
    """``text`` in ``lang`` (default: ``language()``); English, and text the catalogue does not know, as is."""
    lang = lang or _state["lang"]
    if lang == "en" or not isinstance(text, str):
        return text
    return _translate(text, lang)


def known(text: str, lang: str = "zh_CN") -> bool:
    """The catalogue translates this text (the tests' coverage check)."""
    return not untranslated(text, lang)


_DATA = re.compile(r"^(?:[\W\d_]*|[\w.\-/:\\]+|'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\(.*\)|<[^>]*>.*)$", re.S)


def untranslated(text: str, lang: str = "zh_CN", depth: int = 0) -> list[str]:
    """The parts of ``text`` that would stay English: the whole text when no entry matches it, else the free-text
    fields of its template that are words (not a number, an identifier, a path, a quoted or bracketed value)
    and that the catalogue does not translate either."""
    cat = catalogue(lang)
    if cat is None:
        return [text]
    hit = cat.find_kind(text)
    if hit is None:
        return [text]
    if depth > 4:
        return []
    out = []
    _, fields, kinds = hit
    for k, v in fields.items():
        if kinds.get(k) or _DATA.match(v.strip()) or " " not in v.strip():
            continue
        out += untranslated(v, lang, depth + 1)
    return out
