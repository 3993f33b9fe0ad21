"""Fresh virtual environments for install tests: the package is installed anew (pip --no-deps), its dependencies
are the checkout environment's, reached through a .pth file, so no test reinstalls optuna, numpy or darshan."""
import subprocess
import sys
from pathlib import Path


def venv_with_checkout_deps(path: Path) -> Path:
    """A virtual environment at path whose site-packages also sees this environment's; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    site = next(path.glob("lib/python3*/site-packages"))
    deps = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    (site / "checkout-deps.pth").write_text(f"{deps}\n")    # appended after site: the fresh iotame comes first
    return path / "bin/python"
