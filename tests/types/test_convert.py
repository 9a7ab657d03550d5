"""cast_array (Clause 6.3.2, 6.3.3 and the Cast/CastLike definitions) against the ONNX 1-3 Cast test
vectors, an exact rational model of round-to-nearest-even, and onnx's FLOAT8E8M0 helper."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from gen import random_array

from onnxcore import TensorError, decode, load
from onnxcore.proto import TensorProto
from onnxcore.types import ElementType, to_array
from onnxcore.types.convert import cast_array, format_number, parse_number

E = ElementType
# The probes overflow binary32 and cast NaN on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _cast_cases(node_cases: list[Path]) -> list[Path]:
    return [
        c
        for c in node_cases
        if c.name.startswith("test_cast_") or (c.name.startswith("test_castlike_") and not c.name.endswith("_expanded"))
    ]


def test_cast_vectors(node_cases: list[Path]) -> None:
    """Every Cast/CastLike node vector: cast_array gives the expected output bit for bit."""
    cases = _cast_cases(node_cases)
    assert len(cases) > 100
    failures = []
    for case in cases:
        model = load(case / "model.onnx")
        node = model.graph.node[0]
        attrs = {a.name: a for a in node.attribute}
        ds = case / "test_data_set_0"
        x = to_array(decode(TensorProto, (ds / "input_0.pb").read_bytes()))
        y = to_array(decode(TensorProto, (ds / "output_0.pb").read_bytes()))
        if node.op_type == "Cast":
            to = E(attrs["to"].i)
        else:
            to = E(decode(TensorProto, (ds / "input_1.pb").read_bytes()).data_type)
        saturate = bool(attrs["saturate"].i) if "saturate" in attrs else True
        round_mode = attrs["round_mode"].s.decode() if "round_mode" in attrs else "up"
        got = cast_array(x, to, saturate=saturate, round_mode=round_mode)
        if got.dtype != y.dtype or got.shape != y.shape or got.tobytes() != y.tobytes():
            failures.append((case.name, got, y))
    assert not failures, failures[:3]


# ------------------------------------------------------------------ exact model of RNE with overflow


_TABLES: dict[ElementType, tuple[list[Fraction], list[int], int]] = {}


def _table(et: ElementType) -> tuple[list[Fraction], list[int], int]:
    """Sorted non-negative finite values of ``et`` with their codes, plus the virtual value just past the
    largest (the code after it), which stands for overflow."""
    if et not in _TABLES:
        bits = et.bits
        codes = np.arange(1 << (bits - 1), dtype=np.uint16 if bits == 16 else np.uint8)
        mags = codes.view(et.np_dtype).astype(np.float64)
        pairs = sorted((Fraction(float(m)), int(c)) for m, c in zip(mags, codes, strict=True) if math.isfinite(m))
        vmax, cmax = pairs[-1]
        pairs.append((vmax + (vmax - pairs[-2][0]), cmax + 1))
        _TABLES[et] = ([v for v, _ in pairs], [c for _, c in pairs], cmax)
    return _TABLES[et]


def _exact_round(x: float, et: ElementType, saturate: bool) -> int:
    """The code of ``x`` rounded to ``et``: nearest representable value, ties to the even code; a
    value past the largest finite one by half an ulp or more overflows (saturate: the largest
    finite value; else infinity where the type has one, else NaN)."""
    import bisect

    vals, codes, cmax = _table(et)
    bits = et.bits
    sign = (1 << (bits - 1)) if math.copysign(1.0, x) < 0 else 0
    nan_code = {
        E.FLOAT8E4M3FN: 0x7F,
        E.FLOAT8E4M3FNUZ: 0x80,
        E.FLOAT8E5M2: 0x7E,
        E.FLOAT8E5M2FNUZ: 0x80,
        E.BFLOAT16: 0x7FC0,
    }.get(et)
    no_nan = et in (E.FLOAT4E2M1, E.FLOAT6E2M3, E.FLOAT6E3M2)
    assert not math.isnan(x), "NaN is not modelled here"
    code: int | None
    if math.isinf(x) or Fraction(abs(x)) >= vals[-1]:
        code = None
    else:
        fx = Fraction(abs(x))
        i = bisect.bisect_left(vals, fx)
        if vals[i] == fx:
            code = codes[i]
        else:
            lo, hi = i - 1, i
            dlo, dhi = fx - vals[lo], vals[hi] - fx
            pick = lo if dlo < dhi else hi if dhi < dlo else (lo if codes[lo] % 2 == 0 else hi)
            code = codes[pick]
        if code == cmax + 1:
            code = None
    if code is None:  # overflow
        if saturate or no_nan:
            return cmax | sign
        if et in (E.FLOAT8E5M2, E.BFLOAT16):
            return (cmax + 1) | sign  # infinity
        assert nan_code is not None
        return nan_code | (sign if et is E.FLOAT8E4M3FN else 0)
    if code == 0 and et in (E.FLOAT8E4M3FNUZ, E.FLOAT8E5M2FNUZ):
        return 0  # no negative zero
    return code | sign


_NARROW_FLOATS = [
    E.BFLOAT16,
    E.FLOAT8E4M3FN,
    E.FLOAT8E4M3FNUZ,
    E.FLOAT8E5M2,
    E.FLOAT8E5M2FNUZ,
    E.FLOAT4E2M1,
    E.FLOAT6E2M3,
    E.FLOAT6E3M2,
]


def _probe_values(et: ElementType, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """Representable values, the midpoints between neighbours, and their float64/float32 neighbours."""
    bits = et.bits
    if bits == 16:
        codes = np.unique(np.concatenate([rng.integers(0, 0x7F80, 400), np.arange(0, 8), np.arange(0x7F70, 0x7F80)]))
        vals = np.sort(codes.astype(np.uint16).view(et.np_dtype).astype(np.float64))
    else:
        vals = np.arange(1 << (bits - 1), dtype=np.uint8).view(et.np_dtype).astype(np.float64)
        vals = np.sort(vals[np.isfinite(vals)])
    mids = (vals[:-1] + vals[1:]) / 2
    top = vals[-1] + (vals[-1] - vals[-2]) / 2
    base = np.concatenate([vals, mids, [top, vals[-1] * 4, 1e300, 1e-300, 5e-324]])
    around = [base, np.nextafter(base, np.inf), np.nextafter(base, -np.inf)]
    f32 = base.astype(np.float32)
    around += [
        np.nextafter(f32, np.float32(np.inf)).astype(np.float64),
        np.nextafter(f32, np.float32(-np.inf)).astype(np.float64),
    ]
    allv = np.concatenate(around)
    allv = allv[np.isfinite(allv)]
    return np.concatenate([allv, -allv, [np.inf, -np.inf]])


@pytest.mark.parametrize("et", _NARROW_FLOATS, ids=lambda e: e.name)
@pytest.mark.parametrize("saturate", [True, False])
def test_round_to_nearest_even_exact(et: ElementType, saturate: bool) -> None:
    """Clause 6.3.2: RNE, no double rounding from binary64 sources, saturation per the Cast tables."""
    x = _probe_values(et, np.random.default_rng(int(et)))
    if et is E.BFLOAT16 and not saturate:
        pass  # BFLOAT16 ignores saturate (it has infinities: overflow gives infinity)
    eff_sat = saturate and et not in (E.BFLOAT16,)
    expected = np.array([_exact_round(float(v), et, eff_sat) for v in x])
    for src in (np.float64, np.float32):
        xs = x.astype(src)
        keep = xs.astype(np.float64) == x  # the values exact in the source type
        got = cast_array(xs[keep], et, saturate=saturate)
        assert got.dtype == et.np_dtype
        codes = got.view(np.uint16 if et.bits == 16 else np.uint8).astype(np.int64)
        if et.bits < 8:
            codes &= (1 << et.bits) - 1
        bad = np.flatnonzero(codes != expected[keep])
        assert bad.size == 0, [(xs[keep][i], hex(codes[i]), hex(expected[keep][i])) for i in bad[:5]]


def test_float16_sources_exhaustive() -> None:
    """Every float16 value converts to every FLOAT8 type as the exact model says."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    x = x[~np.isnan(x)]
    for et in (E.FLOAT8E4M3FN, E.FLOAT8E5M2, E.FLOAT8E4M3FNUZ, E.FLOAT8E5M2FNUZ, E.FLOAT4E2M1):
        sub = x[:: 7 if et is not E.FLOAT8E5M2 else 3]
        got = cast_array(sub, et).view(np.uint8) & ((1 << et.bits) - 1)
        exp = np.array([_exact_round(float(v), et, True) for v in sub])
        assert np.array_equal(got, exp), et


def test_nan_to_narrow_floats() -> None:
    for et in (E.FLOAT8E4M3FN, E.FLOAT8E4M3FNUZ, E.FLOAT8E5M2, E.FLOAT8E5M2FNUZ, E.BFLOAT16):
        for sat in (True, False):
            assert np.isnan(cast_array(np.array([np.nan]), et, saturate=sat).astype(np.float32)).all()
    # FLOAT4/FLOAT6 have no NaN: the Cast vector maps NaN to -0.0 (docs/types.md)
    assert cast_array(np.array([np.nan], np.float32), E.FLOAT4E2M1).view(np.uint8).tolist() == [0x8]


# --------------------------------------------------------------------------------------- FLOAT8E8M0


def _e8m0_exact(x: float, mode: str, saturate: bool) -> int:
    if math.isnan(x):
        return 0xFF
    ax = abs(x)
    if math.isinf(ax):
        return 0xFE if saturate else 0xFF
    if ax == 0:
        return 0x00 if saturate else 0xFF
    fx = Fraction(ax)
    e = math.floor(math.log2(ax))
    while Fraction(2) ** e > fx:
        e -= 1
    while Fraction(2) ** (e + 1) <= fx:
        e += 1
    lo, hi = Fraction(2) ** e, Fraction(2) ** (e + 1)
    if mode == "down" or fx == lo:
        r = e
    elif mode == "up":
        r = e + 1
    else:
        r = e + 1 if fx - lo >= hi - fx else e
    if r > 127:
        return 0xFE if saturate else 0xFF
    if r < -127:
        return 0x00 if saturate else 0xFF
    return r + 127


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [True, False])
def test_e8m0_modes(mode: str, saturate: bool) -> None:
    rng = np.random.default_rng(7)
    p = np.ldexp(1.0, np.arange(-140, 130))
    x = np.concatenate(
        [
            p,
            p * 1.5,
            p * 1.25,
            p * 1.75,
            np.nextafter(p, 0),
            np.nextafter(p, np.inf),
            rng.random(200) * 100,
            [0.0, np.inf, np.nan, 1e-320],
        ]
    )
    got = cast_array(x, E.FLOAT8E8M0, saturate=saturate, round_mode=mode).view(np.uint8)
    exp = np.array([_e8m0_exact(float(v), mode, saturate) for v in x])
    bad = np.flatnonzero(got != exp)
    assert bad.size == 0, [(x[i], got[i], exp[i]) for i in bad[:5]]


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
def test_e8m0_agrees_with_onnx_helper_on_normal_floats(mode: str) -> None:
    """onnx.numpy_helper.to_float8e8m0 works on binary32 bits; on positive normal inputs that do not
    overflow it is the same function as ours."""
    nh = pytest.importorskip("onnx.numpy_helper")
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [rng.random(500).astype(np.float32) * 1e3, np.ldexp(np.float32(1.5), np.arange(-120, 120))]
    ).astype(np.float32)
    x = x[(x >= np.finfo(np.float32).tiny) & (x < 2.0**127)]
    ours = cast_array(x, E.FLOAT8E8M0, round_mode=mode).view(np.uint8)
    theirs = nh.to_float8e8m0(x, saturate=True, round_mode=mode).view(np.uint8)
    assert np.array_equal(ours, theirs)


def test_bad_round_mode() -> None:
    with pytest.raises(TensorError):
        cast_array(np.ones(1), E.FLOAT8E8M0, round_mode="sideways")


# ---------------------------------------------------------------------------------------- integers


@pytest.mark.parametrize("et", [E.INT4, E.UINT4, E.INT2, E.UINT2])
def test_narrow_int_round_even_then_wrap(et: ElementType) -> None:
    """Clause 6.3.3 (RNE) and the vectors' out-of-range rule (keep the low bits)."""
    x = np.concatenate([np.arange(-40, 40) / 2, [np.nan, np.inf, -np.inf, 1e12 + 0.5]])
    got = cast_array(x, et)
    bits = et.bits
    exp = []
    for v in x.tolist():
        r = 0 if not math.isfinite(v) else round(v)  # Python round: ties to even
        r %= 1 << bits
        if et.is_signed_integer and r >= 1 << (bits - 1):
            r -= 1 << bits
        exp.append(r)
    assert got.dtype == et.np_dtype
    assert got.astype(np.int64).tolist() == exp


@pytest.mark.parametrize("et", [E.INT8, E.UINT8, E.INT16, E.UINT16, E.INT32, E.UINT32, E.INT64, E.UINT64])
def test_float_to_int_truncates_and_wraps(et: ElementType) -> None:
    x = np.array([2.7, -2.7, 300.5, -300.5, 1e10, -1e10, 1e19, -1e19, 3e30, np.nan, np.inf, 0.0, -0.0])
    got = cast_array(x, et)
    bits = np.dtype(et.np_dtype).itemsize * 8
    exp = []
    for v in x.tolist():
        r = 0 if not math.isfinite(v) else int(v)  # int(): truncation toward zero, exact
        r %= 1 << bits
        if et.is_signed_integer and r >= 1 << (bits - 1):
            r -= 1 << bits
        exp.append(r)
    assert got.tolist() == exp


def test_int_to_int_wraps_like_cast_doc() -> None:
    assert cast_array(np.array([200], np.int16), E.INT8).tolist() == [-56]  # the Cast description's example
    assert cast_array(np.array([36, 0], np.int64), E.BOOL).tolist() == [True, False]
    assert cast_array(np.array([-1], np.int64), E.UINT64).tolist() == [2**64 - 1]
    assert cast_array(np.array([2**64 - 1], np.uint64), E.INT4).tolist() == [-1]


def test_large_ints_to_narrow_floats_exact() -> None:
    n = np.array([2**60 + 2**52 + 1, -(2**60 + 2**52 + 1), 2**60 + 2**52], dtype=np.int64)
    got = cast_array(n, E.BFLOAT16).astype(np.float64)
    # 2**60 + 2**52 is the midpoint between two bfloat16 values; +1 rounds up, the tie to even
    assert got.tolist() == [2.0**60 + 2**53, -(2.0**60 + 2**53), 2.0**60]
    assert cast_array(np.array([2**60 + 1], np.int64), E.FLOAT8E8M0).view(np.uint8).tolist() == [61 + 127]


# --------------------------------------------------------------------------------------- every pair


def test_every_pair_of_types() -> None:
    rng = np.random.default_rng(11)
    for src in ElementType:
        x = random_array(src, 40, rng).reshape(5, 8)
        if src is E.STRING:
            x = np.array([b"1.5", b"-2", b"NaN", b"INF", b"-INF", b"0", b"7", b"+3e2"] * 5, dtype=object).reshape(5, 8)
        for dst in ElementType:
            got = cast_array(x, dst)
            assert got.shape == x.shape and got.dtype == dst.np_dtype, (src, dst)
        scalar = cast_array(x[0, 0], E.FLOAT) if src is not E.STRING else cast_array(x[0, 0:1], E.FLOAT)
        assert isinstance(scalar, np.ndarray)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (s, d)
        for s in (np.int8, np.uint16, np.int32, np.float16, np.float32, np.float64)
        for d in (np.float32, np.float64)
    ],
)
def test_widening_matches_numpy(src: Any, dst: Any) -> None:
    x = random_array(ElementType.from_dtype(src), 500, np.random.default_rng(5))
    got = cast_array(x, ElementType.from_dtype(dst))
    exp = x.astype(dst)
    assert np.array_equal(got, exp, equal_nan=True)


def test_narrow_to_wider_is_exact() -> None:
    for et in (E.FLOAT8E4M3FN, E.FLOAT8E5M2FNUZ, E.FLOAT4E2M1, E.FLOAT6E3M2, E.FLOAT8E8M0, E.BFLOAT16):
        x = random_array(et, 300, np.random.default_rng(1))
        back = cast_array(cast_array(x, E.DOUBLE), et, saturate=False)
        assert back.tobytes() == x.tobytes() or np.array_equal(
            back.astype(np.float64), x.astype(np.float64), equal_nan=True
        ), et


# ------------------------------------------------------------------------------------------ strings


def test_string_parsing() -> None:
    s = np.array([b"3.14", b"1e-5", b"1E8", b"INF", b"+inf", b"-INF", b"NaN", b"nan", b" 2 ", "100"], dtype=object)
    got = cast_array(s, E.FLOAT)
    exp = np.array([3.14, 1e-5, 1e8, np.inf, np.inf, -np.inf, np.nan, np.nan, 2, 100], dtype=np.float32)
    assert np.array_equal(got, exp, equal_nan=True)
    assert cast_array(np.array([b"1000", b"100.5", b"-3", b"300"], dtype=object), E.INT8).tolist() == [-24, 100, -3, 44]
    assert cast_array(np.array([b"18446744073709551615"], dtype=object), E.UINT64).tolist() == [2**64 - 1]
    assert cast_array(np.array([b"true", b"0", b"2.5"], dtype=object), E.BOOL).tolist() == [True, False, True]
    with pytest.raises(TensorError, match="not a number"):
        cast_array(np.array([b"Hello World!"], dtype=object), E.FLOAT)
    with pytest.raises(TensorError):
        parse_number(b"1_000")


def test_number_formatting() -> None:
    x = np.array([0.47892547, 1 / 3, np.nan, np.inf, -np.inf, -0.0, 3.0], dtype=np.float32)
    got = cast_array(x, E.STRING).tolist()
    assert got == [b"0.47892547", b"0.33333334", b"NaN", b"INF", b"-INF", b"-0.0", b"3.0"]
    assert cast_array(np.array([-5, 7], np.int8), E.STRING).tolist() == [b"-5", b"7"]
    assert cast_array(np.array([True, False]), E.STRING).tolist() == [b"1", b"0"]
    assert format_number(ml_dtypes.bfloat16(0.5)) == b"0.5"
    # strings written by a cast read back to the same float32 values
    r = np.random.default_rng(2).random(100).astype(np.float32)
    assert np.array_equal(cast_array(cast_array(r, E.STRING), E.FLOAT), r)
