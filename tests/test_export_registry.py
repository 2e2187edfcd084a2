"""Exports behind one registry: a new format is one module in hwprobe/export/ (found by the registry, offered by
the CLI) and one test, with no list to edit anywhere else."""

import os
import subprocess
import sys

import pytest

import hwprobe.export as ex
from hwprobe.errors import InputError
from hwprobe.profile_build import load_profile

H200 = "profiles/h200-sxm/2026-11-26-full"


def test_the_registry_holds_every_format_and_the_cli_offers_them():
    """Today's formats, json and csv first; a new one joins without an edit here (issue 34: one module, one test)."""
    names = list(ex.formats())
    assert names[:2] == ["json", "csv"] and {"ert", "llm-analysis", "llm-viewer"} <= set(names[2:])
    assert {"llm-analysis", "llm-viewer"} <= {k for k, f in ex.formats().items() if f.takes_set}
    assert not {"json", "csv", "ert"} & {k for k, f in ex.formats().items() if f.takes_set}
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", "--help"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "400"})
    assert f"[{'|'.join(names)}]" in r.stdout


def test_a_module_dropped_into_the_package_is_a_format(tmp_path, monkeypatch):
    (tmp_path / "peaks.py").write_text(
        "from hwprobe.export.common import Export, Format\n"
        "def write(profile, *, name, **_):\n"
        "    return Export('peaks', str(len(profile.compute)), name + '.txt')\n"
        "FORMATS = [Format('peaks', write, 'how many precisions')]\n")
    monkeypatch.setattr(ex, "__path__", [*ex.__path__, str(tmp_path)])
    ex.formats.cache_clear()
    try:
        e = ex.export(load_profile(H200), "peaks", name="x")
        assert (e.format, e.filename, e.text) == ("peaks", "x.txt", str(len(load_profile(H200).compute)))
        with pytest.raises(InputError, match="--set applies to llm-analysis, llm-viewer exports"):
            ex.export(load_profile(H200), "peaks", overrides={"a": 1.0})
    finally:
        monkeypatch.undo()
        ex.formats.cache_clear()
        sys.modules.pop("hwprobe.export.peaks", None)
    assert "peaks" not in ex.formats()


def test_a_format_named_twice_is_refused(tmp_path, monkeypatch):
    (tmp_path / "again.py").write_text(
        "from hwprobe.export.common import Format\nFORMATS = [Format('csv', print, 'a second csv')]\n")
    monkeypatch.setattr(ex, "__path__", [*ex.__path__, str(tmp_path)])
    ex.formats.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="'csv' is defined twice"):
            ex.formats()
    finally:
        monkeypatch.undo()
        ex.formats.cache_clear()
        sys.modules.pop("hwprobe.export.again", None)


def test_an_unknown_format_names_the_registry_s():
    with pytest.raises(InputError, match="formats: json, csv, ert, llm-analysis, llm-viewer"):
        ex.export(load_profile(H200), "yaml")
