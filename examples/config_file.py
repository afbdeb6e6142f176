"""One configuration for the hooks, the proxy and the CLI. Run: python examples/config_file.py

Writes the user's own file and a project's looptrap.toml in a temporary folder, and finds them from a
subfolder of the project as the hooks do. The user's file exempts a debugger tool; the project's makes
the 2nd identical search an advice (it may tighten) and tries to turn guarding off (it may not: that is
named, not applied). Then a bad file: its error names the file and the line.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from looptrap import Guard
from looptrap.config_file import ConfigError, load, resolve

with tempfile.TemporaryDirectory() as tmp:
    os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "home-config")  # the user's own file lives here
    user = Path(tmp) / "home-config" / "looptrap" / "looptrap.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[tools."debug_*"]\nexempt = true\n', encoding="utf-8")
    project = Path(tmp) / "repo"
    (project / "src").mkdir(parents=True)
    (project / "looptrap.toml").write_text("enabled = false\n\n[detectors.repeat]\nthreshold = 2\n", encoding="utf-8")

    config = resolve(start=project / "src")  # found from the working directory upward
    for key, source in config.sources.items():
        print(f"{key}: from {source.split()[0]}")
    print("not applied:", *config.ignored)
    guard = Guard(config.guard, clock=None)

    def call(tool: str) -> str:
        verdict = guard.check(tool, {"q": "same"})
        if verdict.allowed:
            guard.record(tool, {"q": "same"}, "0 results")
        return verdict.action

    searches = [call("search_docs") for _ in range(2)]
    steps = [call("debug_step") for _ in range(6)]
    print("search_docs:", searches)
    print("debug_step:", steps)
    assert config.guard.enabled
    assert config.ignored == ("enabled = false (turns guarding off)",)
    assert searches == ["allow", "advise"]
    assert set(steps) == {"allow"}

    (project / "bad.toml").write_text("[detectors.repeat]\nthreshhold = 4\n", encoding="utf-8")
    try:
        load(project / "bad.toml")
        where = ""
    except ConfigError as err:  # unknown keys and bad values name the file and the line
        print("error:", err.reason, "at line", err.where.rsplit(":", 1)[1])
        where = err.where
    assert where.endswith("bad.toml:2")
