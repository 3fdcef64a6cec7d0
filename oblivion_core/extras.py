"""What an adapter package needs beyond the core, checked as it is imported."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib import metadata
from importlib.util import find_spec


def require(
    package: str,
    modules: Sequence[str],
    extra: str,
    minimum: Mapping[str, str] | None = None,
) -> None:
    """Raise ``ModuleNotFoundError`` naming the missing ``modules`` and the pip command
    that installs them (``oblivion-memory[extra]``), rather than the first failed
    import deep inside ``package``; ``ImportError`` naming each distribution of
    ``minimum`` installed older than its version there (an environment that had them
    before: ``pip install`` of the extra upgrades them, ``--no-deps`` or a constraints
    file may not), and the ``pip install -U`` that upgrades them."""
    missing = [m for m in modules if not _installed(m)]
    if missing:
        raise ModuleNotFoundError(
            f"{package} needs {', '.join(missing)} (not installed): "
            f'pip install "oblivion-memory[{extra}]"',
            name=missing[0],
        )
    old = []
    for dist, lowest in (minimum or {}).items():
        have = _version(dist)
        if have is not None and _numbers(have) < _numbers(lowest):
            old.append(f"{dist} >= {lowest} (installed: {have})")
    if old:
        raise ImportError(
            f'{package} needs {", ".join(old)}: pip install -U "oblivion-memory[{extra}]"',
            name=package,
        )


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a module without a spec
        return False


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _numbers(version: str) -> tuple[int, ...]:
    """The release numbers of ``version`` ("1.1.0rc1" -> (1, 1, 0)), zeros dropped from
    the end so that "1.1" and "1.1.0" compare equal."""
    release = re.match(r"\d+(?:\.\d+)*", version)
    parts = [int(p) for p in release.group(0).split(".")] if release else [0]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)
