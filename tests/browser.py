"""Pages looked at by a real browser in the tests: headless Chromium (scripts/setup.sh installs
chromium-headless-shell) loads a page in a frame of a probe page, and the probe records what the browser made of it
once it is laid out."""
import html
import json
import shutil
import subprocess

import pytest

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")

# `collect` is the body of a JavaScript function of (d, w), the page's document and window, returning an object.
_PROBE = """<!doctype html><html><body><iframe id=f src="%s" style="width:1200px;height:900px"></iframe><script>
document.getElementById('f').onload = function () {
  var d = this.contentDocument, w = this.contentWindow;
  var out = (function (d, w) { %s })(d, w);
  out.overflow = d.documentElement.scrollWidth > w.innerWidth;
  out.title = d.title;
  document.body.setAttribute('data-probe', JSON.stringify(out));
};
</script></body></html>"""


def browser() -> str:
    for b in BROWSERS:
        if shutil.which(b):
            return shutil.which(b)
    pytest.fail(f"no Chromium on PATH ({', '.join(BROWSERS)}): scripts/setup.sh installs chromium-headless-shell")


def chromium(*args, height=2600):
    p = subprocess.run([browser(), "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                        f"--window-size=1300,{height}", "--virtual-time-budget=5000", *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def probe(page, collect: str, height=2600) -> dict:
    """What Chromium made of `page` (a Path): the object `collect` returns, with `overflow` (wider than the
    window) and `title`."""
    probe_page = page.with_name(page.stem + ".probe.html")
    probe_page.write_text(_PROBE % (page.as_uri(), collect))
    dom = chromium("--dump-dom", probe_page.as_uri(), height=height)
    start = dom.index("data-probe=") + len("data-probe=") + 1
    return json.loads(html.unescape(dom[start:dom.index('"', start)]))
