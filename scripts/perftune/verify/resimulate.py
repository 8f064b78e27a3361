"""Re-measurement by the verifier on a deterministic backend (pypto-sim): identical time or FAIL.

A simulator gives the same cycles for the same code and inputs, so the verifier does not have to
trust the final round at all: it launches every manifest case once more on the delivered sources
(one process per case, raw files in a temporary folder outside the operator directory, never
archived) and requires the time of every case to equal the final round's recorded samples exactly.
Other backends are noisy and are not re-measured here (P4 recomputes their numbers from raw files).
Returns ``(category, message)`` pairs: ``performance_evidence_invalid`` for a differing time,
``env_error`` when the backend cannot run on this machine.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..contract import protocol
from ..errors import CheckFailed, EnvError, PerftuneError
from ..measure import collect, evidence
from ..measure.backends import repeat_dir_name


def problems(op_dir: Path, final: evidence.RoundEvidence) -> list[tuple[str, str]]:
    if final.collection["backend"] not in protocol.DETERMINISTIC_BACKENDS:
        return []
    try:
        ctx = collect.prepare(op_dir, collect.Overrides())
    except EnvError as exc:
        return [("env_error", f"cannot re-measure on {final.collection['backend']}: {exc.line()}")]
    out = []
    with tempfile.TemporaryDirectory(prefix="stage5_resimulate_") as scratch:
        for case in ctx.manifest.cases:
            recorded = sorted(set(final.cases[case.id].samples_us)) if case.id in final.cases else []
            try:
                again = ctx.backend.run_repeat(ctx.spec, case, Path(scratch) / case.id / repeat_dir_name(1))
            except (CheckFailed, PerftuneError) as exc:
                out.append(("performance_evidence_invalid", f"re-measurement of {case.id} failed: {exc.line()}"))
                continue
            if recorded != [again.duration_us]:
                out.append(("performance_evidence_invalid", f"re-measured {case.id} on the delivered code: "
                            f"{again.duration_us} us, the final round recorded {recorded} us (not identical)"))
    return out
