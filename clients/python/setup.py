"""The package's build hook: the Functions library, both forms, put into the package as it is
built (redis_cell/lua/ in the wheel and in the sdist), from the repository's one copy,
lua/dist. The checkout holds no copy of its own; redis_cell.routing reads lua/dist there.

Everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
FORMS = ("redis_cell.lua", "redis_cell.script.lua")
# Where the package carries the forms, below its root.
SHIPPED = Path("redis_cell") / "lua"


def library() -> Path:
    """The forms' directory: the package's own in an sdist (which has PKG-INFO, and is
    unpacked anywhere, so that nothing beside it may be trusted), else the repository's
    lua/dist, where this directory is the repository's clients/python."""
    if (HERE / "PKG-INFO").is_file():
        found = HERE / SHIPPED
    elif HERE.parent.name == "clients" and HERE.name == "python":
        found = HERE.parents[1] / "lua" / "dist"
    else:
        found = None
    if found is None or not all((found / form).is_file() for form in FORMS):
        raise SystemExit(f"redis-cell: the Functions library ({', '.join(FORMS)}) is missing: "
                         "build from a checkout of the repository (lua/dist) or from the sdist")
    return found


def ship(root: Path) -> None:
    source = library()
    (root / SHIPPED).mkdir(parents=True, exist_ok=True)
    for form in FORMS:
        # Building a wheel in an unpacked sdist, setuptools may hand build_py the tree
        # itself: the forms are there already, and a file is not copied onto itself.
        if (root / SHIPPED / form).resolve() != (source / form).resolve():
            shutil.copyfile(source / form, root / SHIPPED / form)


class BuildPy(build_py):
    def run(self):
        super().run()
        ship(Path(self.build_lib))

    # What the install records as the package's files, so that an uninstall removes them.
    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [
            str(Path(self.build_lib) / SHIPPED / form) for form in FORMS]


class Sdist(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        ship(Path(base_dir))


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
