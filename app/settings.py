"""Settings kept with QSettings: window layout, recent files, zoom, palette, strategy, parameters.

Organisation and application names are fixed so tests can isolate them with
``QSettings.setPath(..., tmp_path)``.
"""
from __future__ import annotations

from typing import Any

import json
import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

ORG = "Compactscope"
APP = "compactscope"
MAX_RECENT = 10


# A file name that is not valid UTF-8 (bytes Python keeps as lone surrogates) cannot go into QSettings as it
# is (Qt drops the surrogate, so the entry would name another file): it is kept as its bytes in hex.
_BYTES = "fs-bytes:"


def _to_stored(name: str) -> str:
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return _BYTES + os.fsencode(name).hex()


def _from_stored(value: str) -> str:
    if value.startswith(_BYTES):
        try:
            return os.fsdecode(bytes.fromhex(value[len(_BYTES):]))
        except ValueError:
            return value
    return value


class Settings:
    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.q = QSettings(ORG, APP)

    def value(self, key: str, default=None):
        v = self.q.value(key, default)
        return default if v is None else v

    def set(self, key: str, value) -> None:
        if self.enabled:
            self.q.setValue(key, value)

    # recent files, and recent plugin strategies (specs such as /path/mine.py:compact)
    def _recent(self, key: str) -> list[str]:
        raw: Any = self.q.value(key, [])
        if isinstance(raw, str):
            raw = [raw]
        return [_from_stored(str(p)) for p in (raw or []) if p]

    def _add_recent(self, key: str, item: str) -> list[str]:
        items = [item] + [x for x in self._recent(key) if x != item]
        self.set(key, [_to_stored(x) for x in items[:MAX_RECENT]])
        return items[:MAX_RECENT]

    def recent_files(self) -> list[str]:
        return self._recent("recent_files")

    def add_recent(self, path: str) -> list[str]:
        return self._add_recent("recent_files", str(Path(path).resolve()))

    def clear_recent(self) -> None:
        self.set("recent_files", [])

    def recent_strategies(self) -> list[str]:
        return self._recent("recent_strategies")

    def add_recent_strategy(self, spec: str) -> list[str]:
        return self._add_recent("recent_strategies", spec)

    def clear_recent_strategies(self) -> None:
        self.set("recent_strategies", [])

    # layout
    def save_layout(self, geometry: QByteArray, state: QByteArray, splitter: QByteArray | None = None) -> None:
        self.set("window/geometry", geometry)
        self.set("window/state", state)
        if splitter is not None:
            self.set("window/splitter", splitter)

    def layout(self) -> tuple:
        return self.q.value("window/geometry"), self.q.value("window/state"), self.q.value("window/splitter")

    # typed helpers
    def zoom(self) -> float:
        try:
            return float(self.value("view/zoom", 0.0))
        except (TypeError, ValueError):
            return 0.0

    def dark(self) -> bool:
        return str(self.value("view/dark", "false")).lower() in ("true", "1")

    def params(self, strategy: str) -> dict:
        raw = self.value(f"params/{strategy}", "")
        try:
            d = json.loads(raw) if raw else {}
        except (TypeError, ValueError):
            return {}
        return d if isinstance(d, dict) else {}

    def set_params(self, strategy: str, params: dict) -> None:
        self.set(f"params/{strategy}", json.dumps(params, default=str))

    def sync(self) -> None:
        if self.enabled:
            self.q.sync()
