"""Bytecode for the image: compile exactly the modules chorus imports.

Run by deploy/Dockerfile in the build stage, with the virtualenv's python. It
imports every module of chorus's packages (a provider whose optional library is
not installed is skipped) and the optional libraries that are installed (the
image's EXTRAS), and writes a ``.pyc`` for each Python file this
loaded, and for no other. Modules nothing imports at start (most of a client
library's generated types, most of the standard library) keep only their
source: they are compiled in memory if something imports them later.

- The virtualenv's pycs are written next to their sources, ``unchecked-hash``:
  no timestamp in them (the same source gives the same bytes), and Python loads
  them without reading the source again; the two are copied together.
- The standard library's (Debian's python3 in the runtime stage, whose own pycs
  are removed there) are written into a separate tree (``STDLIB_PYC``) that the
  image copies over ``/``. They are ``checked-hash``: Python compares them with
  the source's hash, so a runtime stage built with another patch release of
  python3 than this stage just ignores them.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import py_compile
import re
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

PACKAGES = ("gateway", "agent", "memory", "plugins")
# Imported by the image's HEALTHCHECK, which runs a bare python3.
HEALTHCHECK_MODULES = ("urllib.request",)
STDLIB_PYC = Path("/opt/stdlib-pyc")
UNCHECKED = py_compile.PycInvalidationMode.UNCHECKED_HASH
CHECKED = py_compile.PycInvalidationMode.CHECKED_HASH


def import_all() -> list[str]:
    """Import every module of chorus's packages; the names that could not be imported."""
    skipped: list[str] = []
    for name in HEALTHCHECK_MODULES:
        importlib.import_module(name)
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional provider library that is not installed
                skipped.append(info.name)
    return skipped


def import_extras() -> list[str]:
    """Import the top-level modules of the optional libraries installed (the image's
    EXTRAS): chorus's providers import them only when used; the names imported."""
    wanted: set[str] = set()
    for requirement in metadata.requires("chorus") or []:
        name, _, marker = requirement.partition(";")
        if "extra ==" in marker and "'dev'" not in marker and '"dev"' not in marker:
            wanted.add(_normalize(re.split(r"[<>=!~\[ ]", name.strip(), maxsplit=1)[0]))
    imported: list[str] = []
    for module, distributions in metadata.packages_distributions().items():
        if module.startswith("_") or not wanted & {_normalize(d) for d in distributions}:
            continue
        try:
            importlib.import_module(module)
        except Exception as error:  # a library that needs more than an import; no pycs
            print(f"not compiled: {module} ({type(error).__name__})")
        else:
            imported.append(module)
    return sorted(imported)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def loaded_sources() -> list[Path]:
    """The Python source files of every module loaded now."""
    sources: list[Path] = []
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if source and source.endswith(".py"):
            sources.append(Path(source).resolve())
    return sources


def compile_loaded(venv: Path, stdlib: Path) -> tuple[int, int]:
    """Write the pycs of the loaded modules: (in the virtualenv, of the standard library)."""
    in_venv = in_stdlib = 0
    for path in loaded_sources():
        if venv in path.parents:
            py_compile.compile(str(path), doraise=True, invalidation_mode=UNCHECKED)
            in_venv += 1
        elif stdlib in path.parents and "site-packages" not in path.parts:
            cfile = STDLIB_PYC / Path(importlib.util.cache_from_source(str(path))).relative_to("/")
            py_compile.compile(str(path), cfile=str(cfile), doraise=True, invalidation_mode=CHECKED)
            in_stdlib += 1
    return in_venv, in_stdlib


def main() -> None:
    sys.dont_write_bytecode = True  # only the pycs written below
    venv = Path(sys.prefix).resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    skipped = import_all()
    extras = import_extras()
    in_venv, in_stdlib = compile_loaded(venv, stdlib)
    print(
        f"compiled {in_venv} modules of the virtualenv and {in_stdlib} of the standard"
        f" library; optional libraries: {', '.join(extras) or 'none'};"
        f" not importable here: {', '.join(skipped) or 'none'}"
    )


if __name__ == "__main__":
    main()
