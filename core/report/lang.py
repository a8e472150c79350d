"""A report in the language of the run (``core.i18n.language()``: ``--lang``, the locale, the window's).

The renderers write English; ``localized(out, fmt)`` wraps the stream they write to so that every text the
report says in its own words is translated by the core catalogue (core/i18n/i18n_zh_CN.json), the mechanism the window
and the CLI use: in HTML each text node (between tags), in Markdown each line outside code fences. What the
transcript holds is left as it is: HTML inside ``<pre>``, ``<code>``, ``<script>``, ``<style>`` and previews
(``class="pv"``), Markdown inside fences and quotes. English needs no wrapper (``localized`` returns ``out``).
"""
from __future__ import annotations

import html
import re

from ..i18n.catalog import language, translate

_TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)([^>]*)>")
_RAW = ("pre", "code", "script", "style", "textarea")


class _HtmlText:
    """Translates text nodes as chunks are written (a text node is never split between two writes: every
    renderer writes whole elements)."""

    def __init__(self, out, lang: str):
        self.out, self.lang = out, lang
        self.raw = 0              # inside <pre>, <code>, ...: the transcript's
        self.pv: list[bool] = []  # open <span>s, True for a preview (class="pv")

    def _text(self, text: str) -> str:
        if self.raw or any(self.pv) or not text.strip():
            return text
        plain = html.unescape(text)
        core = plain.strip()
        said = translate(core, self.lang)
        if said == core:
            return text
        lead, tail = plain[:len(plain) - len(plain.lstrip())], plain[len(plain.rstrip()):]
        return html.escape(lead + said + tail, quote=False)

    def write(self, chunk: str) -> int:
        out, pos = [], 0
        for m in _TAG.finditer(chunk):
            out.append(self._text(chunk[pos:m.start()]))
            out.append(m.group(0))
            closing, name = m.group(1) == "/", m.group(2).lower()
            if name in _RAW:
                self.raw = max(0, self.raw + (-1 if closing else 1))
            elif name == "span" and not m.group(0).endswith("/>"):
                if closing:
                    if self.pv:
                        self.pv.pop()
                else:
                    self.pv.append('class="pv"' in m.group(3))
            pos = m.end()
        out.append(self._text(chunk[pos:]))
        text = "".join(out)
        if self.lang.startswith("zh"):
            text = text.replace('<html lang="en">', '<html lang="zh-CN">')
        self.out.write(text)
        return len(chunk)

    def __getattr__(self, name):
        return getattr(self.out, name)


class _MarkdownLines:
    """Translates each line outside code fences: the whole line, else its text after "#", "-", "|" cells."""

    def __init__(self, out, lang: str):
        self.out, self.lang, self.buf, self.fence = out, lang, "", False

    def _line(self, line: str) -> str:
        if line.lstrip().startswith("```"):
            self.fence = not self.fence
            return line
        if self.fence or line.lstrip().startswith(">") or not line.strip():
            return line
        if line.lstrip().startswith("|"):
            return "|".join(self._cell(c) for c in line.split("|"))
        m = re.match(r"^(\s*(?:#+ |- |\* |\d+\. )?)(.*?)(\s*)$", line, re.S)
        return m.group(1) + self._cell(m.group(2)) + m.group(3) if m is not None else line

    def _cell(self, text: str) -> str:
        core = text.strip()
        if not core:
            return text
        said = translate(core, self.lang)
        return text.replace(core, said, 1) if said != core else text

    def write(self, chunk: str) -> int:
        self.buf += chunk
        if "\n" in self.buf:
            *lines, self.buf = self.buf.split("\n")
            self.out.write("".join(self._line(line) + "\n" for line in lines))
        return len(chunk)

    def flush(self) -> None:
        if self.buf:
            self.out.write(self._line(self.buf))
            self.buf = ""

    def __getattr__(self, name):
        return getattr(self.out, name)


def localized(out, fmt: str = "html", lang: str | None = None):
    """``out`` for a renderer writing ``fmt`` in ``lang`` (default: the run's language)."""
    lang = lang or language()
    if lang == "en":
        return out
    return _MarkdownLines(out, lang) if fmt == "md" else _HtmlText(out, lang)
