"""Look at a rendered report with headless Chromium: did every image load, is every section there?

:func:`inspect_page` copies the page to a probe file beside it (so relative image
paths still resolve), appends a script that records, after the load event, each
``<img>``'s ``naturalWidth`` and every ``section`` id into a ``<pre>`` element,
and reads that back from ``chromium --dump-dom``. :func:`screenshot` writes a PNG
of the top of the page. Both need the Debian ``chromium`` package (or any
``chromium``/``google-chrome`` on PATH) and nothing from the network.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bpebench.errors import BpebenchError

#: flags that keep headless Chromium offline, quiet and free of first-run work
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--allow-file-access-from-files")

_PROBE = """
<script>
window.addEventListener("load", function () {
  var images = Array.prototype.map.call(document.images, function (img) {
    return {src: img.getAttribute("src"), width: img.naturalWidth, complete: img.complete};
  });
  var sections = Array.prototype.map.call(document.querySelectorAll("section[id]"), function (s) {
    return {id: s.id, text: s.innerText.length};
  });
  var out = document.createElement("pre");
  out.id = "bpebench-probe";
  out.textContent = JSON.stringify({images: images, sections: sections, title: document.title});
  document.body.appendChild(out);
});
</script>
"""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], *, timeout: float) -> subprocess.CompletedProcess:
    chromium = find_chromium()
    if chromium is None:
        raise BpebenchError("chromium not found (Debian: apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="bpebench-chromium-") as profile:
        command = [chromium, *FLAGS, f"--user-data-dir={profile}", *args]
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                                  env={**os.environ, "HOME": profile})
        except subprocess.TimeoutExpired:
            raise BpebenchError(f"chromium did not finish within {timeout:g} s") from None


def inspect_page(page: str | Path, *, timeout: float = 60.0) -> dict:
    """``{"images": [{src, width, complete}], "sections": [{id, text}], "title": ...}`` as Chromium sees it."""
    page = Path(page).resolve()
    probe = page.with_name(f".probe-{os.getpid()}-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    try:
        result = _run(["--virtual-time-budget=10000", "--dump-dom", probe.as_uri()], timeout=timeout)
    finally:
        probe.unlink(missing_ok=True)
    match = re.search(r'<pre id="bpebench-probe">(.*?)</pre>', result.stdout, re.S)
    if not match:
        raise BpebenchError(f"chromium returned no probe result (exit {result.returncode}): "
                            f"{result.stderr.strip()[-300:]}")
    import html

    return json.loads(html.unescape(match.group(1)))


def screenshot(page: str | Path, png: str | Path, *, width: int = 1200, height: int = 900,
               timeout: float = 60.0) -> Path:
    """A PNG of the top ``width`` x ``height`` pixels of the page."""
    page, png = Path(page).resolve(), Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    result = _run([f"--window-size={width},{height}", "--virtual-time-budget=10000", f"--screenshot={png}",
                   page.as_uri()], timeout=timeout)
    if not png.exists():
        raise BpebenchError(f"chromium wrote no screenshot (exit {result.returncode}): {result.stderr.strip()[-300:]}")
    return png
