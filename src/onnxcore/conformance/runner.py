"""Running a test package laid out as the ONNX 1-3 vectors are (Clause 4, 11; ONNX 1-3).

A case is a directory holding ``model.onnx`` and ``test_data_set_N/input_K.pb`` / ``output_K.pb``. Each case
is loaded, validated, evaluated and compared; the outcome is ``pass``, ``fail`` (with the largest absolute and
relative error and where), ``error`` (the exception) or ``unsupported`` (the operators, Clause 4.4).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np

import onnxcore as oc
from onnxcore.conformance.compare import DEFAULT_ATOL, DEFAULT_RTOL, compare_type_and_shape, compare_values
from onnxcore.conformance.recompute import NARROW_FLOATS, recompute_float64
from onnxcore.kernels.registry import NONDETERMINISTIC
from onnxcore.types import ElementType, value_from_proto

__all__ = ["CaseResult", "discover", "run_case", "run_package", "summarize_by_operator", "load_case_values"]


@dataclass
class CaseResult:
    """The outcome of one case."""

    name: str
    status: str  # "pass" | "fail" | "error" | "unsupported"
    operators: list[str] = field(default_factory=list)
    opset: int = 0
    detail: str = ""
    unsupported: list[str] = field(default_factory=list)
    max_abs: float = 0.0
    max_rel: float = 0.0
    where: str = ""
    output_dtypes: list[str] = field(default_factory=list)
    errors_by_dtype: dict[str, list[float]] = field(default_factory=dict)
    # Narrow float outputs only: [ours vs float64 abs, rel, expected vs float64 abs, rel] (recompute.py).
    recomputed_by_dtype: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record."""
        d = asdict(self)
        d["seconds"] = round(self.seconds, 4)
        return d


def discover(root: str | os.PathLike[str], pattern: str | None = None) -> list[Path]:
    """Case directories under ``root`` (a case has ``model.onnx``), sorted, optionally filtered by a glob."""
    base = Path(root)
    cases = sorted(p.parent for p in base.glob("**/model.onnx"))
    if pattern:
        cases = [c for c in cases if fnmatch(c.name, pattern)]
    return cases


def _value_class(type_proto: Any) -> Any:

    which = type_proto.which_oneof("value") if type_proto is not None else None
    return {
        "sequence_type": oc.SequenceProto,
        "map_type": oc.MapProto,
        "optional_type": oc.OptionalProto,
        "sparse_tensor_type": oc.SparseTensorProto,
    }.get(which or "", oc.TensorProto)


def load_case_values(case: Path, model: Any) -> list[tuple[dict[str, Any], list[Any]]]:
    """The data sets of a case: (feeds by input name, expected outputs in graph order)."""

    g = model.graph
    if g is None:
        return []
    init_names = {t.name for t in g.initializer}
    inputs = [vi for vi in g.input if vi.name not in init_names] or list(g.input)
    sets = []
    for ds in sorted(case.glob("test_data_set_*"), key=lambda p: int(p.name.rsplit("_", 1)[1])):
        feeds: dict[str, Any] = {}
        for i, vi in enumerate(inputs):
            pb = ds / f"input_{i}.pb"
            if pb.exists():
                feeds[vi.name] = value_from_proto(oc.decode(_value_class(vi.type), pb.read_bytes()))
        expected = []
        for i, vi in enumerate(g.output):
            pb = ds / f"output_{i}.pb"
            expected.append(value_from_proto(oc.decode(_value_class(vi.type), pb.read_bytes())))
        sets.append((feeds, expected))
    return sets


def _operators(model: Any) -> list[str]:
    ops: list[str] = []
    for n in model.graph.node if model.graph is not None else []:
        name = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
        if name not in ops:
            ops.append(name)
    return ops


def run_case(
    case: str | os.PathLike[str],
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    limits: oc.Limits | None = None,
) -> CaseResult:
    """Load, validate, evaluate and compare one case; never raises for a bad case.

    ``limits`` are those of loading and of the session (``Limits.untrusted()`` for a package one does not trust);
    None for the defaults.
    """

    path = Path(case)
    start = time.perf_counter()
    result = CaseResult(path.name, "error")
    try:
        model = oc.load(path / "model.onnx", limits=limits)
        if model.graph is None:
            raise oc.OnnxCoreError("the model has no graph")
        graph = model.graph
        result.operators = _operators(model)
        result.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        try:
            session = oc.Session(model, limits=limits)
        except oc.UnsupportedOperatorError as e:
            result.status = "unsupported"
            result.unsupported = sorted({f"{d or 'ai.onnx'}::{op}-{v}" for d, op, v in e.operators})
            result.detail = str(e)
            return result
        names = [o.name for o in graph.output]
        # Clause 11.6: a non-deterministic operator's results are judged by type and shape, not values.
        random_ops = sorted({n.op_type for n in graph.node if n.op_type in NONDETERMINISTIC})
        ok = True
        for feeds, expected in load_case_values(path, model):
            actual = session.run(names, feeds)
            for i, (a, exp) in enumerate(zip(actual, expected)):
                if random_ops:
                    c = compare_type_and_shape(a, exp)
                    result.detail = f"non-deterministic ({', '.join(random_ops)}): type and shape compared"
                else:
                    c = compare_values(a, exp, rtol=rtol, atol=atol)
                if c.dtype and c.dtype not in result.output_dtypes:
                    result.output_dtypes.append(c.dtype)
                if c.dtype:
                    errs = result.errors_by_dtype.setdefault(c.dtype, [0.0, 0.0])
                    errs[0] = max(errs[0], c.max_abs)
                    errs[1] = max(errs[1], c.max_rel)
                if c.max_abs >= result.max_abs:
                    result.max_abs, result.max_rel = c.max_abs, max(result.max_rel, c.max_rel)
                if not c.ok and ok:
                    ok = False
                    result.where = f"output {i} ({names[i]}) {c.where}"
                    result.detail = c.reason
        result.status = "pass" if ok else "fail"
        if ok and not random_ops:
            _measure_against_float64(result, model, path, names, session, atol, rtol)
    except Exception as e:  # a case that breaks us is reported, not raised
        result.status = "error"
        result.detail = f"{type(e).__name__}: {e}"
        if os.environ.get("ONNXCORE_TRACEBACK"):
            result.detail += "\n" + traceback.format_exc()
    finally:
        result.seconds = time.perf_counter() - start
    return result


def _deviation(a: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> tuple[float, float]:
    a64 = a.astype(np.float64)
    r64 = ref.astype(np.float64)
    finite = np.isfinite(a64) & np.isfinite(r64)
    if not finite.any():
        return 0.0, 0.0
    err = np.abs(a64[finite] - r64[finite])
    mag = np.abs(r64)[finite]
    big = mag > (atol / rtol if rtol > 0 else 0.0)
    rel = float(np.max(err[big] / mag[big])) if big.any() else 0.0
    return float(err.max()), rel


def _measure_against_float64(
    result: CaseResult, model: Any, path: Path, names: list[str], session: Any, atol: float, rtol: float
) -> None:
    """For narrow float outputs, the error of ours and of the expected values against a float64 re-computation."""

    narrow = [
        i
        for i, vi in enumerate(model.graph.output)
        if vi.type is not None and vi.type.tensor_type is not None and vi.type.tensor_type.elem_type in NARROW_FLOATS
    ]
    if not narrow:
        return
    for feeds, expected in load_case_values(path, model):
        wide = recompute_float64(model, feeds, names)
        if wide is None:
            return
        actual = session.run(names, feeds)
        for i in narrow:
            a, e, ref = actual[i], expected[i], wide[i]
            if not all(isinstance(v, np.ndarray) for v in (a, e, ref)) or a.shape != ref.shape:
                continue
            ours = _deviation(a, ref, atol, rtol)
            theirs = _deviation(e, ref, atol, rtol)
            key = ElementType.from_dtype(e.dtype).name
            row = result.recomputed_by_dtype.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            for j, v in enumerate((*ours, *theirs)):
                row[j] = max(row[j], v)


def _run_one(args: tuple[str, float, float, oc.Limits | None]) -> CaseResult:
    return run_case(args[0], rtol=args[1], atol=args[2], limits=args[3])


def run_package(
    cases: Iterable[Path],
    *,
    jobs: int = 1,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    progress: Callable[[int, int, CaseResult], None] | None = None,
    limits: oc.Limits | None = None,
) -> list[CaseResult]:
    """Run every case (under ``limits``, see :func:`run_case`); results in the order of ``cases``."""
    todo = [str(c) for c in cases]
    results: list[CaseResult] = []
    it: Iterator[CaseResult]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            it = pool.map(_run_one, [(c, rtol, atol, limits) for c in todo], chunksize=8)
            for r in it:
                results.append(r)
                if progress:
                    progress(len(results), len(todo), r)
    else:
        for c in todo:
            r = run_case(c, rtol=rtol, atol=atol, limits=limits)
            results.append(r)
            if progress:
                progress(len(results), len(todo), r)
    return results


def terminal_progress(done: int, total: int, result: CaseResult) -> None:
    """A one-line progress bar on stderr (only when it is a terminal)."""
    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {result.name[:40]:<40}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def summarize_by_operator(results: Iterable[CaseResult]) -> dict[str, dict[str, int]]:
    """Counts of each status per operator (a case counts for every operator it uses)."""
    table: dict[str, dict[str, int]] = {}
    for r in results:
        for op in r.operators or ["?"]:
            row = table.setdefault(op, {"pass": 0, "fail": 0, "error": 0, "unsupported": 0})
            row[r.status] = row.get(r.status, 0) + 1
    return dict(sorted(table.items()))
