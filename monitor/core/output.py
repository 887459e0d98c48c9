"""Writing a finished text to the file a user named (reports and exports).

A regular file (or a new one) is written atomically: a temporary file beside it, renamed over it
(through a symbolic link, the file it points to), keeping the replaced file's permissions.
Anything else that exists (a device such as /dev/null, a FIFO, a link to /dev/stdout) is opened
and written as it is, never replaced. A folder is a :class:`UsageError`; a failed write an
:class:`OutputError` in one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from monitor.core.errors import OutputError, UsageError

Content = str | Callable[[TextIO], object]


def check_target(out: Path, what: str, example: str) -> None:
    """Refuse a folder as the target before any work is done (``example``: a file name)."""
    if out.is_dir():
        raise UsageError(
            f"{out} is a folder, not a file to write the {what} to",
            f"name a file, e.g. {out / example}",
        )


def write_output(
    out: Path, content: Content, what: str, *, newline: str | None = None, follow: bool = True
) -> Path:
    """Write ``content`` (a text, or a function that writes to an open text file) to ``out``
    (see the module) and return ``out``. ``newline`` as for :func:`open` (``""``: the text's
    own line ends, as CSV writers want). ``follow=False``: ``out`` is in a shared folder, and
    whatever is in its place other than a folder is replaced atomically, never written
    through (see the module)."""
    if not follow:
        if out.is_dir() and not out.is_symlink():
            check_target(out, what, "out.txt")
    else:
        check_target(out, what, "out.txt")
    try:
        if not follow:
            _write_atomically(out, content, newline, follow=False)
            return out
        if out.exists() and not stat.S_ISREG(out.stat().st_mode):
            with open(out, "w", encoding="utf-8", newline=newline) as f:
                _emit(f, content)
            return out
        _write_atomically(out.resolve() if out.is_symlink() else out, content, newline)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if exc.filename and Path(exc.filename).parent != out.parent and Path(exc.filename) != out:
            reason += f": {exc.filename}"
        raise OutputError(f"cannot write the {what} to {out}: {reason}") from None
    return out


def _emit(f: TextIO, content: Content) -> None:
    if isinstance(content, str):
        f.write(content)
    else:
        content(f)


def _write_atomically(
    path: Path, content: Content, newline: str | None, *, follow: bool = True
) -> None:
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as f:
            _emit(f, content)
        try:  # keep the permissions of the regular file replaced
            was = path.stat() if follow else path.lstat()
        except FileNotFoundError:
            was = None
        if was is not None and stat.S_ISREG(was.st_mode):
            os.chmod(tmp, stat.S_IMODE(was.st_mode))
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process's umask, read without changing it (the scheduler writes from threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022
