"""scripts/testbed's -x takes Open MPI's forms: NAME=VALUE sets a variable for every rank, NAME passes this
environment's value; a NAME that is not set is an error, not a variable silently missing (issue 50)."""
import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "testbed"


@pytest.fixture(scope="module")
def testbed():
    loader = importlib.machinery.SourceFileLoader("testbed_script", str(SCRIPT))
    spec = importlib.util.spec_from_loader("testbed_script", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_x_name_value_sets_the_variable(testbed):
    got = testbed.forwarded(["LD_PRELOAD=/opt/lib/libiotame.so", "A=x=y", "EMPTY="], {})
    assert got == {"LD_PRELOAD": "/opt/lib/libiotame.so", "A": "x=y", "EMPTY": ""}


def test_x_name_takes_the_environments_value(testbed):
    assert testbed.forwarded(["HOME"], {"HOME": "/home/u"}) == {"HOME": "/home/u"}


def test_x_name_not_set_is_an_error(testbed):
    with pytest.raises(testbed.Error, match="NOPE"):
        testbed.forwarded(["NOPE"], {})
    with pytest.raises(testbed.Error):
        testbed.forwarded(["=v"], {})
