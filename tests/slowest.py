"""The slowest tests of a run, from the JUnit XML files tests/run_all.sh has each layer write (pytest's --junitxml,
ctest's --output-junit): `slowest.py N LAYER=FILE...` prints the N slowest over all layers, one a line, as
"  12.3s  preload  tests/preload/test_tune.py::test_resume_after_kill" (a test's time is its setup, call and
teardown: a module's fixture counts in its first test). A missing or unreadable file is skipped."""
import sys
import xml.etree.ElementTree as ET


def cases(layer, path):
    """(seconds, layer, test id) of every test case in one JUnit file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    out = []
    for tc in root.iter("testcase"):
        cls, name = tc.get("classname") or "", tc.get("name") or ""
        if cls == name:                                   # ctest: classname and name are the test's name
            test = name
        else:                                   # pytest: tests.preload.test_tune[.TestClass] + test_resume_after_kill
            parts = cls.split(".")
            at = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts))
            test = "::".join(["/".join(parts[:at]) + ".py"] + parts[at:] + [name]) if cls else name
        out.append((float(tc.get("time") or 0), layer, test))
    return out


def main(argv):
    n, found = int(argv[0]), []
    for arg in argv[1:]:
        layer, _, path = arg.partition("=")
        found += cases(layer, path)
    found.sort(key=lambda c: -c[0])
    print(f"the {min(n, len(found))} slowest tests:")
    for seconds, layer, test in found[:n]:
        print(f"  {seconds:7.1f}s  {layer:<8} {test}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
