"""A run's thresholds as a JUnit XML report, the format CI systems show as test results.

One ``<testcase>`` per threshold × target (``classname`` the target, ``name`` the
threshold); a threshold that covers several workloads fails its case when any of them
misses it, and the failure's text has one line per workload that did. A run whose plan has
no thresholds gives an empty suite.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gatebench.core.model import RunRecord
from gatebench.core.report._build import Report
from gatebench.core.thresholds import Threshold, ThresholdResult, evaluate, thresholds_from_plan


def junit_cases(report: Report) -> list[tuple[Threshold, str, list[ThresholdResult]]]:
    """(threshold, target, its results on every workload) in the plan's order."""
    return cases_of(evaluate(thresholds_from_plan(report.run.plan), report.summary))


def cases_of(results: list[ThresholdResult]) -> list[tuple[Threshold, str, list[ThresholdResult]]]:
    """Results grouped as test cases: (threshold, target, its results), in threshold order."""
    cases: dict[tuple[int, str], list[ThresholdResult]] = {}
    order: list[Threshold] = []
    for result in results:
        if result.threshold not in order:
            order.append(result.threshold)
        key = (order.index(result.threshold), result.target)
        cases.setdefault(key, []).append(result)
    return [(order[i], target, items) for (i, target), items in cases.items()]


def render_junit(report: Report) -> str:
    return junit_xml(report.run, junit_cases(report))


def junit_xml(run: RunRecord, cases: list[tuple[Threshold, str, list[ThresholdResult]]]) -> str:
    """The JUnit XML of a run's threshold cases (a fixed run's or a capacity run's)."""
    failed = sum(1 for _, _, items in cases if not all(r.passed for r in items))
    run_id = run.run_id
    suites = ET.Element("testsuites", name="gatebench", tests=str(len(cases)), failures=str(failed))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"gatebench thresholds: {run_id}",
        tests=str(len(cases)),
        failures=str(failed),
        errors="0",
        skipped="0",
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="run_id", value=run_id)
    ET.SubElement(properties, "property", name="status", value=str(run.status))
    for threshold, target, items in cases:
        workloads = threshold.workload or (
            "overall" if threshold.metric == "score" else "every workload"
        )
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"gatebench.{target}",
            name=f"{threshold.label()} ({workloads})",
            time="0",
        )
        missed = [r for r in items if not r.passed]
        if missed:
            failure = ET.SubElement(
                case,
                "failure",
                message=missed[0].line()
                + (f" (+{len(missed) - 1} more)" if len(missed) > 1 else ""),
                type="threshold",
            )
            failure.text = "\n".join(r.line() for r in missed) + "\n"
        else:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(r.line() for r in items) + "\n"
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


__all__ = ["cases_of", "junit_cases", "junit_xml", "render_junit"]
