"""``compactscope cache``: what the workspace cache holds, and emptying or pruning it.

    compactscope cache [--json]          folder, sessions, stored files, bytes on disk, the cap
    compactscope cache --prune [--max SIZE]   remove the least recently used sessions down to the cap
    compactscope cache --clear           remove every session and stored file

Headless: never imports Qt. Recordings and error reports beside the sessions are never touched.
"""
from __future__ import annotations


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    p = sub.add_parser("cache", help="see, prune or empty the workspace cache (persisted results, transcripts)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--clear", action="store_true", help="remove every cached session and stored file")
    what.add_argument("--prune", action="store_true",
                      help="remove the least recently used sessions until the cache fits under the cap")
    p.add_argument("--max", metavar="SIZE", help="with --prune: the cap for this prune (e.g. 500MB; default: "
                                                 "COMPACTSCOPE_CACHE_MAX or 2GB)")
    p.add_argument("--json", action="store_true", help="one JSON object")

    def cmd_cache(args) -> int:
        from compactscope.core.files import cache
        cap = None
        if args.max is not None:
            if not args.prune:
                raise CliError("--max goes with --prune")
            try:
                cap = cache.parse_size(args.max)
            except ValueError as e:
                raise CliError(f"--max: {e}") from None
        done = None
        if args.clear:
            done = cache.clear()
        elif args.prune:
            done = cache.prune(cap=cap)
        u = cache.usage()
        if args.json:
            d = u.to_json()
            if done is not None:
                d["removed"] = {"sessions": done.sessions_removed, "stored_files": done.objects_removed,
                                "bytes_before": done.bytes_before, "bytes_after": done.bytes_after}
            print_json(d)
            return 0
        if done is not None:
            print(f"{'cleared' if args.clear else 'pruned'}: {done.sessions_removed:,} session(s) and "
                  f"{done.objects_removed:,} stored file(s) removed, {cache.human(done.bytes_before)} -> "
                  f"{cache.human(done.bytes_after)}")
        print("\n".join(u.lines()))
        return 0

    p.set_defaults(fn=cmd_cache)
