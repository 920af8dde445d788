"""What a tester VM watches besides the load engine, for a plan's deployment on the cloud
path (docs/cloud.md, "TLS and replicas"): the local path's ``gatebench.local._deployed``, with the
machines apart.

- **TLS handshakes**: every tester counts the ServerHellos its targets answered it, new and
  resumed, from the packets arriving on its VM (gatebench.local._wire with ``interface=None``; the
  container needs NET_RAW, which the fleet gives a TLS plan's testers), per phase, over the
  phase's window as the engine reported it. The score step adds the testers' counts.
- **The fault** (tester 0 only): at the start of each phase that carries it (the render step
  lists them with the offset of the kill: gatebench.core.fault.fault_offsets), a timer for the kill
  time; the kill and the restart when the phase ends are requests to the backend VM's control
  port (gatebench.vm._backend), which answers when it killed the replica and,
  on restart, the connection attempts the gateway made to it meanwhile.

What it saw goes into the tester's ``load-done`` marker (``deployment``), from which the score
step annotates each measurement (gatebench.cloud._ingest); what it could not see is said
there too, never guessed.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gatebench.local._watching import PhaseTimers, PhaseWatch
from gatebench.local._wire import LoopbackObserver, WireUnavailable, open_observer
from gatebench.run.ports import EngineEvent, PhaseResult

CONTROL_TIMEOUT_S = 90.0
"""A restart waits for the replica to answer (up to 60 s on the backend VM)."""


def _post(url: str) -> dict[str, Any]:
    request = urllib.request.Request(url, data=b"", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=CONTROL_TIMEOUT_S) as answer:
            value = json.loads(answer.read() or b"{}")
    except (OSError, ValueError, urllib.error.HTTPError) as exc:
        return {"error": f"{url}: {exc}"}
    return value if isinstance(value, dict) else {"error": f"{url}: not a JSON object"}


@dataclass
class RemoteFault:
    """The plan's fault driven from tester 0 through the backend VM's control port."""

    control: str
    replica: int
    offsets: dict[int, float]
    kills: dict[int, dict[str, Any]] = field(default_factory=dict)
    _timers: PhaseTimers = field(default_factory=PhaseTimers)

    def _url(self, action: str) -> str:
        return f"{self.control.rstrip('/')}/replicas/{self.replica}/{action}"

    def on_start(self, index: int, at_ms: float) -> None:
        offset = self.offsets.get(index)
        if offset is None:
            return
        self.kills[index] = {}
        delay = max(0.0, (at_ms / 1000.0 if at_ms else time.time()) + offset - time.time())
        self._timers.arm(index, delay, lambda: self._kill(index))

    def _kill(self, index: int) -> None:
        with self._timers.lock:
            if not self._timers.armed(index):
                return  # the phase ended first
        answer = _post(self._url("kill"))
        with self._timers.lock:
            if "error" in answer:
                self.kills[index]["error"] = f"the replica was not killed: {answer['error']}"
            else:
                self.kills[index]["at"] = float(answer["at"])

    def on_end(self, index: int) -> None:
        timer = self._timers.disarm(index)
        if timer is None:
            return
        timer.join(CONTROL_TIMEOUT_S)  # a kill under way ends first
        kill = self.kills[index]
        if "at" not in kill:
            kill.setdefault("error", "the phase ended before the kill time")
            return
        answer = _post(self._url("start"))
        if "error" in answer:
            kill["error"] = str(answer["error"])
            return
        kill["restarted_at"] = answer.get("restarted_at")
        kill["attempts"] = answer.get("attempts")
        if answer.get("note"):
            kill["note"] = answer["note"]

    def close(self) -> None:
        self._timers.close()


@dataclass
class TesterWatch(PhaseWatch):
    """The engine's listener on a tester VM: handshakes per phase, and tester 0's fault."""

    document: dict[str, Any]
    tester: int = 0
    observer: LoopbackObserver | None = None
    fault: RemoteFault | None = None
    notes: list[str] = field(default_factory=list)
    started_ms: dict[int, float] = field(default_factory=dict)
    handshakes: dict[int, list[int]] = field(default_factory=dict)

    def _ports(self) -> dict[int, int]:
        """Phase index → the TLS port its target answers on."""
        out = {}
        for phase in self.document.get("phases", []):
            url = urlsplit(phase["request"]["base_url"])
            if url.scheme == "https":
                out[int(phase["index"])] = url.port or 443
        return out

    def start(self) -> None:
        ports = self._ports()
        if self.document.get("tls") and ports:
            try:
                self.observer = open_observer(sorted(set(ports.values())), (), interface=None)
            except WireUnavailable as exc:
                self.notes.append(f"tester {self.tester}: TLS handshakes not observed: {exc}")
        fault = self.document.get("fault")
        if isinstance(fault, dict) and self.tester == 0:
            self.fault = RemoteFault(
                str(fault["control"]),
                int(fault["replica"]),
                {int(k): float(v) for k, v in (fault.get("phases") or {}).items()},
            )

    # -- the engine's listener

    def on_event(self, event: EngineEvent) -> None:
        self.follow(event.kind, event.phase, event.at_ms)

    def on_phase(self, result: PhaseResult) -> None:
        port = self._ports().get(result.phase)
        seen = None if port is None else self.phase_handshakes(result, port)
        if seen is not None:
            self.handshakes[result.phase] = list(seen)

    def tick(self) -> None:
        pass

    # -- what the load-done marker carries

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.document.get("tls"):
            out["handshakes"] = (
                {str(i): v for i, v in sorted(self.handshakes.items())}
                if self.observer is not None
                else None
            )
        if self.fault is not None:
            out["kills"] = {str(i): k for i, k in sorted(self.fault.kills.items())}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


__all__ = ["RemoteFault", "TesterWatch"]
