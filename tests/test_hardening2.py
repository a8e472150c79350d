"""Hardening, round two (issue 26): credentials of every shape, plugins that never return, unwritable
workdirs, crowded folders, pathological sessions, the proxy under load and faults."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from compactscope.core.loaders import load
from compactscope.core.live.proxy import RecordingProxy
from compactscope.core.live.recorder import RecordingWriter, read_recording, scrub
from compactscope.core.live.secret_scrub import SHAPES, Scrubber, is_secret_name
from tests.fakeapi import FakeAnthropic, message, reply, text_block
from tests.test_proxy_hardening import send, wait_for

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ 1. credentials of every shape
def _j(*parts: str) -> str:
    return "".join(parts)          # fake credentials, assembled so that secret scanners skip this source


AWS_ID = _j("AKIA", "IOSFODNN7", "EXAMPLE")
AWS_SECRET = _j("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY")
GH = _j("ghp_", "a1B2c3D4e5F6g7H8i9J0", "kLmNoPqRsTuVwXyZ12")
GH_PAT = _j("github_pat_", "11ABCDEFG0123456789_", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH")
JWT = _j("eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiIxMjM0NTY3ODkwIn0", ".", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
BEARER_TXT = _j("abc123", "DEF456ghi789")
URL_PW = _j("pg", "Pass", "w0rd")
SK = "-".join(("sk", "proj", "abcdefghijklmnopqrstuvwxyz0123456789AB"))
ACCESS = _j("camel", "Access", "Value", "42")
AUTHT = _j("camel", "Auth", "Value", "43")
REFRESH = _j("refresh", "Value", "44")
SESSION = _j("sess", "Value", "45")
CLIENT_SECRET = _j("client", "Secret", "Value", "46")
API_KEY = _j("body", "Api", "Key", "47")
PW = _j("pa", "ss", "wd", "9")             # a short password field value (7 characters)
HDR_TOKEN = _j("hdr", "apitoken", "value", "48")
SHORT_KEY = _j("k", "3", "y")              # a 3-character x-api-key: kept out however short
URI_PW = _j("uri", "Pass", "49")

TEXT = (f"aws id {AWS_ID}, aws_secret_access_key = {AWS_SECRET}; gh {GH} and {GH_PAT}; jwt {JWT}; "
        f"curl -H 'Authorization: Bearer {BEARER_TXT}' ; db postgres://admin:{URL_PW}@db.local/app; key {SK}")
EVERY_SHAPED = (AWS_ID, AWS_SECRET, GH, GH_PAT, JWT, BEARER_TXT, URL_PW, SK)
EVERY_FIELD = (ACCESS, AUTHT, REFRESH, SESSION, CLIENT_SECRET, API_KEY, PW)


def _body() -> dict:
    return {"model": "m", "max_tokens": 10,
            "metadata": {"accessToken": ACCESS, "authToken": AUTHT, "apiKey": API_KEY, "client_secret": CLIENT_SECRET,
                         "refreshToken": REFRESH, "sessionToken": SESSION, "password": PW, "user_id": "u1"},
            "messages": [{"role": "user", "content": TEXT}]}


def _absolute_post(port: int, body: bytes, headers: dict) -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (f"POST http://bob:{URI_PW}@127.0.0.1:{port}/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\n{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode() + body


def _through_proxy(tmp_path, keep=()) -> tuple[str, object]:
    # the model echoes every credential it was sent: the values dropped with their keys, the headers', the URI's
    echo = message([text_block(f"echo {ACCESS} {AUTHT} {REFRESH} {SESSION} {CLIENT_SECRET} {API_KEY} {PW} "
                               f"{HDR_TOKEN} x {SHORT_KEY} y {URI_PW} {TEXT}")])
    rec_path = tmp_path / "p.jsonl"
    with FakeAnthropic([reply(echo)]) as fake, \
            RecordingWriter(rec_path, source="proxy", keep_shapes=keep) as rec, \
            RecordingProxy(fake.url, port=0, recorder=rec) as proxy:
        out = send(proxy.port, _absolute_post(proxy.port, json.dumps(_body()).encode(),
                                              {"apitoken": HDR_TOKEN, "x-api-key": SHORT_KEY}))
        assert out.startswith(b"HTTP/1.1 200"), out[:300]
        assert wait_for(lambda: proxy.calls == 1)
        assert fake.requests[0]["path"] == "/v1/messages"       # the absolute URI went upstream as a path
    return rec_path.read_text(encoding="utf-8"), read_recording(rec_path).calls[0]


def test_no_credential_of_a_common_shape_reaches_a_recording(tmp_path):
    text, call = _through_proxy(tmp_path)
    for secret in (*EVERY_SHAPED, *EVERY_FIELD, HDR_TOKEN, URI_PW):
        assert secret not in text, secret
    assert f" x {SHORT_KEY} y " not in text                    # the short header value, as a word
    assert call.raw["http"]["path"] == "/v1/messages"
    assert set(call.request["metadata"]) == {"user_id"}          # camelCase and snake_case names dropped
    said = call.request["messages"][0]["content"]
    # what stays is readable: labels kept, values gone
    assert "aws id [redacted]" in said and "Authorization: Bearer [redacted]" in said
    assert "postgres://admin:[redacted]@db.local/app" in said
    summary = call.raw["scrubbed"]
    assert summary["fields"] == {"count": 7, "names": sorted(["accessToken", "authToken", "apiKey", "client_secret",
                                                              "refreshToken", "sessionToken", "password"])}
    # every shape counted in the request and again in the echo; the values never
    shapes = summary["shapes"]
    for name in ("aws_key_id", "aws_secret_key", "jwt", "bearer", "url_password", "openai_key"):
        assert shapes[name] == 2, (name, shapes)
    assert shapes["github_token"] == 4
    assert summary["values"] >= 9                               # the echoed field, header and URI values
    for secret in (*EVERY_SHAPED, *EVERY_FIELD):
        assert secret not in json.dumps(summary)
    assert load(tmp_path / "p.jsonl").main.messages


def test_a_user_keeps_a_shape_on_purpose(tmp_path):
    text, call = _through_proxy(tmp_path, keep=("jwt", "aws_key_id"))
    assert JWT in text and AWS_ID in text                       # kept on purpose
    for secret in (GH, AWS_SECRET, BEARER_TXT, URL_PW, ACCESS):
        assert secret not in text, secret
    assert "jwt" not in call.raw["scrubbed"]["shapes"]
    assert read_recording(tmp_path / "p.jsonl").header["scrub_keeps"] == ["jwt", "aws_key_id"]
    with pytest.raises(ValueError, match="unknown secret shape 'jwtt'"):
        RecordingWriter(tmp_path / "x.jsonl", source="proxy", keep_shapes=["jwtt"])


def test_the_cli_takes_keep_secret_shape_and_refuses_an_unknown_one(capsys):
    from compactscope.app.cli import main
    with pytest.raises(SystemExit) as e:
        main(["proxy", "--keep-secret-shape", "nope"])
    assert e.value.code == 2 and "jwt" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["accessToken", "authToken", "apiKey", "client_secret", "refreshToken",
                                  "sessionToken", "apitoken", "X-Api-Key", "idToken", "password", "pwd",
                                  "GITHUB_TOKEN", "privateKey", "auth"])
def test_credential_names_in_any_case(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["max_tokens", "input_tokens", "budget_tokens", "cache_read_input_tokens",
                                  "tokenizer", "signature", "author", "authors", "stop_sequence", "path"])
def test_ordinary_names_are_kept(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize("text", [
    "the token limit is basic understanding of bearer bonds",
    "see https://example.com:8080/a@b and http://host/x?y=1",
    "task-0123456789abcdefghijklmnopqrstuvwxyz0123 disk-abcdef",
    "AKIA is a prefix; AKIAshort; eyJ alone; ghp_ alone",
    "Authorization header docs: set it to your key",
])
def test_ordinary_text_is_left_alone(text):
    s = Scrubber()
    assert s(text) == text and s.summary() is None


# the newer shapes, each as it is typed (a tool result reading a .env, a config, a shell history): what goes
# is the value, what stays is the label around it
NEW_SHAPES = [
    ("google_api_key", f"maps key {_j('AIza', 'SyD-abcdefghijklmnop', 'qrstuvwxyz01234')} ok", "maps key [redacted] ok"),
    ("google_oauth", f"token {_j('ya29.', 'a0AfH6SMBx1234567890abcdef')}", "token [redacted]"),
    ("google_oauth", f"GOOGLE_CLIENT {_j('GOCSPX-', 'abcdefghij0123456789XY')}", "GOOGLE_CLIENT [redacted]"),
    ("stripe_key", f"charge with {_j('sk_live_', '4eC39HqLyjWDarjtT1zdp7dc')}.", "charge with [redacted]."),
    ("stripe_key", f"{_j('rk_test_', 'abcdefghijklmnop1234')}", "[redacted]"),
    ("gitlab_token", f"git clone with {_j('glpat-', 'xxxxABCDEFGHIJ0123456789')}", "git clone with [redacted]"),
    ("npm_token", f"//registry.npmjs.org/:_authToken {_j('npm_', 'abcdefghijklmnopqrstuvwxyz0123456789')}",
     "//registry.npmjs.org/:_authToken [redacted]"),
    ("huggingface_token", f"login {_j('hf_', 'abcdefghijklmnopqrstuvwxyzABCDEF')}", "login [redacted]"),
    ("pypi_token", f"upload {_j('pypi-AgEI', 'cHlwaS5vcmc', 'CJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6')}", "upload [redacted]"),
    ("sendgrid_key", f"mail {_j('SG.', 'abcdefghijklmnop1234', '.', 'ABCDEFGHIJKLMNOP5678qrst')}", "mail [redacted]"),
    ("slack_webhook", f"post to {_j('https://hooks.slack.com/services/', 'T00000000/B00000000/', 'XXXXXXXXXXXXXXXXXXXXXXXX')} now",
     "post to [redacted] now"),
    ("azure_key", f"AccountName=x;AccountKey={_j('abcdefghijklmnopqrstuvwxyz', '0123456789ABCD==')};EndpointSuffix=core",
     "AccountName=x;AccountKey=[redacted];EndpointSuffix=core"),
    ("assigned_secret", f"DB_PASSWORD={_j('hunter', '2xyz')}\nDEBUG=true\nPASSWORD={_j('Correct', 'Horse')}",
     "DB_PASSWORD=[redacted]\nDEBUG=true\nPASSWORD=[redacted]"),
    ("assigned_secret", f'{{"client_secret": "{_j("s3cr3t", "value99")}", "max_tokens": 4096, "input_tokens": 123456789}}',
     '{"client_secret": "[redacted]", "max_tokens": 4096, "input_tokens": 123456789}'),
    ("assigned_secret", f"refresh_token => '{_j('abcd1234', 'efgh')}'", "refresh_token => '[redacted]'"),
    ("assigned_secret", f'password = "{_j("correct", "horsebattery")}"', 'password = "[redacted]"'),
    ("cli_flag", f"docker login --password={_j('Sup3r', 'S3cret99')} reg.io", "docker login --password=[redacted] reg.io"),
    ("cli_flag", f"tool --api-key '{_j('abcdEFGH', '1234ijkl')}' --verbose", "tool --api-key '[redacted]' --verbose"),
    ("cli_flag", f"aws configure set --secret-access-key {_j('wJalrXUt', 'nFEMIK7MDENG')}",
     "aws configure set --secret-access-key [redacted]"),
    ("cli_password", f"sshpass -p '{_j('hunter', '2xyz')}' ssh deploy@host", "sshpass -p '[redacted]' ssh deploy@host"),
    ("cli_password", f"docker login -u bob -p {_j('Sup3r', 'S3cret99')} registry.io",
     "docker login -u bob -p [redacted] registry.io"),
    ("cli_password", f"mysql -u root -p{_j('S3cret', 'Passw0rd')} shop", "mysql -u root -p[redacted] shop"),
    ("cli_password", f"curl -u admin:{_j('S3cret', 'Passw0rd')} https://api.example.com",
     "curl -u admin:[redacted] https://api.example.com"),
    ("digitalocean_token", f"doctl auth init -t {_j('dop_v1_', '4f8e2c1a9b7d6e5f' * 4)}", "doctl auth init -t [redacted]"),
    ("databricks_token", f"host + {_j('dapi', '0123456789abcdef' * 2)}", "host + [redacted]"),
    ("shopify_token", f"X-Shopify-Access-Token {_j('shpat_', '0123456789abcdef' * 2)}", "X-Shopify-Access-Token [redacted]"),
    ("grafana_token", f"grafana {_j('glsa_', 'AbCdEfGhIjKlMnOpQrStUvWxYz012345', '_6789abcd')}", "grafana [redacted]"),
    ("twilio_key", f"twilio api key {_j('SK', '0123456789abcdef' * 2)}.", "twilio api key [redacted]."),
]


@pytest.mark.parametrize("shape,text,scrubbed", NEW_SHAPES)
def test_newer_shapes_are_scrubbed_and_their_labels_kept(shape, text, scrubbed):
    s = Scrubber()
    assert s(text) == scrubbed
    assert shape in s.summary()["shapes"]
    kept = Scrubber(keep=[shape])               # kept on purpose: that shape is never replaced
    kept(text)
    assert shape not in ((kept.summary() or {}).get("shapes") or {})


@pytest.mark.parametrize("text", [
    "api_key = os.environ['ANTHROPIC_API_KEY']", "token = get_token()", "password = request.form['password']",
    "token = access_token_value", "password: ********", "self.api_key = api_key", "secret: ${SECRET_VALUE}",
    "export GITHUB_TOKEN=$(gh auth token)", "the key: value pairs; monkey: bananaaaaas1", "author: Jonathan Smith",
    "max_tokens=8192 input_tokens: 123456789 budget_tokens = 100000", "sig=short", "SG.x.y",
    "cmd --password $DB_PASSWORD", "cmd --token=${TOKEN}", "cmd --api-key \"$(cat key.txt)\"", "ls --color=auto",
    "pytest --max-tokens 4096 --token-budget 100000", "cmd --secret-file /etc/app/secret.txt",
    "git config --credential-helper store", "mysql -u root -p shop", "npm login --auth-type=legacy", "SKIP this TASK",
])
def test_code_that_names_a_credential_without_holding_one_is_left_alone(text):
    s = Scrubber()
    assert s(text) == text and s.summary() is None


def test_every_shape_is_documented():
    doc = (ROOT / "docs" / "recording-format.md").read_text(encoding="utf-8")
    for name in SHAPES:
        assert f"`{name}`" in doc, name
    assert "--keep-secret-shape" in doc and "`scrubbed`" in doc


def test_a_value_dropped_with_its_key_is_scrubbed_where_it_reappears():
    s = Scrubber()
    out = s({"clientSecret": "zq9-value-x", "note": "the secret is zq9-value-x.", "n": {"pwd": "ab1"}, "t": "ab1 c"})
    assert out == {"note": "the secret is [redacted].", "n": {}, "t": "[redacted] c"}
    assert s.summary() == {"values": 2, "fields": {"count": 2, "names": ["clientSecret", "pwd"]}}
    assert scrub({"password": "none", "t": "none of it"}) == {"t": "none of it"}     # a placeholder, not a secret


# ------------------------------------------------------------------ 2. plugins that never return
HOSTILE = '''
import asyncio, time

def sleeper(messages):
    time.sleep(10**6)

async def waiter(messages):
    await asyncio.Event().wait()

def spinner(messages):
    while True:
        pass

def bomb(messages):
    hoard = []
    while True:
        hoard.append(bytearray(10**7) + b"x")

def flood(messages):
    return [{"role": "user", "content": "x"}] * 1_000_000

def interrupt(messages):
    raise KeyboardInterrupt

def crash(messages):
    import os
    os._exit(3)

def forker(messages):
    import os
    if os.fork() == 0:          # a child that keeps the plugin's pipe open after the plugin is ended
        time.sleep(10**6)
    time.sleep(10**6)

def deep(messages):
    x = []
    for _ in range(100000):
        x = [x]
    return [{"role": "user", "content": x}]

def chatty(messages, keep: int = 2):
    print("a plugin talking on stdout")
    return messages[-keep:]
'''


@pytest.fixture
def hostile(tmp_path) -> Path:
    p = tmp_path / "hostile.py"
    p.write_text(HOSTILE, encoding="utf-8")
    return p


def _cli(*argv, env=None, timeout=120):
    import os
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "compactscope", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})


EXAMPLE = str(ROOT / "assets" / "examples" / "long_session.json")


@pytest.mark.parametrize("name", ["sleeper", "waiter", "spinner",
                                  pytest.param("forker", marks=pytest.mark.skipif(not hasattr(os, "fork"),
                                                                                  reason="no fork here"))])
def test_a_plugin_that_never_returns_is_stopped_at_its_limit(hostile, name):
    r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:{name}", "--plugin-timeout", "2")
    assert r.returncode == 2, r.stderr
    assert f"hostile.py:{name} did not return within 2 s (the plugin time limit" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_limit_comes_from_the_environment_too_and_a_replay_does_not_wait_at_every_call(hostile):
    r = _cli("replay", EXAMPLE, "--strategy", f"{hostile}:sleeper", "--max-calls", "8",
             env={"COMPACTSCOPE_PLUGIN_TIMEOUT": "2"})
    assert r.returncode == 2, r.stderr
    assert "did not return within 2 s" in r.stderr and "more time(s)" in r.stderr


def test_a_memory_bomb_is_stopped_at_the_memory_bound(hostile):
    r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:bomb", "--plugin-memory", "300", "--plugin-timeout", "60")
    assert r.returncode == 2, r.stderr
    assert "hostile.py:bomb ran out of memory (line 17 of hostile.py)" in r.stderr
    assert "memory bound of 300 MB" in r.stderr


def test_a_million_message_result_is_the_layers_error(hostile):
    r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:flood", "--json", "--no-messages")
    assert r.returncode == 2, r.stderr
    assert "returned 1,000,000 messages for" in r.stderr
    step = json.loads(r.stdout)["steps"][-1]
    assert step["plugin_failed"] and "more than a compactor makes" in step["error"]


def test_a_result_nested_too_deeply_to_hand_back_is_the_layers_error_without_a_traceback(hostile):
    r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:deep")
    assert r.returncode == 2, r.stderr
    assert "hostile.py:deep raised RecursionError: its result is nested too deeply to hand back" in r.stderr
    assert "Traceback" not in r.stderr


def test_keyboard_interrupt_in_a_plugin_exits_130_saying_so(hostile):
    r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:interrupt")
    assert r.returncode == 130
    assert "the plugin hostile.py:interrupt raised KeyboardInterrupt (line 23 of hostile.py)" in r.stderr
    assert "as Ctrl+C would stop it" in r.stderr


def test_a_plugin_that_kills_its_process_is_the_layers_error(hostile):
    r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:crash")
    assert r.returncode == 2 and "hostile.py:crash: its process ended without an answer (exit status 3)" in r.stderr


def test_a_plugin_printing_does_not_break_json_output(hostile):
    r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:chatty", "--json", "--no-messages")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"][-1]["layer"] == "chatty"
    assert "a plugin talking on stdout" in r.stderr


def test_bad_limits_are_usage_errors(hostile):
    for opt, value in (("--plugin-timeout", "0"), ("--plugin-timeout", "nan"), ("--plugin-memory", "10")):
        r = _cli("run", EXAMPLE, "--strategy", f"{hostile}:chatty", opt, value)
        assert r.returncode == 2 and opt in r.stderr, (opt, value, r.stderr)


def test_a_function_the_plugin_process_cannot_import_has_the_time_limit_in_this_process(monkeypatch):
    """A lambda or closure cannot go to a plugin process: it runs on a thread here, still with the limit."""
    import threading
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.strategies.plugin import from_object
    monkeypatch.setenv("COMPACTSCOPE_PLUGIN_TIMEOUT", "1")
    gate = threading.Event()

    def stuck(messages):
        gate.wait(60)
        return messages
    st = from_object(stuck, "stuck", title_hint="stuck")
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    try:
        step = Engine(st).run(msgs).steps[-1]
    finally:
        gate.set()
    assert step.plugin_failed and "did not return within 1 s" in step.error and step.messages is msgs


def test_isolated_plugins_keep_the_contract(tmp_path):
    """In its own process a plugin still shares unchanged messages, notes changes made in place and uses
    the engine's summarizer."""
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.summarizers import FixedSummarizer
    p = tmp_path / "ok.py"
    p.write_text('''
import os
PID = os.getpid()

def compact(messages, keep: int = 2, *, summarize):
    messages[0]["content"] = "edited in place"
    head = {"role": "user", "content": "Earlier: " + summarize(messages[1:-keep]) + f" pid {os.getpid()}"}
    return [head] + messages[-keep:]
''', encoding="utf-8")
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(8)]
    trace = Engine(f"{p}:compact", summarizer=FixedSummarizer("what happened")).run(msgs)
    step = trace.steps[-1]
    assert msgs[0]["content"] == "m0"                                   # the caller's messages are intact
    assert step.messages[1] is msgs[-2] and step.messages[2] is msgs[-1]  # shared, not copies
    head = step.messages[0]["content"]
    assert head.startswith("Earlier: what happened pid ")
    import os
    assert int(head.rsplit(" ", 1)[1]) != os.getpid()                  # it ran in its own process
    assert any("in place" in e.text for e in step.edits) and step.summary["calls"] == 1


# ------------------------------------------------------------------ 5. an unwritable --workdir
def _main(capsys, *argv) -> tuple[int, str]:
    from compactscope.app.cli import main
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _big_results_session(tmp_path) -> Path:
    """A session whose tool results tool_result_budget persists (it writes into the workdir)."""
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read",
                                               "input": {"path": f"f{i}"}} for i in range(4)]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 60000}
                                         for i in range(4)]}]
    p = tmp_path / "big.json"
    p.write_text(json.dumps({"messages": msgs}), encoding="utf-8")
    return p


def test_a_workdir_that_is_a_file_or_under_one_exits_2_saying_what_to_do(tmp_path, capsys, cache_home):
    f = tmp_path / "afile"
    f.write_text("x")
    for wd in (f, f / "sub"):
        code, err = _main(capsys, "run", EXAMPLE, "--workdir", str(wd))
        assert code == 2, err
        assert str(wd) in err and "pass --workdir a folder you can write to" in err and "internal error" not in err


def test_a_workdir_whose_name_is_too_long_or_a_symlink_loop_exits_2(tmp_path, capsys, cache_home):
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    for wd, said in ((tmp_path / ("x" * 300), "the name is too long"), (tmp_path / "l1" / "sub", "a loop of symlinks")):
        code, err = _main(capsys, "run", EXAMPLE, "--workdir", str(wd))
        assert code == 2, err
        assert said in err and "pass --workdir a folder you can write to" in err and "internal error" not in err


def test_a_task_outputs_symlink_leading_outside_exits_2(tmp_path, capsys, cache_home):
    wd = tmp_path / "wd"
    wd.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (wd / ".task_outputs").symlink_to(outside)
    code, err = _main(capsys, "run", str(_big_results_session(tmp_path)), "--workdir", str(wd))
    assert code == 2 and "is a symlink that leads outside the workdir" in err and "remove it" in err
    assert not list(outside.iterdir())                     # nothing written through it


@pytest.mark.parametrize("errno_name,said", [("EROFS", "the filesystem is read-only"), ("ENOSPC", "the disk is full"),
                                             ("EACCES", "no permission to write there")])
def test_a_read_only_or_full_workdir_exits_2(tmp_path, capsys, cache_home, monkeypatch, errno_name, said):
    import errno
    import os
    from compactscope.core.files import workspace

    def refuse(*a, **k):
        raise OSError(getattr(errno, errno_name), os.strerror(getattr(errno, errno_name)))
    monkeypatch.setattr(workspace.tempfile, "mkstemp", refuse)
    code, err = _main(capsys, "run", EXAMPLE, "--workdir", str(tmp_path / "wd"))
    assert code == 2 and said in err and "pass --workdir" in err and "internal error" not in err


def test_a_workdir_that_fills_up_mid_run_exits_2(tmp_path, capsys, cache_home, monkeypatch):
    """The check passed, then a layer's write fails (the disk filled meanwhile): bad input, not a bug."""
    import errno
    from compactscope.core.files import workspace

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(workspace, "atomic_write", full)
    monkeypatch.setattr(workspace, "check_workdir", lambda p: Path(p))
    code, err = _main(capsys, "run", str(_big_results_session(tmp_path)), "--workdir", str(tmp_path / "wd"))
    assert code == 2, err
    assert "the disk is full" in err and str(tmp_path / "wd") in err and "internal error" not in err


# ------------------------------------------------------------------ 4. crowded folders
SID = "5e55a0d1-aaaa-4bbb-8ccc-0123456789ab"


def _cc_line(uuid, parent, role, content, sid=SID, **extra) -> str:
    msg = {"role": role, "content": content}
    if role == "assistant":
        msg.update(id=f"msg_{uuid}", model="claude-sonnet-4-6", type="message", stop_reason="end_turn",
                   usage={"input_tokens": 100, "output_tokens": 5})
    return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": sid, "cwd": "/w",
                       "timestamp": "2026-07-01T10:00:00.000Z", "message": msg, **extra})


def _cc_session(path: Path, sid: str, n: int, text: str = "fix the flaky test in the payment module") -> Path:
    lines, parent = [], None
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        content = text if i == 0 else (f"step {i} " * 20 if role == "user" else [{"type": "text", "text": f"ok {i}"}])
        lines.append(_cc_line(f"u{i}", parent, role, content, sid=sid))
        parent = f"u{i}"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _recording_of(path: Path, sid: str) -> Path:
    head = {"type": "header", "format": "compactscope.recording", "version": 1, "created": "2026-07-01T10:00:00.000Z",
            "source": "proxy"}
    call = {"type": "call", "seq": 1, "kind": "model", "t_start": "2026-07-01T10:00:00.000Z",
            "t_end": "2026-07-01T10:00:01.000Z",
            "request": {"model": "claude-sonnet-4-6", "system": "You are Claude Code. " + "rules " * 30000,
                        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
                        "messages": [{"role": "user", "content": "fix the flaky test in the payment module"}],
                        "metadata": {"user_id": f"user_x_account_y_session_{sid}"}},
            "response": {"role": "assistant", "content": [{"type": "text", "text": "ok 1"}]},
            "usage": {"input_tokens": 100, "output_tokens": 5}, "error": None, "trace": None}
    path.write_text(json.dumps(head) + "\n" + json.dumps(call) + "\n", encoding="utf-8")
    return path


def test_a_partner_is_found_by_a_look_at_first_lines_never_by_loading_siblings(tmp_path, monkeypatch):
    from compactscope.core.model import join
    from compactscope.core import loaders
    folder = tmp_path / "project"
    folder.mkdir()
    mine = _cc_session(folder / f"{SID}.jsonl", SID, 10)
    rec = _recording_of(folder / "proxy-20260701.jsonl", SID)     # its session id is past the first 64 KB
    assert rec.read_bytes().find(SID.encode()) > join.HEAD_BYTES
    for k in range(4):                                            # big files of other sessions
        _cc_session(folder / f"other-{k}.jsonl", f"0000000{k}-1111-4222-8333-444455556666", 3000)
    loaded: list[str] = []
    real = loaders.load

    def counting(p, *a, **k):
        loaded.append(Path(p).name)
        return real(p, *a, **k)
    conv = real(mine).main
    monkeypatch.setattr(loaders, "load", counting)
    found = join.partners(mine, conv)
    assert [Path(d["path"]).name for d in found] == ["proxy-20260701.jsonl"] and found[0]["has_system"]
    assert loaded == ["proxy-20260701.jsonl"]                     # the four big siblings were never loaded
    # and the other way round: from the recording, the session file is found, told by its first lines (a Claude
    # Code session file has no system prompt or tools to lend: nothing in it is worth its load)
    loaded.clear()
    back = join.partners(rec, real(rec).main)
    assert [Path(d["path"]).name for d in back] == [mine.name] and loaded == []
    assert back[0]["reason"] == f"the same session id {SID}" and not back[0]["has_system"] | back[0]["has_tools"]


def test_big_session_files_of_the_same_session_id_are_told_by_their_first_lines_never_loaded(tmp_path, monkeypatch):
    """A resumed session, a copy or a fork in the same folder carries the same session id in its first lines: it
    is reported as the same session as a load of it would report it, and never loaded, so ``info`` costs what it
    costs alone; a same-id file that is not a Claude Code session (a recording) is still loaded."""
    from compactscope.core.model import join
    from compactscope.core import loaders
    folder = tmp_path / "project"
    folder.mkdir()
    mine = _cc_session(folder / f"{SID}.jsonl", SID, 10)
    for k in range(3):
        _cc_session(folder / f"copy-{k}.jsonl", SID, 2000)
    _recording_of(folder / "proxy.jsonl", SID)
    other = _cc_session(folder / "other.jsonl", "0000000f-1111-4222-8333-444455556666", 10)
    other.write_text(other.read_text().replace('"text": "ok 1"', f'"text": "see {SID}"', 1), encoding="utf-8")
    agent = folder / "agent-1a2b3c.jsonl"   # a subagent's transcript: sidechain records with the session's id
    agent.write_text("".join(json.dumps({**json.loads(x), "isSidechain": True}) + "\n"
                             for x in _cc_session(tmp_path / "a.jsonl", SID, 6).read_text().splitlines()),
                     encoding="utf-8")
    log = folder / "requests.jsonl"     # a request log (refused by a load) whose fourth line is a session record
    log.write_text("".join(json.dumps({"request_index": i, "path": "/v1/messages", "body": {"n": i}}) + "\n"
                           for i in range(3)) + mine.read_text().splitlines()[0] + "\n", encoding="utf-8")
    real = loaders.load
    conv = real(mine).main
    expected = {}                       # what loading each sibling finds (the old way)
    for p in sorted(folder.iterdir()):
        if p not in (mine, log, agent):
            for c in real(p).conversations:
                why = join.same_session(conv, c)
                if why:
                    expected[p.name] = (why, bool(c.system), bool(c.tools))
                    break
    with pytest.raises(loaders.LoadError, match="request log"):
        real(log)                       # (so a load of it never reported it either)
    loaded: list[str] = []
    monkeypatch.setattr(loaders, "load", lambda p, *a, **k: loaded.append(Path(p).name) or real(p, *a, **k))
    found = join.partners(mine, conv)
    expected[agent.name] = (f"the same session id {SID}", False, False)    # (its load made a sidechain without it)
    assert {Path(d["path"]).name: (d["reason"], d["has_system"], d["has_tools"]) for d in found} == expected
    assert sorted(expected) == ["agent-1a2b3c.jsonl", "copy-0.jsonl", "copy-1.jsonl", "copy-2.jsonl", "proxy.jsonl"]
    assert Path(found[0]["path"]).name == "proxy.jsonl"                      # the one that lends comes first
    assert sorted(loaded) == ["other.jsonl", "proxy.jsonl", "requests.jsonl"]  # the other id's head names SID in a
    #                                                                           text, the log is no session: loaded


def test_a_partner_without_a_session_id_is_found_by_its_first_words(tmp_path, monkeypatch):
    from compactscope.core.model import join
    from compactscope.core import loaders
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    c = tmp_path / "c.json"
    first = {"role": "user", "content": "please refactor the billing service and keep the tests green"}
    a.write_text(json.dumps({"messages": [first, {"role": "assistant", "content": "ok"}]}), encoding="utf-8")
    b.write_text(json.dumps({"system": "sys", "messages": [first, {"role": "assistant", "content": "sure"}]}),
                 encoding="utf-8")
    c.write_text(json.dumps({"messages": [{"role": "user", "content": "something else entirely, not this"}]}),
                 encoding="utf-8")
    loaded: list[str] = []
    real = loaders.load
    monkeypatch.setattr(loaders, "load", lambda p, *x, **k: loaded.append(Path(p).name) or real(p, *x, **k))
    found = join.partners(a, real(a).main)
    assert [Path(d["path"]).name for d in found] == ["b.json"] and loaded == ["b.json"]


# ------------------------------------------------------------------ 6. the proxy under load and faults
def test_the_proxy_listens_with_a_real_backlog_and_serves_20_concurrent_clients_without_a_reset(tmp_path):
    import http.client
    import threading
    from compactscope.core.live import proxy as proxymod
    n_clients, per_client = 20, 15
    with FakeAnthropic(handler=lambda req: reply(message([text_block("ok")]))) as fake:
        fake._server.socket.listen(1024)              # the fake upstream is not under test (its backlog is 5)
        with RecordingWriter(tmp_path / "load.jsonl", source="proxy") as rec, \
                RecordingProxy(fake.url, port=0, recorder=rec) as proxy:
            assert proxy.server.request_queue_size == proxymod.BACKLOG >= 128
            errors: list = []
            start = threading.Barrier(n_clients)

            def client():
                start.wait()
                for _ in range(per_client):
                    try:                              # a new connection per request: the accept queue fills
                        c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
                        c.request("POST", "/v1/messages", body=json.dumps(
                            {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
                            headers={"content-type": "application/json", "connection": "close"})
                        r = c.getresponse()
                        r.read()
                        if r.status != 200:
                            errors.append(r.status)
                        c.close()
                    except OSError as e:
                        errors.append(repr(e))
            threads = [threading.Thread(target=client) for _ in range(n_clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert errors == []
            assert wait_for(lambda: proxy.calls == n_clients * per_client, 30)
    assert len(read_recording(tmp_path / "load.jsonl").calls) == n_clients * per_client


@pytest.mark.parametrize("stream", [False, True])
def test_a_response_delivered_whole_is_recorded_even_if_the_proxy_is_killed_right_after(tmp_path, stream):
    import http.client
    import signal
    import subprocess
    import sys
    rec_path = tmp_path / "k.jsonl"
    with FakeAnthropic([reply(message([text_block("all of it " * 50)]))]) as fake:
        proc = subprocess.Popen([sys.executable, "-m", "compactscope", "proxy", "--port", "0", "--upstream", fake.url,
                                 "--record", str(rec_path), "--quiet"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            port = int(proc.stdout.readline().split()[3].rsplit(":", 1)[1])
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", "/v1/messages", body=json.dumps({"model": "m", "stream": stream, "messages": [
                {"role": "user", "content": "hi"}]}), headers={"content-type": "application/json"})
            r = c.getresponse()
            body = r.read()                           # the whole response is here...
            assert r.status == 200 and (b"message_stop" in body if stream else b"all of it" in body)
            proc.send_signal(signal.SIGKILL)          # ... and the proxy dies at once
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=10)
    calls = read_recording(rec_path).calls
    assert len(calls) == 1 and calls[0].error is None
    assert "all of it" in calls[0].response["content"][0]["text"]


def test_a_killed_fleets_temporary_file_is_removed_by_a_successful_resume(tmp_path):
    pytest.importorskip("pyarrow")
    import fcntl
    import os
    from compactscope.core.fleet import make_config
    from compactscope.core.fleet.engines import LocalPool
    from compactscope.core.fleet.run import run_fleet
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for k in range(2):
        _cc_session(sessions / f"s{k}.jsonl", f"1111111{k}-2222-4333-8444-555566667777", 8)
    out = tmp_path / "r.parquet"
    stale = tmp_path / ".r.parquet.k1ll3d.tmp"        # what a kill -9 mid-run leaves (safeio.atomic_path's name)
    stale.write_bytes(b"PAR1 half a file")
    (tmp_path / ".r.parquet.k1ll3d.tmp.dup").write_bytes(b"PAR1")
    live = tmp_path / ".r.parquet.l1v3.tmp"           # another run still writing: locked, kept
    live.write_bytes(b"PAR1")
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    other = tmp_path / ".other.parquet.x.tmp"         # not this --out's
    other.write_bytes(b"x")
    try:
        run_fleet([sessions], make_config("claude_code", {}, []), out, engine=LocalPool(1))
    finally:
        os.close(fd)
    assert out.is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [
        ".other.parquet.x.tmp", ".r.parquet.l1v3.tmp"]


# ------------------------------------------------------------------ 3. pathological but valid sessions
def test_a_session_whose_every_record_is_its_own_parent_loads_every_message(tmp_path):
    """No record leads anywhere: none forks off a chain, every one is kept, in file order (the walk up each
    record's parents stops at the cycle: it once went 100,000 steps per record)."""
    p = tmp_path / "self.jsonl"
    n = 2000
    lines = [json.loads(_cc_line(f"r{i}", None, "user" if i % 2 == 0 else "assistant",
                                 f"m{i}" if i % 2 == 0 else [{"type": "text", "text": f"m{i}"}]))
             for i in range(n)]
    for rec in lines:
        rec["parentUuid"] = rec["uuid"]
    lines[10]["parentUuid"], lines[11]["parentUuid"] = lines[11]["uuid"], lines[10]["uuid"]    # and a 2-cycle
    p.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    conv = load(p).main
    texts = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in conv.messages]
    assert texts == [f"m{i}" for i in range(n)]


def test_a_long_parent_chain_replays_the_same_with_the_context_extended_in_place(tmp_path):
    """Replay extends its running context in place when no input is kept: the records are those of a replay
    that keeps every input (a new list per call)."""
    from compactscope.core.replay import replay
    p = _cc_session(tmp_path / "chain.jsonl", SID, 3000, text="start the long task now, please")
    conv = load(p).main
    assert len(conv.messages) == 3000
    for strategy in ("claude_code", "s08"):
        fast = replay(conv, strategy, {}, keep_inputs=False)
        kept = replay(conv, strategy, {}, keep_inputs=True)
        assert len(fast.calls) == len(kept.calls) == 1500
        assert [c.to_json() for c in fast.calls] == [c.to_json() for c in kept.calls]
        assert [len(x) for x in kept.inputs[:3]] == [1, 3, 5]       # the kept inputs are their own lists
