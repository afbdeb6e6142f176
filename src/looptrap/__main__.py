"""``python -m looptrap``: the ``looptrap`` command."""

from looptrap.cli.main import main

raise SystemExit(main())
