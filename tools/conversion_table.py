"""The operator set conversion matrix (issue 24): every ONNX 1-3 node vector at every target version, converted by
onnxcore.convert_version and by onnx.version_converter in the same run, each result checked and evaluated.

For each vector (its ai.onnx version S) and each target T in 1..28, T != S:

* ours: ``convert_version`` succeeds or raises ConversionError (refused, with reasons); a result must pass
  ``onnxcore.check`` with no error and give the vector's expected outputs with our Session (else it is listed
  as *check* or *wrong*, which the test suite forbids);
* onnx's: ``onnx.version_converter.convert_version`` succeeds or raises (refused, with its message); its
  result is checked and evaluated the same way (*invalid*: not passing check or not running; *wrong*: other
  outputs than the vector's).

Vectors whose original model does not evaluate as expected with our Session are left out (nothing to prove).
The ai.onnx.ml vectors are converted across ai.onnx.ml 1-5 (ours only: onnx's converter handles ai.onnx).

Round trips: each conversion down that succeeds is converted back up to the vector's version and judged again.

Usage: ``python tools/conversion_table.py [--targets 1,7,13,28] [--every N] [--jobs N] [--output docs/conversion.md]``
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import onnxcore as oc  # noqa: E402
from onnxcore.conformance.compare import compare_type_and_shape, compare_values  # noqa: E402
from onnxcore.conformance.runner import load_case_values  # noqa: E402
from onnxcore.errors import ConversionError  # noqa: E402
from onnxcore.kernels.registry import NONDETERMINISTIC  # noqa: E402

Outcome = tuple[str, str]  # (status, reason)


def _evaluate(model: Any, case: Path) -> str | None:
    session = oc.Session(model)
    names = [o.name for o in model.graph.output]
    random = any(n.op_type in NONDETERMINISTIC for n in model.graph.node)
    for feeds, expected in load_case_values(case, model):
        for a, e in zip(session.run(names, feeds), expected):
            c = compare_type_and_shape(a, e) if random else compare_values(a, e)
            if not c.ok:
                return c.reason
    return None


def _judge(model: Any, case: Path) -> Outcome:
    errors = oc.check(model).errors
    if errors:
        return "invalid", f"{errors[0].code}: {errors[0].message}"
    try:
        wrong = _evaluate(model, case)
    except oc.OnnxCoreError as e:
        return "invalid", f"{type(e).__name__}: {e}".splitlines()[0]
    return ("wrong", wrong) if wrong else ("ok", "")


def _short(reason: str) -> str:
    """A refusal reason with the case's own names and numbers blurred, so equal reasons group."""
    text = reason.splitlines()[0] if reason else ""
    text = re.sub(r"^.*Assertion .false. failed: ", "", text)  # onnx: the C++ source position
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\[[-0-9, ]*\]", "[…]", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return text[:140]


def run_case(args: tuple[str, list[int]]) -> dict[str, Any]:
    """Both converters on one vector at every target: {"case", "ops", "domain", "source", "ours", "onnx"}."""
    import onnx  # lazy: only the tool needs it
    import onnx.version_converter

    path, targets = Path(args[0]), args[1]
    warnings.simplefilter("ignore")
    model = oc.load(path / "model.onnx")
    imports = {o.domain or "": o.version for o in model.opset_import}
    domain = "" if "" in imports or "ai.onnx" in imports else ("ai.onnx.ml" if "ai.onnx.ml" in imports else None)
    out: dict[str, Any] = {"case": path.name, "domain": domain, "ours": {}, "onnx": {}}
    out["ops"] = sorted({n.op_type for n in model.graph.node if (n.domain or "") == (domain or "")})
    if domain is None:
        return out
    source = imports.get(domain, imports.get("ai.onnx", 0))
    out["source"] = source
    try:
        if _evaluate(model, path) is not None:
            out["baseline"] = "fails"
            return out
    except oc.OnnxCoreError:
        out["baseline"] = "fails"
        return out
    top = 5 if domain == "ai.onnx.ml" else 28
    theirs = onnx.load(str(path / "model.onnx")) if domain == "" else None
    for t in targets:
        if t == source or t > top:
            continue
        try:
            converted = oc.convert_version(model, t, domain=domain)
            status, why = _judge(converted, path)
            out["ours"][t] = (status if status != "invalid" else "check", why)
            if status == "ok" and t < source:  # the round trip: back up to the vector's own version
                try:
                    back, back_why = _judge(oc.convert_version(converted, source, domain=domain), path)
                except ConversionError as e:
                    back, back_why = "refused", str(e).splitlines()[-1]
                out.setdefault("round", {})[t] = (back, back_why)
        except ConversionError as e:
            out["ours"][t] = ("refused", e.refusals[0].reason if e.refusals else str(e))
        except Exception as e:  # a defect of ours: recorded, never hidden
            out["ours"][t] = ("crash", f"{type(e).__name__}: {e}")
        if theirs is None:
            continue
        try:
            conv = onnx.version_converter.convert_version(theirs, t)
        except Exception as e:
            out["onnx"][t] = ("refused", str(e).strip())
            continue
        try:
            mine = oc.decode(oc.ModelProto, conv.SerializeToString())
            out["onnx"][t] = _judge(mine, path)
        except Exception as e:
            out["onnx"][t] = ("invalid", f"{type(e).__name__}: {e}".splitlines()[0])
    return out


def _range(ts: list[int]) -> str:
    if not ts:
        return "—"
    ts = sorted(ts)
    runs: list[str] = []
    start = prev = ts[0]
    for t in ts[1:] + [None]:  # type: ignore[list-item]
        if t is not None and t == prev + 1:
            prev = t
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if t is not None:
            start = prev = t
    return ", ".join(runs)


def render(results: list[dict[str, Any]], targets: list[int], seconds: float, note: str) -> str:
    rows = [r for r in results if r.get("domain") is not None and "baseline" not in r]
    per_op: dict[str, dict[str, Any]] = collections.defaultdict(
        lambda: {
            "cases": 0,
            "ours_ok": set(),
            "ours_refused": collections.Counter(),
            "ours_bad": [],
            "onnx_ok": set(),
            "onnx_refused": collections.Counter(),
            "onnx_wrong": set(),
            "onnx_invalid": set(),
            "counts": collections.Counter(),
        }
    )
    totals: collections.Counter[str] = collections.Counter()
    three_down = collections.Counter()
    for r in rows:
        label = ", ".join(r["ops"]) if len(r["ops"]) <= 3 else ", ".join(r["ops"][:3]) + ", …"
        prefix = "ai.onnx.ml: " if r["domain"] == "ai.onnx.ml" else ""
        for op in r["ops"] or ["(no ai.onnx node: another domain's operators only)"]:
            d = per_op[prefix + op]
            d["cases"] += 1
            for t, (status, why) in r["ours"].items():
                d["counts"][f"ours_{status}"] += 1
                if status == "ok":
                    d["ours_ok"].add(t)
                elif status == "refused":
                    d["ours_refused"][_short(why)] += 1
                else:
                    d["ours_bad"].append(f"{r['case']}->{t}: {status}: {why[:80]}")
            for t, (status, why) in r["onnx"].items():
                d["counts"][f"onnx_{status}"] += 1
                if status == "ok":
                    d["onnx_ok"].add(t)
                elif status == "refused":
                    d["onnx_refused"][_short(why)] += 1
                elif status == "wrong":
                    d["onnx_wrong"].add(t)
                else:
                    d["onnx_invalid"].add(t)
        for side in ("ours", "onnx"):
            for status, _why in r[side].values():
                totals[f"{side}_{status}"] += 1
        for t, (status, why) in r.get("round", {}).items():
            totals[f"round_{status}"] += 1
            if status != "ok":
                per_op[(", ".join(r["ops"][:1]) or label)]["ours_bad"].append(
                    f"{r['case']}->{t}->back: {status}: {why[:80]}"
                )
        t3 = r.get("source", 0) - 3
        if r["domain"] == "" and t3 in r["ours"]:
            three_down["cases"] += 1
            three_down["ours"] += r["ours"][t3][0] == "ok"
            if t3 in r["onnx"]:
                three_down["onnx"] += r["onnx"][t3][0] == "ok"
    skipped = sum(1 for r in results if "baseline" in r)
    lines = [
        "# Operator set conversion: measured",
        "",
        "Generated by `tools/conversion_table.py` (do not edit by hand). Every ONNX 1-3 node vector (onnx "
        f"{_onnx_version()}) is converted from its own ai.onnx version to each target of {_range(targets)} by "
        "`onnxcore.convert_version` and by `onnx.version_converter`, in the same run. Each result is validated "
        "with `onnxcore.check` and evaluated with onnxcore's Session against the vector's expected outputs "
        "(the conformance tolerances). The ai.onnx.ml vectors are converted across ai.onnx.ml 1-5 (ours only).",
        "",
        f"- Vectors: {len(rows)} measured; {skipped} left out because the original does not evaluate as expected "
        f"with onnxcore (nothing to prove). Run time {seconds:.0f} s.",
    ]
    if note:
        lines.append(f"- {note}")
    lines += [
        f"- onnxcore: {totals['ours_ok']} converted (check clean, outputs as expected), "
        f"{totals['ours_refused']} refused with a reason, {totals['ours_check']} failing check, "
        f"{totals['ours_wrong']} evaluating differently, {totals['ours_crash']} crashes.",
        f"- onnx.version_converter: {totals['onnx_ok']} converted and evaluating as expected, "
        f"{totals['onnx_refused']} refused (raised), {totals['onnx_invalid']} converted into a model that fails "
        f"check or does not run, {totals['onnx_wrong']} converted into a model giving other outputs.",
        f"- Round trips (down to each target converted, then back up to the vector's version): "
        f"{totals['round_ok']} evaluate as expected, {totals['round_refused']} refused on the way up, "
        f"{totals['round_invalid'] + totals['round_wrong']} failing check or evaluating differently.",
        f"- Three versions down (each ai.onnx vector to its version - 3): onnxcore {three_down['ours']} of "
        f"{three_down['cases']}, onnx.version_converter {three_down['onnx']} of {three_down['cases']} "
        "(converted and evaluating as expected).",
        "",
        "Positions taken where the spec is silent (src/onnxcore/convert/):",
        "",
        "- A node moves one pair of consecutive definitions at a time; an adapter handles what the pair changed "
        "beyond what the two definitions' signatures tell, then the generic step reconciles attributes (defaults "
        "written out when they changed), arity and type sets. Helper nodes an adapter adds (Cast, Unsqueeze, "
        "Transpose, Slice, ...) are converted to the target by the same steps.",
        "- An attribute turned input becomes an initializer (a `Constant` node inside a model-local function); an "
        "input turned attribute must be an initializer or a `Constant` output, else the node is refused. The "
        "initializer it came from is left in place (weights are never edited).",
        "- A type only the other definition admits: moving down, `Cast`s to a wider admitted type and back, only "
        "for operators that select, move or compare values, and for + - * / sqrt neg on float16/bfloat16 computed "
        "in float32 (rounded once); anything else is refused.",
        "- Deprecated definitions (Upsample-10, Scatter-11) are replaced by their successors (Resize, "
        "ScatterElements) when moving up past them, and the reverse when moving below the successor's first "
        "version.",
        "- The IR version is raised to the least the target operator set needs, never lowered; value_info entries "
        "are kept (the rewrites keep every value's name and type) except for values that no longer exist; in a "
        "model that states its intermediates (annotated), the values a rewrite adds get their inferred type and "
        "shape.",
        "",
        "Reading the table: *converts to* lists the target versions at which at least one vector of the "
        "operator converted and evaluated as expected; refusals are grouped by reason (names and numbers "
        "blurred), with their count. A vector with several operators counts under each.",
        "",
        "| operator | vectors | onnxcore converts to | onnxcore refusals (count: reason) | onnx converts to | "
        "onnx refusals (count: reason) | onnx wrong / invalid at |",
        "|---|---|---|---|---|---|---|",
    ]
    for op in sorted(per_op):
        d = per_op[op]
        ours_ref = "<br>".join(f"{n}: {why}" for why, n in d["ours_refused"].most_common(3)) or "—"
        if len(d["ours_refused"]) > 3:
            ours_ref += f"<br>(+{len(d['ours_refused']) - 3} other reasons)"
        if d["ours_bad"]:
            ours_ref += "<br>**NOT PROVEN:** " + "; ".join(d["ours_bad"][:3])
        onnx_ref = "<br>".join(f"{n}: {why}" for why, n in d["onnx_refused"].most_common(2)) or "—"
        if len(d["onnx_refused"]) > 2:
            onnx_ref += f"<br>(+{len(d['onnx_refused']) - 2} other reasons)"
        bad = f"wrong {_range(sorted(d['onnx_wrong']))} / invalid {_range(sorted(d['onnx_invalid']))}"
        cells = [
            op,
            str(d["cases"]),
            _range(sorted(d["ours_ok"])),
            ours_ref,
            _range(sorted(d["onnx_ok"])),
            onnx_ref,
            bad,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _onnx_version() -> str:
    import onnx  # lazy: only the tool needs it

    return str(onnx.__version__)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", default="1-28", help="target versions: '1-28' or '1,7,13,28'")
    p.add_argument("--every", type=int, default=1, help="take every N-th vector (a subset, said so in the doc)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--output", default=str(ROOT / "docs" / "conversion.md"))
    args = p.parse_args()
    if "-" in args.targets:
        lo, hi = (int(x) for x in args.targets.split("-"))
        targets = list(range(lo, hi + 1))
    else:
        targets = sorted(int(x) for x in args.targets.split(","))
    import corpus  # lazy: the tests' helper that generates the vectors

    cases = corpus.node_case_dirs()[:: args.every]
    start = time.perf_counter()
    work = [(str(c), targets) for c in cases]
    results: list[dict[str, Any]] = []
    if args.jobs > 1:
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            for i, r in enumerate(pool.map(run_case, work, chunksize=4)):
                results.append(r)
                if i % 100 == 0:
                    print(f"{i}/{len(work)} {time.perf_counter() - start:.0f}s", file=sys.stderr, flush=True)
    else:
        for i, w in enumerate(work):
            results.append(run_case(w))
            if i % 100 == 0:
                print(f"{i}/{len(work)} {time.perf_counter() - start:.0f}s", file=sys.stderr, flush=True)
    note = (
        "" if args.every == 1 else f"A subset: one vector in {args.every} ({len(cases)} of the vectors), by name order."
    )
    text = render(results, targets, time.perf_counter() - start, note)
    Path(args.output).write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
