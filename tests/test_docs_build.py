"""The API reference (``docs/api``, Sphinx) builds with no warning, and documents every
public name.

The build is Sphinx's own command line, ``python -m sphinx -W --keep-going -b html``, in
a fresh interpreter (the one running the tests, so the ``test`` extra's Sphinx) on this
tree's ``mcp_ref`` (``docs/api/conf.py`` puts the repository first on ``sys.path``), with
a time bound.  ``-W`` makes every warning an error (a docstring that is not valid
reStructuredText, a duplicate description, an ambiguous reference); ``--keep-going``
lists them all.  The configuration says which warnings it avoids and how.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "docs" / "api"
BUILD_SECONDS = 60
"""The bound on one build (about 10 s of CPU on a 2-core machine)."""
PACKAGES = (
    "mcp_ref",
    "mcp_ref.trio",
    "mcp_ref.trio.http",
    "mcp_ref.trio.websocket",
    "mcp_ref.asyncio",
    "mcp_ref.blocking",
    "mcp_ref.server",
    "mcp_ref.client",
    "mcp_ref.asgi",
)
"""The packages the reference documents, one page each (``trio.http`` and
``trio.websocket`` on the trio page)."""


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the reference once; fail with every warning if there is one."""
    pytest.importorskip("sphinx", reason="Sphinx is in the test extra: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("docs")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    done = subprocess.run(
        [*command, "-d", str(out / ".doctrees"), str(SOURCE), str(out / "html")],
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
        check=False,
        cwd=ROOT,
    )
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0, (
        f"sphinx-build exited {done.returncode} with {len(warnings)} warning(s):\n"
        + "\n".join(warnings or done.stderr.splitlines()[-30:])
    )
    return out / "html"


def _inventory(html: Path) -> set[str]:
    """The names of the Python objects in the build's ``objects.inv``."""
    data = (html / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):  # "# Sphinx inventory version 2", project, version, compression
        header_end = data.index(b"\n", header_end) + 1
    text = zlib.decompress(data[header_end:]).decode("utf-8")
    names = set()
    for line in text.splitlines():
        match = re.match(r"(\S+)\s+py:\w+\s", line)
        if match:
            names.add(match.group(1))
    return names


def test_the_reference_builds_with_no_warning(build: Path) -> None:
    assert (build / "index.html").is_file()
    for page in ("core", "trio", "asyncio", "blocking", "server", "client", "asgi"):
        assert (build / f"{page}.html").is_file(), page


def test_every_public_name_is_documented(build: Path) -> None:
    """Each name of a package's ``__all__`` is documented under that package, or, when
    the package re-exports an object another package documents, under that one."""
    documented = _inventory(build)
    by_object: dict[int, str] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            if f"{package}.{name}" in documented:
                by_object.setdefault(id(getattr(module, name)), f"{package}.{name}")
    missing = [
        f"{package}.{name}"
        for package in PACKAGES
        for name in importlib.import_module(package).__all__
        if f"{package}.{name}" not in documented
        and id(getattr(importlib.import_module(package), name)) not in by_object
    ]
    assert not missing, f"public names not in the reference: {missing}"
