"""tools/reprice_hf.sh: every committed transformers comparison is what today's lowering and predictor make of its
run (a change to either that moves a row fails here until the comparisons are re-priced and their READMEs say
what moved)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_committed_transformers_comparison_is_current(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    r = subprocess.run(["bash", "tools/reprice_hf.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("comparison*.md"))
    assert len(made) >= 14
    stale = [str(p) for p in made if (ROOT / p).read_text() != (tmp_path / p).read_text()]
    assert stale == []
