"""Helpers for the tests of machine profiles (test_calibrate.py, test_profile_validator.py)."""


def set_key(obj, keys, value):
    """obj[keys[0]][keys[1]]... = value, in place; value KeyError removes the key instead."""
    for k in keys[:-1]:
        obj = obj[k]
    if value is KeyError:
        del obj[keys[-1]]
    else:
        obj[keys[-1]] = value
