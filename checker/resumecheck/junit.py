"""JUnit XML for CI dashboards: the one writer `check`, `spec` and every `run SUITE` use.

A `<testsuites>` per command, named after it and stamped with when it started and how long it
took; a `<testsuite>` per group (a contract, a scenario); text escaped so that nothing read from a
trace can end an attribute or inject markup (`escape`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from resumecheck import escape

if TYPE_CHECKING:
    from resumecheck.report import Invocation


def testsuites(run: Invocation) -> ET.Element:
    """The document's root for one command."""
    return ET.Element(
        "testsuites",
        name=f"resume-check {run.command}",
        timestamp=run.started.isoformat(timespec="seconds"),
        time=f"{run.seconds:.3f}",
    )


def testsuite(
    parent: ET.Element,
    name: str,
    run: Invocation,
    *,
    tests: int,
    failures: int,
    errors: int,
    seconds: float,
) -> ET.Element:
    """One group of test cases under `parent`."""
    return ET.SubElement(
        parent,
        "testsuite",
        name=text(name),
        tests=str(tests),
        failures=str(failures),
        errors=str(errors),
        timestamp=run.started.isoformat(timespec="seconds"),
        time=f"{seconds:.3f}",
    )


def testcase(
    suite: ET.Element, classname: str, name: str, seconds: float, file: str | None = None
) -> ET.Element:
    """One test case of `suite`: a trace, a spec row, a cell or a whole run (`file`, where the
    case has one, is what a CI page links to)."""
    fields = {"classname": classname, "name": name}
    if file is not None:
        fields["file"] = file
    return ET.SubElement(suite, "testcase", **fields, time=f"{seconds:.3f}")


def to_xml(root: ET.Element) -> str:
    """The document, indented, with its XML declaration."""
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def text(value: str) -> str:
    """Text for an attribute or element, free of what XML 1.0 cannot carry."""
    return escape.xml(value)


def line(value: str) -> str:
    """A file name or a string from a trace: one line, escaped as in the text report."""
    return escape.xml(escape.text(value))
