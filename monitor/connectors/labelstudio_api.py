"""Label Studio's REST API as monitor uses it: the two kinds of token, errors as one line, the
project and its labeling config's controls, tasks read in pages ordered by ``updated_at``.

Tokens: a legacy token is sent as ``Authorization: Token T``; a personal access token (a JWT
refresh token) is exchanged at ``/api/token/refresh/`` for a short-lived access token sent as
``Bearer``, exchanged again when the server answers 401. A token never appears in a message.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from monitor.core.errors import NotFound, PlatformError, UsageError

__all__ = [
    "CONTROLS",
    "KIND_CONTROLS",
    "TOKEN_ENV",
    "Client",
    "Control",
    "Refused",
    "check_project_id",
    "check_url",
    "choose_control",
    "controls",
    "read_token",
]

TOKEN_ENV = "MONITOR_LABELSTUDIO_TOKEN"
TIMEOUT_S = 60.0
PAGE_SIZE = 1000
EXPORT_TIMEOUT_S = 1800.0  # the server builds the whole export before it answers
CONTROLS = ("Choices", "Rating", "Number", "Taxonomy", "Pairwise")
KIND_CONTROLS: dict[str, tuple[str, ...]] = {
    "rating": ("Rating", "Number", "Choices"),
    "label": ("Choices", "Taxonomy"),
    "multilabel": ("Choices", "Taxonomy"),
    "pairwise": ("Pairwise", "Choices"),
}
TOKEN_HINT = (
    f"put a valid token in ${TOKEN_ENV} or in the file given with --token-file (Label Studio: "
    "Account & Settings > Personal Access Token, or the legacy Access Token)"
)


class Refused(UsageError):
    """The server refused the token (401) or what it may do (403)."""

    def __init__(self, message: str, hint: str | None = None, *, status: int) -> None:
        super().__init__(message, hint)
        self.status = status


def check_url(url: str) -> str:
    """The server's base URL without a trailing slash (UsageError unless http(s)://HOST)."""
    url = url.strip().rstrip("/")
    parsed = httpx.URL(url) if url.startswith(("http://", "https://")) else None
    if parsed is None or not parsed.host:
        raise UsageError(
            f"--url {url!r}: not an http(s) address", hint="write it like http://HOST:8080"
        )
    if parsed.userinfo:
        raise UsageError(
            "--url: a user or password in the address is not read",
            hint=f"give the token in ${TOKEN_ENV} or --token-file",
        )
    return url


def check_project_id(project: str | int) -> str:
    text = str(project).strip()
    if not text.isdigit():
        raise UsageError(
            f"--project {text!r}: not a project number",
            hint="the number in the project's address: /projects/NUMBER/",
        )
    return str(int(text))


def read_token(token_file: str | Path | None) -> str:
    """The token from ``token_file`` when given, else from ``$MONITOR_LABELSTUDIO_TOKEN``."""
    if token_file is not None:
        path = Path(token_file)
        try:
            token = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise NotFound(f"no such token file: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the token file {path}: {type(exc).__name__}") from None
        if not token:
            raise UsageError(f"the token file {path} is empty", hint=TOKEN_HINT)
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise UsageError(f"no Label Studio token: ${TOKEN_ENV} is not set", hint=TOKEN_HINT)
    return token


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_jwt(token: str) -> bool:
    parts = token.split(".")
    return len(parts) == 3 and parts[0].startswith("eyJ")


@dataclass(frozen=True)
class Control:
    """A control tag of a labeling config: its type (``Choices``...), name, and for Choices
    whether several may be chosen."""

    type: str
    name: str
    multiple: bool = False
    values: tuple[str, ...] = ()  # a Choices tag's choices
    to_name: str = ""  # the object tag it labels

    def fits(self, kind: str) -> bool:
        """Whether a campaign of ``kind`` can read it: Choices of numbers for a rating."""
        if self.type not in KIND_CONTROLS[kind]:
            return False
        if kind == "rating" and self.type == "Choices":
            return bool(self.values) and all(_is_number(v) for v in self.values)
        return True

    def __str__(self) -> str:
        return f"{self.type} '{self.name}'"


def controls(label_config: str) -> list[Control]:
    """The control tags monitor reads (:data:`CONTROLS`) of a labeling config, in order."""
    try:
        root = ET.fromstring(label_config)
    except ET.ParseError:
        return []
    out = []
    for element in root.iter():
        if element.tag in CONTROLS and element.get("name"):
            multiple = element.get("choice", "single").lower() == "multiple"
            values = tuple(
                str(c.get("value") or c.get("alias") or "") for c in element.iter("Choice")
            )
            out.append(
                Control(
                    element.tag,
                    str(element.get("name")),
                    multiple,
                    values,
                    str(element.get("toName") or ""),
                )
            )
    return out


def choose_control(found: list[Control], kind: str, name: str | None, project: str) -> Control:
    """The control a campaign of ``kind`` reads: ``name`` (``--map value=NAME``) or the only
    one that fits the kind; a UsageError naming what the config has otherwise."""
    fits = KIND_CONTROLS[kind]
    listed = ", ".join(str(c) for c in found) or "no Choices, Rating, Number, Taxonomy or Pairwise"
    if name is not None:
        named = [c for c in found if c.name == name]
        if not named:
            raise UsageError(
                f"--map value={name}: project {project}'s labeling config has no such control",
                hint=f"its controls: {listed}",
            )
        control = named[0]
        if not control.fits(kind):
            raise UsageError(
                f"project {project}'s control {control} does not fit a {kind} campaign",
                hint=f"a {kind} campaign reads {', '.join(fits)}{_numbers(kind)}; choose another control with "
                "--map value=NAME or pull into a campaign of the control's kind",
            )
        return control
    fitting = [c for c in found if c.fits(kind)]
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        raise UsageError(
            f"project {project}'s labeling config has no control for a {kind} campaign "
            f"(it has {listed})",
            hint=f"a {kind} campaign reads {', '.join(fits)}{_numbers(kind)}: pull into a campaign of the "
            "control's kind",
        )
    raise UsageError(
        f"project {project}'s labeling config has several controls: {listed}",
        hint="choose one with --map value=NAME",
    )


def _numbers(kind: str) -> str:
    return " (Choices of numbers)" if kind == "rating" else ""


class Client:
    """An HTTP client of one Label Studio server with one token (either kind)."""

    def __init__(
        self, url: str, token: str, *, timeout: float = TIMEOUT_S, page_size: int = PAGE_SIZE
    ) -> None:
        self.url = check_url(url)
        self.page_size = page_size
        self._token = token
        self._refresh = _is_jwt(token)
        self._http = httpx.Client(base_url=self.url, timeout=timeout, follow_redirects=False)
        self._auth: str | None = None if self._refresh else f"Token {token}"
        self.n_requests = 0

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _access(self) -> str:
        """A fresh ``Bearer`` access token for the personal access token."""
        answer = self._send("POST", "/api/token/refresh/", json_body={"refresh": self._token})
        if answer.status_code in (400, 401, 403):
            raise UsageError(
                f"Label Studio at {self.url} refused the personal access token "
                f"({answer.status_code})",
                hint=TOKEN_HINT,
            )
        access = self._json(answer).get("access") if answer.is_success else None
        if not isinstance(access, str):
            raise self._failure(answer)
        return f"Bearer {access}"

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,  # noqa: ANN401 - a JSON value
        auth: str | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        headers = {"Accept": "application/json"}
        if auth is not None:
            headers["Authorization"] = auth
        self.n_requests += 1
        try:
            return self._http.request(
                method,
                path,
                params=params,
                json=json_body,
                headers=headers,
                timeout=self._http.timeout if timeout is None else httpx.Timeout(timeout),
            )
        except httpx.TimeoutException:
            raise PlatformError(
                f"Label Studio at {self.url} did not answer within {self._http.timeout.read:g} s",
                hint="is the server up and the address right (--url)?",
            ) from None
        except httpx.HTTPError as exc:
            raise PlatformError(
                f"cannot reach Label Studio at {self.url} ({type(exc).__name__})",
                hint="is the server up and the address right (--url)?",
            ) from None

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,  # noqa: ANN401
        missing: str | None = None,
        timeout: float | None = None,
    ) -> Any:  # noqa: ANN401 - the JSON answer
        """The JSON answer; 401/403 a UsageError about the token, 404 a NotFound saying
        ``missing`` (when given), anything else a PlatformError."""
        if self._auth is None:
            self._auth = self._access()
        send = {"params": params, "json_body": json_body, "timeout": timeout}
        answer = self._send(method, path, auth=self._auth, **send)
        if answer.status_code == 401 and self._refresh:  # the access token expired
            self._auth = self._access()
            answer = self._send(method, path, auth=self._auth, **send)
        if answer.status_code in (401, 403):
            raise Refused(
                f"Label Studio at {self.url} refused the token ({answer.status_code})",
                hint=TOKEN_HINT,
                status=answer.status_code,
            )
        if answer.status_code == 404 and missing is not None:
            raise NotFound(missing, hint="check --project: the number in the project's address")
        if not answer.is_success:
            raise self._failure(answer)
        if answer.status_code == 204 or not answer.content:
            return None
        return self._json(answer)

    def _json(self, answer: httpx.Response) -> Any:  # noqa: ANN401
        try:
            return orjson.loads(answer.content)
        except orjson.JSONDecodeError:
            raise PlatformError(
                f"{self.url} did not answer like Label Studio (no JSON at {answer.url.path})",
                hint="is --url the address of the Label Studio server?",
            ) from None

    def _failure(self, answer: httpx.Response) -> PlatformError:
        return PlatformError(
            f"Label Studio at {self.url} answered {answer.status_code} to "
            f"{answer.request.method} {answer.url.path}",
            hint="see the server's log; pull again when it is fixed",
        )

    def project(self, project: str) -> dict[str, Any]:
        found = self.request(
            "GET", f"/api/projects/{project}/", missing=f"no project {project} at {self.url}"
        )
        if not isinstance(found, dict) or "label_config" not in found:
            raise PlatformError(
                f"{self.url} did not answer like Label Studio (project {project})",
                hint="is --url the address of the Label Studio server?",
            )
        return found

    def users(self) -> dict[int, dict[str, Any]]:
        """The organisation's users by id."""
        found = self.request("GET", "/api/users/")
        return {u["id"]: u for u in found or () if isinstance(u, dict) and "id" in u}

    def export(self, project: str) -> list[dict[str, Any]]:
        """Every annotated task of the project with its annotations, in one answer of the
        export endpoint (``exportType=JSON``: two to three times faster per annotation than
        the task list, which a first pull reads everything from)."""
        found = self.request(
            "GET",
            f"/api/projects/{project}/export",
            params={"exportType": "JSON"},
            missing=f"no project {project} at {self.url}",
            timeout=EXPORT_TIMEOUT_S,
        )
        if not isinstance(found, list):
            raise PlatformError(
                f"{self.url} did not answer like Label Studio (export of project {project})",
                hint="is --url the address of the Label Studio server?",
            )
        return [t for t in found if isinstance(t, dict)]

    def tasks_since(self, project: str, since: str | None) -> Iterator[list[dict[str, Any]]]:
        """The project's tasks whose ``updated_at`` is at or after ``since`` (all when None),
        page by page in ``(updated_at, id)`` order, each with its annotations.

        Pages are keyed on ``updated_at``, not counted from the start: each page asks for the
        tasks at or after the last one read (the tasks changed while reading come again at the
        end, none is skipped); a page of tasks that all share one ``updated_at`` is followed by
        the next page of the same query. Tasks at a page's boundary are read twice."""
        page = 1
        while True:
            query: dict[str, Any] = {"ordering": ["tasks:updated_at", "tasks:id"]}
            if since is not None:
                query["filters"] = {
                    "conjunction": "and",
                    "items": [
                        {
                            "filter": "filter:tasks:updated_at",
                            "operator": "greater_or_equal",
                            "type": "Datetime",
                            "value": since,
                        }
                    ],
                }
            params = {
                "project": project,
                "fields": "all",
                "page": page,
                "page_size": self.page_size,
                "query": json.dumps(query),
            }
            try:
                found = self.request(
                    "GET",
                    "/api/tasks/",
                    params=params,
                    missing=f"no project {project} at {self.url}",
                )
            except NotFound:
                if page > 1:  # past the last page of tasks sharing one updated_at
                    return
                raise
            tasks = found.get("tasks") if isinstance(found, dict) else None
            if not isinstance(tasks, list):
                raise PlatformError(
                    f"{self.url} did not answer like Label Studio (tasks of project {project})",
                    hint="is --url the address of the Label Studio server?",
                )
            yield tasks
            if len(tasks) < self.page_size:
                return
            last = str(tasks[-1].get("updated_at"))
            if last == since:
                page += 1
            else:
                since, page = last, 1
