"""A local fake of the Hugging Face Hub's upload API, for push tests on 127.0.0.1.

It implements what ``huggingface_hub``'s ``create_repo`` + ``upload_folder`` call on the
legacy LFS path (tests set ``HF_HUB_DISABLE_XET=1``; the Xet transfer protocol needs a CAS
server this fake does not have):

- ``POST /api/repos/create`` and ``POST /api/validate-yaml`` (card metadata check)
- ``POST /api/{models,datasets}/{repo}/preupload/{rev}``: ``*.safetensors``, ``*.parquet``
  and ``*.bin`` files are declared LFS, everything else regular
- ``POST /{repo}.git/info/lfs/objects/batch`` (``/datasets/{repo}.git/...`` for datasets):
  basic transfer with an upload and a verify action
- ``PUT /lfs-upload/{oid}`` and ``POST /lfs-verify/{oid}``
- ``POST /api/{models,datasets}/{repo}/commit/{rev}``: NDJSON with base64 regular files and
  ``lfsFile`` pointers resolved against the uploaded objects

and the read side ``from_pretrained``/``load_dataset`` use, so a pushed repo loads back:

- ``HEAD``/``GET /{repo}/resolve/{rev}/{path}`` (``/datasets/{repo}/resolve/...``): the file with
  ``X-Repo-Commit`` and ``ETag``; a missing file or repo is 404 with ``X-Error-Code``
  (``EntryNotFound`` / ``RepoNotFound``), as the Hub answers
- ``GET /api/{models,datasets}/{repo}[/revision/{rev}]``: the repo's info and file list

Files that arrive are kept in memory per repo (``server.files(repo_name)``); requests are
logged (``server.requests``). Failures are injected with ``server.fail[(method, kind)] =
status`` (kinds: create, preupload, batch, lfs-upload, commit), and a required token with
``server.token``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LFS_SUFFIXES = (".safetensors", ".parquet", ".bin", ".pt")


class FakeHub:
    def __init__(self, token: str = "hf_fake_secret_token_123"):
        self.token = token
        self.repos: dict[str, dict[str, Any]] = {}
        self.lfs: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail: dict[tuple[str, str], int] = {}
        self.commits = 0
        handler = _make_handler(self)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> FakeHub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def files(self, name: str) -> dict[str, bytes]:
        """Files of the repo whose id ends with ``name`` (``user/name`` or ``name``)."""
        for repo_id, repo in self.repos.items():
            if repo_id == name or repo_id.endswith("/" + name):
                return repo["files"]
        return {}


def _make_handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep test output clean
            pass

        def _reply(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _authorised(self) -> bool:
            return self.headers.get("Authorization") == f"Bearer {hub.token}"

        def _maybe_fail(self, kind: str) -> bool:
            status = hub.fail.get((self.command, kind))
            if status is None:
                return False
            self._body()
            # "Retry-After: 0", as a real server may send: the client still retries (5 times) and then fails as
            # with any 500, but waits 1 s a try (its floor) instead of its 23 s of exponential backoff
            self._reply(status, {"error": f"injected {status} on {kind}"}, {"Retry-After": "0"})
            return True

        def do_POST(self):  # noqa: N802 - http.server's naming
            hub.requests.append(("POST", self.path))
            path = self.path.split("?")[0]
            if path == "/api/repos/create":
                if self._maybe_fail("create"):
                    return
                if not self._authorised():
                    self._body()
                    return self._reply(401, {"error": "Invalid credentials in Authorization header"})
                payload = json.loads(self._body() or b"{}")
                repo_id = f"{payload.get('organization') or 'user'}/{payload['name']}"
                hub.repos.setdefault(repo_id, {"type": payload.get("type", "model"), "files": {}})
                return self._reply(200, {"url": f"{hub.url}/{repo_id}", "name": repo_id, "id": repo_id})
            if path == "/api/validate-yaml":  # the README's metadata, checked before the commit
                self._body()
                return self._reply(200, {"errors": [], "warnings": []})
            m = re.fullmatch(r"/api/(models|datasets)/(.+)/(preupload|commit)/([^/]+)", path)
            if m:
                kind, repo_id, action = m.group(1), m.group(2), m.group(3)
                if self._maybe_fail(action):
                    return
                if not self._authorised():
                    self._body()
                    return self._reply(401, {"error": "Unauthorized"})
                repo = hub.repos.setdefault(repo_id, {"type": kind[:-1], "files": {}})
                if action == "preupload":
                    files = json.loads(self._body())["files"]
                    return self._reply(200, {"files": [
                        {"path": f["path"], "uploadMode": "lfs" if f["path"].endswith(LFS_SUFFIXES) else "regular",
                         "shouldIgnore": False, "oid": None} for f in files
                    ]})
                return self._commit(repo_id, repo)
            m = re.fullmatch(r"/(?:datasets/)?(.+)\.git/info/lfs/objects/batch", path)
            if m:
                if self._maybe_fail("batch"):
                    return
                payload = json.loads(self._body())
                objects = [{
                    "oid": o["oid"], "size": o["size"], "authenticated": True,
                    "actions": {"upload": {"href": f"{hub.url}/lfs-upload/{o['oid']}"},
                                "verify": {"href": f"{hub.url}/lfs-verify/{o['oid']}"}},
                } for o in payload["objects"]]
                return self._reply(200, {"transfer": "basic", "objects": objects})
            m = re.fullmatch(r"/lfs-verify/([0-9a-f]+)", path)
            if m:
                self._body()
                ok = m.group(1) in hub.lfs
                return self._reply(200 if ok else 404, {})
            self._body()
            self._reply(404, {"error": f"fake hub: no route for POST {path}"})

        def do_PUT(self):  # noqa: N802
            hub.requests.append(("PUT", self.path))
            m = re.fullmatch(r"/lfs-upload/([0-9a-f]+)", self.path)
            if not m:
                self._body()
                return self._reply(404, {"error": f"fake hub: no route for PUT {self.path}"})
            if self._maybe_fail("lfs-upload"):
                return
            data = self._body()
            if hashlib.sha256(data).hexdigest() != m.group(1):
                return self._reply(400, {"error": "sha256 mismatch"})
            hub.lfs[m.group(1)] = data
            self._reply(200, {})

        def do_HEAD(self):  # noqa: N802
            hub.requests.append(("HEAD", self.path))
            self._serve(body=False)

        def do_GET(self):  # noqa: N802
            hub.requests.append(("GET", self.path))
            self._serve(body=True)

        def _serve(self, body: bool) -> None:
            path = self.path.split("?")[0]
            m = re.fullmatch(r"/api/(models|datasets)/(.+?)(?:/revision/([^/]+))?", path)
            if m and m.group(2) in hub.repos:
                repo = hub.repos[m.group(2)]
                return self._reply(200, {"id": m.group(2), "sha": _commit_sha(hub), "private": False,
                                         "siblings": [{"rfilename": name} for name in sorted(repo["files"])]})
            m = re.fullmatch(r"/(datasets/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
            if not m:
                return self._reply(404, {"error": f"fake hub: no route for {self.command} {path}"})
            repo = hub.repos.get(m.group(2))
            if repo is None:
                return self._missing("RepoNotFound", body)
            data = repo["files"].get(m.group(4))
            if data is None:
                return self._missing("EntryNotFound", body)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Repo-Commit", _commit_sha(hub))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def _missing(self, code: str, body: bool) -> None:
            data = json.dumps({"error": code}).encode() if body else b""
            self.send_response(404)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _commit(self, repo_id: str, repo: dict[str, Any]) -> None:
            staged: dict[str, bytes] = {}
            for line in self._body().decode().splitlines():
                item = json.loads(line)
                value = item["value"]
                if item["key"] == "file":
                    staged[value["path"]] = base64.b64decode(value["content"])
                elif item["key"] == "lfsFile":
                    if value["oid"] not in hub.lfs:
                        return self._reply(422, {"error": f"LFS object {value['oid']} was never uploaded"})
                    staged[value["path"]] = hub.lfs[value["oid"]]
                elif item["key"] == "deletedFile":
                    repo["files"].pop(value["path"], None)
            repo["files"].update(staged)
            hub.commits += 1
            oid = _commit_sha(hub)
            prefix = "datasets/" if repo["type"] == "dataset" else ""
            self._reply(200, {"commitUrl": f"{hub.url}/{prefix}{repo_id}/commit/{oid}", "commitOid": oid,
                              "pullRequestUrl": None})

    return Handler


def _commit_sha(hub: FakeHub) -> str:
    """The repos' current commit (one counter for the whole fake: enough for cache keys)."""
    return hashlib.sha1(str(hub.commits).encode()).hexdigest()
