"""The Terraform CLI as the build steps use it, standing in for ``terraform`` (no provider can
be installed here), and no kinder than Terraform 1.x where the builds depend on it:

- global ``-chdir=DIR``; the configuration is DIR (or the working directory); TF_DATA_DIR
  defaults to ``.terraform`` there;
- ``init`` records the backend (``-backend-config`` bucket and prefix) under TF_DATA_DIR and
  writes the dependency lock file ``.terraform.lock.hcl`` *beside the configuration* (not
  under TF_DATA_DIR), one entry per provider the configuration's ``required_providers``
  name; an existing lock file is kept;
- ``apply``/``destroy`` without an initialised TF_DATA_DIR fail as Terraform does ("Backend
  initialization required"), and without a lock entry for each required provider fail with
  "Inconsistent dependency lock file";
- the state lives in the bucket (``PREFIX/default.tfstate``) and is locked while an
  operation runs (``PREFIX/default.tflock``, the gcs backend's lock object): a held lock
  makes apply/destroy wait ``-lock-timeout`` then fail with "Error acquiring the state lock"
  and its Lock Info; ``force-unlock -force ID`` removes it. A ``terraform`` killed while it
  holds the lock (a build stopped at its timeout) leaves the lock behind, as Terraform does.

- apply and destroy act as the build account: an instance its Compute Engine grant in infra/
  does not let it create, read or delete fails the command with Compute Engine's 403
  (tests/cloud/computeiam.py).

What apply and destroy do to machines is the ``machines`` object's business (tests/cloud/
localvms.py): ``apply(state_key, variables)`` and ``destroy(state_key)``.
"""

from __future__ import annotations

import datetime
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import hcl2

from gatebench.cloud import Storage

from .computeiam import terraform_refusal
from .localbuild import CALLER_PID_ENV

LOCK_FILE = ".terraform.lock.hcl"
PROVIDER_VERSION = "6.50.0"


class TerraformFailed(Exception):
    """The command's error output (Terraform's own wording); the command exits 1."""


class Machines(Protocol):
    def apply(self, key: str, values: dict[str, Any]) -> list[str]: ...

    def destroy(self, key: str) -> list[str]: ...


@dataclass
class LocalTerraform:
    machines: Machines
    storage: Storage
    calls: list[list[str]] = field(default_factory=list)
    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    """The clock of ``-lock-timeout`` waits (a test may make them pass at once)."""

    def __call__(self, args: list[str], env: dict[str, str], cwd: Path) -> str:
        self.calls.append(list(args))
        options = [a for a in args if a.startswith("-chdir=")]
        rest = [a for a in args if not a.startswith("-chdir=")]
        config = Path(options[-1].split("=", 1)[1]) if options else cwd
        if not config.is_absolute():
            config = cwd / config
        if not rest:
            raise TerraformFailed("Usage: terraform [global options] <subcommand> [args]")
        command, flags = rest[0], rest[1:]
        data_dir = Path(env.get("TF_DATA_DIR") or config / ".terraform")
        if not data_dir.is_absolute():
            data_dir = config / data_dir
        if command == "init":
            return self._init(config, data_dir, flags)
        backend = self._backend(data_dir)
        if command == "force-unlock":
            return self._force_unlock(backend, [f for f in flags if not f.startswith("-")])
        if command not in ("apply", "destroy"):
            raise TerraformFailed(f"terraform {command}: not something the builds run")
        self._check_lock_file(config)
        values = {}
        for flag in flags:
            if flag.startswith("-var-file="):
                values.update(json.loads(Path(flag.split("=", 1)[1]).read_text()))
        key = f"gs://{backend['bucket']}/{backend['prefix']}"
        lock_id = self._take_state_lock(backend, command, _lock_timeout(flags))
        if values.get("prefix"):  # as the build account: Compute Engine's grant (infra/)
            refused = terraform_refusal(values, command)
            if refused is not None:
                self._release(backend, lock_id)
                raise TerraformFailed(refused)
        try:
            if command == "apply":
                resources = self.machines.apply(key, values)
            else:
                resources = self.machines.destroy(key)
            self.storage.write(
                backend["bucket"],
                f"{backend['prefix']}/default.tfstate",
                json.dumps({"resources": resources}),
            )
        finally:
            if _alive(env.get(CALLER_PID_ENV)):
                self._release(backend, lock_id)
        verb = "Apply" if command == "apply" else "Destroy"
        return f"{verb} complete! Resources: {len(resources)}.\n"

    # -- init and the dependency lock file

    def _init(self, config: Path, data_dir: Path, flags: list[str]) -> str:
        backend = dict(f.split("=", 2)[1:] for f in flags if f.startswith("-backend-config="))
        if set(backend) != {"bucket", "prefix"}:
            raise TerraformFailed(f"init: the gcs backend needs bucket and prefix, got {backend}")
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "terraform.tfstate").write_text(json.dumps({"backend": backend}))
        lock = config / LOCK_FILE
        locked = _locked_providers(lock)
        required = required_providers(config)
        missing = [p for p in required if p not in locked]
        if missing:
            entries = "".join(
                f'provider "{p}" {{\n  version     = "{PROVIDER_VERSION}"\n}}\n\n' for p in missing
            )
            lock.write_text((lock.read_text() if lock.exists() else "") + entries)
        for provider in required:
            (data_dir / "providers" / provider).mkdir(parents=True, exist_ok=True)
        return "Terraform has been successfully initialized!\n"

    @staticmethod
    def _backend(data_dir: Path) -> dict[str, str]:
        state = data_dir / "terraform.tfstate"
        if not state.exists():
            raise TerraformFailed(
                'Error: Backend initialization required, please run "terraform init"'
            )
        return dict(json.loads(state.read_text())["backend"])

    @staticmethod
    def _check_lock_file(config: Path) -> None:
        locked = _locked_providers(config / LOCK_FILE)
        missing = [p for p in required_providers(config) if p not in locked]
        if missing:
            lines = "".join(
                f"  - provider {p}: required by this configuration but no version is selected\n"
                for p in missing
            )
            raise TerraformFailed(
                "Error: Inconsistent dependency lock file\n\n"
                "The following dependency selections recorded in the lock file are "
                "inconsistent with the current configuration:\n"
                f"{lines}\n"
                "To make the initial dependency selections that will initialize the "
                "dependency lock file, run:\n  terraform init"
            )

    # -- the state lock (the gcs backend's PREFIX/default.tflock object)

    def _take_state_lock(self, backend: dict[str, str], operation: str, timeout: float) -> str:
        name = f"{backend['prefix']}/default.tflock"
        deadline = self.now() + timeout
        while True:
            held = self.storage.read_optional(backend["bucket"], name)
            if held is None:
                break
            if self.now() >= deadline:
                info = json.loads(held)
                raise TerraformFailed(
                    "Error: Error acquiring the state lock\n\n"
                    "Error message: writing "
                    f'"gs://{backend["bucket"]}/{name}" failed: googleapi: Error 412: '
                    "At least one of the pre-conditions you specified did not hold., "
                    "conditionNotMet\n"
                    "Lock Info:\n"
                    f"  ID:        {info['ID']}\n"
                    f"  Path:      gs://{backend['bucket']}/{name}\n"
                    f"  Operation: {info['Operation']}\n"
                    f"  Who:       {info['Who']}\n"
                    f"  Version:   1.9.8\n"
                    f"  Created:   {info['Created']}\n"
                )
            self.sleep(min(1.0, max(0.0, deadline - self.now())))
        lock_id = str(uuid.uuid4())
        created = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f000 +0000 UTC")
        info = {
            "ID": lock_id,
            "Operation": f"Operation{operation.capitalize()}",
            "Who": "root@localbuild",
            "Created": created,
        }
        self.storage.write(backend["bucket"], name, json.dumps(info))
        return lock_id

    def _release(self, backend: dict[str, str], lock_id: str) -> None:
        name = f"{backend['prefix']}/default.tflock"
        held = self.storage.read_optional(backend["bucket"], name)
        if held is not None and json.loads(held)["ID"] == lock_id:
            _delete(self.storage, backend["bucket"], name)

    def _force_unlock(self, backend: dict[str, str], ids: list[str]) -> str:
        name = f"{backend['prefix']}/default.tflock"
        held = self.storage.read_optional(backend["bucket"], name)
        if len(ids) != 1 or held is None or json.loads(held)["ID"] != ids[0]:
            raise TerraformFailed(
                f"Error: Failed to unlock state: lock id {ids!r} does not match the lock"
            )
        _delete(self.storage, backend["bucket"], name)
        return "Terraform state has been successfully unlocked!\n"

    def hold_state_lock(self, bucket: str, prefix: str, created: datetime.datetime) -> str:
        """Leave a lock as an apply cut short by its build's timeout does (for tests)."""
        lock_id = str(uuid.uuid4())
        info = {
            "ID": lock_id,
            "Operation": "OperationTypeApply",
            "Who": "root@localbuild",
            "Created": created.strftime("%Y-%m-%d %H:%M:%S.%f000 +0000 UTC"),
        }
        self.storage.write(bucket, f"{prefix}/default.tflock", json.dumps(info))
        return lock_id


def _alive(pid: str | None) -> bool:
    """Whether the calling ``terraform`` process still runs (no pid: called in-process)."""
    if pid is None:
        return True
    try:
        state = Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _lock_timeout(flags: list[str]) -> float:
    for flag in flags:
        if flag.startswith("-lock-timeout="):
            text = flag.split("=", 1)[1]
            scale = {"s": 1, "m": 60}[text[-1]]
            return float(text[:-1]) * scale
    return 0.0


def required_providers(config: Path) -> list[str]:
    """Registry addresses of the providers a configuration (and its local modules) requires."""
    found: set[str] = set()
    for path in sorted(config.rglob("*.tf")):
        if ".terraform" in path.parts:
            continue
        with path.open() as handle:
            document = hcl2.load(handle)
        for block in document.get("terraform", []):
            for providers in block.get("required_providers", []):
                for name, spec in providers.items():
                    if name.startswith("__"):
                        continue
                    source = _unquote(spec["source"]) if isinstance(spec, dict) else name
                    if source.count("/") == 1:
                        source = f"registry.terraform.io/{source}"
                    found.add(source)
    return sorted(found)


def _locked_providers(lock: Path) -> set[str]:
    if not lock.exists():
        return set()
    with lock.open() as handle:
        document = hcl2.load(handle)
    return {
        _unquote(name)
        for block in document.get("provider", [])
        for name in block
        if not name.startswith("__")
    }


def _delete(storage: Storage, bucket: str, name: str) -> None:
    delete = getattr(storage, "delete", None)  # a test's in-memory objects
    if delete is not None:
        delete(bucket, name)
    else:
        storage.client.bucket(bucket).blob(name).delete()


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


__all__ = ["LocalTerraform", "TerraformFailed", "required_providers"]
