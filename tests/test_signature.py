"""Canonical signatures: when are two calls the same? (docs/signatures.md, core/signature.py)"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import importlib.util
import os
import random
import subprocess
import sys
import unicodedata
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import need
from looptrap import Engine, Guard, ToolPolicy
from looptrap.core.state import Flag
from looptrap.reading import signature
from looptrap.reading.signature import Canonicaliser, comparable

ENGINE = Engine()


def sig(args: Any, tool: str = "get_order") -> int:
    """The signature digest of a call, as the guard computes it."""
    return ENGINE.call(tool, args).digest


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


# -- strategies -------------------------------------------------------------------------------------------

# Keys are NFC-normalised so that two keys of one mapping never canonicalise to the same key (a mapping with
# both "é" and "e\u0301" as keys has two entries for one canonical key: order would then rightly matter).
keys = st.text(max_size=8).map(nfc)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=24,
)
json_objects = st.dictionaries(keys, json_values, max_size=6)


def reorder(value: Any, rnd: random.Random) -> Any:
    """An equal value whose mappings (at every depth) have their keys in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: reorder(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [reorder(v, rnd) for v in value]
    return value


# -- key order, list order ----------------------------------------------------------------------------


@given(json_objects, st.randoms(use_true_random=False))
def test_key_order_never_matters_at_any_depth(value: dict[str, Any], rnd: random.Random) -> None:
    other = reorder(value, rnd)
    assert other == value
    assert sig(other) == sig(value)


def test_key_order_nested_example() -> None:
    a = {"filter": {"status": "open", "owner": {"name": "ann", "team": "x"}}, "limit": 5}
    b = {"limit": 5, "filter": {"owner": {"team": "x", "name": "ann"}, "status": "open"}}
    assert sig(a) == sig(b)


@given(st.lists(st.integers(), min_size=2, max_size=8, unique=True))
def test_list_order_matters(items: list[int]) -> None:
    assert sig({"ids": items}) != sig({"ids": list(reversed(items))})


def test_tuple_is_a_list() -> None:
    assert sig({"ids": (1, 2, 3)}) == sig({"ids": [1, 2, 3]})
    assert sig({"ids": [1, 2, 3]}) != sig({"ids": [3, 2, 1]})


# -- numbers --------------------------------------------------------------------------------------------


@given(st.integers(min_value=-(2**53), max_value=2**53))
def test_int_float_and_decimal_of_the_same_value_are_equal(n: int) -> None:
    assert sig({"n": n}) == sig({"n": float(n)}) == sig({"n": Decimal(n)})


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_and_its_exact_decimal_are_equal(f: float) -> None:
    assert sig({"x": f}) == sig({"x": Decimal(f)})


def test_number_examples() -> None:
    assert sig({"n": 1}) == sig({"n": 1.0}) == sig({"n": Decimal("1")}) == sig({"n": Decimal("1.00")})
    assert sig({"n": 0}) == sig({"n": -0.0})
    assert sig({"n": 0.1}) != sig({"n": Decimal("0.1")})  # documented: different numbers
    assert sig({"n": 1}) != sig({"n": 2})
    assert sig({"n": 1}) != sig({"n": "1"})
    assert sig({"n": float("nan")}) == sig({"n": float("nan")}) == sig({"n": Decimal("NaN")})
    assert sig({"n": float("inf")}) == sig({"n": Decimal("Infinity")})
    assert sig({"n": float("inf")}) != sig({"n": float("-inf")})
    assert sig({"n": float("nan")}) != sig({"n": float("inf")})


@pytest.mark.parametrize("n", [2**63, 2**64, 10**20, -(2**70)], ids=["2^63", "2^64", "1e20", "-2^70"])
def test_integers_beyond_64_bits_compare_by_value_with_decimal(n: int) -> None:
    """docs/signatures.md: "Numbers compare by value"; ``Decimal(n) == n`` for every int."""
    assert sig({"n": n}) == sig({"n": Decimal(n)})


def test_integral_float_beyond_64_bits_equals_the_int_of_the_same_value() -> None:
    assert 2.0**63 == 2**63
    assert sig({"n": 2**63}) == sig({"n": 2.0**63})


def test_distinct_huge_decimals_are_different_numbers() -> None:
    """Two different numbers must not share a signature (and a finite number is not infinity)."""
    assert sig({"n": Decimal(2**64)}) != sig({"n": Decimal(2**64 + 1)})
    assert sig({"n": Decimal("1e400")}) != sig({"n": float("inf")})


# -- strings --------------------------------------------------------------------------------------------


@given(st.text(max_size=40))
def test_nfc_and_nfd_strings_are_equal(s: str) -> None:
    assert sig({"q": nfc(s)}) == sig({"q": nfd(s)})
    assert sig({nfc(s): 1}) == sig({nfd(s): 1})


def test_nfc_examples_and_different_strings() -> None:
    assert sig({"q": "caf\u00e9"}) == sig({"q": "cafe\u0301"})
    assert sig({"caf\u00e9": 1}) == sig({"cafe\u0301": 1})
    assert sig({"q": "cafe"}) != sig({"q": "caf\u00e9"})
    assert sig({"q": "Refund"}) != sig({"q": "refund"})  # no case folding by default


@pytest.mark.parametrize("count", [3000, 5000], ids=["nfd-crosses-4096", "both-over-4096"])
def test_nfc_applies_to_long_strings_too(count: int) -> None:
    """'Strings are compared after Unicode NFC normalisation': also those hashed for being long."""
    s = "\u00e9" * count
    assert sig({"q": nfc(s)}) == sig({"q": nfd(s)})


def test_long_strings_are_distinguished() -> None:
    a = "x" * 10_000
    assert sig({"q": a}) == sig({"q": "x" * 10_000})
    assert sig({"q": a}) != sig({"q": a + "y"})
    assert sig({"q": a}) != sig({"q": "x" * 9_999})


def test_lone_surrogates_do_not_collapse_distinct_arguments() -> None:
    """A string that orjson cannot encode must not make every call with it the same call."""
    assert sig({"q": "\ud800a", "page": 1}) != sig({"q": "\ud800b", "page": 2})


def test_folding_per_tool_policy() -> None:
    from looptrap import GuardConfig, ToolPolicy

    engine = Engine(GuardConfig(tools={"search_*": ToolPolicy(fold_case=True, fold_whitespace=True)}))
    assert (
        engine.call("search_docs", {"q": " Refund   Policy "}).digest
        == engine.call("search_docs", {"q": "refund policy"}).digest
    )
    assert engine.call("other", {"q": "Refund"}).digest != engine.call("other", {"q": "refund"}).digest


def test_keys_and_key_policies() -> None:
    from looptrap import GuardConfig, ToolPolicy

    engine = Engine(
        GuardConfig(
            tools={"run_sql": ToolPolicy(keys=("query",)), "lookup": ToolPolicy(key=lambda a: a["sku"].upper())}
        )
    )
    assert (
        engine.call("run_sql", {"query": "select 1", "timeout": 5}).digest
        == engine.call("run_sql", {"query": "select 1", "timeout": 9}).digest
    )
    assert engine.call("run_sql", {"query": "select 1"}).digest != engine.call("run_sql", {"query": "select 2"}).digest
    assert engine.call("lookup", {"sku": "ab-1", "x": 1}).digest == engine.call("lookup", {"sku": "AB-1"}).digest
    # a key function that raises never breaks the call
    assert isinstance(engine.call("lookup", {"no_sku": 1}).digest, int)


def test_tool_name_is_part_of_the_signature() -> None:
    assert sig({"q": "a"}, tool="search_docs") != sig({"q": "a"}, tool="search_web")


# -- volatile keys ------------------------------------------------------------------------------------

VOLATILE = [
    "request_id",
    "requestId",
    "X-Request-ID",
    "client_request_id",
    "nonce",
    "timestamp",
    "ts",
    "trace_id",
    "traceId",
    "span_id",
    "correlation_id",
    "idempotency_key",
    "traceparent",
    "cache_buster",
]
MEANINGFUL = ["id", "page", "offset", "cursor", "order_id", "user_id", "limit", "query", "session"]


@pytest.mark.parametrize("key", VOLATILE)
@given(a=json_values, b=json_values)
@settings(max_examples=15)
def test_volatile_argument_keys_are_ignored(key: str, a: Any, b: Any) -> None:
    base = {"id": "A1", "filter": {"status": "open"}}
    assert sig({**base, key: a}) == sig({**base, key: b}) == sig(base)
    # nested too
    assert sig({"id": "A1", "filter": {"status": "open", key: a}}) == sig(base)


@pytest.mark.parametrize("key", MEANINGFUL)
@given(a=json_values, b=json_values)
@settings(max_examples=15)
def test_meaningful_argument_keys_are_kept(key: str, a: Any, b: Any) -> None:
    if ENGINE.call("t", a).digest == ENGINE.call("t", b).digest:
        return  # equal canonical values (1 and 1.0, NFC forms...): nothing to tell apart
    assert sig({key: a}) != sig({key: b})


def test_get_order_ids_differ() -> None:
    assert sig({"id": "A1"}, tool="get_order") != sig({"id": "A2"}, tool="get_order")
    assert sig({"page": 1}) != sig({"page": 2})
    assert sig({"offset": 0}) != sig({"offset": 50})


def test_volatile_key_list_is_configurable() -> None:
    from looptrap import GuardConfig

    engine = Engine(GuardConfig(arg_volatile_keys=("page",)))
    assert engine.call("t", {"q": 1, "page": 1}).digest == engine.call("t", {"q": 1, "page": 2}).digest
    assert engine.call("t", {"request_id": 1}).digest != engine.call("t", {"request_id": 2}).digest


# -- never raises, deterministic ----------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: Any
    y: Any


class Color(enum.Enum):
    RED = 1
    GREEN = "green"


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


class OnlyRepr:
    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"OnlyRepr({self.n})"


class DefaultRepr:
    """Nothing but ``object.__repr__`` (with a memory address)."""


class FakeModel:
    """Looks like a pydantic v2 model."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def model_dump(self) -> Any:
        return self.data


class BrokenModel:
    def model_dump(self) -> Any:
        raise ValueError("cannot dump")


class Anything:
    """Answers every attribute with a callable returning a new ``Anything`` (a Mock-like object)."""

    def __getattr__(self, name: str) -> Callable[[], Anything]:
        return Anything


def self_ref_list(v: Any) -> list[Any]:
    out: list[Any] = [v]
    out.append(out)
    return out


def self_ref_dict(v: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"v": v}
    out["me"] = out
    out["nested"] = {"up": out, "list": [out]}
    return out


hashable = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.binary(max_size=10)
    | st.tuples(st.integers(), st.text(max_size=3))
    | st.frozensets(st.integers(), max_size=3)
)
leaves = (
    hashable
    | st.text(alphabet=st.characters(categories=["Cs"]) | st.characters(), max_size=10)  # lone surrogates too
    | st.decimals(allow_nan=True, allow_infinity=True)
    | st.integers(min_value=2**64, max_value=2**200)
    | st.datetimes()
    | st.dates()
    | st.times()
    | st.timedeltas()
    | st.uuids()
    | st.sampled_from([Color.RED, Color.GREEN, PurePosixPath("/etc/hosts")])
    | st.builds(bytearray, st.binary(max_size=8))
    | st.builds(BadRepr)
    | st.builds(OnlyRepr, st.integers())
    | st.builds(DefaultRepr)
    | st.builds(BrokenModel)
    | st.builds(Anything)
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.sets(hashable, max_size=4)
        | st.frozensets(hashable, max_size=4)
        | st.dictionaries(hashable, children, max_size=4)
        | st.builds(Point, children, children)
        | st.builds(FakeModel, children)
        | children.map(self_ref_list)
        | children.map(self_ref_dict)
    )


anything = st.recursive(leaves, _extend, max_leaves=16)


@given(anything)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_never_raises_and_is_deterministic(value: Any) -> None:
    """A comparable value has the same digest every time; a value that is not comparable (no faithful
    canonical form) never has the same digest twice: unknown never means equal."""
    first = Engine().call("tool", value)
    second = Engine().call("tool", value)
    assert isinstance(first.digest, int)
    assert 0 <= first.digest < 2**64
    if comparable(Canonicaliser().encode(value)):
        assert first.digest == second.digest == ENGINE.call("tool", value).digest
        assert first.preview == second.preview
    else:
        assert first.digest != second.digest
    # as a result, too (results have their own canonicaliser): through a fail-closed guard, which would
    # halt with reason guard_error on any internal failure
    guard = Guard(clock=None, fail_closed=True)
    verdict = guard.check("tool", value)
    assert verdict.reason != "guard_error"
    guard.record("tool", value, value)
    guard.record("tool", value, value, is_error=True)
    assert guard.state.calls >= 1
    assert guard.end_turn(state=value).reason != "guard_error"
    orjson.dumps(guard.state.to_dict())  # the state stays plain JSON


@given(anything)
@settings(max_examples=100, deadline=None)
def test_determinism_across_engine_instances_and_guards(value: Any) -> None:
    if not comparable(Canonicaliser().encode(value)):
        return  # covered above: such a value never compares equal
    a = Guard(clock=None)
    b = Guard(clock=None)
    a.check("tool", value)
    b.check("tool", value)
    assert a.state.previews == b.state.previews
    a.record("tool", value, value)
    b.record("tool", value, value)
    assert [tuple(e) for e in a.state.history] == [tuple(e) for e in b.state.history]


def test_self_references_are_markers() -> None:
    lst: list[Any] = [1]
    lst.append(lst)
    d: dict[str, Any] = {"a": 1}
    d["self"] = d
    assert sig({"x": lst}) == sig({"x": lst})
    assert sig(d) == sig(d)
    other: dict[str, Any] = {"a": 2}
    other["self"] = other
    assert sig(d) != sig(other)


class Record:
    """A plain object: its state is its ``__dict__``."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def test_objects_are_compared_by_their_dict_and_never_by_their_repr() -> None:
    assert sig({"o": Record(a=1, b={"x", "y"})}) == sig({"o": Record(b={"y", "x"}, a=1.0)})
    assert sig({"o": Record(a=1)}) != sig({"o": Record(a=2)})
    assert sig({"o": BadRepr()}) != sig({"o": BadRepr()})  # no state to compare


@pytest.mark.parametrize(
    "make",
    [
        DefaultRepr,  # object.__repr__ only: every such object looked the same
        lambda: OnlyRepr(1),  # __slots__: its state is not in a __dict__
        lambda: (i for i in range(3)),  # a generator
        lambda: len,  # a function
        lambda: Record(stream=(i for i in range(3))),  # comparable but for one part
    ],
    ids=["default_repr", "slots", "generator", "function", "nested"],
)
def test_a_value_with_no_faithful_form_is_not_comparable(make: Callable[[], Any]) -> None:
    value = make()
    assert not comparable(Canonicaliser().encode(value))
    assert sig({"o": value}) != sig({"o": value})  # not even equal to itself: unknown never means equal
    guard = Guard(clock=None)
    verdicts = []
    for _ in range(6):  # the same call, the same incomparable result: never a repeat, never stale
        verdicts.append(guard.check("get_response", {"id": 1}))
        guard.record("get_response", {"id": 1}, make())
    assert {v.action for v in verdicts} == {"allow"}
    assert not any(e.flags & Flag.STALE for e in guard.state.history)


def test_a_tool_policy_keys_results_that_are_not_comparable() -> None:
    class Response:
        __slots__ = ("status",)

        def __init__(self) -> None:
            self.status = 404

    guard = Guard(clock=None, tools={"http_get": ToolPolicy(result_key=lambda r: r.status)})
    verdicts = []
    for _ in range(3):
        verdicts.append(guard.check("http_get", {"url": "https://example.com/x"}))
        if verdicts[-1].allowed:
            guard.record("http_get", {"url": "https://example.com/x"}, Response())
    assert [v.action for v in verdicts] == ["allow", "allow", "advise"]


def test_numpy_arrays_are_compared_by_their_bytes() -> None:
    need("numpy", importlib.util.find_spec("numpy") is not None)
    import numpy

    a = numpy.arange(2000, dtype=numpy.int64)
    b = a.copy()
    b[1000] = -1  # differs in the middle, where a repr abbreviates with "..."
    assert sig({"x": a}) == sig({"x": numpy.arange(2000, dtype=numpy.int64)})
    assert sig({"x": a}) != sig({"x": b})
    assert sig({"x": a}) != sig({"x": a.astype(numpy.int32)})  # the dtype is part of it
    assert sig({"x": a.reshape(40, 50)}) != sig({"x": a.reshape(50, 40)})
    assert sig({"x": a[::2]}) == sig({"x": numpy.ascontiguousarray(a[::2])})
    assert sig({"n": numpy.int64(3)}) == sig({"n": 3})
    assert sig({"o": numpy.array([{"k": 1}, None], dtype=object)}) == sig(
        {"o": numpy.array([{"k": 1}, None], dtype=object)}
    )


def test_digests_are_equal_across_processes_and_hash_seeds() -> None:
    script = (
        "import datetime, enum, dataclasses, uuid\n"
        "from looptrap import Engine\n"
        "class R:\n"
        "    def __init__(self): self.tags = {'b', 'a', 'c'}; self.n = frozenset({3, 1})\n"
        "@dataclasses.dataclass\n"
        "class P:\n"
        "    s: set\n"
        "values = [{'s': {'x', 'y', 'z'}}, R(), P({'q', 'r'}), {frozenset({'k', 'j'}): 1},"
        " {'t': datetime.date(2026, 1, 2)}, uuid.UUID(int=5), b'bytes', {'nested': [{'set': {1.0, 'a'}}]}]\n"
        "e = Engine()\n"
        "print([e.call('t', v).digest for v in values])\n"
    )
    outs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        outs.add(proc.stdout.strip())
    assert len(outs) == 1, outs


def test_dataclass_datetime_bytes_set_canonical_forms() -> None:
    assert sig({"p": Point(1, 2)}) == sig({"p": Point(1.0, Decimal(2))})
    assert sig({"p": Point(1, 2)}) != sig({"p": Point(2, 1)})
    t = dt.datetime(2026, 1, 2, 3, 4, 5)
    assert sig({"t": t}) == sig({"t": dt.datetime(2026, 1, 2, 3, 4, 5)})
    assert sig({"t": t}) != sig({"t": t + dt.timedelta(seconds=1)})
    assert sig({"b": b"abc"}) == sig({"b": bytearray(b"abc")}) == sig({"b": memoryview(b"abc")})
    assert sig({"b": b"abc"}) != sig({"b": b"abd"})
    assert sig({"s": {3, 1, 2}}) == sig({"s": frozenset([2, 3, 1])})
    assert sig({"s": {1, 2}}) != sig({"s": {1, 3}})
    u = uuid.UUID(int=7)
    assert sig({"u": u}) == sig({"u": str(u)})
    assert sig({"c": Color.RED}) == sig({"c": 1})
    assert sig({1: "a", None: "b"}) == sig({None: "b", 1: "a"})


def test_pydantic_model_when_available() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Order(pydantic.BaseModel):  # type: ignore[misc,name-defined]
        id: str
        qty: int

    assert sig({"o": Order(id="A1", qty=1)}) == sig({"o": Order(qty=1, id="A1")})
    assert sig({"o": Order(id="A1", qty=1)}) != sig({"o": Order(id="A2", qty=1)})


def test_deep_nesting_does_not_raise_and_is_not_comparable() -> None:
    value: Any = "leaf"
    for _ in range(5000):
        value = [value]
    assert sig({"deep": value}) != sig({"deep": value})  # nested past 48 levels: no faithful form kept
    d: Any = {}
    for _ in range(5000):
        d = {"k": d}
    assert isinstance(sig(d), int)


def test_shared_references_are_walked_within_a_bound_of_work(monkeypatch: pytest.MonkeyPatch) -> None:
    shared: list[Any] = []
    for _ in range(22):  # 22 lists, and 2**23 places where one of them occurs
        shared = [shared, shared]
    visits = 0
    canon = Canonicaliser.canon

    def counted(self: Canonicaliser, *args: Any) -> Any:
        nonlocal visits
        visits += 1
        return canon(self, *args)

    # The work, counted (a clock on a busy machine says little): in the interpreted build, where the walk's
    # method can be wrapped; the compiled build runs the same source, and checks the outcome below.
    countable = not str(signature.__file__).endswith((".so", ".pyd"))
    if countable:
        monkeypatch.setattr(Canonicaliser, "canon", counted)
    data = Canonicaliser().encode({"a": shared})
    assert visits <= signature.MAX_WORK + 1, visits  # 2**23 without the bound
    assert visits > 0 or not countable
    visits = 0
    verdict = Guard(clock=None).check("t", {"a": shared})
    assert visits <= signature.MAX_WORK + 1, visits
    assert not comparable(data)  # too big to walk: not comparable, never a repeat
    assert verdict.action == "allow"
    # Below the bound, shared references are written out at every place, as equal copies are.
    small: list[Any] = []
    for _ in range(12):
        small = [small, small]
    assert Canonicaliser().encode(small) == Canonicaliser().encode(orjson.loads(orjson.dumps(small)))
    part = {"id": 1, "tags": ["a", "b"]}
    assert sig({"x": part, "y": [part, part]}) == sig({"x": dict(part), "y": [dict(part), dict(part)]})


def test_the_bound_of_work_counts_every_item_visited() -> None:
    limit = signature.MAX_WORK
    canon = Canonicaliser()
    assert comparable(canon.encode(list(range(limit))))
    assert not comparable(canon.encode(list(range(limit + 1))))
    row = {"id": 1, "name": "x"}  # 1 item in the list, 2 in the row: 3 per row
    assert comparable(canon.encode({"rows": [row] * (limit // 3 - 1)}))
    assert not comparable(canon.encode({"rows": [row] * (limit // 3 + 1)}))
    assert comparable(canon.encode({"s": set(range(limit - 1))}))
    assert not comparable(canon.encode({"s": set(range(limit))}))
    assert comparable(canon.encode(list(range(10))))  # the count starts over with every value


# -- huge payloads ------------------------------------------------------------------------------------

FIVE_MB = 5 * 1024 * 1024


def test_huge_argument_and_result_are_not_kept() -> None:
    """(What they cost, linear in their size: benchmarks/overhead.py, part 5.)"""
    payload = "A" * FIVE_MB
    other = "A" * (FIVE_MB - 1) + "B"
    guard = Guard(clock=None)
    for tool, args, result in [
        ("write_file", {"path": "big.txt", "content": payload}, "ok"),
        ("read_file", {"path": "big.txt"}, payload),
        ("read_file", {"path": "big.txt", "raw": True}, {"content": payload}),
        ("search", {"q": payload}, payload),
        ("search", {"q": payload}, payload),
    ]:
        verdict = guard.check(tool, args)
        if verdict.allowed:
            guard.record(tool, args, result)
    guard.record("fetch", {"url": "x"}, payload, is_error=True)
    assert guard.state.calls == 6  # each counted, the fetch recorded without a check too
    assert sig({"q": payload}) != sig({"q": other})
    saved = orjson.dumps(guard.state.to_dict())
    assert len(saved) < 20_000
    assert b"A" * 200 not in saved


def test_huge_shell_command_is_classified() -> None:
    engine = Engine()
    call = engine.call("bash", {"command": "echo " + "x" * FIVE_MB})
    assert call.mutating is False
    assert len(call.preview) < 200


def test_the_text_of_a_short_string_is_computed_once() -> None:
    from looptrap.reading import signature

    seen: list[str] = []

    def text(s: str) -> str:
        seen.append(s)
        return s.upper()

    canon = Canonicaliser(text=text)
    long = "x" * (signature._TEXT_CACHED + 1)
    for _ in range(3):
        assert canon.encode({"status": "queued", "rows": [{"s": "queued"}], "note": long}) == (
            b'{"note":"' + long.upper().encode() + b'","rows":[{"s":"QUEUED"}],"status":"QUEUED"}'
        )
        assert canon.encode({"status": "queued"}) == b'{"status":"QUEUED"}'  # the flat fast path
    assert seen.count("queued") == 1  # remembered, in the flat fast path and the nested one alike
    assert seen.count(long) == 3  # a long string is not kept
    for i in range(signature._TEXT_CACHE + 10):
        canon.encode({"k": f"v{i}"})
    assert len(canon._text_cache) <= signature._TEXT_CACHE  # bounded


def _entry(result: Any) -> Any:
    from looptrap.core.state import SessionState

    engine = Engine()
    state = SessionState(run_id="s")
    call, _ = engine.check(state, engine.call("get", {"id": 1}))
    return engine.record(state, call, result)


def test_a_result_sent_as_json_text_is_read_as_the_value_and_a_python_repr_as_text() -> None:
    value = {"status": "ok", "updated_at": "2026-11-30T05:19:53Z"}
    assert _entry(orjson.dumps(value).decode()).result == _entry(value).result
    assert _entry(" " + orjson.dumps(value).decode()).result != _entry(value).result  # text: not parsed
    repr_text = repr(value)  # {'status': ...}: ruled out before a parse is tried, read as text
    assert _entry(repr_text).result != _entry(value).result
    assert _entry("[1, 2]").result == _entry([1, 2]).result
    assert _entry("['a']").result != _entry(["a"]).result
    from looptrap.engine.engine import _closed

    assert not _closed(repr_text)  # no parse tried: JSON never has a single quote after its bracket
    assert not _closed('{"cut": "sho')
    assert _closed(orjson.dumps(value).decode() + "\n")


_FLAT_KEYS = st.sampled_from(["id", "status", "updated_at", "request_id", "total", "ts", "q", "Ünï", "page"])
_FLAT_VALUES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", "queued", "2026-11-30T05:19:53Z", "took 12 ms", "naïve", "x" * 5000])
    | st.text(max_size=12)
)


def _proxied(value: Any) -> Any:
    """The same value with every dict a read-only mapping of another type: canonicalised the long way."""
    if type(value) is dict:
        return MappingProxyType({k: _proxied(v) for k, v in value.items()})
    if type(value) is list:
        return [_proxied(v) for v in value]
    return value


_FLAT = st.dictionaries(_FLAT_KEYS | st.text(max_size=6), _FLAT_VALUES, max_size=8)


@given(
    _FLAT | st.lists(_FLAT, max_size=4) | st.dictionaries(_FLAT_KEYS, _FLAT | st.lists(_FLAT, max_size=3), max_size=3)
)
@settings(max_examples=300, deadline=None)
def test_the_flat_fast_path_writes_the_bytes_the_long_way_writes(value: Any) -> None:
    from looptrap.engine.config import GuardConfig

    config = GuardConfig()
    for canon in (
        config.result_canonicaliser(),
        config.arg_canonicaliser(ToolPolicy()),
        config.arg_canonicaliser(ToolPolicy(fold_case=True)),
        Canonicaliser(),
    ):
        assert canon.encode(value) == canon.encode(_proxied(value))
