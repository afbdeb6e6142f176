"""Independent trace sets written from the product requirements alone, without reading the detectors or their
thresholds: tests/blind (40 traces) and tests/blind2 (30 hard edge cases). Labels in each labels.tsv: healthy,
or a loop with its onset and the latest acceptable call index for the first intervention. Healthy runs must get
no intervention; loops must get their first one inside [onset, latest]. A label may name a known miss (a loop
the guard does not catch yet): those are strict xfails, so a fix shows up."""

from __future__ import annotations

from pathlib import Path

import pytest

from looptrap.analysis import iter_events, replay

TESTS = Path(__file__).resolve().parent
SETS = {"blind": 40, "blind2": 30}


def _labels() -> list[tuple[Path, str, int | None, int | None, str]]:
    rows = []
    for folder in SETS:
        for line in (TESTS / folder / "labels.tsv").read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, label, onset, latest, _, *rest = line.split("\t")
            known = rest[0] if rest else ""
            rows.append(
                (
                    TESTS / folder / name,
                    label,
                    None if onset == "-" else int(onset),
                    None if latest == "-" else int(latest),
                    known,
                )
            )
    return rows


LABELS = _labels()


def test_the_sets_are_complete() -> None:
    for folder, size in SETS.items():
        assert sum(1 for path, *_ in LABELS if path.parent.name == folder) == size
    assert {label for _, label, _, _, _ in LABELS} == {"healthy", "loop"}
    assert all(path.exists() for path, *_ in LABELS)


@pytest.mark.parametrize(
    ("path", "label", "onset", "latest"),
    [
        pytest.param(p, lab, o, la, marks=[pytest.mark.xfail(strict=True, reason=k)] if k else [])
        for p, lab, o, la, k in LABELS
    ],
    ids=[f"{p.parent.name}/{p.stem}" for p, *_ in LABELS],
)
def test_blind_trace(path: Path, label: str, onset: int | None, latest: int | None) -> None:
    (report,) = replay(iter_events(str(path)))
    first = report.first_intervention
    if label == "healthy":
        assert first is None, f"false intervention: {first}"
        return
    assert first is not None, "loop missed"
    assert onset is not None
    assert latest is not None
    assert onset <= first["call_index"] <= latest, first
