"""A headless command imports only what it needs: no Qt, numpy, API client, tokenizer or fleet engine for a
plain run, check or info on a small file (issue 27; the start-up time itself is bench/bench_startup.py's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "PySide6", "anthropic", "tiktoken", "pyarrow", "dask", "distributed", "pyqtgraph")
SMALL = [ROOT / "assets" / "examples" / "short_session.json", ROOT / "assets" / "examples" / "cc_real_compaction.jsonl"]

# runs the command in this interpreter, then prints the heavy top-level modules it imported (stdout: the command's)
PROBE = """
import io, json, os, sys
from contextlib import redirect_stdout
from compactscope.app.cli import main
with redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(os.environ['CS_HEAVY'])))
ours = sorted(m for m in sys.modules if m.startswith('compactscope.') or m in json.loads(os.environ['CS_WATCH']))
sys.stderr.write('\\nRESULT ' + json.dumps({'code': code, 'heavy': heavy, 'modules': ours}) + '\\n')
"""
# stdlib modules a headless command loads only when it needs them (watched by the probe beside our own)
WATCH = ("hashlib", "traceback", "importlib.metadata", "orjson", "email", "subprocess", "pickle")


def _imports(argv: list[str], tmp_path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "CS_HEAVY": json.dumps(HEAVY),
           "CS_WATCH": json.dumps(WATCH)}
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=env)
    line = [x for x in r.stderr.splitlines() if x.startswith("RESULT ")]
    assert line, r.stderr[-2000:]
    return json.loads(line[-1][len("RESULT "):])


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.name)
@pytest.mark.parametrize("command", [["run", "{f}", "--json"], ["check", "{f}"], ["info", "{f}"],
                                     ["info", "{f}", "--json"]], ids=lambda c: " ".join(c).replace("{f}", "FILE"))
def test_a_headless_command_does_not_import_heavy_modules(command, path, tmp_path):
    got = _imports([a.replace("{f}", str(path)) for a in command], tmp_path)
    assert got["code"] in (0, 1)
    assert got["heavy"] == []


def test_the_plugin_machinery_is_not_imported_for_a_built_in_strategy(tmp_path):
    probe = ("import sys; from compactscope.core.pipeline.engine import Engine; Engine('s08'); "
             "print(sorted(m for m in sys.modules if m.endswith(('plugin', 'plugin_worker')) or m == 'subprocess'))")
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


# ------------------------------------------------------------------ what each command imports (issue 27)
def _modules(argv: list[str], tmp_path) -> set[str]:
    got = _imports(argv, tmp_path)
    assert got["code"] in (0, 1)
    return set(got["modules"])


def _no_entry_point_declared() -> bool:
    from compactscope.core.strategies.entry import declared_anywhere
    return not declared_anywhere()


@pytest.mark.parametrize("argv", [["strategies"], ["strategies", "--json"]], ids=" ".join)
def test_strategies_lists_the_built_ins_without_importing_a_layer(argv, tmp_path):
    mods = _modules(argv, tmp_path)
    assert not {m for m in mods if m.startswith(("compactscope.core.layers", "compactscope.core.pipeline"))}
    assert not mods & {"compactscope.core.strategies.base", "compactscope.core.strategies.s08",
                       "compactscope.core.strategies.plugin", "subprocess", "pickle"}
    assert ("orjson" in mods) == ("--json" in argv)          # the text is written without it
    if _no_entry_point_declared():
        assert "importlib.metadata" not in mods and "email" not in mods


def test_run_imports_neither_view_helpers_nor_hashing_nor_the_plugin_machinery(tmp_path):
    mods = _modules(["run", str(SMALL[1]), "--json"], tmp_path)
    assert "compactscope.core.layers.claude_code" in mods and "compactscope.core.analysis.pairs" in mods
    assert not mods & {"compactscope.core.analysis.present", "hashlib", "traceback", "importlib.metadata",
                       "compactscope.core.strategies.plugin", "subprocess", "pickle"}
    assert not {m for m in mods if m.startswith("compactscope.app.") and m not in (
        "compactscope.app.cli", "compactscope.app.cli_common", "compactscope.app.cli_lang")}


@pytest.mark.parametrize("argv", [["info", "{f}"], ["info", "{f}", "--json"], ["check", "{f}"]], ids=" ".join)
def test_info_and_check_import_no_strategy_or_pipeline(argv, tmp_path):
    mods = _modules([a.replace("{f}", str(SMALL[1])) for a in argv], tmp_path)
    assert "compactscope.core.loaders.claude_code" in mods
    assert not {m for m in mods if m.startswith(("compactscope.core.layers.", "compactscope.core.pipeline."))
                and m != "compactscope.core.layers.codex_rules"}
    assert not mods & {"compactscope.core.strategies.base", "hashlib", "importlib.metadata"}


def test_the_stored_catalogue_is_what_the_strategies_say():
    """catalogue.json is what ``strategies`` lists for the built-ins: after changing one, write it again with
    ``python -m compactscope.core.strategies.catalogue``."""
    from compactscope.core.strategies import builtin, catalogue
    stored = catalogue.stored()
    assert stored is not None and [d["name"] for d in stored] == builtin()
    assert stored == json.loads(json.dumps(catalogue.live())), \
        "stale core/strategies/catalogue.json: python -m compactscope.core.strategies.catalogue"


def test_strategies_without_the_catalogue_describe_them_live(tmp_path, monkeypatch, capsys):
    from compactscope.app.cli import main
    from compactscope.core.strategies import catalogue
    assert main(["strategies", "--json"]) == 0
    stored = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(catalogue, "FILE", tmp_path / "missing.json")
    assert catalogue.stored() is None
    assert main(["strategies", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == stored


def test_entry_points_are_looked_for_before_importlib_metadata_is_imported(tmp_path, monkeypatch):
    import importlib.metadata as md
    from compactscope.core.strategies import entry
    def theirs():
        return {ep.name: ep.value for ep in md.entry_points(group=entry.ENTRY_POINT_GROUP)}
    assert {k: v.value for k, v in entry.entry_points().items()} == theirs()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert {k: v.value for k, v in entry.entry_points().items()} == theirs()      # a folder without one
    dist = tmp_path / "acme_x-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-x\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[compactscope.strategies]\nacme = acme_x:trim\n")
    assert entry.declared_anywhere()
    assert {k: v.value for k, v in entry.entry_points().items()} == theirs() and "acme" in theirs()


def test_a_lazy_module_is_the_module_after_its_first_use():
    from compactscope.core.runtime.lazy import LazyModule, lazy_module
    ns: dict = {}
    ns["colorsys"] = lazy_module("colorsys", ns)
    assert isinstance(ns["colorsys"], LazyModule)
    assert ns["colorsys"].rgb_to_hsv(1, 0, 0) == (0.0, 1.0, 1)
    import colorsys
    assert ns["colorsys"] is colorsys


def test_one_subcommand_parser_reads_the_same_options():
    from compactscope.app.cli import build_parser
    for argv in (["run", "f.json", "--json", "--set", "a=1", "--segment", "0"], ["info", "f", "--json"],
                 ["check", "f", "--strategy", "s08"], ["strategies", "s08", "--markdown"]):
        assert vars(build_parser(argv[0]).parse_args(argv)) == vars(build_parser().parse_args(argv))


def test_building_the_parser_compiles_no_secret_shape_and_scrubbing_still_finds_them(tmp_path):
    """Every command builds the whole parser, and the proxy's lists the credential shapes by name: the shapes'
    regexes (15-25 ms to compile) are compiled when something is scrubbed, not at start-up."""
    probe = ("import sys\n"
             "from compactscope.app.cli import build_parser\n"
             "build_parser()\n"
             "from compactscope.core.live import secret_scrub as s\n"
             "print(sum('compiled' in vars(x.pattern) for x in s.SHAPES.values()))\n"
             "sc = s.Scrubber()\n"
             "print(sc.text('key sk-ant-abcdefgh12345678 and AKIAABCDEFGHIJKLMNOP'))\n"
             "print(sum('compiled' in vars(x.pattern) for x in s.SHAPES.values()) > 0)\n")
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr[-2000:]
    compiled_at_start, scrubbed, compiled_after = r.stdout.strip().splitlines()
    assert compiled_at_start == "0"
    assert "sk-ant-" not in scrubbed and "AKIA" not in scrubbed and scrubbed.count("[redacted]") == 2
    assert compiled_after == "True"
