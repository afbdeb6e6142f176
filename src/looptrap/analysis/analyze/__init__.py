"""``looptrap analyze``: log forensics over recorded agent runs (see docs/analyze.md).

Importers read many log formats as trace format v1 events; :func:`analyze` runs each session through the
same detectors as replay (so its verdicts are replay's) while computing the statistics of its calls, and
builds the fleet report. Rendering (rich, HTML) and DuckDB are imported only when used.
"""

from looptrap.analysis.analyze.importers import FORMATS, ImportOptions, Problems, detect_format, read_records
from looptrap.analysis.analyze.run import AnalyzeOptions, Report, analyze
from looptrap.analysis.analyze.session import SessionAnalysis, SessionAnalyzer

__all__ = [
    "FORMATS",
    "AnalyzeOptions",
    "ImportOptions",
    "Problems",
    "Report",
    "SessionAnalysis",
    "SessionAnalyzer",
    "analyze",
    "detect_format",
    "read_records",
]
