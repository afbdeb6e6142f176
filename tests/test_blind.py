"""A second, independent trace set: 40 traces written from the product requirements alone, without reading the
detectors or their thresholds (labels in tests/blind/labels.tsv: healthy, or a loop with its onset and the
latest acceptable call index for the first intervention). Healthy runs must get no intervention; loops must
get their first one inside [onset, latest]."""

from __future__ import annotations

from pathlib import Path

import pytest

from looptrap.analysis import iter_events, replay

HERE = Path(__file__).resolve().parent / "blind"


def _labels() -> list[tuple[str, str, int | None, int | None]]:
    rows = []
    for line in (HERE / "labels.tsv").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, label, onset, latest, _ = line.split("\t", 4)
        rows.append((name, label, None if onset == "-" else int(onset), None if latest == "-" else int(latest)))
    return rows


LABELS = _labels()


def test_the_set_is_complete() -> None:
    assert len(LABELS) == 40
    assert {label for _, label, _, _ in LABELS} == {"healthy", "loop"}
    assert all((HERE / name).exists() for name, _, _, _ in LABELS)


@pytest.mark.parametrize(("name", "label", "onset", "latest"), LABELS, ids=[row[0] for row in LABELS])
def test_blind_trace(name: str, label: str, onset: int | None, latest: int | None) -> None:
    (report,) = replay(iter_events(str(HERE / name)))
    first = report.first_intervention
    if label == "healthy":
        assert first is None, f"false intervention: {first}"
        return
    assert first is not None, "loop missed"
    assert onset is not None
    assert latest is not None
    assert onset <= first["call_index"] <= latest, first
