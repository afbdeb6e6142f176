"""One configuration file for the hooks, the proxy and the CLI. Run: python examples/config_file.py

Writes a looptrap.toml in a temporary project folder, finds it from a subfolder as the hooks do, and shows
what it changes: the 4th identical call is the one advised, and a debugger tool is exempt.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from looptrap import Guard
from looptrap.config_file import ConfigError, load, resolve

with tempfile.TemporaryDirectory() as tmp:
    project = Path(tmp)
    (project / "src").mkdir()
    (project / "looptrap.toml").write_text(
        '[detectors.repeat]\nthreshold = 4\n\n[tools."debug_*"]\nexempt = true\n', encoding="utf-8"
    )
    config = resolve(start=project / "src")  # found from the working directory upward
    print("read", config.path)
    guard = Guard(config.guard, clock=None)

    def call(tool: str) -> str:
        verdict = guard.check(tool, {"q": "same"})
        if verdict.allowed:
            guard.record(tool, {"q": "same"}, "0 results")
        return verdict.action

    searches = [call("search_docs") for _ in range(4)]
    steps = [call("debug_step") for _ in range(6)]
    print("search_docs:", searches)
    print("debug_step:", steps)
    assert searches == ["allow", "allow", "allow", "advise"]
    assert set(steps) == {"allow"}

    (project / "bad.toml").write_text("[detectors.repeat]\nthreshhold = 4\n", encoding="utf-8")
    try:
        load(project / "bad.toml")
        where = ""
    except ConfigError as err:  # unknown keys and bad values name the file and the line
        print("error:", err.reason, "at line", err.where.rsplit(":", 1)[1])
        where = err.where
    assert where.endswith("bad.toml:2")
