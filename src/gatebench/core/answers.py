"""Right answers under load: how an engine words a wrong answer, and how the core reads it back.

The Go backend signs every answer to a request that names itself (``backend/sign.go``: the
header ``X-Gatebench-Answer`` carries the request's identity, the status, how many times the
backend received it, a digest of what it received and the length and digest of the body it
sent). During a measured phase the engines check every answer against the request it answers
(docs/trust.md, "Right answers under load"); an answer that fails is a **wrong answer**: not OK,
and counted apart from the errors and timeouts (``PhaseSample.wrong``), with its kind and the
first few kept as evidence.

Each engine reports a wrong answer as a KO whose message is::

    wrong answer (KIND): request ID METHOD TARGET; expected ...; got ...

so the one reader of each engine's records (``core.simlog`` for Gatling, ``core.loadlog`` for
the load generator) needs no field of its own, and a cloud tester's log carries them as the
local one does. The kinds, in the order an engine checks them:

- ``unsigned``: a success status without the backend's signature (the gateway answered itself,
  or dropped the header);
- ``crossed``: the signature names another request (an answer handed to the wrong request);
- ``repeated``: the backend received this request more than once (a retried request);
- ``status``: the status read is not the one the backend sent;
- ``truncated``: the body read is not the one the backend sent (its length or its digest);
- ``received``: the backend did not receive what was sent (method, request target, the plan's
  headers, the body's length or digest).
"""

from __future__ import annotations

import re

WRONG_ANSWER = "wrong answer"
"""How every engine's message for a wrong answer begins."""
KINDS = ("unsigned", "crossed", "repeated", "status", "truncated", "received")
"""The kinds of wrong answer, in the order the engines check them."""
EVIDENCE_KEPT = 5
"""How many wrong answers a phase keeps word for word (request, expected, got)."""
WRONG_ANSWERS_FLAG = "wrong-answers"
"""The flag of a measurement with at least one wrong answer (docs/engine.md, flags)."""
ANSWER_HEADER = "X-Gatebench-Answer"
REQUEST_HEADER = "X-Gatebench-Request"
SIGNED_HEADERS = "X-Gatebench-Signed-Headers"
"""The backend's signature, the request's identity, and the plan's headers the backend signs
(``backend/sign.go``)."""

_KIND = re.compile(r"wrong answer \(([a-z-]+)\)")


def wrong_answer_kind(message: str) -> str | None:
    """The kind of wrong answer a KO message reports, or None when it reports an error. A
    Gatling check's failure wraps the engine's words (``....is(), but actually found wrong
    answer (crossed): ...``), so the words are looked for anywhere in the message."""
    if WRONG_ANSWER not in message:
        return None
    found = _KIND.search(message)
    if found is None or found.group(1) not in KINDS:
        return "other"
    return found.group(1)


def evidence(message: str) -> str:
    """The engine's own words of a wrong answer, without what a check framework put around
    them."""
    at = message.find(WRONG_ANSWER)
    return message[at:] if at >= 0 else message


__all__ = [
    "ANSWER_HEADER",
    "EVIDENCE_KEPT",
    "KINDS",
    "REQUEST_HEADER",
    "SIGNED_HEADERS",
    "WRONG_ANSWER",
    "WRONG_ANSWERS_FLAG",
    "evidence",
    "wrong_answer_kind",
]
