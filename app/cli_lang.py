"""The text commands in the user's language: ``--lang en|zh_CN`` on every subcommand, else the system's locale
(``LC_ALL``, ``LC_MESSAGES``, ``LANG``, as gettext reads them), else English.

Qt-free. The words come from the core catalogue (``core.i18n``, core/i18n/i18n_zh_CN.json), the one the window uses for
the core's texts: ``install(lang)`` sets the core's language (the offline summary is written in it too) and, for a
language other than English, puts a ``TranslatingStream`` over stdout and stderr, which translates each line as it
is written: the whole line when the catalogue knows it, else its text after the indentation and a leading "- " or
"compactscope: ". JSON output (``--json``, ``--format json``) is never translated: keys and values are identifiers
and figures a program reads. Numbers, ids, paths and the transcript's own text pass through as they are.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from compactscope.core.i18n import catalog as i18n

LANGS = ("en", "zh_CN")
_LEAD = re.compile(r"^(\s*(?:compactscope: (?:warning: |note: )?)?(?:- |\u2022 )?)(.*?)(\s*)$", re.S)


def normalise(lang: str | None) -> str | None:
    """"zh", "zh_CN.UTF-8", "zh-Hans" -> "zh_CN"; "C", "POSIX", "en_GB" -> "en"; anything else: None."""
    if not lang:
        return None
    base = str(lang).split(".")[0].split("@")[0].replace("-", "_")
    if base.lower().startswith("zh"):
        return "zh_CN"
    if base in ("C", "POSIX") or base.lower().startswith("en"):
        return "en"
    return None


def system_language(environ=None) -> str:
    """The locale's language as gettext finds it: the first of LC_ALL, LC_MESSAGES, LANG that is set."""
    env = os.environ if environ is None else environ
    for key in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if env.get(key):
            return normalise(env[key]) or "en"
    return "en"


def add_lang(sub) -> None:
    """``--lang`` on every subcommand that does not have one yet (``lessons`` and ``lesson`` do)."""
    for p in dict.fromkeys(sub.choices.values()):
        if "--lang" not in p._option_string_actions:
            p.add_argument("--lang", default=None, metavar="LANG",
                           help="the language of the output: en or zh_CN (default: the system's locale)")


def resolve(args) -> str:
    """The language of this command: ``--lang``, else the locale. A ``--lang`` we do not speak is an error."""
    given = getattr(args, "lang", None)
    if given:
        lang = normalise(given)
        if lang is None:
            raise argparse.ArgumentTypeError(f"--lang is one of {', '.join(LANGS)}, not {given!r}")
        return lang
    return system_language()


def translate_line(line: str, lang: str) -> str:
    """One line of output in ``lang``: the whole line, else its text after the lead ("  ", "- ", "compactscope: ")."""
    if not line.strip():
        return line
    whole = i18n.translate(line, lang)
    if whole != line:
        return whole
    m = _LEAD.match(line)
    lead, body, tail = m.group(1), m.group(2), m.group(3)
    if not body:
        return line
    if lead.strip().startswith("compactscope:"):
        for word in ("warning: ", "note: "):
            lead = lead.replace(word, i18n.translate(word, lang))
    return lead + i18n.translate(body, lang) + tail


class TranslatingStream:
    """A text stream that writes each complete line translated (``translate_line``); what follows the last
    newline waits for the next write, ``flush`` or the end of the command."""

    def __init__(self, inner, lang: str):
        self.inner, self.lang, self._buf = inner, lang, ""

    def write(self, text: str) -> int:
        self._buf += text
        if "\n" in self._buf:
            *lines, self._buf = self._buf.split("\n")
            self.inner.write("".join(translate_line(line, self.lang) + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._buf:
            self.inner.write(translate_line(self._buf, self.lang))
            self._buf = ""
        self.inner.flush()

    def __getattr__(self, name):           # encoding, isatty, fileno, reconfigure...: the real stream's
        return getattr(self.inner, name)


def wants_json(args) -> bool:
    """The command writes a document for a program on stdout (JSON, or a report to '-'): stdout stays as it is."""
    return bool(getattr(args, "json", False)) or getattr(args, "format", None) == "json" \
        or getattr(args, "output", None) == "-"


def install(lang: str, json_out: bool = False) -> None:
    """Speak ``lang`` for the rest of the command (see the module's text)."""
    i18n.set_language(lang)
    if lang == "en":
        return
    if not json_out and not isinstance(sys.stdout, TranslatingStream):
        sys.stdout = TranslatingStream(sys.stdout, lang)
    if not isinstance(sys.stderr, TranslatingStream):
        sys.stderr = TranslatingStream(sys.stderr, lang)


def uninstall() -> None:
    """Back to the real streams (the end of the command: what is buffered is written)."""
    for name in ("stdout", "stderr"):
        s = getattr(sys, name)
        if isinstance(s, TranslatingStream):
            s.flush()
            setattr(sys, name, s.inner)
    i18n.set_language("en")


def width(text: str) -> int:
    """Columns on a terminal: a Chinese character takes two."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, n: int, right: bool = False) -> str:
    fill = " " * max(0, n - width(text))
    return fill + text if right else text + fill


RUN_COLUMNS = (("layer", 22, False), ("changed", 9, False), ("size before", 12, True), ("size after", 12, True),
               ("tok after", 11, True))


def run_header() -> str:
    """The header of ``run``'s table, in the command's language."""
    t = i18n.translate
    return "".join(pad(t(name), n, right) for name, n, right in RUN_COLUMNS) + "  " + t("what happened")


def run_row(step, strategy=None) -> str:
    """A step of ``run``'s table: the layer (its name, the identifier --order takes), whether it changed, the sizes,
    and what happened; in another language than English the layer's display name leads what happened."""
    t = i18n.translate
    what = step.explain()
    if i18n.language() != "en":
        label = next((la.label for la in getattr(strategy, "layers", ()) if la.name == step.layer and la.label), "")
        what = (t(label) + "\uff1a" if label else "") + t(what)
    cells = (step.layer, t("yes" if step.changed else "no"), f"{step.size_before:,}", f"{step.size_after:,}",
             f"{step.tokens_after:,}")
    return "".join(pad(c, n, right) for c, (_, n, right) in zip(cells, RUN_COLUMNS, strict=True)) + "  " + what
