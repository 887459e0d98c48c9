"""argparse as the command line wants it: status 2, escaped messages, each command's own help,
and words that name a subcommand in front of a command's positional argument."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import Any

from monitor.core.errors import printable


class Parser(argparse.ArgumentParser):
    """argparse that exits with status 2 and a hint to the help of the command at fault (an
    unknown option of ``monitor ingest`` points to ``monitor ingest --help``); the message
    escaped as problem lines are (an argument may hold control characters or ANSI escapes).

    ``words`` maps a word to a parser of its own: ``monitor ingest rejected ...`` is parsed by
    the ``rejected`` parser when that word comes where ``ingest`` expects its FILE (a file of
    that name is written ``./rejected``, or after ``--``)."""

    words: dict[str, Parser]
    top = False
    note = ""
    """A line added to this parser's usage errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401
        super().__init__(*args, **kwargs)
        self.words = {}
        self._given: list[str] = []

    def error(self, message: str) -> None:  # type: ignore[override]
        if guess := self._misspelt():  # before "the following arguments are required"
            message = guess
        note = f"{self.note}\n" if self.note else ""
        self.exit(
            2, f"{self.prog}: error: {printable(message)}\n{note}(see '{self.prog} --help')\n"
        )

    def _misspelt(self) -> str | None:
        """``unknown option --campain: did you mean --campaign?`` for the first option given
        that this command does not know and that is close to one it does."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for token in self._given:
            if token == "--":
                return None
            option = token.split("=", 1)[0]
            if not option.startswith("--") or option in self._option_string_actions:
                continue
            close = difflib.get_close_matches(option, known, n=1, cutoff=0.75)
            if close:
                return f"unknown option {option}: did you mean {close[0]}?"
        return None

    def add_word(self, word: str, **kwargs: Any) -> Parser:  # noqa: ANN401
        """A parser for ``<this command> WORD ...``."""
        parser = Parser(prog=f"{self.prog} {word}", **kwargs)
        parser.note = f"(a file named {word} is written ./{word}: {self.prog} ./{word} ...)"
        self.words[word] = parser
        return parser

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        args = list(args) if args is not None else None
        self._given = list(args) if args is not None else sys.argv[1:]
        if args and self.words:
            at = self._first_positional(args)
            if at is not None and args[at] in self.words:
                word = self.words[args[at]]
                return word.parse_known_args(args[:at] + args[at + 1 :], namespace)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and not self.top:  # a command's own unknown options: its own help
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _first_positional(self, args: list[str]) -> int | None:
        """Where the first positional argument is (None after ``--``: what follows is a file
        whatever its name)."""
        skip = False
        for at, token in enumerate(args):
            if skip:
                skip = False
            elif token == "--":
                return None
            elif token.startswith("-") and len(token) > 1:
                action = self._option_string_actions.get(token)
                skip = action is not None and action.nargs != 0 and "=" not in token
            else:
                return at
        return None
