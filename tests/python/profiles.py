"""Helpers for the tests of machine profiles (test_calibrate.py, test_profile_validator.py,
test_profile_discover.py)."""

MIB = 1 << 20


def set_key(obj, keys, value):
    """obj[keys[0]][keys[1]]... = value, in place; value KeyError removes the key instead."""
    for k in keys[:-1]:
        obj = obj[k]
    if value is KeyError:
        del obj[keys[-1]]
    else:
        obj[keys[-1]] = value


def good_profile():
    """A valid profile of a Lustre file system (0:52, /scratch), one node, no network: tests change it."""
    curve = [[4096, 50.0], [MIB, 400.0]]
    return {"version": 1, "kind": "iotame-machine-profile",
            "filesystem": {"path": "/scratch", "type": "lustre", "magic": "0xbd00bd0", "device": "0:52",
                           "targets": 6, "stripe_unit": 65536},
            "nodes": {"count": 1, "processes_per_node": 1},
            "storage": {"write": {"sequential": curve, "scattered": [[4096, 5.0], [MIB, 200.0]]},
                        "read": {"sequential": curve, "scattered": [[4096, 8.0], [MIB, 300.0]]},
                        "streams": {"write": [[1, 400.0], [2, 700.0], [4, 900.0]],
                                    "read": [[1, 500.0], [2, 800.0], [4, 1000.0]]},
                        "write_back": {"absorbed_bytes": 1 << 30, "absorbed_mbs": 3000.0},
                        "reads_from": "storage"},
            "memory": {"copy_mbs": 8000.0}, "network": None}
