"""One thing pyproject.toml cannot say: built with IOTAME_PREFIX set (`IOTAME_PREFIX=P pip install ./python`), the
package keeps P in iotame/_built.py and finds the runtime installed there without the variable (paths.locate)."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        super().run()
        prefix = os.environ.get("IOTAME_PREFIX")
        if prefix and not self.dry_run:
            with open(os.path.join(self.build_lib, "iotame", "_built.py"), "w") as f:
                f.write(f'"""Written at build time (setup.py)."""\nPREFIX = {os.path.abspath(prefix)!r}\n')


setup(cmdclass={"build_py": BuildPy})
