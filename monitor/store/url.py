"""Database URLs checked before any connection: a malformed one is a usage error naming the part
that is wrong, and quoting nothing that could be part of a password.

SQLAlchemy's parser reads ``user:pa@ss:word@host`` as the host ``ss`` and the port
``word@host``, and its messages (or the driver's) then quote those pieces. Here the URL is read
the way its author meant it, and only the kind of database, a query key or a fixed text is
ever quoted: never the user part, the host, the port or a value.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from urllib.parse import parse_qsl

from monitor.core.errors import ConfigError

EXAMPLES = "sqlite:///PATH or postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
DRIVERS = {"sqlite": ("", "pysqlite"), "postgresql": ("", "psycopg"), "postgres": ("", "psycopg")}
#: Query keys whose value is a whole number (libpq's connection options).
INTEGER_KEYS = frozenset(
    {
        "connect_timeout",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
    }
)
ENCODE_HINT = (
    "percent-encode these characters of a user name or password: %40 for '@', %3A for ':', "
    "%2F for '/', %3F for '?', %25 for '%'"
)


def _bad(message: str, hint: str | None = None) -> ConfigError:
    return ConfigError(f"the database URL {message}", hint=hint or f"write {EXAMPLES}")


def check_url(url: str) -> None:
    """Raise :class:`ConfigError` when ``url`` is not a database URL monitor can use: an unknown
    kind of database or driver, or (PostgreSQL) more than one ``@``, a port that is not a number
    from 1 to 65535, a malformed IPv6 host, a host with characters no host has, a query option
    PostgreSQL does not know or a number option that is not a whole number."""
    match = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*)://", url)
    if match is None:
        raise _bad("does not start with the kind of database and '://'")
    scheme = match[1].lower()
    backend, _, driver = scheme.partition("+")
    if backend not in DRIVERS:
        raise _bad(f"names an unknown kind of database '{backend}'")
    if driver not in DRIVERS[backend]:
        name = "SQLite" if backend == "sqlite" else "PostgreSQL"
        usable = "sqlite://" if backend == "sqlite" else "postgresql+psycopg://"
        raise _bad(
            f"names the driver '{driver}', which monitor does not use for {name}",
            f"write {usable}...",
        )
    if backend != "sqlite":  # a SQLite path may hold any character
        _check_postgres(url[match.end() :])


def _check_postgres(rest: str) -> None:
    if rest.count("@") > 1:
        raise _bad("has more than one '@'", ENCODE_HINT)
    at = rest.rfind("@")
    after = rest[at + 1 :]
    hostport = re.match(r"[^/?]*", after)[0]  # type: ignore[index]
    # Without an '@', what reads as HOST:PORT may be USER:PASSWORD that lost its host.
    no_user = "" if at >= 0 else "; a user and password go before an '@' (USER:PASSWORD@HOST)"
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise _bad("has an IPv6 host without its closing ']'", "write [::1]:5432" + no_user)
        address = hostport[1:close].split("%", 1)[0]  # a zone (fe80::1%eth0) may follow
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            raise _bad(
                "has a host in brackets that is not an IPv6 address", "write [::1]:5432" + no_user
            ) from None
        port_part = hostport[close + 1 :]
        if port_part and not port_part.startswith(":"):
            raise _bad("has something other than ':PORT' after its IPv6 host's ']'")
        host, port = None, port_part[1:] if port_part else None
    elif hostport.count(":") > 1:
        raise _bad(
            "has more than one ':' in its host",
            "write an IPv6 host in brackets ([::1]:5432)" + no_user,
        )
    else:
        host, colon, port_text = hostport.partition(":")
        port = port_text if colon else None
    if host is not None and not re.fullmatch(r"[A-Za-z0-9._\-%]*", host):
        raise _bad("has a host with characters no host name has", "write HOST:PORT" + no_user)
    if port is not None and not _is_port(port):
        raise _bad(
            "has a port that is not a number from 1 to 65535",
            "write HOST:PORT, e.g. 127.0.0.1:5432" + no_user,
        )
    _check_query(after[len(hostport) :].partition("?")[2])


def _is_port(text: str) -> bool:
    return re.fullmatch(r"[0-9]{1,5}", text) is not None and 1 <= int(text) <= 65535


def _check_query(query: str) -> None:
    if not query:
        return
    options = parse_qsl(query, keep_blank_values=True)
    known = _libpq_keywords()
    for key, value in options:
        if known and key not in known:
            raise _bad(
                f"has the option '{key}', which PostgreSQL does not know",
                "see the connection parameters of libpq (connect_timeout, sslmode, host, ...)",
            )
        if key in INTEGER_KEYS and not re.fullmatch(r"-?[0-9]+", value.strip()):
            raise _bad(
                f"has an option {key} that is not a whole number",
                f"write {key}=10 (seconds for connect_timeout)",
            )
        if key == "port" and not all(p == "" or _is_port(p) for p in value.split(",")):
            raise _bad("has an option port that is not a number from 1 to 65535")
        if key == "options":
            url_timeouts(value)


TIMEOUT_KEYS = ("lock_timeout", "statement_timeout")
"""The server settings monitor sets on each session unless the URL's ``options`` set them."""
OPTIONS_HINT = "write options=-c NAME=VALUE (spaces as %20, '=' as %3D), e.g. -c lock_timeout=2000"


def server_options(options: str) -> dict[str, str]:
    """The server settings of a URL's ``options`` as libpq passes them (``-c name=value`` or
    ``-cname=value``, ``--name=value``; words apart by spaces, ``\\`` escaping one), by name;
    a :class:`ConfigError` naming the option when a word is none of these (no value is
    quoted)."""
    words = [w.replace("\\ ", " ") for w in re.split(r"(?<!\\)\s+", options.strip()) if w]
    found: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-c" and i + 1 < len(words):
            i, setting = i + 1, words[i + 1]
        elif (word.startswith("-c") and word != "-c") or (word.startswith("--") and word != "--"):
            setting = word[2:]
        else:
            raise _bad(
                f"has an option options whose word {i + 1} is not -c NAME=VALUE", OPTIONS_HINT
            )
        name, eq, value = setting.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", name):
            raise _bad(f"has an option options whose word {i + 1} is not NAME=VALUE", OPTIONS_HINT)
        found[name.replace("-", "_").lower()] = value
        i += 1
    return found


@functools.cache
def _libpq_keywords() -> frozenset[str]:
    """The connection options libpq knows (empty when psycopg cannot say)."""
    try:
        from psycopg import pq

        return frozenset(o.keyword.decode() for o in pq.Conninfo.get_defaults())
    except Exception:  # noqa: BLE001 - no libpq: leave unknown options to the server
        return frozenset()


def url_timeouts(options: str | tuple[str, ...] | None) -> dict[str, float]:
    """The ``lock_timeout`` and ``statement_timeout`` (seconds) a PostgreSQL URL's ``options``
    set (``-c lock_timeout=2000``, ``--statement_timeout=5s``); a :class:`ConfigError` naming
    the option when ``options`` or one of these values cannot be read."""
    if not options:
        return {}
    given = server_options(options if isinstance(options, str) else " ".join(options))
    return {key: _server_seconds(key, given[key]) for key in TIMEOUT_KEYS if key in given}


#: PostgreSQL's units of time, in seconds; a number without a unit is milliseconds.
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _server_seconds(key: str, value: str) -> float:
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-z]*)\s*", value)
    if match is None or match[2] not in ("", *_UNITS):
        raise _bad(
            f"has an option options whose {key} is not a time",
            f"write options=-c {key}=2000 (milliseconds) or -c {key}=2s",
        )
    return float(match[1]) * _UNITS.get(match[2], 1e-3)
