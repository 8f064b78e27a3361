"""The machine-checkable Stage 4 gates on ``test_<op>.py`` (DESIGN §8; docs/stage4-gates.md).

Every gate reads source with ``ast``; nothing of the operator is imported here. The one dynamic
gate, delivery import safety, copies ``test_<op>.py`` + ``<op>_golden.py`` + ``<op>_golden_cpu.py``
into an empty temp dir and imports the test module in a subprocess (:mod:`.import_probe`);
its outcome enters the pure core (:func:`evaluate`) as an :class:`ImportProbe`.

Decisions where DESIGN is silent:
- A *pypto operator* imports ``pypto``/``pypto_pro`` or decorates with ``pl.*jit``; anything else
  is a *cpu backend operator*: the Pro-import and ``@pl.jit`` gates are ``not_applicable`` and
  its kernel is the module-level function ``<op>_kernel`` (a pypto kernel is the ``@pl.jit`` one).
- Calls are followed through module-level functions. A kernel call inside ``for``/``while``, a
  comprehension, a lambda or a nested def, or a kernel referenced without being called (passed to
  ``map``, ``partial``...), cannot be proven to launch once and fails ``single_launch``.
- A *PyPI pypto frontend operator* (pypto-sim backend; PyPTO-Pro is not on PyPI) imports ``pypto``
  and no ``pypto_pro``, and decorates with ``pypto.frontend.jit``: the Pro-import gate is
  ``not_applicable``, ``single_jit`` counts its ``pypto.frontend.jit`` sites (exactly one), and its
  kernel is the module-level launcher ``<op>_kernel`` that builds and calls the jit function.
- A gate that cannot be judged because another gate failed is ``not_applicable`` and names it.
- ``blocked`` is reserved for the environment (category ``env_error``): the delivery import hit a
  ``ModuleNotFoundError`` for pypto_pro, torch_npu or torch. Exit 1 if any gate FAILs, else 3 if
  any is blocked, else 0.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import fsio
from ..errors import REQUIRED_PACKAGES, ContractError
from .import_probe import ImportProbe, probe_import
from .pysource import Evidence, PySource, params
from .results import BLOCKED, FAIL, NA, PASS, GateResult, Stage4Result, render_text

__all__ = ["GATES", "OperatorSources", "SourceFile", "Stage4Result", "evaluate", "render_text", "run_gates"]
CPU_REASON = "cpu backend operator (no pypto_pro import)"
FRONTEND_REASON = "PyPI pypto frontend operator (pypto-sim backend): no PyPTO-Pro import to check"
PRO_MODULE = "pypto_pro.language"
PRO_JIT = PRO_MODULE + ".jit"
FRONTEND_JIT = "pypto.frontend.jit"
ENV_MODULES = ("pypto_pro", "pypto", "torch_npu", "torch") + REQUIRED_PACKAGES  # missing: env_error
FORBIDDEN_PRECISION = ("assert_close", "atol_override")
MIN_TESTS = 4
DEFAULT_IMPORT_TIMEOUT_S = 120.0
DEVICE_LITERAL = re.compile(r"\b(npu|cuda|xpu):\d+\b")
DEVICE_ENV_NAMES = ("TILE_FWK_DEVICE_ID", "ASCEND_RT_VISIBLE_DEVICES")


@dataclass(frozen=True)
class GateSpec:
    id: str
    name: str
    category: str           # the category reported when the gate FAILs
    upstream: str           # Stage 4 gate number(s) G1-G15 (= upstream #1-#15) and lint rule ids


GATES: tuple[GateSpec, ...] = (
    GateSpec("files", "deliverable files present and parseable", "missing_file", "G2; PL04 PL05 PL09"),
    GateSpec("pro_import", "Pro-only imports", "import_violation", "G1, G5 rule 4; PL01"),
    GateSpec("single_jit", "exactly one @pl.jit kernel", "cheating", "G5 rule 1; PL02"),
    GateSpec("wrapper_exists", "<op>_wrapper is defined", "signature_mismatch", "G12"),
    GateSpec("wrapper_signature", "wrapper parameters match <op>_golden_cpu", "signature_mismatch", "G12"),
    GateSpec("single_launch", "wrapper launches the kernel once, outside any loop", "cheating",
             "G5 rules 2-3, G12"),
    GateSpec("tests_call_wrapper", "tests call the wrapper, never the kernel", "signature_mismatch", "G12"),
    GateSpec("test_count", f"at least {MIN_TESTS} test_ functions", "incomplete_structure", "G10"),
    GateSpec("precision_standard", "_assert_precision in every test; no assert_close/atol_override",
             "incomplete_structure", "G4; PL15"),
    GateSpec("golden_cpu_import", "test imports <op>_golden_cpu", "incomplete_structure", "G4; PL16"),
    GateSpec("device", "device from <op>_golden._get_device(), no hard-coded ids", "incomplete_structure", "G3"),
    GateSpec("golden_purity", "goldens import no pypto, pypto_pro or test_<op>", "golden_failure", "PL11"),
    GateSpec("delivery_import", "delivery import safety", "delivery_import_unsafe", "G13"),
)
_SPECS = {spec.id: spec for spec in GATES}

# The Stage 4 gates G1-G15 (upstream #1-#15) not decided by a gate above: the verifier agent runs the
# dynamic ones and judges the others (its prompt names exactly these; tests/verify/test_check_ids.py).
AGENT_GATES: tuple[tuple[str, str, str], ...] = (
    ("G5", "judgement", "no host-side core maths, no narrowed dims/dtypes, test data per DESIGN §8"),
    ("G6", "judgement", "PC-1"),
    ("G7", "judgement", "PC-2 and DESIGN §1"),
    ("G8", "dynamic", "the test exits 0"),
    ("G9", "dynamic", "PASS, matched_ratio=, max_abs_error=, no traceback"),
    ("G10", "judgement", "tests match DESIGN §8"),
    ("G11", "judgement", "dynamic-dimension declarations match the docs"),
    ("G14", "judgement", "KB_USAGE.json matches real code, no copied validated claims"),
    ("G15", "judgement", "the wrapper only checks, sizes, allocates declared outputs and launches once"),
)


@dataclass(frozen=True)
class SourceFile:
    name: str
    text: str | None            # None: missing or unreadable (then ``problem`` says why)
    problem: str | None = None


@dataclass(frozen=True)
class OperatorSources:
    op: str
    test: SourceFile
    golden: SourceFile
    golden_cpu: SourceFile


# --- the gates (pure) -----------------------------------------------------------------------

@dataclass
class _Context:
    op: str
    files: dict[str, PySource | Evidence]     # role -> parsed source, or the evidence of its problem
    probe: ImportProbe
    test: PySource | None = None
    pypto: bool = False
    frontend: bool = False
    kernels: set[str] = field(default_factory=set)

    @property
    def wrapper(self) -> str | None:
        name = f"{self.op}_wrapper"
        return name if self.test and name in self.test.funcs else None


def _gate(gate_id: str, status: str, reason: str, evidence=(), category: str | None = None) -> GateResult:
    spec = _SPECS[gate_id]
    return GateResult(gate_id, spec.name, status, reason, tuple(evidence), category, spec.upstream)


def _result(gate_id: str, evidence: list[Evidence], ok_reason: str, bad_reason: str,
            category: str | None = None) -> GateResult:
    if evidence:
        return _gate(gate_id, FAIL, bad_reason, tuple(evidence), category or _SPECS[gate_id].category)
    return _gate(gate_id, PASS, ok_reason)


def _na(gate_id: str, reason: str) -> GateResult:
    return _gate(gate_id, NA, reason)


def _jit_sites(p: PySource) -> list[tuple[str, int]]:
    """(kernel name, line) of every ``@pl.jit`` (``@pypto.frontend.jit`` for a frontend operator) def
    and every ``name = pl.jit(fn)`` assignment."""
    out = []
    jits = (PRO_JIT, FRONTEND_JIT) if _is_frontend(p) else (PRO_JIT,)
    for node in ast.walk(p.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                if p.resolve(deco.func if isinstance(deco, ast.Call) else deco) in jits:
                    out.append((node.name, deco.lineno))
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
              and p.resolve(node.value.func) in jits):
            out += [(t.id, node.lineno) for t in node.targets if isinstance(t, ast.Name)]
    return sorted(out, key=lambda site: site[1])


def _is_frontend(p: PySource) -> bool:
    roots = {m.split(".")[0] for _, m in p.imports()}
    decorators = (d.func if isinstance(d, ast.Call) else d for n in ast.walk(p.tree)
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for d in n.decorator_list)
    return "pypto" in roots and "pypto_pro" not in roots and any(p.resolve(d) == FRONTEND_JIT for d in decorators)


def _is_pypto(p: PySource) -> bool:
    if any(m.split(".")[0] in ("pypto", "pypto_pro") for _, m in p.imports()):
        return True
    decorators = (d.func if isinstance(d, ast.Call) else d for n in ast.walk(p.tree)
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for d in n.decorator_list)
    return any((ast.unparse(d).startswith(("pl.", "pypto")) and ast.unparse(d).endswith("jit")) for d in decorators)


def _gate_files(ctx: _Context) -> GateResult:
    problems = [v for v in ctx.files.values() if isinstance(v, Evidence)]
    missing = any(e.text == "missing" for e in problems)
    return _result("files", problems, "test, golden and golden_cpu files exist and parse",
                   "a deliverable file is missing or does not parse",
                   None if missing or not problems else "runtime_failure")


def _gate_pro_import(ctx: _Context) -> GateResult:
    p = ctx.test
    if not ctx.pypto or ctx.frontend:
        return _na("pro_import", FRONTEND_REASON if ctx.frontend else CPU_REASON)
    bad = [p.ev(line) for line, m in p.imports() if m.split(".")[0] == "pypto"]
    if p.aliases.get("pl") != PRO_MODULE:
        bad.append(p.ev(None, "no `import pypto_pro.language as pl`"))
    return _result("pro_import", bad, "imports pypto_pro.language as pl and no non-Pro pypto",
                   "non-Pro pypto import or missing `import pypto_pro.language as pl`")


def _jit_ev(p: PySource, name: str, line: int) -> Evidence:
    return p.ev(line, f"{p.ev(line).text} -> {name}")


def _gate_single_jit(ctx: _Context) -> GateResult:
    if not ctx.pypto:
        return _na("single_jit", CPU_REASON)
    sites = _jit_sites(ctx.test)
    if len(sites) == 1:
        return _gate("single_jit", PASS, f"one @pl.jit kernel: {sites[0][0]}", [_jit_ev(ctx.test, *sites[0])])
    evidence = [_jit_ev(ctx.test, *site) for site in sites] or [ctx.test.ev(None, "no @pl.jit kernel")]
    return _result("single_jit", evidence, "", f"{len(sites)} @pl.jit kernels (exactly one is allowed)")


def _gate_wrapper_exists(ctx: _Context) -> GateResult:
    name = f"{ctx.op}_wrapper"
    if ctx.wrapper:
        return _gate("wrapper_exists", PASS, f"{name} defined", (ctx.test.ev(ctx.test.funcs[name].lineno),))
    return _result("wrapper_exists", [ctx.test.ev(None, f"no module-level def {name}")], "",
                   f"the entry function {name} is missing")


def _gate_wrapper_signature(ctx: _Context) -> GateResult:
    cpu, golden_fn = ctx.files.get("golden_cpu"), f"{ctx.op}_golden_cpu"
    if not ctx.wrapper:
        return _na("wrapper_signature", f"no {ctx.op}_wrapper (see gate wrapper_exists)")
    if not isinstance(cpu, PySource):
        return _na("wrapper_signature", f"{golden_fn}.py missing or unparseable (see gate files)")
    wrapper = ctx.test.funcs[ctx.wrapper]
    if golden_fn not in cpu.funcs:
        return _result("wrapper_signature", [cpu.ev(None, f"no def {golden_fn}")], "",
                       f"cannot check the wrapper signature: {golden_fn}() is not defined")
    names, not_none = params(wrapper)
    expected, _ = params(cpu.funcs[golden_fn])
    bad = []
    if names != expected:
        bad.append(ctx.test.ev(wrapper.lineno, f"parameters {names} != {golden_fn} parameters {expected}"))
    if not_none:
        bad.append(ctx.test.ev(wrapper.lineno, f"optional parameters must default to None: {not_none}"))
    return _result("wrapper_signature", bad, f"parameters {names} match {golden_fn}",
                   "the wrapper signature differs from the golden contract")


def _gate_single_launch(ctx: _Context) -> GateResult:
    if not ctx.wrapper:
        return _na("single_launch", f"no {ctx.op}_wrapper (see gate wrapper_exists)")
    if not ctx.kernels:
        if ctx.pypto:
            return _na("single_launch", "no @pl.jit kernel (see gate single_jit)")
        return _result("single_launch", [ctx.test.ev(None, f"no def {ctx.op}_kernel")], "",
                       f"cpu backend operator without its kernel {ctx.op}_kernel", "signature_mismatch")
    hits = [r for r in ctx.test.reach(ctx.wrapper, ctx.kernels) if r.name in ctx.kernels]
    launches = [r for r in hits if r.called and not r.repeated]
    bad = [ctx.test.ev(r.line) for r in hits if r.repeated or not r.called]
    if len(launches) != 1:
        bad = [ctx.test.ev(r.line) for r in hits] or [ctx.test.ev(ctx.test.funcs[ctx.wrapper].lineno,
                                                                  "the wrapper never calls the kernel")]
    why = (f"{len(launches)} direct launch(es) from {ctx.wrapper} and {len(hits) - len(launches)} inside a "
           "loop/comprehension/lambda or indirect; exactly one direct launch is allowed")
    return _result("single_launch", sorted(set(bad), key=lambda e: e.line or 0),
                   f"{ctx.wrapper} launches {launches[0].name if launches else ''} exactly once", why)


def _gate_tests_call_wrapper(ctx: _Context) -> GateResult:
    tests = ctx.test.tests()
    if not ctx.wrapper:
        return _na("tests_call_wrapper", f"no {ctx.op}_wrapper (see gate wrapper_exists)")
    if not tests:
        return _na("tests_call_wrapper", "no test_ functions (see gate test_count)")
    bad = []
    for test in tests:
        refs = ctx.test.reach(test, ctx.kernels | {ctx.wrapper})
        bad += [ctx.test.ev(r.line) for r in refs if r.name in ctx.kernels]
        if not any(r.name == ctx.wrapper for r in refs):
            bad.append(ctx.test.ev(ctx.test.funcs[test].lineno, f"{test} never reaches {ctx.wrapper}"))
    return _result("tests_call_wrapper", sorted(set(bad), key=lambda e: e.line or 0),
                   f"all {len(tests)} tests reach {ctx.wrapper} and never the kernel",
                   f"a test bypasses {ctx.wrapper} (calls the kernel directly or never calls the wrapper)")


def _gate_test_count(ctx: _Context) -> GateResult:
    tests = ctx.test.tests()
    evidence = [ctx.test.ev(ctx.test.funcs[t].lineno) for t in tests]
    if len(tests) >= MIN_TESTS:
        return _gate("test_count", PASS, f"{len(tests)} test_ functions", tuple(evidence))
    return _result("test_count", evidence or [ctx.test.ev(None, "no def test_*")], "",
                   f"{len(tests)} test_ functions, at least {MIN_TESTS} required")


def _gate_precision(ctx: _Context) -> GateResult:
    p = ctx.test
    bad = [p.ev(line) for name, line in p.identifiers() if name in FORBIDDEN_PRECISION]
    for test in p.tests():
        if not any(r.name == "_assert_precision" and r.called for r in p.reach(test, ctx.kernels)):
            bad.append(p.ev(p.funcs[test].lineno, f"{test} never calls _assert_precision"))
    if not p.tests() and not any(n == "_assert_precision" for n, _ in p.identifiers()):
        bad.append(p.ev(None, "_assert_precision is never used"))
    return _result("precision_standard", sorted(set(bad), key=lambda e: e.line or 0),
                   "every test checks precision with _assert_precision",
                   "precision not checked with _assert_precision, or assert_close/atol_override used")


def _gate_golden_cpu_import(ctx: _Context) -> GateResult:
    module = f"{ctx.op}_golden_cpu"
    found = [line for line, m in ctx.test.imports() if m == module]
    if found:
        return _gate("golden_cpu_import", PASS, f"imports {module}", (ctx.test.ev(found[0]),))
    return _result("golden_cpu_import", [ctx.test.ev(None, f"no import of {module}")], "",
                   f"the test does not compare against {module}")


def _hard_coded_device(p: PySource) -> list[Evidence]:
    out = []
    for node in ast.walk(p.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                DEVICE_LITERAL.search(node.value) or node.value in DEVICE_ENV_NAMES):
            out.append(p.ev(node.lineno))
        elif isinstance(node, ast.keyword) and node.arg in ("device", "device_id") and isinstance(
                node.value, ast.Constant) and type(node.value.value) is int:
            out.append(p.ev(node.value.lineno))
        elif isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and type(a.value) is int
                                                for a in node.args):
            attr = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if p.resolve(node.func) == "torch.device" or attr in ("set_device", "npu", "cuda"):
                out.append(p.ev(node.lineno))
    return out


def _gate_device(ctx: _Context) -> GateResult:
    p, getter = ctx.test, f"{ctx.op}_golden._get_device"
    bad = _hard_coded_device(p)
    if not any(isinstance(n, ast.Call) and p.resolve(n.func) == getter for n in ast.walk(p.tree)):
        bad.append(p.ev(None, f"no call of _get_device() imported from {ctx.op}_golden"))
    return _result("device", sorted(set(bad), key=lambda e: e.line or 0),
                   f"device comes from {getter}()", "the test does not take its device from the golden")


def _gate_golden_purity(ctx: _Context) -> GateResult:
    goldens = [v for k, v in ctx.files.items() if k != "test" and isinstance(v, PySource)]
    if not goldens:
        return _na("golden_purity", "no parseable golden file (see gate files)")
    banned = {"pypto", "pypto_pro", f"test_{ctx.op}"}
    bad = [g.ev(line) for g in goldens for line, m in g.imports() if m.split(".")[0] in banned]
    return _result("golden_purity", bad, "goldens import no pypto, pypto_pro or the implementation",
                   "a golden imports pypto/pypto_pro or the implementation under test")


def _gate_delivery_import(ctx: _Context) -> GateResult:
    probe, module = ctx.probe, f"test_{ctx.op}"
    if probe.ok:
        return _gate("delivery_import", PASS, f"{module} imports from a temp dir holding only the delivery")
    root = (probe.module or "").split(".")[0]
    if probe.error_type == "ModuleNotFoundError" and root in ENV_MODULES:
        return _gate("delivery_import", BLOCKED, f"environment lacks {root}: {probe.message}",
                          probe.frames, "env_error")
    why = (f"import did not finish: {probe.message}" if probe.timed_out
           else f"{probe.error_type}: {probe.message}")
    return _result("delivery_import", list(probe.frames) or [Evidence(f"{module}.py", None, why)], "",
                   f"importing the delivery alone fails ({why})")


_AST_GATES = (_gate_pro_import, _gate_single_jit, _gate_wrapper_exists, _gate_wrapper_signature,
              _gate_single_launch, _gate_tests_call_wrapper, _gate_test_count, _gate_precision,
              _gate_golden_cpu_import, _gate_device)


def _parse_file(src: SourceFile) -> PySource | Evidence:
    if src.text is None:
        return Evidence(src.name, None, src.problem or "missing")
    try:
        return PySource(src.name, src.text)
    except (SyntaxError, ValueError) as exc:
        return Evidence(src.name, getattr(exc, "lineno", None), f"does not parse: {getattr(exc, 'msg', exc)}")


def evaluate(sources: OperatorSources, probe: ImportProbe, inputs: dict | None = None) -> Stage4Result:
    """All gates on already-read sources and an import probe outcome (pure)."""
    files = {role: _parse_file(getattr(sources, role)) for role in ("test", "golden", "golden_cpu")}
    ctx = _Context(sources.op, files, probe)
    gates = [_gate_files(ctx)]
    if isinstance(files["test"], PySource):
        ctx.test = files["test"]
        ctx.pypto, ctx.frontend = _is_pypto(ctx.test), _is_frontend(ctx.test)
        if ctx.pypto and not ctx.frontend:
            ctx.kernels = {name for name, _ in _jit_sites(ctx.test)}
        elif f"{sources.op}_kernel" in ctx.test.funcs:
            ctx.kernels = {f"{sources.op}_kernel"}
        gates += [gate(ctx) for gate in _AST_GATES]
    else:
        gates += [_na(g.id, f"{sources.test.name} cannot be read (see gate files)")
                  for g in GATES if g.id not in ("files", "golden_purity", "delivery_import")]
    gates += [_gate_golden_purity(ctx), _gate_delivery_import(ctx)]
    order = {spec.id: i for i, spec in enumerate(GATES)}
    return Stage4Result(sources.op, tuple(sorted(gates, key=lambda g: order[g.id])), dict(inputs or {}))


# --- I/O edge: reading the delivery and the import probe -------------------------------------

def delivery_names(op: str) -> tuple[str, str, str]:
    """The delivered files: test, golden, golden_cpu (in that order)."""
    return f"test_{op}.py", f"{op}_golden.py", f"{op}_golden_cpu.py"


def _read_source(path: Path) -> SourceFile:
    if not path.is_file():
        return SourceFile(path.name, None, "missing")
    try:
        return SourceFile(path.name, path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        return SourceFile(path.name, None, f"not UTF-8 (byte {exc.start})")
    except OSError as exc:
        return SourceFile(path.name, None, f"cannot be read: {exc.strerror}")


def read_delivery(op_dir: str | Path, op: str | None = None) -> tuple[Path, tuple[str, ...], OperatorSources]:
    """(folder, delivery file names, their sources) of ``op_dir``; ``op`` defaults to the directory
    name. A missing directory or test file is a contract error."""
    root = Path(op_dir)
    if not root.is_dir():
        raise ContractError(root, "--op-dir", "operator directory not found", "pass the custom/<op> directory")
    op = op or root.resolve().name
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", op):
        raise ContractError(root, "--op", f"operator name {op!r} is not a Python identifier",
                            "pass --op NAME matching test_<NAME>.py")
    names = delivery_names(op)
    if not (root / names[0]).is_file():
        raise ContractError(root / names[0], "-", "Stage 4 test file is missing",
                            "deliver test_<op>.py or pass --op with the right operator name")
    return root, tuple(names), OperatorSources(op, *(_read_source(root / name) for name in names))


def finish(root: Path, names: tuple[str, ...], sources: OperatorSources, probe: ImportProbe) -> Stage4Result:
    """Every Stage 4 gate of a read delivery and its import probe."""
    return evaluate(sources, probe, {name: fsio.file_record(root / name, root) for name in names
                                     if (root / name).is_file()})


def probe_delivery(root: Path, names: tuple[str, ...], sources: OperatorSources, *,
                   timeout_s: float = DEFAULT_IMPORT_TIMEOUT_S) -> ImportProbe:
    """The import probe of a read delivery (a process of its own)."""
    return probe_import(root, names, f"test_{sources.op}", timeout_s=timeout_s)


def run_gates(op_dir: str | Path, op: str | None = None, *,
              import_timeout_s: float = DEFAULT_IMPORT_TIMEOUT_S) -> Stage4Result:
    """Read the delivery of ``op_dir``, probe its import and evaluate every Stage 4 gate."""
    delivery = read_delivery(op_dir, op)
    return finish(*delivery, probe_delivery(*delivery, timeout_s=import_timeout_s))
