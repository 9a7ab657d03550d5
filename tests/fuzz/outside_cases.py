"""The outside campaign's findings (issue 41), rebuilt as saved fuzz cases.

Each builder returns one fuzz input (see :mod:`fuzz_worker`) and the note that says what it found. Run as a
script to (re)write them under ``tests/fuzz/cases/`` (``outside-*``), where the suite replays them with every
other saved case::

    PYTHONPATH=src python tests/fuzz/outside_cases.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_mutate as fm

T = TensorProto
Case = tuple[dict[str, Any], str]
BUILDERS: dict[str, Callable[[], Case]] = {}


def case(name: str) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    def register(fn: Callable[[], Case]) -> Callable[[], Case]:
        BUILDERS[name] = fn
        return fn

    return register


def _model(
    nodes: list[Any], inputs: list[Any], outputs: list[Any], *, opset: int = 21, inits: Any = (), **kw: Any
) -> bytes:
    g = helper.make_graph(nodes, "outside", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset), *kw.pop("extra_opsets", [])]
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = kw.pop("ir_version", 10)
    return m.SerializeToString()


def _vi(name: str, elem: int, shape: Any) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def _out(elem: int, rank: int) -> Any:
    """The graph output ``Y`` of ``rank`` named extents (a top-level output states its rank, Clause 7.1)."""
    return _vi("Y", elem, [f"y{k}" for k in range(rank)])


def _session(model: bytes, feeds: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"target": "session", "model": model, "feeds": {k: fm.value_spec(v) for k, v in feeds.items()}, **kw}


def _i64(name: str, values: list[int]) -> Any:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


# -- foreign exceptions from feed conversion -------------------------------------------------------


@case("stringnormalizer-int-feed")
def _sn() -> Case:
    m = _model(
        [helper.make_node("StringNormalizer", ["X"], ["Y"], case_change_action="UPPER")],
        [_vi("X", T.STRING, [None])],
        [_out(T.STRING, 1)],
    )
    return _session(m, {"X": np.array([3, 4], dtype=np.int32)}), "a feed of int32 for a STRING input"


@case("stringnormalizer-str-for-int")
def _sn2() -> Case:
    m = _model([helper.make_node("Identity", ["X"], ["Y"])], [_vi("X", T.INT32, [None])], [_out(T.INT32, 1)])
    return _session(m, {"X": np.array(["monday", "x"])}), "a feed of strings for an int32 input"


@case("castlike-f8-str-feed")
def _cl() -> Case:
    m = _model(
        [helper.make_node("CastLike", ["X", "L"], ["Y"])],
        [_vi("X", T.FLOAT8E5M2FNUZ, [3]), _vi("L", T.FLOAT, [1])],
        [_out(T.FLOAT, 1)],
    )
    x = np.array(["1.5", "abc", "nan"])
    return _session(m, {"X": x, "L": np.zeros(1, np.float32)}), "a feed of '<U3' strings for a FLOAT8E5M2FNUZ input"


# -- hangs -------------------------------------------------------------------------------------------


def _loop(trip: int | None, cond: str) -> bytes:
    """A Loop adding one to a carried value; ``cond`` is ``none`` (no cond input), ``given`` (a true constant the
    body passes on) or ``computed`` (the body computes ``i < trip``-like truth each time)."""
    body_nodes = [helper.make_node("Add", ["v_in", "one"], ["v_out"])]
    if cond == "computed":
        body_nodes.append(helper.make_node("Greater", ["big", "i"], ["c_out"]))
    else:
        body_nodes.append(helper.make_node("Identity", ["c_in"], ["c_out"]))
    body = helper.make_graph(
        body_nodes,
        "body",
        [_vi("i", T.INT64, []), _vi("c_in", T.BOOL, []), _vi("v_in", T.FLOAT, [1])],
        [_vi("c_out", T.BOOL, []), _vi("v_out", T.FLOAT, [1])],
        [
            numpy_helper.from_array(np.ones(1, np.float32), "one"),
            numpy_helper.from_array(np.array((1 << 62), np.int64), "big"),
        ],
    )
    inits = [numpy_helper.from_array(np.array(True), "cond")]
    if trip is not None:
        inits.append(numpy_helper.from_array(np.array(trip, np.int64), "M"))
    loop = helper.make_node(
        "Loop", ["M" if trip is not None else "", "" if cond == "none" else "cond", "V"], ["R"], body=body
    )
    return _model([loop], [_vi("V", T.FLOAT, [1])], [_vi("R", T.FLOAT, [1])], inits=inits)


for _trip in ((1 << 31) + 1, 1 << 40, (1 << 63) - 1):
    for _cond in ("none", "given", "computed"):

        def _make(trip: int = _trip, cond: str = _cond) -> Case:
            inp = _session(_loop(trip, cond), {"V": np.zeros(1, np.float32)}, expected="refused")
            return inp, f"Loop with trip count {trip} above max_loop_iterations, cond {cond}: ran instead of refused"

        BUILDERS[f"loop-trip-{_trip}-{_cond}"] = _make


@case("loop-1e8-untrusted")
def _loop_many() -> Case:
    inp = _session(_loop(10**8, "given"), {"V": np.zeros(1, np.float32)}, expected="refused", preset="untrusted")
    return inp, "Loop of 10**8 iterations of a trivial body: no default deadline for a model one does not trust"


@case("dft-huge-length")
def _dft() -> Case:
    m = _model(
        [helper.make_node("DFT", ["X", "L", ""], ["Y"])],
        [_vi("X", T.FLOAT, [1, 4, 1])],
        [_out(T.FLOAT, 3)],
        opset=20,
        inits=[numpy_helper.from_array(np.array(1 << 40, np.int64), "L")],
    )
    return _session(m, {"X": np.ones((1, 4, 1), np.float32)}, expected="refused"), "DFT with a huge dft_length"


def _constant_of_shape(shape: list[int], preset: str | None = None) -> dict[str, Any]:
    m = _model(
        [helper.make_node("ConstantOfShape", ["S"], ["Y"])],
        [],
        [_out(T.FLOAT, len(shape))],
        inits=[_i64("S", shape)],
    )
    extra = {"preset": preset} if preset else {}
    return _session(m, {}, expected="refused", **extra)


@case("constantofshape-huge")
def _cos() -> Case:
    return _constant_of_shape([1 << 16, 1 << 16, 16]), "ConstantOfShape of a huge static shape (2**36 floats)"


@case("constantofshape-1gib-untrusted")
def _cos_rss() -> Case:
    return _constant_of_shape([3 << 28], "untrusted"), "ConstantOfShape of 3 GiB: a run above 1 GiB of memory"


@case("regex-counted-repetition")
def _re() -> Case:
    m = _model(
        [helper.make_node("RegexFullMatch", ["X"], ["Y"], pattern="(a{1,100}){1,100}$")],
        [_vi("X", T.STRING, [1])],
        [_vi("Y", T.BOOL, [1])],
        opset=20,
    )
    x = np.array(["a" * 10_000], dtype=object)
    return _session(
        m, {"X": x}, expected="refused"
    ), "RegexFullMatch (a{1,100}){1,100}$ on 10,000 characters: 10 s, 1.6 GB"


def _conv(**attrs: Any) -> bytes:
    return _model(
        [helper.make_node("Conv", ["X", "W"], ["Y"], **attrs)],
        [_vi("X", T.FLOAT, [1, 1, 8, 8])],
        [_out(T.FLOAT, 4)],
        inits=[numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "W")],
    )


@case("conv-huge-strides")
def _conv_strides() -> Case:
    m = _conv(strides=[(1 << 63) - 1, (1 << 63) - 1])
    inp = _session(m, {"X": np.ones((1, 1, 8, 8), np.float32)}, expected="refused", unchecked=True)
    return inp, "Conv with strides 2**63 - 1: stuck in C for 45 s"


@case("conv-huge-pads")
def _conv_pads() -> Case:
    m = _conv(pads=[1 << 20, 1 << 20, 1 << 20, 1 << 20])
    inp = _session(m, {"X": np.ones((1, 1, 8, 8), np.float32)}, expected="refused")
    return inp, "Conv with pads of 2**20: MemoryError inside the kernel"


def _external(offset: int, size: int) -> dict[str, Any]:
    w = np.arange(16, dtype=np.float32).reshape(4, 4)
    t = numpy_helper.from_array(w, "W")
    t.ClearField("raw_data")
    t.data_location = T.EXTERNAL
    for k, v in (("location", "big.bin"), ("offset", str(offset)), ("length", "64"), ("checksum", "0" * 40)):
        e = t.external_data.add()
        e.key, e.value = k, v
    m = _model(
        [helper.make_node("Add", ["X", "W"], ["Y"])],
        [_vi("X", T.FLOAT, [4, 4])],
        [_vi("Y", T.FLOAT, [4, 4])],
        opset=17,
        inits=[t],
        ir_version=8,
    )
    inp = {
        "target": "external",
        "model": m,
        "files": {"m/big.bin": {"sparse": size}},
        "feeds": {"X": ["array", "float32", [4, 4], "random", 1]},
        "expected": "refused",
    }
    return inp


@case("external-offset-2-40-checksum")
def _ext() -> Case:
    inp = _external(1 << 40, (1 << 40) + 64)
    return inp, "an external tensor at offset 2**40 with a checksum: the sparse file hashed for minutes"


@case("external-sparse-1tib-checksum")
def _ext2() -> Case:
    inp = _external((1 << 40) - 64, 1 << 40)
    return inp, "an external tensor at the end of a sparse file of 1 TiB (max_external_file_bytes) with a checksum"


# -- MemoryErrors inside kernels, and runs above 1 GiB ------------------------------------------------


def _one(
    op: str,
    rank: int,
    inputs: list[tuple[str, Any]],
    inits: list[Any],
    *,
    opset: int = 21,
    out: int = T.FLOAT,
    preset: str | None = None,
    domain: str = "",
    **attrs: Any,
) -> dict[str, Any]:
    """One node; ``inputs`` are (name, value) fed; ``inits`` initializers; every input declared from its value."""
    names = [n for n, _ in inputs] + [i.name for i in inits]
    node = helper.make_node(op, names, ["Y"], domain=domain or None, **attrs)
    vis = [
        _vi(
            n,
            helper.np_dtype_to_tensor_dtype(v.dtype)
            if not isinstance(v, np.ndarray) or v.dtype != object
            else T.STRING,
            list(v.shape),
        )
        for n, v in inputs
    ]
    extra = [helper.make_opsetid(domain, 1)] if domain else []
    m = _model([node], vis, [_out(out, rank)], opset=opset, inits=inits, extra_opsets=extra)
    kw = {"expected": "refused", "unchecked": True} | ({"preset": preset} if preset else {})
    return _session(m, dict(inputs), **kw)


@case("onehot-huge-depth")
def _onehot() -> Case:
    inp = _one(
        "OneHot",
        2,
        [("I", np.arange(64, dtype=np.int64))],
        [_i64("D", [1 << 30]), numpy_helper.from_array(np.array([0, 1], np.float32), "V")],
    )
    return inp, "OneHot with a huge depth (kernels/indexing.py)"


@case("multinomial-sample-size")
def _multinomial() -> Case:
    inp = _one("Multinomial", 2, [("X", np.zeros((1024, 4), np.float32))], [], out=T.INT32, sample_size=1 << 30)
    return inp, "Multinomial sample_size (kernels/random.py)"


@case("centercroppad-huge")
def _ccp() -> Case:
    inp = _one("CenterCropPad", 2, [("X", np.ones((4, 4), np.float32))], [_i64("S", [1 << 17, 1 << 17])])
    return inp, "CenterCropPad to a huge shape (kernels/tensor_layout.py)"


@case("matmul-broadcast-feed")
def _matmul() -> Case:
    # A (1, 1, 64) feed viewed as (2**20, 1, 64) by broadcasting: a few octets fed, 64 GiB of output asked for.
    m = _model(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])],
        [_vi("X", T.FLOAT, [None, 1, 64])],
        [_out(T.FLOAT, 3)],
        inits=[numpy_helper.from_array(np.ones((64, 1 << 14), np.float32), "W")],
    )
    inp = {
        "target": "session",
        "model": m,
        "expected": "refused",
        "feeds": {"X": ["broadcast", ["array", "float32", [1], "random", 3], [1 << 20, 1, 64]]},
    }
    return inp, "a broadcast feed reaching MatMul (kernels/linalg.py)"


@case("linear-broadcast-feed")
def _linear() -> Case:
    # MatMul + Add: the plan fuses them into its linear step (runtime/optimize/linear.py).
    m = _model(
        [helper.make_node("MatMul", ["X", "W"], ["T"]), helper.make_node("Add", ["T", "B"], ["Y"])],
        [_vi("X", T.FLOAT, [None, 64])],
        [_out(T.FLOAT, 2)],
        inits=[
            numpy_helper.from_array(np.ones((64, 1 << 14), np.float32), "W"),
            numpy_helper.from_array(np.ones((1 << 14,), np.float32), "B"),
        ],
    )
    inp = {
        "target": "session",
        "model": m,
        "expected": "refused",
        "feeds": {"X": ["broadcast", ["array", "float32", [1], "random", 3], [1 << 20, 64]]},
    }
    return inp, "a broadcast feed reaching the fused linear step (runtime/optimize/linear.py)"


@case("maxroipool-huge")
def _mrp() -> Case:
    inp = _one(
        "MaxRoiPool",
        4,
        [("X", np.ones((1, 1, 4, 4), np.float32)), ("R", np.array([[0, 0, 0, 3, 3]] * 4, np.float32))],
        [],
        pooled_shape=[1 << 16, 1 << 16],
    )
    return inp, "MaxRoiPool with a huge pooled_shape (kernels/roi_pool.py)"


@case("roialign-huge")
def _roialign() -> Case:
    inp = _one(
        "RoiAlign",
        4,
        [
            ("X", np.ones((1, 1, 4, 4), np.float32)),
            ("R", np.array([[0, 0, 3, 3]] * 4, np.float32)),
            ("B", np.zeros(4, np.int64)),
        ],
        [],
        output_height=1 << 16,
        output_width=1 << 16,
    )
    return inp, "RoiAlign with a huge output (kernels/roi_pool.py)"


@case("roialign-sampling-ratio")
def _roialign_sr() -> Case:
    inp = _one(
        "RoiAlign",
        4,
        [
            ("X", np.ones((1, 1, 4, 4), np.float32)),
            ("R", np.array([[0, 0, 3, 3]], np.float32)),
            ("B", np.zeros(1, np.int64)),
        ],
        [],
        output_height=64,
        output_width=64,
        sampling_ratio=1 << 20,
    )
    return inp, "RoiAlign with a huge sampling_ratio (kernels/roi_pool.py)"


@case("maxunpool-huge")
def _maxunpool() -> Case:
    inp = _one(
        "MaxUnpool",
        4,
        [("X", np.ones((1, 1, 2, 2), np.float32)), ("I", np.zeros((1, 1, 2, 2), np.int64))],
        [_i64("S", [1, 1, 1 << 17, 1 << 17])],
        kernel_shape=[2, 2],
    )
    return inp, "MaxUnpool with a huge output_shape (kernels/roi_pool.py)"


@case("maxunpool-huge-strides")
def _maxunpool2() -> Case:
    inp = _one(
        "MaxUnpool",
        4,
        [("X", np.ones((1, 1, 2, 2), np.float32)), ("I", np.zeros((1, 1, 2, 2), np.int64))],
        [],
        kernel_shape=[2, 2],
        strides=[1 << 17, 1 << 17],
    )
    return inp, "MaxUnpool with huge strides (kernels/roi_pool.py)"


@case("affinegrid-huge")
def _affine() -> Case:
    inp = _one(
        "AffineGrid", 4, [("Th", np.zeros((1, 2, 3), np.float32))], [_i64("S", [1, 1, 1 << 16, 1 << 16])], opset=20
    )
    return inp, "AffineGrid of a huge size (kernels/sampling.py)"


@case("convtranspose-huge-strides")
def _convt() -> Case:
    inp = _one(
        "ConvTranspose",
        4,
        [("X", np.ones((1, 1, 4, 4), np.float32))],
        [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "W")],
        strides=[1 << 16, 1 << 16],
    )
    return inp, "ConvTranspose with huge strides"


@case("convtranspose-huge-pads")
def _convt_pads() -> Case:
    inp = _one(
        "ConvTranspose",
        4,
        [("X", np.ones((1, 1, 4, 4), np.float32))],
        [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "W")],
        pads=[-(1 << 17)] * 4,
    )
    return inp, "ConvTranspose with huge (negative) pads"


@case("lppool-huge-pads")
def _lppool() -> Case:
    inp = _one("LpPool", 4, [("X", np.ones((1, 1, 4, 4), np.float32))], [], kernel_shape=[2, 2], pads=[1 << 17] * 4)
    return inp, "LpPool with huge pads"


@case("lppool-huge-kernel")
def _lppool2() -> Case:
    inp = _one(
        "LpPool", 4, [("X", np.ones((1, 1, 4, 4), np.float32))], [], kernel_shape=[1 << 15, 1 << 15], pads=[1 << 15] * 4
    )
    return inp, "LpPool with a huge kernel"


@case("hannwindow-huge")
def _hann() -> Case:
    inp = _one("HannWindow", 1, [], [numpy_helper.from_array(np.array(1 << 33, np.int64), "N")], opset=17)
    return inp, "HannWindow of a huge size (a run above 1 GiB)"


@case("hannwindow-1gib-untrusted")
def _hann_rss() -> Case:
    inp = _one(
        "HannWindow", 1, [], [numpy_helper.from_array(np.array(3 << 26, np.int64), "N")], opset=17, preset="untrusted"
    )
    return inp, "HannWindow of 3 * 2**26 floats: a run above 1 GiB of memory"


@case("blackmanwindow-huge")
def _blackman() -> Case:
    inp = _one("BlackmanWindow", 1, [], [numpy_helper.from_array(np.array(1 << 33, np.int64), "N")], opset=17)
    return inp, "BlackmanWindow of a huge size"


@case("hammingwindow-1gib-untrusted")
def _hamming() -> Case:
    inp = _one(
        "HammingWindow",
        1,
        [],
        [numpy_helper.from_array(np.array(3 << 26, np.int64), "N")],
        opset=17,
        preset="untrusted",
    )
    return inp, "HammingWindow of 3 * 2**26 floats: a run above 1 GiB of memory"


@case("dft-huge-input-length")
def _dft2() -> Case:
    m = _model(
        [helper.make_node("DFT", ["X", "L", ""], ["Y"], onesided=0)],
        [_vi("X", T.FLOAT, [64, 4, 1])],
        [_out(T.FLOAT, 3)],
        opset=20,
        inits=[numpy_helper.from_array(np.array(1 << 24, np.int64), "L")],
    )
    return _session(m, {"X": np.ones((64, 4, 1), np.float32)}, expected="refused"), "DFT: a 16 GiB output"


@case("tile-huge")
def _tile() -> Case:
    inp = _one("Tile", 2, [("X", np.ones((4, 4), np.float32))], [_i64("R", [1 << 15, 1 << 15])])
    return inp, "Tile of a huge size"


@case("expand-huge")
def _expand() -> Case:
    inp = _one("Expand", 2, [("X", np.ones((1, 1), np.float32))], [_i64("S", [1 << 17, 1 << 17])])
    return inp, "Expand to a huge shape"


@case("range-huge")
def _range() -> Case:
    inp = _one(
        "Range",
        1,
        [],
        [
            numpy_helper.from_array(np.array(0, np.float32), "A"),
            numpy_helper.from_array(np.array(3e12, np.float32), "B"),
            numpy_helper.from_array(np.array(1, np.float32), "C"),
        ],
    )
    return inp, "Range of 3e12 elements"


@case("resize-huge")
def _resize() -> Case:
    inp = _one(
        "Resize",
        4,
        [("X", np.ones((1, 1, 4, 4), np.float32))],
        [
            numpy_helper.from_array(np.zeros(0, np.float32), "R"),
            numpy_helper.from_array(np.array([1, 1, 1 << 16, 1 << 16], np.float32), "Sc"),
        ],
    )
    return inp, "Resize by huge scales"


@case("pad-huge")
def _pad() -> Case:
    inp = _one("Pad", 2, [("X", np.ones((4, 4), np.float32))], [_i64("P", [1 << 16, 1 << 16, 1 << 16, 1 << 16])])
    return inp, "Pad by huge widths"


def main() -> int:
    import campaign

    for old in campaign.CASES.glob("outside-*"):
        old.unlink()
    for name, build in BUILDERS.items():
        inp, note = build()
        inp["seed_model"] = name
        expected = inp.pop("expected", None)
        path = campaign.save_case(inp, ("failure", note), expected=expected)
        target = path.with_name(f"outside-{name}.json")
        path.replace(target)
        gz = path.with_name(path.name[: -len(".json")] + ".onnx.gz")
        gz.replace(target.with_name(f"outside-{name}.onnx.gz"))
        print(target.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
