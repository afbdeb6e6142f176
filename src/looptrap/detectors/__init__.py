"""Loop detectors: one small object per loop shape. Compose them in ``GuardConfig(detectors=...)``."""

from looptrap.detectors.base import Detector, TurnEnd
from looptrap.detectors.cycle import Cycle
from looptrap.detectors.drift import Drift
from looptrap.detectors.edits import EditLoop
from looptrap.detectors.errors import ErrorRepeat
from looptrap.detectors.progress import NoAction, NoProgress
from looptrap.detectors.rate import Rate
from looptrap.detectors.repeat import Repeat
from looptrap.detectors.text import RepeatedText

__all__ = [
    "Cycle",
    "Detector",
    "Drift",
    "EditLoop",
    "ErrorRepeat",
    "NoAction",
    "NoProgress",
    "Rate",
    "Repeat",
    "RepeatedText",
    "TurnEnd",
    "default_detectors",
]


def default_detectors() -> tuple[Detector, ...]:
    """The default detectors, in priority order (the first signal of a call decides its kind)."""
    return (
        Repeat(),
        ErrorRepeat(),
        Cycle(),
        EditLoop(),
        Drift(),
        Rate(),
        NoProgress(),
        NoAction(),
        RepeatedText(),
    )
