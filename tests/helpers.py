"""Small builders for test conversations (Anthropic dialect)."""
from __future__ import annotations

import struct
import time
import zlib


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tu(*ids, name="bash"):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": name, "input": {"command": "ls"}}
                                             for i in ids]}


def tr(*ids, content="x" * 200):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": content} for i in ids]}


def worked_example():
    """Seed 000's example: 12 messages, tool_use at 2 and 6, tool_result at 3 and 7."""
    return [u("0"), a("1"), tu("t2"), tr("t2"), u("4"), a("5"), tu("t6"), tr("t6"), u("8"), a("9"), u("10"), a("11")]


def deflated_zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip archive (bytes) from already-deflated members: (name, compressed data, crc, declared size). Written
    by hand so that a bomb's members need no decompression to build."""
    out, central = b"", b""
    for name, data, crc, size in members:
        n = name.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), size, len(n), 0) + n + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(data), size, len(n),
                               0, 0, 0, 0, 0, offset) + n
    return out + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                                       len(out), 0)


def deflated_zeros(mb: int) -> tuple[bytes, int]:
    """``mb`` MiB of zero bytes, raw-deflated, and their CRC-32 (a zip bomb's member)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    data, crc = b"", 0
    for _ in range(mb):
        data += c.compress(chunk)
        crc = zlib.crc32(chunk, crc)
    return data + c.flush(), crc


class BlockingSummarizer:
    """A summarizer that waits until its call is cancelled (``entered`` is set once it waits): the
    window and the engine must stay responsive and stop it."""
    name = "blocking"

    def __init__(self):
        import threading
        self.entered = threading.Event()

    def summarize(self, request, cancel=None):
        from compactscope.core.summarizers import SummaryError, SummaryResult
        self.entered.set()
        if cancel is not None and cancel.wait(20):
            raise SummaryError("cancelled", kind="cancelled")
        return SummaryResult("late", "blocking")


def wait_for(cond, timeout: float = 5.0) -> bool:
    """Poll ``cond`` until it is true or ``timeout`` seconds have passed; its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()
