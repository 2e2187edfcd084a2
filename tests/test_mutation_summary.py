"""tools/mutation_summary.py: mutmut's per-module results read into killed / checked and the survivors' names."""

from __future__ import annotations

import json

from tests.helpers import load_tool

tool = load_tool("mutation_summary")


def test_meta_files_become_a_table_and_a_survivor_list(tmp_path, capsys):
    mod = tmp_path / "hwprobe" / "judge.py.meta"
    mod.parent.mkdir(parents=True)
    mod.write_text(json.dumps({"exit_code_by_key": {
        "hwprobe.judge.x_judge__mutmut_1": 1, "hwprobe.judge.x_judge__mutmut_2": 0,
        "hwprobe.judge.x_judge__mutmut_3": -24, "hwprobe.judge.x_judge__mutmut_4": 33,
        "hwprobe.judge.x_judge__mutmut_5": None}}))
    assert tool.main([str(tmp_path), "--survivors"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "| hwprobe/judge.py | 2 / 4 | 50.0% | 2 | 1 |" in out       # a timeout is a kill; no test, a survivor
    assert "| all | 2 / 4 | 50.0% | 2 | 1 |" in out
    assert out[-2:] == ["hwprobe.judge.x_judge__mutmut_2", "hwprobe.judge.x_judge__mutmut_4"]


def test_no_results_is_one_line_and_exit_2(tmp_path, capsys):
    assert tool.main([str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"mutation_summary: no mutmut results (*.py.meta) under {tmp_path / 'none'}"
