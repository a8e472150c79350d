"""Make the bundled Chinese font: a subset of Noto Sans CJK SC (SIL Open Font License 1.1, see OFL.txt).

    apt-get download fonts-noto-cjk && dpkg-deb -x fonts-noto-cjk_*.deb /tmp/noto    # Debian's package
    pip install fonttools
    python assets/fonts/make_subset.py [--source /tmp/noto/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc]

The subset keeps the glyphs for: the 3,755 characters of GB 2312 level 1 (the common Simplified Chinese set),
CJK punctuation and full-width forms, and every character the window's catalogue (assets/i18n/*.ts), the core
catalogue (core/i18n/i18n_zh_CN.json), the lessons and the bundled examples use. Run it again after adding Chinese
text; tests/test_i18n.py fails when a character of those files has no glyph in the subset. The family is
renamed (the OFL asks a modified font not to take the original's name): "Compactscope CJK SC".
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "NotoSansCJKsc-Regular-subset.otf"
FAMILY = "Compactscope CJK SC"
DEFAULT_SOURCE = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
SC_INDEX_NAME = "Noto Sans CJK SC"


def gb2312_level1() -> set[str]:
    out = set()
    for b1 in range(0xB0, 0xD8):
        for b2 in range(0xA1, 0xFF):
            try:
                out.add(bytes([b1, b2]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return out


def used_characters() -> set[str]:
    texts = []
    for pattern in ("assets/i18n/*.ts", "core/i18n/i18n_*.json", "assets/lessons/*.json", "assets/examples/*.json"):
        for p in sorted(ROOT.glob(pattern)):
            texts.append(p.read_text(encoding="utf-8"))
    return {ch for t in texts for ch in t if ord(ch) > 0x2000}


def wanted() -> set[str]:
    chars = gb2312_level1() | used_characters()
    chars |= {chr(c) for c in range(0x3000, 0x3040)} | {chr(c) for c in range(0xFF00, 0xFF66)}
    chars |= set("\u2018\u2019\u201c\u201d\u2026\u2014\u00b7\u2192\u2190\u2191\u2193")
    return chars


def main(argv=None) -> int:
    from fontTools import subset, ttLib
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="NotoSansCJK-Regular.ttc (or the SC .otf)")
    args = ap.parse_args(argv)
    src = Path(args.source)
    if src.suffix.lower() == ".ttc":
        coll = ttLib.TTCollection(str(src))
        index = next(i for i, f in enumerate(coll.fonts) if f["name"].getDebugName(1) == SC_INDEX_NAME)
        font = ttLib.TTFont(str(src), fontNumber=index)
    else:
        font = ttLib.TTFont(str(src))
    chars = wanted()
    opts = subset.Options()
    opts.layout_features = ["*"]
    opts.name_IDs = ["*"]
    opts.hinting = False
    opts.notdef_outline = True
    sub = subset.Subsetter(opts)
    sub.populate(unicodes=[ord(c) for c in chars])
    sub.subset(font)
    name = font["name"]
    for rec in list(name.names):
        if rec.nameID in (1, 16):
            rec.string = FAMILY
        elif rec.nameID == 4:
            rec.string = f"{FAMILY} Regular"
        elif rec.nameID == 6:
            rec.string = re.sub(r"\W", "", FAMILY) + "-Regular"
        elif rec.nameID == 3:
            rec.string = f"{FAMILY} Regular subset of {SC_INDEX_NAME}"
    if "CFF " in font:
        cff = font["CFF "].cff
        cff.fontNames = [re.sub(r"\W", "", FAMILY) + "-Regular"]
    font.save(str(OUT))
    cmap = font.getBestCmap()
    han = sum(1 for c in cmap if 0x4E00 <= c <= 0x9FFF)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes): {len(cmap):,} characters, {han:,} of them Han")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
