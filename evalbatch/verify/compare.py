"""How one host value is compared with the recomputed one, and a disagreement recorded (E-28).

Numbers agree within RFC 0244 §B's tolerance, `|host - recomputed| <= 1e-9 * max(1,
|recomputed|)`; booleans are never numbers; a field the document does not carry (`MISSING`) is
not an explicit null. `Checker` is what every family of checks writes through: it tallies each
host field compared and turns each disagreement into a `Finding` with the rule that decides it.

A finding shows a host value only as a number, boolean, null or id-like text; any other value
(text where a number belongs, prose, an object) is shown as its JSON type (`<string>`), never as
its text, so findings stay content-free.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from evalbatch.verify.audit_report import TOLERANCE, Finding

#: id-like text a finding may show (suite ids, versions, task ids, enum values)
SHOWABLE = re.compile(r"[A-Za-z0-9._~:/@-]{1,128}", re.ASCII)


class _Missing:
    """A field the document does not carry (as opposed to an explicit null)."""

    def __repr__(self) -> str:
        return "<absent>"


MISSING: Any = _Missing()
ABSENT_TEXT, PRESENT_TEXT = "<absent>", "<present>"
VALID_TEXT, INVALID_TEXT = "<valid>", "<invalid>"
_TAGS = frozenset({ABSENT_TEXT, PRESENT_TEXT, VALID_TEXT, INVALID_TEXT})

#: the rule that decides a recomputed value, and a content-free reason code (or None)
Cause = tuple[str, str | None]


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def same(host: Any, recomputed: Any, abs_tol: float = 0.0) -> bool:
    """Equal as the contract compares: booleans are not numbers; numbers within RFC 0244 §B
    (E-28)."""
    if recomputed is MISSING or host is MISSING:
        return host is recomputed
    if isinstance(recomputed, bool):
        return isinstance(host, bool) and host == recomputed
    if is_number(recomputed):
        if not is_number(host) or not math.isfinite(host):
            return False
        bound = max(TOLERANCE * max(1.0, abs(recomputed)), abs_tol)
        return abs(host - recomputed) <= bound
    return type(host) is type(recomputed) and host == recomputed


def shown(value: Any, text: bool = False) -> Any:
    """A value as a finding may show it: numbers, booleans and null as they are; text only for
    id and enum fields and only when id-like; anything else as its JSON type."""
    if value is MISSING:
        return ABSENT_TEXT
    if value is None or isinstance(value, bool):
        return value
    if is_number(value):
        return value if math.isfinite(value) else "<number>"
    if isinstance(value, str):
        showable = text and (value in _TAGS or SHOWABLE.fullmatch(value) is not None)
        return value if showable else "<string>"
    if isinstance(value, list):
        return "<array>"
    return "<object>"


def exact(value: float) -> Fraction:
    """The decimal a double was read from (its shortest text), as an exact rational (D-17)."""
    return Fraction(Decimal(repr(float(value))))


def field_of(payload: Any, name: str) -> Any:
    """A field of a host document, or `MISSING` when it has none (or is not an object)."""
    return payload.get(name, MISSING) if isinstance(payload, dict) else MISSING


class Checker:
    """Collects one run's comparisons: a tally per host field and a finding per disagreement."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.findings: list[Finding] = []
        self.compared: Counter[str] = Counter()
        #: host fields not compared because the log's writer never writes them (E-148), and
        #: errored samples left out of the aggregate as Inspect leaves them (E-147)
        self.not_written: Counter[str] = Counter()
        self.errored_left_out = 0

    def check(
        self,
        field_name: str,
        host: Any,
        recomputed: Any,
        cause: Cause | Callable[[], Cause],
        *,
        task: str | None = None,
        trial: int | None = None,
        sequence: int | None = None,
        abs_tol: float = 0.0,
        also_accept: Iterable[Any] = (),
        text: bool = False,
    ) -> bool:
        """Compare one host value; record a finding (with its rule) when it disagrees."""
        self.compared[field_name] += 1
        if same(host, recomputed, abs_tol) or any(same(host, ok) for ok in also_accept):
            return True
        rule, reason = cause() if callable(cause) else cause
        self.findings.append(
            Finding(
                run_id=self.run_id,
                field=field_name,
                host=shown(host, text),
                recomputed=shown(recomputed, text=True),
                rule=rule,
                task_id=None if task is None else shown(task, text=True),
                trial_index=trial,
                sequence=sequence,
                reason=reason,
            )
        )
        return False

    def present(
        self, field_name: str, host_has: bool, recomputed_has: bool, rule: str, **where: Any
    ) -> bool:
        """Whether an optional block is present on both sides or on neither."""
        return self.check(
            field_name,
            PRESENT_TEXT if host_has else ABSENT_TEXT,
            PRESENT_TEXT if recomputed_has else ABSENT_TEXT,
            (rule, None),
            text=True,
            **where,
        )
