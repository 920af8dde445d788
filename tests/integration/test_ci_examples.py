"""The CI examples of docs/ci.md, run: their shell commands execute here, in order, against
the real gatebench CLI, a real benchmark of examples/ci/openapi.yaml (nginx and the
baseline, Gatling) and its thresholds — once as written (the job passes) and once with a
threshold no gateway can meet (the job fails, one line per missed threshold, and the JUnit
report still says which).

What cannot run here is named and replaced, never skipped silently:

- GitHub Actions: the `uses:` steps (checkout, setup-python/java/go, upload-artifact) are
  the runner's; the `install` step (apt-get, pip) is checked for its commands, not run —
  this checkout's virtualenv provides `gatebench` on PATH instead. Steps run as the runner
  runs them (``bash --noprofile --norc -eo pipefail``), and after a failure only the
  ``if: always()`` ones do.
- Cloud Build: the steps' ``bash -c`` scripts run after Cloud Build's substitutions
  (``${_VAR}``, ``$BUILD_ID``, ``$PROJECT_ID``; ``$$`` is a literal ``$``). ``gcloud`` is a
  stand-in written by this test (no Google Cloud is reachable): ``storage cp`` copies into
  a local folder, and ``workflows run`` benchmarks the uploaded description locally with
  ``gatebench run`` (the cloud pipeline's run, done here) and prints the workflow's result
  document. The results store is a SQLite file instead of ``firestore://PROJECT`` (the
  same store interface; the Firestore adapter has its own contract test). The check
  step's ``pip install`` line is checked, not run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CI = ROOT / "examples" / "ci"
IMPOSSIBLE = "    - {metric: throughput, min: 10000000/s, workload: list}\n"
IMPOSSIBLE_LINE = re.compile(
    r"^threshold failed: nginx/list: throughput [\d,.]+ req/s is below the minimum "
    r"10,000,000 req/s \(/x-gatebench/thresholds/4\)$",
    re.MULTILINE,
)


def _workspace(tmp_path: Path, *, impossible: bool) -> Path:
    work = tmp_path / "repo"
    (work / "api").mkdir(parents=True)
    spec = (CI / "openapi.yaml").read_text(encoding="utf-8")
    assert spec.endswith("gateway: nginx}\n")
    (work / "api" / "openapi.yaml").write_text(spec + (IMPOSSIBLE if impossible else ""))
    return work


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEBENCH_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


# -- GitHub Actions -------------------------------------------------------------------------


def _github_steps() -> list[dict[str, Any]]:
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text(encoding="utf-8"))
    steps: list[dict[str, Any]] = workflow["jobs"]["gatebench"]["steps"]
    return steps


def _run_github_job(work: Path, env: dict[str, str]) -> list[tuple[str, int, str, str]]:
    """Each run step: (name, exit code or -1 when skipped, stdout, stderr)."""
    ran = []
    failed = False
    for step in _github_steps():
        if "uses" in step:
            continue
        if step.get("id") == "install":
            assert 'pip install "gatebench @ git+' in step["run"]
            assert "apt-get install -y -q --no-install-recommends nginx maven" in step["run"]
            continue
        if failed and step.get("if") != "always()":
            ran.append((step["name"], -1, "", ""))
            continue
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        failed = failed or done.returncode != 0
        ran.append((step["name"], done.returncode, done.stdout, done.stderr))
    return ran


def test_github_actions_job_passes_within_the_thresholds(tmp_path: Path) -> None:
    work = _workspace(tmp_path, impossible=False)
    ran = _run_github_job(work, _env(tmp_path))
    assert [(name, code) for name, code, _, _ in ran] == [
        ("What can run here", 0),
        ("Benchmark against the thresholds", 0),
        ("Thresholds as test results", 0),
    ], ran
    run_out = ran[1][2]
    assert re.search(
        r"^Thresholds: (\d+) of \1 met, 2 of them the default gate: no wrong answers "
        r"\(docs/ci\.md\)\.$",
        run_out,
        re.MULTILINE,
    ), run_out
    suite = ET.parse(work / "gatebench-junit.xml").getroot()
    # One case per threshold × gateway: the plan has one gateway (nginx), four thresholds and
    # the default wrong-answers gate (docs/ci.md, "A default gate").
    assert (suite.get("tests"), suite.get("failures")) == ("5", "0")


def test_github_actions_job_fails_on_a_missed_threshold(tmp_path: Path) -> None:
    work = _workspace(tmp_path, impossible=True)
    ran = _run_github_job(work, _env(tmp_path))
    assert [(name, code) for name, code, _, _ in ran] == [
        ("What can run here", 0),
        ("Benchmark against the thresholds", 1),
        ("Thresholds as test results", 0),
    ], ran
    stderr = ran[1][3]
    assert len(re.findall(r"^threshold failed: ", stderr, re.MULTILINE)) == 1, stderr
    assert IMPOSSIBLE_LINE.search(stderr), stderr
    suite = ET.parse(work / "gatebench-junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("6", "1")
    (failure,) = suite.iter("failure")
    assert "nginx/list: throughput" in (failure.get("message") or "")


# -- Cloud Build ----------------------------------------------------------------------------

GCLOUD_STANDIN = '''#!{python}
"""Stand-in for gcloud (no Google Cloud here): storage cp into a folder; workflows run =
benchmark the uploaded description locally and print the workflow's result document."""
import json, pathlib, re, shutil, subprocess, sys
args = sys.argv[1:]
bucket_root = pathlib.Path({buckets!r})
if args[:2] == ["storage", "cp"]:
    bucket, _, name = args[3].removeprefix("gs://").partition("/")
    dest = bucket_root / bucket / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(args[2], dest)
elif args[:2] == ["workflows", "run"]:
    assert "--format=value(result)" in args, args
    data = json.loads(args[args.index("--data") + 1])
    spec = bucket_root / data["bucket"] / data["name"]
    done = subprocess.run(
        ["gatebench", "run", str(spec), "--quick", "--results", {results!r}],
        capture_output=True, text=True, check=False,
    )
    sys.stderr.write(done.stderr)
    match = re.match(r"Run (\\S+): (\\w+) ", done.stdout)
    assert match, done.stdout + done.stderr
    print(json.dumps({{"run_id": match.group(1), "status": match.group(2), "scores": {{}}}}))
else:
    sys.exit("gcloud stand-in: unsupported command " + " ".join(args))
'''


def _substitute(text: str, subs: dict[str, str]) -> str:
    """Cloud Build's substitutions: ``$$`` is ``$``; ``${NAME}`` and ``$NAME`` are replaced."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(2)
        assert name in subs, f"Cloud Build would refuse the unknown substitution {name}"
        return subs[name]

    return re.sub(r"\$\$|\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)", one, text)


def _run_cloud_build(work: Path, tmp_path: Path) -> list[tuple[str, int, str, str]]:
    build = yaml.safe_load((CI / "cloudbuild.yaml").read_text(encoding="utf-8"))
    subs = {**build["substitutions"], "BUILD_ID": "b-1234", "PROJECT_ID": "my-project"}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    store = tmp_path / "store.sqlite"
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(
        GCLOUD_STANDIN.format(
            python=sys.executable,
            buckets=str(tmp_path / "buckets"),
            results=str(tmp_path / "cloud-results"),
        )
    )
    gcloud.chmod(0o755)
    ran = []
    for step in build["steps"]:
        assert step["entrypoint"] == "bash"
        assert step["args"][0] == "-c"
        script = _substitute(step["args"][1], subs)
        env = _env(tmp_path, GATEBENCH_STORE=str(store))
        env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
        for entry in step.get("env", []):
            name, _, value = _substitute(entry, subs).partition("=")
            if name == "GATEBENCH_STORE":
                assert value == "firestore://my-project"
                continue  # the local SQLite store instead (see the module docstring)
            env[name] = value
        lines = script.splitlines()
        if lines and lines[0].startswith("pip install"):
            assert (
                lines[0]
                == 'pip install -q "gatebench @ git+https://github.com/OWNER/gatebench@v0.1.0"'
            )
            script = "\n".join(lines[1:])
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        ran.append((step["id"], done.returncode, done.stdout, done.stderr))
        if done.returncode != 0:
            break  # Cloud Build stops at the first failed step
    return ran


def test_cloud_build_passes_within_the_thresholds(tmp_path: Path) -> None:
    work = _workspace(tmp_path, impossible=False)
    ran = _run_cloud_build(work, tmp_path)
    assert [(step, code) for step, code, _, _ in ran] == [
        ("upload", 0),
        ("run", 0),
        ("check", 0),
    ], ran
    assert (
        tmp_path / "buckets" / "gb-uploads-my-project" / "ci" / "b-1234" / "openapi.yaml"
    ).is_file()
    result = json.loads((work / "result.json").read_text())
    assert result["status"] == "done"
    assert re.search(
        rf"^Thresholds of run {result['run_id']}: (\d+) of \1 met, 2 of them the default gate: "
        r"no wrong answers \(docs/ci\.md\)\.$",
        ran[2][2],
        re.MULTILINE,
    ), ran[2]
    suite = ET.parse(work / "gatebench-junit.xml").getroot()
    # four thresholds and the default wrong-answers gate, for nginx
    assert (suite.get("tests"), suite.get("failures")) == ("5", "0")


def test_cloud_build_fails_on_a_missed_threshold(tmp_path: Path) -> None:
    work = _workspace(tmp_path, impossible=True)
    ran = _run_cloud_build(work, tmp_path)
    assert [(step, code) for step, code, _, _ in ran] == [
        ("upload", 0),
        ("run", 0),
        ("check", 1),
    ], ran
    stderr = ran[2][3]
    assert len(re.findall(r"^threshold failed: ", stderr, re.MULTILINE)) == 1, stderr
    assert IMPOSSIBLE_LINE.search(stderr), stderr
    suite = ET.parse(work / "gatebench-junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("6", "1")
