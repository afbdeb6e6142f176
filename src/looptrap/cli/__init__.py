"""The command-line interface (``looptrap replay``, ``looptrap demo``)."""
