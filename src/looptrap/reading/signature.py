"""Canonical signatures: turn arbitrary call arguments and tool results into small stable digests.

Rules (documented in docs/signatures.md):

* mapping keys are sorted (nested too); list and tuple order is kept;
* numbers compare by value: ``1 == 1.0 == Decimal("1")``; NaN and infinities get tagged markers;
* strings are Unicode NFC, optionally whitespace- and case-folded per tool;
* volatile keys are dropped (a configurable predicate on the key name);
* values that are not JSON are canonicalised by type, in this order: bytes, sets, datetimes, enums, paths,
  UUIDs, decimals and exceptions (type and text); dataclasses (their fields); pydantic models
  (``model_dump``); numpy arrays (dtype, shape and a digest of their bytes) and scalars; other objects by
  their ``__dict__``. Self-references become a ``{"$cycle": depth}`` marker;
* a value with no faithful canonical form (an object without a ``__dict__`` such as a generator, a
  function, a value nested deeper than 48 levels, a value too big to walk (more than ``MAX_WORK`` items
  visited in all, shared references counted at every place they occur: a few shared lists nest into
  billions of items), a value whose conversion fails) is *not comparable*: it
  becomes an ``{"$opaque": nonce}`` marker that is new every time, so it is never equal to anything (never
  a repeat, never stale). Unknown never means equal;
* strings longer than ``HUGE`` characters are replaced by their own digest, so payloads are never kept.

Every comparable value gets the same canonical form in every process and run (no ``hash()``, no ``repr``,
no memory address is involved). Nothing here raises on user data.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import math
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import xxhash

__all__ = ["HUGE", "MAX_WORK", "OPAQUE_MARK", "Canonicaliser", "comparable", "digest_bytes", "digest_text"]

#: Strings longer than this are represented by their digest inside a canonical form.
HUGE = 4096
_TEXT_CACHED = 64  # strings up to this length have their text() remembered, up to _TEXT_CACHE of them
_TEXT_CACHE = 4096

_MAX_DEPTH = 48
#: Items (of lists, mappings, sets and fields) one canonical form visits at most; past it, not comparable.
MAX_WORK = 250_000
#: The marker of a value that is not comparable (found in canonical bytes with ``in``).
OPAQUE_MARK = b'{"$opaque":"'
_WS = re.compile(r"\s+")
_SORT = orjson.OPT_SORT_KEYS
_INT_MAX = 2**63 - 1
_MAX_INT_DIGITS = 4000  # an integral Decimal with more digits stays a Decimal (no giant int is built)


def digest_bytes(data: bytes) -> int:
    """64-bit digest of bytes (xxh3: fast, stable across processes and platforms)."""
    return xxhash.xxh3_64_intdigest(data)


def digest_text(text: str) -> int:
    """64-bit digest of a string (UTF-8, surrogates escaped so no string can fail)."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))


def _opaque() -> dict[str, str]:
    return {"$opaque": os.urandom(8).hex()}


_DOLLAR = ord("$")


def comparable(data: bytes) -> bool:
    """Whether canonical bytes stand for a comparable value (no part of it was opaque)."""
    # the marker's "$" looked for first, as an int (one memchr): ``bytes in bytes`` raises and clears a
    # TypeError before it searches
    return _DOLLAR not in data or OPAQUE_MARK not in data


class _TooMuchWork(Exception):
    """The value's walk went past ``MAX_WORK`` items (see ``Canonicaliser.encode``)."""


def _huge(s: str) -> dict[str, Any]:
    return {"$h": format(digest_text(s), "016x"), "$len": len(s)}


class Canonicaliser:
    """Builds the canonical JSON form of a value.

    ``drop_key(name) -> bool`` decides which mapping keys are volatile; ``text(s) -> str`` post-processes
    every string (folding for arguments, volatile-substring removal for results). Both must depend on their
    argument alone: their answers are remembered.
    """

    __slots__ = ("_drop", "_drop_cache", "_text", "_text_cache")

    def __init__(
        self,
        drop_key: Callable[[str], bool] | None = None,
        text: Callable[[str], str] | None = None,
    ) -> None:
        self._drop = drop_key
        self._drop_cache: dict[str, bool] = {}
        self._text = text
        self._text_cache: dict[str, str] = {}

    def dropped(self, key: str) -> bool:
        """Whether a mapping key is left out (cached per key name)."""
        if self._drop is None:
            return False
        hit = self._drop_cache.get(key)
        if hit is None:
            hit = bool(self._drop(key))
            if len(self._drop_cache) < 4096:
                self._drop_cache[key] = hit
        return hit

    def encode(self, value: Any) -> bytes:
        """Canonical JSON bytes of ``value``; never raises."""
        try:
            if type(value) is dict:
                fast = self._flat(value)
                if fast is not None:
                    return orjson.dumps(fast, option=_SORT)
            return orjson.dumps(self.canon(value, 0, (), [MAX_WORK]), option=_SORT)
        except Exception:  # noqa: BLE001 - a failure on user data, or too much work: the value is not comparable
            return orjson.dumps(_opaque())

    def _flat(self, d: dict[Any, Any]) -> dict[str, Any] | None:
        # Fast path for the common case, at the top or inside a list (a page of search hits): a flat dict of
        # ASCII keys and short ASCII strings, small ints, floats with a fraction, bools, None; a volatile key
        # (a result's `updated_at`) is left out here too. Anything else: None, and `canon` builds the same
        # form the long way.
        copy = self._text is not None
        known = self._drop_cache
        for k, v in d.items():
            if type(k) is not str or not k.isascii():
                return None
            t = type(v)
            if t is str:
                if len(v) > HUGE or not v.isascii():
                    return None
            elif t is int:
                if not -_INT_MAX <= v <= _INT_MAX:
                    return None
            elif t is float:
                if not math.isfinite(v) or v.is_integer():  # canon writes these differently
                    return None
            elif v is not None and t is not bool:
                return None
            if not copy:
                drop = known.get(k)  # inlined `dropped` (one call less per key)
                if drop is None:
                    drop = self.dropped(k)
                copy = drop
        if copy:
            texted = self._texted if self._text is not None else None
            out = {}
            for k, v in d.items():
                drop = known.get(k)
                if drop is None:
                    drop = self.dropped(k)
                if not drop:
                    out[k] = texted(v) if texted is not None and type(v) is str else v
            return out
        return d

    def _texted(self, s: str) -> str:
        """``text(s)``, remembered for short strings: the strings inside values repeat from call to call (a
        status, a currency, an id), and scrubbing one costs microseconds where a lookup costs nanoseconds."""
        text = self._text
        assert text is not None
        if len(s) > _TEXT_CACHED:
            return text(s)
        cache = self._text_cache
        hit = cache.get(s)
        if hit is None:
            hit = text(s)
            if len(cache) >= _TEXT_CACHE:
                cache.clear()
            cache[s] = hit
        return hit

    def canon(self, v: Any, depth: int, path: tuple[int, ...], left: list[int]) -> Any:
        """Canonical plain-JSON value of ``v`` (``path`` holds ids of enclosing containers; ``left[0]``, the
        items this walk may still visit: raises ``_TooMuchWork`` past them)."""
        t = type(v)
        if t is str:
            return self._str(v)
        if v is None or t is bool:
            return v
        if t is int:
            return _int(v)
        if t is float:
            return _float(v)
        if depth >= _MAX_DEPTH:
            return _opaque()
        if t is dict:
            left[0] -= len(v)  # counted once, whichever way the dict is written
            if left[0] < 0:
                raise _TooMuchWork
            fast = self._flat(v)
            if fast is not None:
                return fast
        if t is list or t is tuple:
            if id(v) in path:
                return {"$cycle": len(path) - path.index(id(v))}
            left[0] -= len(v)
            if left[0] < 0:
                raise _TooMuchWork
            sub = (*path, id(v))
            return [self.canon(item, depth + 1, sub, left) for item in v]
        if t is dict or isinstance(v, Mapping):  # after the exact types: an ABC's check costs a Python call
            if id(v) in path:
                return {"$cycle": len(path) - path.index(id(v))}
            if t is not dict:
                _spend(left, len(v))
            sub = (*path, id(v))
            out: dict[str, Any] = {}
            known = self._drop_cache
            for k, item in v.items():
                key = k if type(k) is str else _key(self.canon(k, depth + 1, sub, left))
                if not key.isascii():
                    key = unicodedata.normalize("NFC", key)
                    if _has_surrogates(key):
                        key = key.encode("utf-8", "backslashreplace").decode("ascii")
                drop = known.get(key)  # inlined `dropped` (one call less per key)
                if drop is None:
                    drop = self.dropped(key)
                if not drop:
                    out[key] = self.canon(item, depth + 1, sub, left)
            return out
        return self._other(v, t, depth, path, left)

    def _str(self, s: str) -> Any:
        if not s.isascii():
            s = unicodedata.normalize("NFC", s)
            if _has_surrogates(s):  # not encodable as JSON text: keep its identity as a digest
                return _huge(s)
        if len(s) > HUGE:
            return _huge(s)
        return self._texted(s) if self._text is not None else s

    def _other(self, v: Any, t: type, depth: int, path: tuple[int, ...], left: list[int]) -> Any:
        if isinstance(v, bool):
            return bool(v)
        if isinstance(v, enum.Enum):
            return self.canon(v.value, depth + 1, path, left)
        if isinstance(v, int):
            return self.canon(int(v), depth, path, left)
        if isinstance(v, float):
            return _float(float(v))
        if isinstance(v, str):
            return self._str(str(v))
        if isinstance(v, (bytes, bytearray, memoryview)):
            raw = bytes(v)
            return {"$bytes": format(digest_bytes(raw), "016x"), "$len": len(raw)}
        decimal = sys.modules.get("decimal")  # not imported: no Decimal can exist (keeps `import looptrap` light)
        if decimal is not None and isinstance(v, decimal.Decimal):
            return _decimal(v)
        if isinstance(v, (set, frozenset)):
            if id(v) in path:
                return {"$cycle": len(path) - path.index(id(v))}
            _spend(left, len(v))
            sub = (*path, id(v))
            items = [self.canon(i, depth + 1, sub, left) for i in v]
            return {"$set": sorted(items, key=lambda i: orjson.dumps(i, option=_SORT))}
        if isinstance(v, (list, tuple)):
            return self.canon(list(v), depth, path, left)
        if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
            return {"$dt": v.isoformat()}
        if isinstance(v, _dt.timedelta):
            return {"$td": v.total_seconds()}
        uuid = sys.modules.get("uuid")
        if (uuid is not None and isinstance(v, uuid.UUID)) or isinstance(v, os.PathLike):
            return str(v)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            if id(v) in path:
                return {"$cycle": len(path) - path.index(id(v))}
            sub = (*path, id(v))
            found = dataclasses.fields(v)
            _spend(left, len(found))
            fields = {f.name: self.canon(getattr(v, f.name), depth + 1, sub, left) for f in found}
            return {"$type": _type_name(v), "fields": fields}
        dump = getattr(v, "model_dump", None)  # pydantic v2, without importing pydantic
        if callable(dump) and not isinstance(v, type):
            if id(v) in path:
                return {"$cycle": len(path) - path.index(id(v))}
            return {"$type": _type_name(v), "fields": self.canon(dump(), depth + 1, (*path, id(v)), left)}
        numpy = sys.modules.get("numpy")  # not imported: no array can exist
        if numpy is not None:
            if isinstance(v, numpy.ndarray):
                if v.dtype.hasobject:  # the bytes are pointers: compare the items
                    items = self.canon(v.tolist(), depth + 1, path, left)
                    return {"$ndarray": v.dtype.str, "shape": list(v.shape), "items": items}
                raw = numpy.ascontiguousarray(v).tobytes()
                return {"$ndarray": v.dtype.str, "shape": list(v.shape), "$bytes": format(digest_bytes(raw), "016x")}
            if isinstance(v, numpy.generic):
                return self.canon(v.item(), depth + 1, path, left)
        if isinstance(v, BaseException):
            return {"$exception": _type_name(v), "text": self._str(str(v))}
        if isinstance(v, type):
            return {"$class": f"{v.__module__}.{v.__qualname__}"}
        attrs = getattr(v, "__dict__", None)
        if type(attrs) is dict and attrs and not callable(v):
            if id(v) in path:
                return {"$cycle": len(path) - path.index(id(v))}
            return {"$type": _type_name(v), "fields": self.canon(attrs, depth + 1, (*path, id(v)), left)}
        return _opaque()  # a generator, a function, an object whose state is not in its __dict__


def _spend(left: list[int], items: int) -> None:
    """Count ``items`` more visited by a walk (see ``MAX_WORK``)."""
    left[0] -= items
    if left[0] < 0:
        raise _TooMuchWork


def _has_surrogates(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _type_name(v: Any) -> str:
    t = type(v)
    return f"{t.__module__}.{t.__qualname__}"


def _int(i: int) -> Any:
    # Beyond 64 bits orjson cannot encode an int; hex has no digit limit (str() of a huge int raises).
    return i if -_INT_MAX <= i <= _INT_MAX else {"$int": format(i, "x")}


def _float(f: float) -> Any:
    if math.isnan(f):
        return {"$float": "nan"}
    if math.isinf(f):
        return {"$float": "inf" if f > 0 else "-inf"}
    if f.is_integer():
        return _int(int(f))
    return f


def _decimal(d: Any) -> Any:
    import decimal

    if not d.is_finite():
        return {"$float": "nan" if d.is_nan() else ("inf" if d > 0 else "-inf")}
    if d == d.to_integral_value() and d.adjusted() < _MAX_INT_DIGITS:
        return _int(int(d))
    f = float(d)
    if math.isfinite(f) and decimal.Decimal(f) == d:
        return f
    return {"$decimal": str(d.normalize())}


def _key(canon_key: Any) -> str:
    if type(canon_key) is str:
        return canon_key
    return orjson.dumps(canon_key, option=_SORT).decode()


def fold_text(*, whitespace: bool, case: bool) -> Callable[[str], str] | None:
    """String post-processor for per-tool folding, or ``None`` when nothing is folded."""
    if not whitespace and not case:
        return None

    def fold(s: str) -> str:
        if whitespace:
            s = _WS.sub(" ", s).strip()
        if case:
            s = s.casefold()
        return s

    return fold
