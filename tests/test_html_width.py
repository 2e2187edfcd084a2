"""The HTML report fits a 1400-pixel window (issue 23, item 16): no table scrolls sideways in headless Chromium
(where it is installed), and, everywhere, a row's rates share one unit column instead of repeating it per cell."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from hwprobe.report import html
from hwprobe.report.source import load_run
from tests.refs import H100_FULL, H200_FULL

RUNS = [H200_FULL, H100_FULL]
PROBE = ("<script>window.onload=function(){var o=[];document.querySelectorAll('.scroll').forEach(function(d){"
         "if(d.scrollWidth>d.clientWidth+1)o.push(d.previousElementSibling?d.previousElementSibling.textContent:'?')"
         "});document.body.setAttribute('data-overflow',o.join('|')||'none')}</script>")


def _browser() -> str | None:
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.mark.parametrize("run", RUNS, ids=["h200-full", "h100-full"])
def test_no_table_scrolls_sideways_at_1400_px(tmp_path, run):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless Chromium here (apt-get install chromium)")
    page = tmp_path / "r.html"
    page.write_text(html.render(load_run(run)).replace("</body>", PROBE + "</body>"))
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,2000",
                        "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'data-overflow="([^"]*)"', r.stdout)
    assert found, r.stderr[-500:]
    assert found.group(1) == "none", f"tables wider than 1400 px: {found.group(1)}"


def test_compute_rates_carry_their_unit_once_per_row():
    text = html.render(load_run(RUNS[0]))
    table = text.split("<h3>Compute ceilings</h3>")[1].split("</table>")[0]
    head = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    assert head[:5] == ["precision", "cores", "path", "unit", "measured"]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
    for row in rows:
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        assert re.fullmatch(r"[TPG]?(FLOP|OP)/s", cells[3]), cells
        assert sum("FLOP/s" in c or "OP/s" in c for c in cells) == 1, cells
