"""A real Label Studio Community server for the connector's tests and bench: started from the
binary ``$MONITOR_LABELSTUDIO_BIN`` on a free port of 127.0.0.1, from a copy of a migrated data
folder when one is cached (a first start runs its migrations, a minute or two), and helpers
that create projects, annotators and annotations through its API."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

VERSION = "1.23.2"
BIN_ENV = "MONITOR_LABELSTUDIO_BIN"
ADMIN = "admin@example.com"
PASSWORD = "monitor-test-password-1"
LEGACY_TOKEN = "monitortestlegacytoken000000000000000001"
START_TIMEOUT_S = 600.0


def cache_dir() -> Path:
    root = os.environ.get("MONITOR_LABELSTUDIO_CACHE") or str(
        Path.home() / ".cache" / "monitor-tests"
    )
    return Path(root) / f"labelstudio-{VERSION}"


def binary() -> str | None:
    path = os.environ.get(BIN_ENV)
    return path if path and os.access(path, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LabelStudio:
    """One server process on 127.0.0.1 (stopped by :meth:`stop`), with an admin client."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.workdir = workdir
        self.data = workdir / "data"
        cached = cache_dir() / "data"
        fresh = not (cached / "label_studio.sqlite3").is_file()
        if not fresh:
            shutil.copytree(cached, self.data)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "LABEL_STUDIO_BASE_DATA_DIR": str(self.data),
            "LABEL_STUDIO_USERNAME": ADMIN,
            "LABEL_STUDIO_PASSWORD": PASSWORD,
            "LABEL_STUDIO_USER_TOKEN": LEGACY_TOKEN,
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "SENTRY_DSN": "",
            "SSRF_PROTECTION_ENABLED": "false",
        }
        self.log = open(workdir / "labelstudio.log", "wb")  # noqa: SIM115 - closed by stop
        self.process = subprocess.Popen(
            [binary, "start", "--no-browser", "--internal-host", "127.0.0.1", "-p", str(self.port)],
            env=env,
            cwd=workdir,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_healthy()
        self.admin = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Token {LEGACY_TOKEN}"}, timeout=120
        )
        if fresh:
            self._keep(cached)

    def wait_healthy(self) -> None:
        """Until ``/health`` answers on the port chosen (the server moves to another port
        silently when its own is busy: that is a failure here)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"label-studio stopped; see {self.workdir / 'labelstudio.log'}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"label-studio did not answer on {self.url}/health")

    def _keep(self, cached: Path) -> None:
        """Cache the migrated data folder (its database copied with SQLite's backup)."""
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=cached.parent))  # renamed into place: one file system
        try:
            target = tmp / "data"
            shutil.copytree(
                self.data, target, ignore=shutil.ignore_patterns("label_studio.sqlite3*")
            )
            with (
                sqlite3.connect(self.data / "label_studio.sqlite3") as src,
                sqlite3.connect(target / "label_studio.sqlite3") as dst,
            ):
                src.backup(dst)
            if not cached.exists():
                target.rename(cached)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(30)
        self.log.close()

    # --- the API, as a user would drive it ------------------------------------------------

    def call(self, method: str, path: str, **kwargs: Any) -> Any:  # noqa: ANN401
        answer = self.admin.request(method, path, **kwargs)
        answer.raise_for_status()
        return answer.json() if answer.content else None

    def project(self, config: str, title: str = "monitor test") -> int:
        return int(
            self.call("POST", "/api/projects/", json={"title": title, "label_config": config})["id"]
        )

    def user(self, email: str) -> int:
        name = email.split("@")[0]
        answer = self.admin.post(
            "/api/users/", json={"email": email, "username": name, "password": "annotator-pw-1"}
        )
        if answer.status_code == 400:  # there already
            return next(u["id"] for u in self.call("GET", "/api/users/") if u["email"] == email)
        answer.raise_for_status()
        return int(answer.json()["id"])

    def annotator(self, email: str) -> tuple[int, httpx.Client]:
        """An annotator who signs up through the organisation's invite link (a user made by
        ``POST /api/users/`` has no password and cannot log in), as Label Studio's own
        client: their user id and a client sending their own token (what the labelling
        stream, ``/api/projects/{id}/next``, answers for)."""
        import re

        link = str(self.call("GET", "/api/invite")["invite_url"])
        page = httpx.Client(base_url=self.url, timeout=120, follow_redirects=False)
        try:
            form = page.get(link)
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
            assert csrf is not None, "no sign-up form"
            signed = page.post(
                link,
                data={"email": email, "password": PASSWORD, "csrfmiddlewaretoken": csrf.group(1)},
                headers={"Referer": self.url + link},
            )
            assert signed.status_code == 302, f"sign-up of {email} refused"
            token = page.get("/api/current-user/token").json()["token"]
            me = page.get("/api/current-user/whoami").json()["id"]
        finally:
            page.close()
        client = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Token {token}"}, timeout=120
        )
        return int(me), client

    def import_tasks(self, project: int, tasks: list[dict[str, Any]]) -> None:
        self.call("POST", f"/api/projects/{project}/import", json=tasks)

    def task_ids(self, project: int) -> list[int]:
        found = self.call("GET", "/api/tasks/", params={"project": project, "page_size": 100000})
        return sorted(t["id"] for t in found["tasks"])

    def annotate(self, task: int, user: int, result: list[dict[str, Any]], **extra: Any) -> int:
        body = {"result": result, "completed_by": user, **extra}
        return int(self.call("POST", f"/api/tasks/{task}/annotations/", json=body)["id"])

    def update(self, annotation: int, result: list[dict[str, Any]]) -> None:
        self.call("PATCH", f"/api/annotations/{annotation}/", json={"result": result})

    def delete(self, annotation: int) -> None:
        self.call("DELETE", f"/api/annotations/{annotation}/")

    def counts(self, project: int) -> dict[str, int]:
        """Label Studio's own counts of the project: annotations (not skipped), ground truth."""
        found = self.call("GET", f"/api/projects/{project}/")
        return {
            "annotations": int(found["total_annotations_number"]),
            "ground_truth": int(found["ground_truth_number"]),
        }

    def personal_token(self) -> str:
        """A personal access token (a JWT refresh token) of the admin."""
        return str(self.call("POST", "/api/token/")["token"])


def choices(name: str, value: str) -> list[dict[str, Any]]:
    return [
        {"from_name": name, "to_name": "text", "type": "choices", "value": {"choices": [value]}}
    ]


def rating(name: str, value: int) -> list[dict[str, Any]]:
    return [{"from_name": name, "to_name": "text", "type": "rating", "value": {"rating": value}}]
