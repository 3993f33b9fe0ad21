"""Exceptions of the iotame package; the CLI turns them into `iotame: ...` messages and exit codes."""
from __future__ import annotations

__all__ = ["IotameError", "MissingFileError", "ConfigError", "StatsError", "UsageError", "LogError"]


class IotameError(Exception):
    """An error the user can act on; its text is printed after `iotame: `."""

    exit_code = 1


class UsageError(IotameError):
    """The command line asked for something impossible (exit status 2, like argparse)."""

    exit_code = 2


class MissingFileError(IotameError):
    """A part of the build (libiotame.so, iotame-kernel, settings.json) is not where it should be."""

    exit_code = 2


class ConfigError(IotameError):
    """A configuration file is invalid; `errors` holds one formatted line per problem."""

    exit_code = 2

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = list(errors)


class StatsError(IotameError):
    """A statistics file is missing, unreadable or not a statistics file."""


class LogError(IotameError):
    """A Darshan log that cannot be read (not a log, truncated, a version the darshan library cannot read);
    the message names the file and what was expected (exit status 2, bad input)."""

    exit_code = 2
