"""Prolific's REST API as monitor uses it: the token, JSON in and out, each failure as one line
(refused, or left unconfirmed), list endpoints followed page by page, a study's submissions.

The token is read from ``MONITOR_PROLIFIC_TOKEN`` and sent as ``Authorization: Token <t>``;
no message holds it, and it goes to Prolific's API only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monitor.core.errors import NotFound, PlatformError, UsageError

if TYPE_CHECKING:
    import httpx

API_URL = "https://api.prolific.com"
TOKEN_ENV = "MONITOR_PROLIFIC_TOKEN"
AWAITING_REVIEW = "AWAITING REVIEW"
TIMEOUT = 30.0


def token_from_env(env: Mapping[str, str] | None = None) -> str:
    """The API token (``MONITOR_PROLIFIC_TOKEN``), or :class:`UsageError` naming the
    variable."""
    token = (os.environ if env is None else env).get(TOKEN_ENV, "").strip()
    if not token:
        raise UsageError(
            f"no Prolific API token: set {TOKEN_ENV}",
            hint="create a token in Prolific's settings (API tokens); it is never an argument",
        )
    return token


class Client:
    """Prolific's REST API over ``httpx``: JSON in and out, each failure as one line."""

    def __init__(
        self, base_url: str, token: str, transport: httpx.BaseTransport | None = None
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=TIMEOUT,
            transport=transport,
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:  # noqa: ANN401
        """The JSON answer (None when empty); :class:`PlatformError` when Prolific cannot be
        reached or answers an error, :class:`NotFound` for 404."""
        import httpx

        try:
            r = self._http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise Unconfirmed(
                f"Prolific at {self.base_url} did not answer {method} {_path(path)}: "
                f"{type(exc).__name__}",
                hint="check the network and --api-url (setting prolific_api_url), then push "
                "again: the ledger keeps what was confirmed",
            ) from None
        if r.status_code in (401, 403):
            raise PlatformError(
                f"Prolific refused the token ({r.status_code}) for {method} {_path(path)}",
                hint=f"set {TOKEN_ENV} to a valid API token of the workspace",
            )
        if r.status_code == 404:
            raise NotFound(
                f"Prolific has no {_path(path)} (404)",
                hint="check the id (participant group, study or submission)",
            )
        if r.status_code >= 500:
            raise Unconfirmed(
                f"Prolific answered {r.status_code} to {method} {_path(path)}",
                hint="push again later: the ledger keeps what was confirmed",
            )
        if r.status_code >= 400:
            raise Refused(r.status_code, _error_text(r))
        if not r.content:
            return None
        try:
            return r.json()
        except ValueError:
            raise PlatformError(
                f"Prolific answered {method} {_path(path)} with something that is not JSON"
            ) from None

    def get_all(self, path: str) -> list[dict[str, Any]]:
        """Every result of a list endpoint, following its ``_links.next`` pages."""
        out: list[dict[str, Any]] = []
        url: str | None = path
        pages = 0
        while url and pages < 10_000:
            page = self.request("GET", url) or {}
            out.extend(r for r in page.get("results") or [] if isinstance(r, dict))
            nxt = (page.get("_links") or {}).get("next") or {}
            url = nxt.get("href") if isinstance(nxt, dict) else None
            if url and "://" in url and not url.startswith(self.base_url + "/"):
                # the token goes to Prolific's API only
                raise PlatformError(f"Prolific's next page is on another server: {url[:80]}")
            pages += 1
        return out


class Unconfirmed(PlatformError):
    """The request may or may not have reached Prolific (no answer, or a server error)."""


class Refused(PlatformError):
    """Prolific answered the request with a 4xx error: it did nothing."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"Prolific refused it ({status}): {text}")
        self.status = status


def _path(path: str) -> str:
    return path.split("?", 1)[0] if path.startswith("/") else "/" + path.split("/", 3)[-1]


def _error_text(r: httpx.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return r.text[:200].replace("\n", " ")
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            detail = err.get("detail") or err.get("title") or err
            return json.dumps(detail)[:200] if not isinstance(detail, str) else detail[:200]
    return json.dumps(data)[:200]


@dataclass(frozen=True)
class Submission:
    id: str
    participant: str
    status: str


def submissions(client: Client, study: str) -> dict[str, Submission]:
    """The study's submissions by participant (the last one listed where there are two)."""
    out: dict[str, Submission] = {}
    for r in client.get_all(f"/api/v1/studies/{study}/submissions/"):
        pid, sid = r.get("participant_id") or r.get("participant"), r.get("id")
        if isinstance(pid, str) and isinstance(sid, str):
            out[pid] = Submission(sid, pid, str(r.get("status") or ""))
    return out


__all__ = [
    "API_URL",
    "AWAITING_REVIEW",
    "TOKEN_ENV",
    "Client",
    "Refused",
    "Submission",
    "Unconfirmed",
    "submissions",
    "token_from_env",
]
