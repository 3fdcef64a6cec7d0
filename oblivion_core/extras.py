"""What an adapter package needs beyond the core, checked as it is imported."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.util import find_spec


def require(package: str, modules: Sequence[str], extra: str) -> None:
    """Raise ``ModuleNotFoundError`` naming the missing ``modules`` and the pip command
    that installs them (``oblivion-memory[extra]``), rather than the first failed
    import deep inside ``package``."""
    missing = [m for m in modules if not _installed(m)]
    if missing:
        raise ModuleNotFoundError(
            f"{package} needs {', '.join(missing)} (not installed): "
            f'pip install "oblivion-memory[{extra}]"',
            name=missing[0],
        )


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a module without a spec
        return False
