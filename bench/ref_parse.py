"""The reference of ``bench/bench_run.py``: a bare parse of a JSONL file, what the machine does with it at the least.

    python bench/ref_parse.py FILE            # parse FILE, print what it kept and the CPU it took
    python bench/ref_parse.py --messages 300  # a generated session of that many messages (the smoke size)
    python bench/ref_parse.py FILE --no-gc    # the same with the cyclic GC off (as the loader itself runs)

Exactly this, in a fresh interpreter with its default settings (the cyclic GC on, unless ``--no-gc``): read the
file in binary, one line at a time; ``orjson.loads`` each non-blank line and keep every record in a list; and
keep the size of each message (issue 27: "orjson per line plus the size of each message"): ``len(repr(m))`` of
the record's ``message`` (the per-message figure of the size estimator, ``len(str(messages))``, without its
cache), the line's length in bytes for a record without one. Nothing is written. ``bench_run.py`` runs this script as a child process, so its figure includes the interpreter's
start and the import of orjson, as the command's does. Prints the records, the bytes and the CPU seconds
(user + system of this process); asserts nothing.
"""
from __future__ import annotations

import argparse
import gc
import resource
import sys
import tempfile
from pathlib import Path

import orjson


def bare_parse(path: str) -> tuple[list, list]:
    """Every line's record and the size of its message (blank lines skipped)."""
    records: list = []
    sizes: list = []
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                rec = orjson.loads(line)
                records.append(rec)
                m = rec.get("message") if isinstance(rec, dict) else None
                sizes.append(len(repr(m)) if m is not None else len(line))
    return records, sizes


def cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--messages", type=int, help="parse a generated Claude Code session of this many messages")
    ap.add_argument("--no-gc", action="store_true", help="turn the cyclic garbage collector off first")
    args = ap.parse_args()
    if args.no_gc:
        gc.disable()
    path = args.file
    if path is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_memory import write_session
        path = str(Path(tempfile.mkdtemp(prefix="cs-ref-parse-")) / "session.jsonl")
        write_session(Path(path), args.messages or 300)
    t0 = cpu()
    records, sizes = bare_parse(path)
    if args.file is None:
        import shutil
        shutil.rmtree(Path(path).parent, ignore_errors=True)
    print(f"bare parse: {len(records):,} records, messages of {sum(sizes) / 1e6:.1f} M chars, {cpu() - t0:.3f} s CPU "
          f"({cpu():.3f} s with the interpreter's start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
