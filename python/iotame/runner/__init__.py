"""Launching commands under the runtime (LD_PRELOAD=libiotame.so, IOTAME_CONFIG, IOTAME_STATS)."""
from .base import LAUNCHERS, Launcher, Mpiexec, get_launcher
from .env import ENV_CONFIG, ENV_STATS, RUNTIME_VARS, runtime_env
from .run import RunResult, exit_status, run_command

__all__ = ["Launcher", "Mpiexec", "LAUNCHERS", "get_launcher", "runtime_env", "RUNTIME_VARS", "ENV_CONFIG",
           "ENV_STATS", "RunResult", "run_command", "exit_status"]
