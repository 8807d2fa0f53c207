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
    """The forms' directory: the repository's when building from a checkout, or the package's
    own when building from an sdist, which carries them."""
    for found in (HERE.parents[1] / "lua" / "dist", HERE / SHIPPED):
        if all((found / form).is_file() for form in FORMS):
            return found
    raise SystemExit(f"redis-cell: the Functions library ({', '.join(FORMS)}) is missing: build "
                     "from a checkout of the repository (lua/dist) or from the package's sdist")


def ship(root: Path) -> None:
    source = library()
    (root / SHIPPED).mkdir(parents=True, exist_ok=True)
    for form in FORMS:
        if (root / SHIPPED / form).resolve() != (source / form).resolve():
            shutil.copyfile(source / form, root / SHIPPED / form)


class BuildPy(build_py):
    def run(self):
        super().run()
        ship(Path(self.build_lib))

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [
            str(Path(self.build_lib) / SHIPPED / form) for form in FORMS]


class Sdist(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        ship(Path(base_dir))


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
