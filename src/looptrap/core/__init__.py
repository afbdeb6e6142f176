"""The vocabulary every layer speaks: calls, signals and verdicts, the session state, tool policies, errors and
the printable-text rules."""
