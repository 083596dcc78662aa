"""Install and locate the real MCP peers that the interop tests talk to.

Theory of operation
-------------------
The interop tests run our implementation against other people's MCP code: the
conformance suite, the reference "everything" server, the TypeScript SDK and the
official Python SDK. None of them is a dependency of ``mcp_ref``; this module
installs them on demand into a cache directory and hands back paths.

* Everything comes from a package registry through its ordinary client:
  ``npm install`` for the npm packages, ``pip install`` for the Python SDK.
  Nothing else is downloaded.
* Two versions of one npm package (the conformance suite, 0.1.16 and
  0.2.0-alpha.12) live side by side: the second is installed under an npm alias
  (``ALIASES``: ``conformance-next@npm:@modelcontextprotocol/conformance@...``)
  in a group of its own.
* The cache is ``<repo>/.cache/peers/`` (git-ignored), or ``$MCP_REF_PEERS_DIR``.
  Each peer is a *group* with its own sub-directory (an npm prefix or a venv),
  so one failed install never spoils another, and the Python SDK's dependencies
  never meet the project's own virtualenv.
* A group is installed once per machine.  When it is complete a stamp file
  (``.mcp-ref-stamp.json``) records the pinned versions and the paths found; a
  later call reads the stamp and returns at once.  Changing a pin in ``PINS``
  makes the stamp stale, and the group is installed afresh.
* Installing happens under an exclusive ``fcntl`` lock on ``<cache>/.lock``, so
  two pytest processes never install into the same directory at once.  The
  second one waits, then finds the stamp.
* A failed install leaves a ``.mcp-ref-failed.json`` note; for
  ``FAILURE_TTL_SECONDS`` other calls (in any process) return ``None`` with the
  same reason instead of trying again.  Set ``MCP_REF_PEERS_NO_INSTALL=1`` to
  never install (only use what is already there).
* Each public getter returns ``None`` when the peer is not available, and
  :func:`why_missing` gives the reason, meant for ``pytest.skip``.

Run ``python -m tests.interop.peers`` from the repository root to install every
peer and print where it is.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Exact versions of every peer, keyed by the name the package is installed under
# (its directory in node_modules).  Change one here and the next call reinstalls
# that group.  "node" is the npm package that ships a Node.js binary; the
# conformance CLI (0.1.16 and 0.2.0-alpha.12) needs Node 22 (it imports
# fs.globSync).  Two versions of the conformance suite are pinned; the second is
# installed under an npm alias (see ALIASES) in a prefix of its own.
PINS: dict[str, str] = {
    "node": "22.23.3",
    "@modelcontextprotocol/conformance": "0.1.16",
    "conformance-next": "0.2.0-alpha.12",
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/sdk": "1.32.2",
    "zod": "4.6.7",
    "mcp": "2.3.0",
}

# npm aliases: the pin's name -> the registry package it installs
# (``npm install conformance-next@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12``).
ALIASES: dict[str, str] = {
    "conformance-next": "@modelcontextprotocol/conformance",
}

# Which pins make up each group, and whether the group is an npm prefix.
GROUPS: dict[str, tuple[str, ...]] = {
    "node22": ("node",),
    "conformance": ("@modelcontextprotocol/conformance",),
    "conformance-next": ("conformance-next",),
    "server-everything": ("@modelcontextprotocol/server-everything",),
    "ts-sdk": ("@modelcontextprotocol/sdk", "zod"),
    "python-sdk": ("mcp",),
}

# The groups that each hold one version of the conformance CLI (both run on node22).
CONFORMANCE_GROUPS: tuple[str, ...] = ("conformance", "conformance-next")

NPM_INSTALL_TIMEOUT_SECONDS = 600.0
PIP_INSTALL_TIMEOUT_SECONDS = 900.0
VENV_TIMEOUT_SECONDS = 120.0
PROBE_TIMEOUT_SECONDS = 60.0
# How long a recorded install failure stops new attempts (any process).
FAILURE_TTL_SECONDS = 600.0
# Oldest system Node.js that can run server-everything and the TypeScript SDK.
MIN_SYSTEM_NODE_MAJOR = 18

_STAMP = ".mcp-ref-stamp.json"
_FAILED = ".mcp-ref-failed.json"
_TAIL_CHARS = 2000

# Per-process memo: group -> (paths, None) on success or (None, reason).
_memo: dict[str, tuple[dict[str, str] | None, str | None]] = {}


class PeerUnavailable(Exception):
    """A peer cannot be installed or found; ``str(exc)`` is the reason."""


def _log(msg: str) -> None:
    print(f"[mcp-ref peers] {msg}", file=sys.stderr, flush=True)


def repo_root() -> Path:
    """The repository root: two levels above this file's folder."""
    return Path(__file__).resolve().parents[2]


def peers_dir() -> Path:
    """The cache directory: ``$MCP_REF_PEERS_DIR`` or ``<repo>/.cache/peers``."""
    env = os.environ.get("MCP_REF_PEERS_DIR")
    return Path(env).expanduser().resolve() if env else repo_root() / ".cache" / "peers"


def _pins_of(group: str) -> dict[str, str]:
    return {name: _npm_version_spec(name) for name in GROUPS[group]}


def _npm_version_spec(name: str) -> str:
    """What ``package.json`` asks for ``name``: its pin, through its alias if it has one."""
    alias = ALIASES.get(name)
    return f"npm:{alias}@{PINS[name]}" if alias else PINS[name]


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _TAIL_CHARS else "..." + text[-_TAIL_CHARS:]


def _run(argv: list[str], *, cwd: Path | None = None, timeout: float) -> str:
    """Run ``argv``; return its stdout.  Raises PeerUnavailable on any failure."""
    env = dict(os.environ)
    env.setdefault("npm_config_update_notifier", "false")
    env.setdefault("npm_config_fund", "false")
    env.setdefault("npm_config_audit", "false")
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise PeerUnavailable(f"{argv[0]} timed out after {timeout:.0f} s: {argv}") from exc
    except OSError as exc:
        raise PeerUnavailable(f"cannot run {argv[0]}: {exc}") from exc
    if proc.returncode != 0:
        raise PeerUnavailable(
            f"{' '.join(argv)} exited with {proc.returncode}: {_tail(proc.stderr or proc.stdout)}"
        )
    return proc.stdout


def _du(path: Path) -> int:
    """Total size in bytes of the files under ``path`` (hard links once)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:  # count hard links once
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<root>/.lock`` (blocks until it is free)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _stamp_paths(group: str) -> dict[str, str] | None:
    """The paths recorded by a valid stamp for ``group``, else None."""
    gdir = peers_dir() / group
    stamp = _read_json(gdir / _STAMP)
    if not stamp or stamp.get("pins") != _pins_of(group):
        return None
    paths = stamp.get("paths")
    if not isinstance(paths, dict) or not all(Path(p).exists() for p in paths.values()):
        return None
    return {str(k): str(v) for k, v in paths.items()}


def _recent_failure(group: str) -> str | None:
    note = _read_json(peers_dir() / group / _FAILED)
    if not note or note.get("pins") != _pins_of(group):
        return None
    age = time.time() - float(note.get("time", 0))
    if age < 0 or age > FAILURE_TTL_SECONDS:
        return None
    return f"{note.get('reason', 'install failed')} (recorded {age:.0f} s ago; retried after {FAILURE_TTL_SECONDS:.0f} s)"


# --- node discovery -------------------------------------------------------------


def _node_version(binary: str | Path) -> str | None:
    try:
        out = _run([str(binary), "--version"], timeout=PROBE_TIMEOUT_SECONDS)
    except PeerUnavailable:
        return None
    out = out.strip()
    return out if out.startswith("v") else None


def _major(version: str) -> int:
    try:
        return int(version.lstrip("v").split(".")[0])
    except ValueError:
        return 0


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise PeerUnavailable("npm is not on PATH (needed to install peers from the npm registry)")
    return npm


def system_node() -> Path | None:
    """The ``node`` on PATH if it is at least ``MIN_SYSTEM_NODE_MAJOR``, else None."""
    node = shutil.which("node")
    if node is None:
        return None
    version = _node_version(node)
    if version is None or _major(version) < MIN_SYSTEM_NODE_MAJOR:
        return None
    return Path(node)


def _npm_platform_package() -> str:
    """Name of the arch-specific npm package that holds the Node binary."""
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform, sys.platform)
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine
    )
    return f"node-{system}-{arch}"


def _find_node22(gdir: Path) -> Path | None:
    nm = gdir / "node_modules"
    candidates = [nm / "node" / "bin" / "node", nm / ".bin" / "node"]
    candidates += sorted(nm.glob("node/node_modules/node-*/bin/node"))
    candidates += sorted(nm.glob("node-*/bin/node"))
    want = PINS["node"]
    for cand in candidates:
        if cand.is_file() and os.access(cand, os.X_OK) and _node_version(cand) == f"v{want}":
            return cand.resolve()
    return None


# --- installers -----------------------------------------------------------------


def _write_package_json(gdir: Path, deps: Mapping[str, str]) -> None:
    (gdir / "package.json").write_text(
        json.dumps(
            {
                "name": f"mcp-ref-peer-{gdir.name}",
                "private": True,
                "description": "Installed by tests/interop/peers.py; safe to delete.",
                "dependencies": dict(deps),
            },
            indent=2,
        )
        + "\n"
    )


def _npm_install(gdir: Path, specs: list[str], *, scripts: bool) -> None:
    argv = [_npm(), "install", "--no-audit", "--no-fund", "--loglevel=error"]
    if not scripts:
        argv.append("--ignore-scripts")
    _log(f"npm install {' '.join(specs)} into {gdir}")
    _run([*argv, *specs], cwd=gdir, timeout=NPM_INSTALL_TIMEOUT_SECONDS)


def _package_version(gdir: Path, package: str) -> str | None:
    meta = _read_json(gdir / "node_modules" / package / "package.json")
    version = meta.get("version") if meta else None
    return version if isinstance(version, str) else None


def _install_npm_group(group: str, gdir: Path) -> dict[str, str]:
    pins = _pins_of(group)
    _write_package_json(gdir, pins)
    specs = [f"{name}@{spec}" for name, spec in pins.items()]
    # Only the "node" package needs its install script (it fetches the
    # arch-specific binary package from the registry).
    _npm_install(gdir, specs, scripts=group == "node22")
    for name in pins:
        got = _package_version(gdir, name)
        if got != PINS[name]:
            raise PeerUnavailable(f"after npm install, {name} is {got!r}, wanted {PINS[name]}")
    if group == "node22":
        node = _find_node22(gdir)
        if node is None:
            # The install script may have been blocked: take the binary package directly.
            fallback = f"{_npm_platform_package()}@{PINS['node']}"
            _npm_install(gdir, [fallback], scripts=False)
            node = _find_node22(gdir)
        if node is None:
            raise PeerUnavailable(f"npm package node@{PINS['node']} installed no working binary")
        return {"node": str(node)}
    if group in CONFORMANCE_GROUPS:
        (name,) = GROUPS[group]
        return {"entry": str(gdir / "node_modules" / name / "dist" / "index.js")}
    if group == "server-everything":
        entry = (
            gdir
            / "node_modules"
            / "@modelcontextprotocol"
            / "server-everything"
            / "dist"
            / "index.js"
        )
        return {"entry": str(entry)}
    return {
        "dir": str(gdir),
        "package": str(gdir / "node_modules" / "@modelcontextprotocol" / "sdk"),
    }


def _install_python_sdk(gdir: Path) -> dict[str, str]:
    version = PINS["mcp"]
    _log(f"creating venv {gdir} with {sys.executable}")
    _run([sys.executable, "-m", "venv", str(gdir)], timeout=VENV_TIMEOUT_SECONDS)
    python = gdir / "bin" / "python"
    _log(f"pip install mcp=={version} into {gdir}")
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            f"mcp=={version}",
        ],
        timeout=PIP_INSTALL_TIMEOUT_SECONDS,
    )
    got = _run(
        [str(python), "-c", "import mcp, importlib.metadata as m; print(m.version('mcp'))"],
        timeout=PROBE_TIMEOUT_SECONDS,
    ).strip()
    if got != version:
        raise PeerUnavailable(f"venv has mcp {got!r}, wanted {version}")
    return {"python": str(python)}


def _install(group: str) -> dict[str, str]:
    """Install ``group`` (caller holds the lock).  Returns its paths."""
    gdir = peers_dir() / group
    if gdir.exists():
        shutil.rmtree(gdir)
    gdir.mkdir(parents=True)
    started = time.monotonic()
    try:
        if group == "python-sdk":
            paths = _install_python_sdk(gdir)
        else:
            paths = _install_npm_group(group, gdir)
    except PeerUnavailable as exc:
        (gdir / _FAILED).write_text(
            json.dumps({"pins": _pins_of(group), "time": time.time(), "reason": str(exc)}) + "\n"
        )
        raise
    elapsed = time.monotonic() - started
    size = _du(gdir)
    stamp = {
        "group": group,
        "pins": _pins_of(group),
        "paths": paths,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(elapsed, 1),
        "bytes": size,
    }
    (gdir / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
    _log(f"installed {group} in {elapsed:.1f} s, {size / 2**20:.0f} MiB")
    return paths


def ensure(group: str) -> dict[str, str]:
    """Make sure ``group`` is installed; return its recorded paths.

    ``group`` is a key of ``GROUPS``.  The result maps a role to an absolute
    path: ``{"node": ...}`` for node22, ``{"entry": <dist/index.js>}`` for
    conformance, conformance-next and server-everything, ``{"dir", "package"}``
    for ts-sdk, ``{"python": ...}`` for python-sdk.  Fast (one small file read) when a
    valid stamp exists.  Raises PeerUnavailable with the reason otherwise;
    raises KeyError for an unknown group.
    """
    if group not in GROUPS:
        raise KeyError(f"unknown peer group {group!r}; known: {sorted(GROUPS)}")
    memo = _memo.get(group)
    if memo is not None:
        paths, reason = memo
        if paths is not None:
            return paths
        raise PeerUnavailable(reason or "install failed")
    try:
        paths = _ensure_uncached(group)
    except PeerUnavailable as exc:
        _memo[group] = (None, str(exc))
        raise
    _memo[group] = (paths, None)
    return paths


def _ensure_uncached(group: str) -> dict[str, str]:
    paths = _stamp_paths(group)
    if paths is not None:
        return paths
    if os.environ.get("MCP_REF_PEERS_NO_INSTALL"):
        raise PeerUnavailable(
            f"{group} is not installed in {peers_dir()} and MCP_REF_PEERS_NO_INSTALL is set"
        )
    failure = _recent_failure(group)
    if failure is not None:
        raise PeerUnavailable(failure)
    if group != "python-sdk":
        _npm()  # fail fast, without taking the lock, when npm is absent
    with _locked(peers_dir()):
        paths = _stamp_paths(group)  # another process may have finished meanwhile
        if paths is not None:
            return paths
        failure = _recent_failure(group)
        if failure is not None:
            raise PeerUnavailable(failure)
        return _install(group)


def _try(group: str) -> dict[str, str] | None:
    try:
        return ensure(group)
    except PeerUnavailable:
        return None


# --- public getters -------------------------------------------------------------


def why_missing(name: str) -> str:
    """Why peer ``name`` (a ``GROUPS`` key) is unusable; "" when it is usable.

    Covers what the peer needs to run too: each conformance group needs node22, and
    server-everything needs a node binary.  Triggers the install if it was not
    tried yet in this process.  Raises KeyError for an unknown name.
    """
    needed = ["node22", name] if name in CONFORMANCE_GROUPS else [name]
    for group in needed:
        try:
            ensure(group)
        except PeerUnavailable as exc:
            return f"peer {group!r} unavailable: {exc}"
    if name == "server-everything" and system_node() is None and node22() is None:
        return (
            f"peer 'server-everything' has no node to run it: no node >= "
            f"{MIN_SYSTEM_NODE_MAJOR} on PATH and node22 unavailable ({why_missing('node22')})"
        )
    return ""


def node22() -> Path | None:
    """Absolute path of the Node 22 binary from npm package ``node``, or None."""
    paths = _try("node22")
    return Path(paths["node"]) if paths else None


def conformance_cmd(group: str = "conformance") -> list[str] | None:
    """argv prefix running one version of the conformance CLI under Node 22, or None.

    ``group`` is one of ``CONFORMANCE_GROUPS``: "conformance" (0.1.16) or
    "conformance-next" (0.2.0-alpha.12).  Append a subcommand:
    ``[*conformance_cmd(), "server", "--url", url]``.  Needs the node22 group and
    ``group``; ``why_missing(group)`` tells what is wrong.
    """
    if group not in CONFORMANCE_GROUPS:
        raise KeyError(f"not a conformance group: {group!r}; known: {CONFORMANCE_GROUPS}")
    node = node22()
    paths = _try(group)
    if node is None or paths is None:
        return None
    return [str(node), paths["entry"]]


def server_everything_cmd() -> list[str] | None:
    """argv that starts server-everything speaking MCP over stdio, or None.

    Uses the system ``node`` (>= 18) when there is one, else Node 22.
    """
    paths = _try("server-everything")
    if paths is None:
        return None
    node = system_node() or node22()
    if node is None:
        return None
    return [str(node), paths["entry"], "stdio"]


def ts_sdk_dir() -> Path | None:
    """The npm prefix holding ``@modelcontextprotocol/sdk`` and ``zod``, or None.

    Node resolves bare ESM imports (``import ... from "@modelcontextprotocol/sdk/server/mcp.js"``)
    only for scripts inside this directory tree (ESM ignores NODE_PATH): put a
    bench script here, or import the package by absolute file URL.
    """
    paths = _try("ts-sdk")
    return Path(paths["dir"]) if paths else None


def python_sdk_python() -> Path | None:
    """The python of the separate venv that has the official ``mcp`` package, or None."""
    paths = _try("python-sdk")
    return Path(paths["python"]) if paths else None


def main(argv: list[str] | None = None) -> int:
    """Install every peer (or those named in ``argv``); print paths; exit 1 if any failed."""
    names = (argv if argv is not None else sys.argv[1:]) or list(GROUPS)
    status = 0
    for name in names:
        try:
            paths = ensure(name)
        except (PeerUnavailable, KeyError) as exc:
            print(f"{name}: MISSING: {exc}")
            status = 1
        else:
            print(f"{name}: {json.dumps(paths)}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
