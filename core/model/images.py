"""Images in messages: what one costs in tokens, and what it is (media type, pixel size), read
from the base64 header without decoding the whole picture. Pure Python, no Qt.

Anthropic's published rule (vision docs): an image costs about ``width * height / 750`` tokens;
one whose long edge is over 1,568 pixels, or that would cost more than about 1,600 tokens, is first
scaled down (aspect kept) until it fits both, so no image costs more than about 1,600 tokens. When
the dimensions cannot be read (a URL or file source, an unknown format, broken data) the figure is
``FALLBACK_TOKENS`` = 1,600, the most one image can cost, so an estimate never understates it.
"""
from __future__ import annotations

import base64
import binascii
import math
import struct

from ..runtime.record import record
from ..files.jsonio import dict_at

MAX_EDGE = 1568
MAX_TOKENS = 1600
PIXELS_PER_TOKEN = 750
FALLBACK_TOKENS = MAX_TOKENS
HEADER_B64 = 64 * 1024          # base64 characters decoded to find the dimensions (JPEG SOF can be late)


@record(frozen=True)
class ImageInfo:
    media_type: str | None
    width: int | None
    height: int | None
    data_chars: int                 # base64 characters (0 for a URL or file source)
    tokens: int
    rule: str                       # how ``tokens`` was found, in words

    @property
    def bytes(self) -> int:
        return self.data_chars * 3 // 4

    def describe(self) -> str:
        dims = f"{self.width}x{self.height}" if self.width and self.height else "size unknown"
        kb = f", {self.bytes / 1024:,.0f} KB" if self.data_chars else ""
        return f"{self.media_type or 'image'} · {dims}{kb} · ~{self.tokens:,} tokens"


def is_image(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "image"


def tokens_for(width: int, height: int) -> int:
    """Anthropic's rule: scale into 1,568 px on the long edge and ~1,600 tokens, then w*h/750."""
    if width <= 0 or height <= 0:
        return FALLBACK_TOKENS
    scale = min(1.0, MAX_EDGE / max(width, height), math.sqrt(MAX_TOKENS * PIXELS_PER_TOKEN / (width * height)))
    w, h = max(1, int(width * scale)), max(1, int(height * scale))
    return min(MAX_TOKENS, max(1, math.ceil(w * h / PIXELS_PER_TOKEN)))


def dimensions(head: bytes) -> tuple[str, int, int] | None:
    """(format, width, height) from the first bytes of a PNG, JPEG, GIF or WebP file."""
    try:
        if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
            w, h = struct.unpack(">II", head[16:24])
            return "png", w, h
        if head[:6] in (b"GIF87a", b"GIF89a"):
            w, h = struct.unpack("<HH", head[6:10])
            return "gif", w, h
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
            kind = head[12:16]
            if kind == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
                w, h = struct.unpack("<HH", head[26:30])
                return "webp", w & 0x3FFF, h & 0x3FFF
            if kind == b"VP8L" and head[20] == 0x2F:
                b = head[21:25]
                w = 1 + (((b[1] & 0x3F) << 8) | b[0])
                h = 1 + (((b[3] & 0x0F) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6))
                return "webp", w, h
            if kind == b"VP8X":
                w = 1 + int.from_bytes(head[24:27], "little")
                h = 1 + int.from_bytes(head[27:30], "little")
                return "webp", w, h
        if head[:2] == b"\xff\xd8":
            i = 2
            while i + 9 < len(head):
                if head[i] != 0xFF:
                    i += 1
                    continue
                marker = head[i + 1]
                if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                    i += 1 if marker == 0xFF else 2
                    continue
                length = struct.unpack(">H", head[i + 2:i + 4])[0]
                if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                    h, w = struct.unpack(">HH", head[i + 5:i + 9])
                    return "jpeg", w, h
                i += 2 + length
    except (struct.error, IndexError):
        return None
    return None


def _head_bytes(data: str) -> bytes:
    part = data[:HEADER_B64]
    part = part[:len(part) - len(part) % 4]
    try:
        return base64.b64decode(part, validate=False)
    except (binascii.Error, ValueError):
        return b""


_CACHE: dict[int, tuple] = {}


def info(block) -> ImageInfo:
    """What an image block is and costs (cached by the block's identity: blocks are immutable in core)."""
    hit = _CACHE.get(id(block))
    if hit is not None and hit[0] is block:
        return hit[1]
    src = dict_at(block, "source") if isinstance(block, dict) else {}
    media = src.get("media_type") if isinstance(src.get("media_type"), str) else None
    raw = src.get("data")
    data = raw if src.get("type") == "base64" and isinstance(raw, str) else ""
    dims = dimensions(_head_bytes(data)) if data else None
    if dims is not None and dims[1] > 0 and dims[2] > 0:
        _, w, h = dims
        res = ImageInfo(media or f"image/{dims[0]}", w, h, len(data), tokens_for(w, h),
                        f"{w}x{h} px: Anthropic's rule, (scaled into {MAX_EDGE} px and ~{MAX_TOKENS:,} tokens) "
                        f"w*h/{PIXELS_PER_TOKEN}")
    else:
        why = "a URL or file source" if not data else "dimensions not readable from the data"
        res = ImageInfo(media, None, None, len(data), FALLBACK_TOKENS,
                        f"{why}: the fixed {FALLBACK_TOKENS:,} tokens (the most one image can cost)")
    if len(_CACHE) > 10_000:
        _CACHE.clear()
    _CACHE[id(block)] = (block, res)
    return res


def forget() -> None:
    """Drop the cached image figures (a long-lived fleet worker, between sessions: the cache holds its blocks)."""
    _CACHE.clear()


def images_in(message) -> list:
    """The image blocks of a message, those inside tool results too."""
    out: list = []
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return out
    for b in content:
        if is_image(b):
            out.append(b)
        elif isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("content"), list):
            out.extend(c for c in b["content"] if is_image(c))
    return out


def size_adjustment(message, repr_len_of=repr) -> int:
    """What the images of a message add to its size beyond ``4 x tokens`` chars: subtract this from
    ``len(repr(message))`` so an image counts as its tokens (x 4 chars), not its base64 text."""
    adj = 0
    for b in images_in(message):
        adj += len(repr_len_of(b)) - 4 * info(b).tokens
    return adj
