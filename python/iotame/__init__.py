"""iotame: adaptive parallel I/O for MPI and HDF5 applications (the Python side: CLI, configuration,
statistics, launching under the runtime, benchmarks)."""
__version__ = "0.1.0"

from .config import check_config, load_config, save_config, validate  # noqa: E402
from .errors import ConfigError, IotameError, MissingFileError, StatsError, UsageError  # noqa: E402
from .paths import kernel_path, lib_path, repo_root, settings_path  # noqa: E402
from .settings import Schema, Section, Setting, load_schema  # noqa: E402
from .stats import OBJECTIVES, load_stats, objective, objectives, summarize  # noqa: E402

__all__ = ["__version__", "validate", "load_config", "check_config", "save_config", "load_schema", "Schema",
           "Section", "Setting", "load_stats", "summarize", "objectives", "objective", "OBJECTIVES",
           "repo_root", "lib_path", "kernel_path", "settings_path", "IotameError", "ConfigError", "StatsError",
           "MissingFileError", "UsageError"]
