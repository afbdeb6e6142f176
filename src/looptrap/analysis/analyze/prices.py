"""What a model turn cost, estimated from its tokens where the log records no cost: the prices of the
maintained ``genai-prices`` table (installed with the ``analyze`` extra, Python 3.11 and later). An estimate is
marked as one wherever it is reported (``cost_estimated``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["estimate_cost"]

#: Providers as model names are often prefixed with them (``anthropic/claude-sonnet-4``, litellm's style).
_PROVIDERS = {"anthropic", "openai", "google", "gemini", "vertex_ai", "azure", "mistral", "groq", "deepseek", "xai"}


def estimate_cost(model: str | None, usage: dict[str, Any]) -> float | None:
    """The price of ``usage`` (``input_tokens`` with the cached ones counted in, ``cache_read_tokens``,
    ``cache_write_tokens``, ``output_tokens``) for ``model``, in USD; ``None`` when the model is not known to
    the price table, or the table is not installed."""
    if not model or not isinstance(model, str):
        return None
    counts = {k: int(v) for k, v in usage.items() if k in _KEYS and isinstance(v, (int, float)) and v > 0}
    if not counts:
        return None
    calc = _calculator()
    if calc is None:
        return None
    provider, name = _split(model)
    try:
        return float(calc(counts, name, provider))
    except Exception:  # noqa: BLE001 - a model the table does not know, or a table that fails: no estimate
        return None


_KEYS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


def _split(model: str) -> tuple[str | None, str]:
    head, sep, rest = model.partition("/")
    if sep and head.lower() in _PROVIDERS and rest:
        provider = {"gemini": "google", "vertex_ai": "google"}.get(head.lower(), head.lower())
        return provider, rest
    return None, model


@lru_cache(maxsize=1)
def _calculator() -> Any:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None

    def price(counts: dict[str, int], model: str, provider: str | None) -> float:
        return float(calc_price(Usage(**counts), model, provider_id=provider).total_price)

    return price
