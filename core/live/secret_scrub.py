"""What never reaches a recording: credentials by name, by value and by shape.

A recording is made to be shared, so everything written to one (``core.recording.RecordingWriter``, the
recording proxy) goes through a ``Scrubber`` first:

- **by name**: a key that says it holds a credential, at any depth, in any spelling (``api_key``,
  ``apiKey``, ``x-api-key``, ``accessToken``, ``client_secret``, ``refreshToken``, ``apitoken``,
  ``password``...) is dropped with its value, and that value is then scrubbed wherever else it appears
  (the model may echo it);
- **by value**: strings known to be secrets (the client's auth header values, the upstream URL's password,
  the agent's API key) are replaced wherever they appear, as given or percent-encoded; a short one (under
  ``MIN_SECRET`` characters) only as a whole word, so that ordinary text stays;
- **by shape**: strings shaped like a common credential (``SHAPES``: AWS key ids, AWS secret keys, GitHub
  tokens, JWTs, bearer tokens typed as text, passwords in URLs and in command lines, Anthropic/OpenAI/Slack
  keys, PEM private keys...) are replaced, unless the user keeps that shape on purpose (``keep``).

Every replacement is counted by kind (never the value): ``summary()`` is what a call record carries as
``scrubbed``.
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Iterable
from urllib.parse import quote, quote_plus

from ..runtime.record import record
from ..runtime.lazy import lazy_regex

REDACTED = "[redacted]"
MIN_SECRET = 8          # a known secret this long is replaced anywhere; shorter ones only as a whole word
MIN_SHORT = 3           # shorter known values are not scrubbed from text (they would match ordinary words)
MAX_DEPTH = 300         # deeper than any reader takes (safeio.MAX_DEPTH): not written
_TRIVIAL = {"", "none", "null", "true", "false", "yes", "no", "n/a", "redacted", REDACTED, "***", "xxx",
            "changeme", "example", "secret", "password", "token"}

# a key that names a credential, compared in snake case (camelCase split, "-" as "_", lower case)
_SECRET_NAME = lazy_regex(
    r"api_?key|password|passwd|passphrase|secret|authori[sz]ation|cookie|credential|private_?key|access_?key|"
    r"session_?key|(?:^|_)token$|(?:api|auth|access|refresh|session|id|bearer|oauth|csrf|xsrf|github|gh)_?token|"
    r"bearer|(?:^|_)pwd$|(?:^|_)auth$")
_CAMEL = lazy_regex(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=8192)
def _is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(_CAMEL.sub("_", name).lower().replace("-", "_")))


def is_secret_name(name: Any) -> bool:
    """Whether a key or header name says it holds a credential (``apiKey``, ``x-api-key``, ``authToken``,
    ``client_secret``, ``apitoken``, ``password``...). ``max_tokens`` and ``input_tokens`` do not."""
    return isinstance(name, str) and _is_secret_name(name)


def _keep_prefix(group: int) -> Callable[[re.Match], str]:
    """A replacement that keeps the match up to group ``group`` (a label such as ``Bearer ``)."""
    def repl(m: re.Match) -> str:
        return m.group(0)[:m.start(group) - m.start(0)] + REDACTED + m.group(0)[m.end(group) - m.start(0):]
    return repl


@record(frozen=True)
class Shape:
    """A credential shape: the regex, the cheap substrings one of which a match must contain (checked
    first: most strings hold none), and the part replaced (group 0, or a group after a label)."""
    name: str
    doc: str
    pattern: Any                    # a regex (compiled at its first use: lazy_regex)
    triggers: tuple[str, ...]
    group: int = 0
    also: str = ""              # a substring every match holds besides a trigger
    check: Callable[[re.Match], bool] | None = None     # a match is replaced only where this holds

    def sub(self, text: str) -> tuple[str, int]:
        if not any(t in text for t in self.triggers) or (self.also and self.also not in text):
            return text, 0
        if self.check is not None:
            return self._sub_checked(text)
        if self.group:
            return self.pattern.subn(_keep_prefix(self.group), text)
        return self.pattern.subn(REDACTED, text)

    def _sub_checked(self, text: str) -> tuple[str, int]:
        n = 0
        keep = _keep_prefix(self.group)

        def repl(m: re.Match) -> str:
            nonlocal n
            if self.check is None or not self.check(m):
                return m.group(0)
            n += 1
            return keep(m) if self.group else REDACTED
        out = self.pattern.sub(repl, text)
        return (out, n) if n else (text, 0)


# A credential assigned to a name that says so, as a .env file, a config or code holds it (``DB_PASSWORD=...``,
# ``"client_secret": "..."``, ``api_key = '...'``, ``token: ...``): the name stays, the value goes.
_ASSIGNED = lazy_regex(
    r"(?<![A-Za-z0-9_\-])([\"']?)([A-Za-z_][A-Za-z0-9_.\-]{0,80})\1[ \t]*(?:=|:|=>)[ \t]*([\"']?)"
    r"([^\s\"'`,;(){}\[\]<>]{8,})(?=\3)(?=[\s\"'`,;(){}\[\]<>]|$)")
_REFERENCE = lazy_regex(r"^(?:[$%{]|process\.env|os\.|env\.)|^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_ENV_NAME = lazy_regex(r"^[A-Z][A-Z0-9_]*$")


def _plain_value(value: str, distinct: int = 4) -> bool:
    """Whether a value in a credential's place is one: not already replaced, not a reference (``$TOKEN``,
    ``os.environ[...]``), not a placeholder (``none``, ``********``: fewer than ``distinct`` different characters)."""
    return (REDACTED not in value and not _REFERENCE.search(value) and value.lower() not in _TRIVIAL
            and len(set(value)) >= distinct)


def _assigned_secret(m: re.Match) -> bool:
    """Whether ``name = value`` assigns a credential: the name says so, and the value is one (not a variable,
    a reference such as ``$TOKEN`` or ``os.environ[...]``, a placeholder like ``********``). A bare word of
    letters (``token = access_token_value``) counts only quoted or in an environment file's capitals."""
    name, quoted, value = m.group(2), m.group(3), m.group(4)
    if not is_secret_name(name.rsplit(".", 1)[-1]) or not _plain_value(value):
        return False
    bare_word = re.fullmatch(r"[A-Za-z_]+", value) is not None
    return not bare_word or bool(quoted) or _ENV_NAME.match(name) is not None


# A credential given to a command as a flag (``--password=...``, ``--token ...``, ``--api-key '...'``): the flag
# stays, the value goes, when the flag's name says it holds a credential and the value is not a reference.
_FLAG = lazy_regex(r"(?<![A-Za-z0-9_\-])--([A-Za-z][A-Za-z0-9_\-]{0,60})(?:=|[ \t]+)([\"']?)([^\s\"'`;|&<>]{6,})\2"
                   r"(?=[\s\"'`;|&<>]|$)")
# the short flags of the commands that take a password on the command line: ``sshpass -p PASS``,
# ``docker login -p PASS``, ``mysql -pPASS`` (attached: ``mysql -p db`` asks for it), ``curl -u user:PASS``
_SHORT_FLAG = lazy_regex(
    r"\b(?:sshpass(?:[ \t]+-[a-oq-zA-Z](?:[ \t]+[^\s-]\S*)?)*[ \t]+-p[ \t]*"
    r"|(?:docker|podman|helm|oras)[ \t]+(?:registry[ \t]+)?login\b[^\n;|&]*?[ \t]-p[ \t]+"
    r"|(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n;|&]*?[ \t]-p"
    r"|curl\b[^\n;|&]*?[ \t](?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:\"']+:)"
    r"([\"']?)([^\s\"';|&]{3,})\1")


_NOT_A_VALUE = lazy_regex(r"(?i)[_\-](?:file|path|dir|env|name|type|id|url|length|size|count|store|helper)$")


def _flag_secret(m: re.Match) -> bool:
    """Whether ``--name value`` passes a credential: the flag's name says so and the value is one (not
    another flag, a reference such as ``$TOKEN``, a placeholder)."""
    name, value = m.group(1), m.group(3)
    return (is_secret_name(name) and not _NOT_A_VALUE.search(name) and not value.startswith(("-", "/", "./", "~"))
            and _plain_value(value))


def _short_flag_secret(m: re.Match) -> bool:
    return _plain_value(m.group(2), distinct=0)


_B = r"(?<![A-Za-z0-9])"       # no letter or digit runs into the shape
_E = r"(?![A-Za-z0-9])"
SHAPES: dict[str, Shape] = {s.name: s for s in (
    Shape("anthropic_key", "Anthropic API keys (sk-ant-...)",
          lazy_regex(r"sk-ant-[A-Za-z0-9_\-]{8,}"), ("sk-ant-",)),
    Shape("openai_key", "other sk- keys (OpenAI: sk-..., sk-proj-...)",
          lazy_regex(r"(?<![A-Za-z])sk-(?:proj-)?[A-Za-z0-9_\-]{32,}"), ("sk-",)),
    Shape("aws_key_id", "AWS access key ids (AKIA..., ASIA...)",
          lazy_regex(_B + r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}" + _E),
          ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA")),
    Shape("aws_secret_key", "AWS secret keys after their name (aws_secret_access_key=...)",
          lazy_regex(r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{16,})"),
          ("ecret", "ECRET"), 1),
    Shape("github_token", "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
          lazy_regex(_B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})" + _E),
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Shape("slack_token", "Slack tokens (xoxb-, xoxp-...)",
          lazy_regex(_B + r"xox[abposr]-[A-Za-z0-9-]{10,}"), ("xox",)),
    Shape("jwt", "JSON Web Tokens (eyJ....eyJ....sig)",
          lazy_regex(_B + r"eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}"), ("eyJ",)),
    Shape("bearer", "a bearer token typed as text (Bearer abc123..., with a digit in it)",
          lazy_regex(r"(?i)\bbearer\s+((?=[A-Za-z._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{8,}=*)"),
          ("earer", "EARER"), 1),
    Shape("auth_header", "an auth header typed as text (Authorization: Basic ..., x-api-key: ...)",
          lazy_regex(r"(?i)\b(?:authorization|x-api-key|api-key|apikey|x-auth-token)[\"']?\s*[:=]\s*[\"']?"
                     r"(?:(?:basic|token|digest|bearer)\s+)?([A-Za-z0-9._~+/\-]{8,}=*)"),
          ("uthori", "UTHORI", "pi-key", "PI-KEY", "pikey", "PIKEY", "piKey", "uth-token", "UTH-TOKEN"), 1),
    Shape("url_password", "the password in a URL (https://user:PASSWORD@host)",
          lazy_regex(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s/:@\"'<>]*:(?!\[redacted\]@)([^\s/@\"'<>]+)@"), ("://",), 1, "@"),
    Shape("google_api_key", "Google API keys (AIza...)",
          lazy_regex(_B + r"AIza[0-9A-Za-z_\-]{35}" + _E), ("AIza",)),
    Shape("google_oauth", "Google OAuth access tokens and client secrets (ya29...., GOCSPX-...)",
          lazy_regex(_B + r"(?:ya29\.[0-9A-Za-z_\-]{20,}|GOCSPX-[0-9A-Za-z_\-]{20,})"), ("ya29.", "GOCSPX-")),
    Shape("stripe_key", "Stripe secret and restricted keys (sk_live_..., rk_test_...)",
          lazy_regex(_B + r"[sr]k_(?:live|test)_[0-9A-Za-z]{16,}" + _E), ("k_live_", "k_test_")),
    Shape("gitlab_token", "GitLab tokens (glpat-, gldt-, glptt-, glrt-)",
          lazy_regex(_B + r"gl(?:pat|dt|ptt|rt)-[0-9A-Za-z_\-]{20,}"), ("glpat-", "gldt-", "glptt-", "glrt-")),
    Shape("npm_token", "npm access tokens (npm_...)",
          lazy_regex(_B + r"npm_[A-Za-z0-9]{36}" + _E), ("npm_",)),
    Shape("huggingface_token", "Hugging Face tokens (hf_...)",
          lazy_regex(_B + r"hf_[A-Za-z0-9]{30,}" + _E), ("hf_",)),
    Shape("pypi_token", "PyPI upload tokens (pypi-AgEIcHlwaS5vcmc...)",
          lazy_regex(_B + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{20,}"), ("pypi-AgEI",)),
    Shape("sendgrid_key", "SendGrid API keys (SG.....)",
          lazy_regex(_B + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"), ("SG.",)),
    Shape("slack_webhook", "Slack incoming webhooks (https://hooks.slack.com/services/...)",
          lazy_regex(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{20,}"),
          ("hooks.slack.com",)),
    Shape("azure_key", "Azure storage and service bus keys, SAS signatures (AccountKey=..., sig=...)",
          lazy_regex(r"(?i)(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey|sig)=([A-Za-z0-9%+/=]{20,})"),
          ("ccountKey=", "ccessKey=", "sig="), 1),
    Shape("assigned_secret", "a value assigned to a credential's name (DB_PASSWORD=..., \"client_secret\": \"...\")",
          _ASSIGNED, ("assw", "ASSW", "ecret", "ECRET", "oken", "OKEN", "key", "Key", "KEY", "uth", "UTH", "ookie",
                      "OOKIE", "redential", "REDENTIAL", "pwd", "PWD", "earer", "EARER"), 4, check=_assigned_secret),
    Shape("cli_flag", "a credential passed as a command's flag (--password=..., --token ..., --api-key ...)",
          _FLAG, ("--",), 3, check=_flag_secret),
    Shape("cli_password", "a password after a command's short flag (sshpass -p, docker login -p, mysql -p..., "
          "curl -u user:...)", _SHORT_FLAG, ("sshpass", "login", "mysql", "mariadb", "curl"), 2,
          check=_short_flag_secret),
    Shape("digitalocean_token", "DigitalOcean tokens (dop_v1_..., doo_v1_..., dor_v1_...)",
          lazy_regex(_B + r"do[opr]_v1_[a-f0-9]{64}" + _E), ("_v1_",)),
    Shape("databricks_token", "Databricks access tokens (dapi and 32 hex digits)",
          lazy_regex(_B + r"dapi[a-f0-9]{32}(?:-[0-9]+)?" + _E), ("dapi",)),
    Shape("shopify_token", "Shopify access tokens and shared secrets (shpat_..., shpss_..., shpca_..., shppa_...)",
          lazy_regex(_B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _E), ("shpat_", "shpss_", "shpca_", "shppa_")),
    Shape("grafana_token", "Grafana service account and cloud tokens (glsa_..., glc_...)",
          lazy_regex(_B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})"), ("glsa_", "glc_")),
    Shape("twilio_key", "Twilio API keys (SK and 32 hex digits)",
          lazy_regex(_B + r"SK[0-9a-fA-F]{32}" + _E), ("SK",)),
    Shape("private_key", "PEM private keys (-----BEGIN ... PRIVATE KEY-----)",
          lazy_regex(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"),
          ("PRIVATE KEY",)),
)}


# one scan tells whether a string may hold any shape at all (most strings hold none)
_TRIGGERS = lazy_regex("|".join(sorted({re.escape(t) for s in SHAPES.values() for t in s.triggers}, key=len,
                                       reverse=True)))


def check_shapes(names: Iterable[str]) -> list[str]:
    """The shape names a user asked to keep, checked: ValueError names an unknown one and lists them all."""
    out = []
    for n in names:
        n = n.strip()
        if n not in SHAPES:
            raise ValueError(f"unknown secret shape {n!r}; the shapes are: {', '.join(SHAPES)}")
        out.append(n)
    return out


def _variants(secrets: Iterable[Any]) -> tuple[list[str], list[str]]:
    """(long, short): each known secret as given and percent-encoded, the longest first (a variant may
    contain another); the short ones are matched as whole words only."""
    long: list[str] = []
    short: list[str] = []
    for s in secrets:
        if not isinstance(s, str) or len(s.strip()) < MIN_SHORT or s == REDACTED:
            continue
        s = s.strip()
        for v in (s, quote(s, safe=""), quote_plus(s)):
            bucket = long if len(v) >= MIN_SECRET else short
            if v not in bucket:
                bucket.append(v)
    return sorted(long, key=len, reverse=True), sorted(short, key=len, reverse=True)


class Scrubber:
    """One scrub of one record: ``scrubber(obj)`` is a copy of ``obj`` without credentials; ``summary()``
    says what went and how often. ``keep`` names shapes left as they are (``SHAPES``)."""

    def __init__(self, secrets: Iterable[Any] = (), keep: Iterable[str] = ()):
        self._secrets = list(secrets)
        self._shapes = [s for name, s in SHAPES.items() if name not in set(keep)]
        self.counts: Counter[str] = Counter()
        self.fields: Counter[str] = Counter()
        self._set(self._secrets)

    def _set(self, secrets: list) -> None:
        self._long, short = _variants(secrets)
        self._short_words = short
        self._short = re.compile("|".join(r"(?<![A-Za-z0-9_])" + re.escape(v) + r"(?![A-Za-z0-9_])"
                                          for v in short)) if short else None

    def text(self, x: str) -> str:
        n = 0
        for s in self._long:
            if s in x:
                n += x.count(s)
                x = x.replace(s, REDACTED)
        if self._short is not None and any(v in x for v in self._short_words):
            x, k = self._short.subn(REDACTED, x)
            n += k
        if n:
            self.counts["known_value"] += n
        if len(x) < 8 or not self._shapes or _TRIGGERS.search(x) is None:
            return x
        for shape in self._shapes:
            x, k = shape.sub(x)
            if k:
                self.counts[shape.name] += k
        return x

    def _walk(self, x: Any, depth: int, dropped: list) -> Any:
        if depth > MAX_DEPTH:
            return "[nested too deeply: cut by Compactscope]"
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                if is_secret_name(k):
                    self.fields[k] += 1
                    _strings(v, dropped, 0)
                    continue
                out[self.text(k) if isinstance(k, str) else k] = self._walk(v, depth + 1, dropped)
            return out
        if isinstance(x, (list, tuple)):
            return [self._walk(v, depth + 1, dropped) for v in x]
        if isinstance(x, str):
            return self.text(x)
        return x

    def __call__(self, obj: Any) -> Any:
        dropped: list[str] = []
        out = self._walk(obj, 0, dropped)
        fresh = [s for s in dropped if s not in self._secrets]
        if fresh:
            # a credential dropped with its key may reappear elsewhere (the model echoes it): a second pass
            # with those values, counted as known values
            self._secrets += fresh
            self._set(fresh)
            shapes, self._shapes = self._shapes, []
            try:
                out = self._walk(out, 0, [])
            finally:
                self._shapes = shapes
                self._set(self._secrets)
        return out

    def summary(self) -> dict | None:
        """``{"shapes": {name: n}, "values": n, "fields": {"count": n, "names": [...]}}`` for what was
        scrubbed (the kinds and counts, never a value), or None when nothing was."""
        out: dict = {}
        shapes = {k: v for k, v in sorted(self.counts.items()) if k != "known_value"}
        if shapes:
            out["shapes"] = shapes
        if self.counts.get("known_value"):
            out["values"] = self.counts["known_value"]
        if self.fields:
            out["fields"] = {"count": sum(self.fields.values()), "names": sorted(self.fields)}
        return out or None


def _strings(x: Any, out: list, depth: int) -> None:
    """Every string inside ``x`` (the value of a dropped credential key)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(x, str):
        if x.strip().lower() in _TRIVIAL or len(set(x.strip())) < 2:
            return
        out.append(x)
        if " " in x.strip() and len(x) < 1024:
            out.append(x.split()[-1])      # the token after an auth scheme ("Bearer abc")
    elif isinstance(x, dict):
        for v in x.values():
            _strings(v, out, depth + 1)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _strings(v, out, depth + 1)


def merge_summaries(*parts: dict | None) -> dict | None:
    """Two scrubs' summaries as one (the proxy scrubs once, the writer again)."""
    shapes: Counter[str] = Counter()
    values = count = 0
    names: set[str] = set()
    for p in parts:
        if not p:
            continue
        shapes.update(p.get("shapes") or {})
        values += int(p.get("values") or 0)
        f = p.get("fields") or {}
        count += int(f.get("count") or 0)
        names.update(f.get("names") or [])
    out: dict = {}
    if shapes:
        out["shapes"] = dict(sorted(shapes.items()))
    if values:
        out["values"] = values
    if count:
        out["fields"] = {"count": count, "names": sorted(names)}
    return out or None
