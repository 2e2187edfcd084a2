"""Package discovery, so that a new subpackage can never be left out of the wheel (hwprobe.models.llm once was,
and a plain `pip install .` broke `hwprobe analyze`). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

# suites/ (top level, beside the package) ships inside it as hwprobe._suites: see [tool.setuptools.package-dir]
setup(packages=find_packages(include=["hwprobe", "hwprobe.*"]) + ["hwprobe._suites"])
