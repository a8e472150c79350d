"""Fill or check the zh_CN catalogue of the window's strings.

    python assets/i18n/fill_ts.py            # lupdate the sources into the .ts, then lrelease it into the .qm
    python assets/i18n/fill_ts.py --check    # exit 1 if a string is unfinished or the .qm is older than the .ts

The .ts (Qt Linguist's format) is the source of the translations: edit it with ``pyside6-linguist`` or by hand,
then run this script. ``lupdate`` keeps every translation already there and adds new strings as unfinished;
this script never invents a translation.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TS = HERE / "compactscope_zh_CN.ts"
QM = HERE / "compactscope_zh_CN.qm"


def tool(name: str) -> str:
    exe = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(exe).exists():
        raise SystemExit(f"{name} not found: it comes with PySide6 (pip install PySide6-Essentials)")
    return exe


def update() -> None:
    sources = sorted(str(p.relative_to(ROOT)) for d in ("app", "widgets") for p in (ROOT / d).glob("*.py"))
    subprocess.run([tool("pyside6-lupdate"), *sources, "-target-language", "zh_CN", "-no-obsolete",
                    "-locations", "none", "-ts", str(TS)], cwd=ROOT, check=True)


def release(out: Path = QM) -> None:
    subprocess.run([tool("pyside6-lrelease"), str(TS), "-qm", str(out)], check=True, capture_output=True)


def unfinished(ts: Path = TS) -> list[str]:
    root = ET.parse(ts).getroot()
    out = []
    for m in root.iter("message"):
        t = m.find("translation")
        if t is None or t.get("type") in ("unfinished", "vanished", "obsolete") or not (t.text or "").strip():
            out.append(m.findtext("source") or "")
    return out


def main(argv: list[str]) -> int:
    if "--check" in argv:
        missing = unfinished()
        for s in missing:
            print(f"unfinished: {s!r}")
        return 1 if missing else 0
    update()
    missing = unfinished()
    release()
    print(f"{TS.name}: {len(missing)} unfinished; wrote {QM.name}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
