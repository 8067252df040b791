"""A page loaded in Debian's headless Chromium, checked from inside the browser.

Chromium speaks its DevTools protocol over two pipes (`--remote-debugging-pipe`: commands
in on fd 3, replies and events out on fd 4, JSON messages ended by a NUL byte), so no
websocket client, no port and no browser download is needed: `/usr/bin/chromium` from
the `chromium` package (`make install` installs it).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

CHROMIUM = "/usr/bin/chromium"
# What this sandbox needs: no setuid sandbox, no GPU, no network of its own, a fresh
# profile per run.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Every <img> once loaded (or failed), what a reader's browser would see of the page.
_INSPECT = """
(async () => {
  const images = [...document.images];
  await Promise.all(images.map((img) => img.complete ? null :
    new Promise((done) => { img.onload = done; img.onerror = done; })));
  return {
    images: images.map((img) => ({
      src: img.currentSrc.slice(0, 80),
      alt: img.alt,
      loaded: img.complete && img.naturalWidth > 0,
      width: img.naturalWidth,
    })),
    scripts: document.scripts.length,
    text: document.body.innerText,
    title: document.title,
  };
})()
"""


@dataclass
class PageLoad:
    """What the page did in the browser."""

    images: list[dict[str, Any]]
    scripts: int
    text: str
    title: str
    console: list[str] = field(default_factory=list)  # errors and warnings, exceptions
    dialogs: list[str] = field(default_factory=list)  # alert()/confirm() the page opened


class DevTools:
    """One headless Chromium, driven through the DevTools protocol over pipes."""

    def __init__(self, timeout: float = 60) -> None:
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="fsbench-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def pipes_at_3_and_4() -> None:
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={self.profile.name}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(3, 4),
            preexec_fn=pipes_at_3_and_4,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._buffer = b""
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []

    def close(self) -> str:
        """Quit the browser; returns what it wrote on stderr."""
        try:
            if self.proc.poll() is None:
                self.send("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self.profile.cleanup()
        return err.decode("utf-8", "replace") if err else ""

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """A command and its result; events that arrive meanwhile are kept in `events`."""
        sent = self._post(method, session, **params)
        while sent not in self._replies:
            self._pump()
        reply = self._replies.pop(sent)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            self._pump()

    def _post(self, method: str, session: str | None = None, **params: Any) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _pump(self) -> None:
        """One message: a reply is kept for its command, an event in `events`. A dialog
        the page opens (alert) is recorded and dismissed, or the page would hang on it."""
        message = self._receive()
        if "id" in message:
            self._replies[message["id"]] = message
            return
        self.events.append(message)
        if message.get("method") == "Page.javascriptDialogOpening":
            self._post("Page.handleJavaScriptDialog", message.get("sessionId"), accept=True)

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError(f"no answer from Chromium in {self.timeout:.0f} s")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium exited ({self.proc.poll()})")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def load(self, url: str) -> PageLoad:
        """Open `url` in a new tab, wait for its load event, and inspect it."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", session)
        self.send("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired", session)
        found = self.send(
            "Runtime.evaluate",
            session,
            expression=_INSPECT,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in found:
            raise RuntimeError(f"inspecting the page failed: {found['exceptionDetails']}")
        value = found["result"]["value"]
        page = PageLoad(value["images"], value["scripts"], value["text"], value["title"])
        for event in self.events:
            if event.get("sessionId") != session:
                continue
            params = event.get("params", {})
            method = event.get("method")
            if method == "Runtime.consoleAPICalled" and params.get("type") in (
                "error",
                "warning",
                "assert",
            ):
                args = " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                page.console.append(f"console.{params['type']}: {args}")
            elif method == "Runtime.exceptionThrown":
                page.console.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                entry = params["entry"]
                page.console.append(f"{entry['source']} {entry['level']}: {entry['text']}")
            elif method == "Page.javascriptDialogOpening":
                page.dialogs.append(str(params.get("message")))
        self.send("Target.closeTarget", targetId=target)
        return page


def render(url: str, timeout: float = 60) -> PageLoad:
    with DevTools(timeout) as browser:
        return browser.load(url)
