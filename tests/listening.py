"""A guard that keeps what the user said, as an integration passes it on (the integration tests share it)."""

from __future__ import annotations

from typing import Any

from looptrap import Guard


class Listening(Guard):
    """A :class:`Guard` whose ``heard`` lists every ``user_message`` text, in order."""

    def __init__(self, **options: Any) -> None:
        super().__init__(clock=None, **options)
        self.heard: list[str | None] = []

    def user_message(self, text: str | None = None) -> None:
        self.heard.append(text)
        super().user_message(text)
