"""Secrets kept out of what looptrap shows: argument previews, reports, summaries.

A tool's arguments and results can hold credentials (an ``Authorization`` header, an ``api_key``, a token in
a shell command). Wherever looptrap shows a call or a result to a person or writes it to a file, values that
look like secrets are replaced by ``[redacted]``:

* the value of a key whose name says it holds a secret (``api_key``, ``apikey``, ``token``, ``access_token``,
  ``password``, ``passwd``, ``secret``, ``client_secret``, ``authorization``, ``cookie``, ``private_key``...),
  in JSON text (``"api_key": "..."``) and in ``key=value`` form;
* ``Bearer``/``Basic``/``token`` credentials after an authorization word;
* strings with the prefix of a well-known key format (``sk-``, ``sk-ant-``, ``ghp_``, ``github_pat_``,
  ``glpat-``, ``xoxb-``, ``AKIA``, ``AIza``...), and JSON web tokens.

Digests are computed from the real values (two calls that differ only in a token are still two calls):
only what is shown is masked.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact_text"]

REDACTED = "[redacted]"

_KEY_WORDS = (
    r"(?:api[_-]?key|apikey|x[_-]api[_-]key|access[_-]?key(?:[_-]id)?|secret(?:[_-]access)?[_-]?key|"
    r"(?:access|refresh|id|auth|bearer|session|csrf|github|gitlab|slack|bot)?[_-]?token|password|passwd|pwd|"
    r"passphrase|secret|client[_-]secret|authorization|proxy[_-]authorization|cookie|set[_-]cookie|"
    r"private[_-]?key|credentials?)"
)
# "api_key": "value" (JSON, the value a string) and api_key=value / api_key: value / --api-key value
_JSON_PAIR = re.compile(  # the value up to its closing quote, or to the end of a text that was cut short
    rf'("(?:[^"\\]|\\.)*?{_KEY_WORDS}(?:[^"\\]|\\.)*?"\s*:\s*)"(?:[^"\\]|\\.)*(?:"|$)', re.IGNORECASE
)
_PAIR = re.compile(
    rf"((?:--?{_KEY_WORDS}(?:\s+|=)|\b[A-Za-z0-9_-]*?{_KEY_WORDS}\b[\"']?\s*[=:]\s*)[\"']?)"
    r"(?!\[redacted\]|(?:Bearer|Basic|Token)\b)([^\s\"'&;,]{4,})",
    re.IGNORECASE,
)
# a credential after an auth scheme: 12 characters or more, with a digit, a capital or a base64 sign past the
# first (not the next word of prose)
_AUTH = re.compile(r"\b([Bb]earer|BEARER|[Bb]asic|BASIC|Token)\s+(?=.[a-z._~-]*[0-9A-Z+/=])[A-Za-z0-9._~+/=-]{12,}")
_PREFIXED = re.compile(
    r"\b(?:sk-(?:ant-|proj-|live-|test-)?|rk_(?:live|test)_|sk_(?:live|test)_|gh[pousr]_|github_pat_|glpat-|"
    r"xox[abposr]-|AKIA|ASIA|AIza|ya29\.|hf_|npm_|pypi-)[A-Za-z0-9_\-.]{12,}"
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
# A text must say one of these words near a "=" or ":" (or be a command-line flag, an auth scheme) for the
# key-value patterns to be tried: the cheap test first, on every preview (the per-call path).
_WORDED = re.compile(
    r"(?i)(?:key|token|pass|pwd|secret|auth|cookie|credential)[a-z0-9_-]*[\"']?\s*[:=]|"
    r"--?[a-z-]*(?:key|token|pass|pwd|secret)|\b(?:bearer|basic|token)\s+.[a-z._~-]*[0-9A-Z+/=]"
)


def redact_text(text: str) -> str:
    """``text`` with values that look like secrets replaced by ``[redacted]`` (see the module's docs)."""
    low = text.lower()
    # substring tests, written out: this runs on every call's preview, and almost every text has none
    if (
        "key" in low
        or "token" in low
        or "pass" in low
        or "pwd" in low
        or "secret" in low
        or "auth" in low
        or "cookie" in low
        or "credential" in low
        or "bearer" in low
        or "basic" in low
    ) and _WORDED.search(text) is not None:
        text = _JSON_PAIR.sub(rf'\1"{REDACTED}"', text)
        text = _AUTH.sub(rf"\1 {REDACTED}", text)
        text = _PAIR.sub(rf"\1{REDACTED}", text)
    if (
        "sk-" in text
        or "sk_" in text
        or "rk_" in text
        or "ghp_" in text
        or "gho_" in text
        or "ghu_" in text
        or "ghs_" in text
        or "ghr_" in text
        or "github_pat_" in text
        or "glpat-" in text
        or "xox" in text
        or "AKIA" in text
        or "ASIA" in text
        or "AIza" in text
        or "ya29." in text
        or "hf_" in text
        or "npm_" in text
        or "pypi-" in text
        or "eyJ" in text
    ):
        text = _PREFIXED.sub(REDACTED, text)
        text = _JWT.sub(REDACTED, text)
    return text
