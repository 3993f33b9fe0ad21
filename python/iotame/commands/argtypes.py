"""argparse types shared by the commands: values checked with a message that says what was expected."""
import argparse

__all__ = ["positive_int", "count", "seconds", "byte_size"]


def _number(text: str, kind, ok, expected: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda n: n >= 1, "a positive integer")


def count(text: str) -> int:
    return _number(text, int, lambda n: n >= 0, "an integer >= 0")


def seconds(text: str) -> float:
    return _number(text, float, lambda s: s > 0, "a positive number of seconds")


def byte_size(text: str) -> int:
    """Bytes as the kernels take them: "4096", "64k", "64m", "2g" (powers of 1024), at least 1."""
    from ..bench.options import parse_size
    return _number(text, parse_size, lambda n: n >= 1, "a size in bytes such as 4096, 64m or 2g")
