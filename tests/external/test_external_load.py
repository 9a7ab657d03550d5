"""Reading external data (Clause 13): lazy zero-copy views, every place a tensor can be, the side table."""

from __future__ import annotations

import copy
import gc
import mmap
from pathlib import Path

import numpy as np
import pytest
from ext_helpers import EXTERNAL, add_model, ext_tensor, floats, ref, write_model

import onnxcore
from onnxcore import (
    AttributeProto,
    ExternalDataError,
    FunctionProto,
    GraphProto,
    NodeProto,
    SparseTensorProto,
    TensorProto,
    TrainingInfoProto,
)
from onnxcore.external import (
    ReferenceRule,
    is_resolved,
    load_external_data,
    read_external_tensor_bytes,
    resolution,
    side_table,
    verify_references,
)
from onnxcore.external.tensor_walk import iter_tensors


def _big(tmp_path: Path, n: int = 1 << 19) -> tuple[Path, np.ndarray]:
    """A model whose initializer is 2 MiB in ``w.bin`` (mapped, not read)."""
    data = floats(n)
    (tmp_path / "w.bin").write_bytes(b"\0" * 4096 + data.tobytes())
    path = write_model(tmp_path / "model.onnx", add_model([ext_tensor("w", ref("w.bin", 4096), dims=(n,))], (n,)))
    return path, data


def test_load_gives_a_lazy_zero_copy_view_of_the_mapped_file(tmp_path: Path) -> None:
    path, data = _big(tmp_path)
    model = onnxcore.load(path)
    t = model.graph.initializer[0]
    # The reference stays visible...
    assert t.data_location == EXTERNAL
    assert [(e.key, e.value) for e in t.external_data] == [("location", "w.bin"), ("offset", "4096")]
    # ...and raw_data is a read-only view into a mapping of the file, not a copy.
    raw = t.raw_data
    assert isinstance(raw, memoryview) and raw.readonly
    assert isinstance(raw.obj, mmap.mmap)
    assert raw.nbytes == data.nbytes
    arr = np.frombuffer(raw, dtype="<f4")
    assert np.array_equal(arr, data)
    assert is_resolved(t)
    rec = resolution(t)
    assert rec is not None and (rec.location, rec.offset, rec.length) == ("w.bin", 4096, data.nbytes)
    assert rec.path == str((tmp_path / "w.bin").resolve())


def test_to_array_reads_resolved_and_unresolved_tensors(tmp_path: Path) -> None:
    to_array = pytest.importorskip("onnxcore.types").to_array
    path, data = _big(tmp_path, 1024)
    model = onnxcore.load(path)
    assert np.array_equal(to_array(model.graph.initializer[0]), data)
    lazy = onnxcore.load(path, external_data=False)
    t = lazy.graph.initializer[0]
    assert np.array_equal(to_array(t, base_dir=str(tmp_path)), data)
    assert not t.has("raw_data")  # to_array did not resolve it in place
    with pytest.raises(onnxcore.OnnxCoreError):
        to_array(t)  # no base directory: nothing relative to the working directory


def test_external_data_false_keeps_references_unresolved(tmp_path: Path) -> None:
    path, data = _big(tmp_path, 1024)
    model = onnxcore.load(path, external_data=False)
    t = model.graph.initializer[0]
    assert t.data_location == EXTERNAL and not t.has("raw_data") and not is_resolved(t)
    assert load_external_data(model, tmp_path) is model
    assert is_resolved(t)
    assert np.array_equal(np.frombuffer(t.raw_data, "<f4"), data)


def test_file_object_source_uses_its_directory(tmp_path: Path) -> None:
    path, data = _big(tmp_path, 1024)
    with open(path, "rb") as fh:
        model = onnxcore.load(fh)
    assert np.array_equal(np.frombuffer(model.graph.initializer[0].raw_data, "<f4"), data)


def test_resolution_is_all_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(floats(8).tobytes())
    good = ext_tensor("w", ref("w.bin"))
    bad = ext_tensor("v", ref("missing.bin"))
    path = write_model(tmp_path / "model.onnx", add_model([good, bad]))
    model = onnxcore.load(path, external_data=False)
    with pytest.raises(ExternalDataError) as info:
        load_external_data(model, tmp_path)
    assert (info.value.tensor, info.value.rule) == ("v", ReferenceRule.NOT_FOUND)
    assert not model.graph.initializer[0].has("raw_data")


def test_tensors_sharing_one_file_share_one_mapping(tmp_path: Path) -> None:
    n = 1 << 18
    (tmp_path / "w.bin").write_bytes(floats(2 * n).tobytes())
    a = ext_tensor("a", ref("w.bin", 0, 4 * n), dims=(n,))
    b = ext_tensor("b", ref("./w.bin", 4 * n, 4 * n), dims=(n,))
    model = onnxcore.load(write_model(tmp_path / "model.onnx", add_model([a, b], (n,))))
    ra, rb = (t.raw_data for t in model.graph.initializer)
    assert isinstance(ra, memoryview) and isinstance(rb, memoryview)
    assert ra.obj is rb.obj
    assert np.frombuffer(rb, "<f4")[0] == n


def _places(tmp_path: Path) -> onnxcore.ModelProto:
    """One external tensor in every kind of place Annex B allows a tensor."""
    for i in range(10):
        (tmp_path / f"t{i}.bin").write_bytes(floats(8, 100 * i).tobytes())

    def t(i: int) -> TensorProto:
        return ext_tensor(f"t{i}", ref(f"t{i}.bin"))

    sub = GraphProto(name="body", initializer=[t(1)])
    deeper = GraphProto(
        name="outer_body",
        node=[NodeProto(op_type="If", attribute=[AttributeProto(name="then_branch", type=5, g=sub)])],
    )
    attrs = [
        AttributeProto(name="value", type=AttributeProto.AttributeType.TENSOR, t=t(2)),
        AttributeProto(name="ts", type=AttributeProto.AttributeType.TENSORS, tensors=[t(3)]),
        AttributeProto(
            name="sp",
            type=AttributeProto.AttributeType.SPARSE_TENSOR,
            sparse_tensor=SparseTensorProto(values=t(4), indices=t(5), dims=[8]),
        ),
        AttributeProto(name="gs", type=AttributeProto.AttributeType.GRAPHS, graphs=[deeper]),
    ]
    model = add_model([t(0)])
    model.graph.node.append(NodeProto(op_type="Custom", domain="x", attribute=attrs))
    model.graph.sparse_initializer.append(SparseTensorProto(values=t(6), indices=t(7), dims=[8]))
    fn_node = NodeProto(op_type="Constant", attribute=[AttributeProto(name="value", type=4, t=t(8))])
    model.functions.append(FunctionProto(name="f", domain="x", node=[fn_node]))
    model.training_info.append(TrainingInfoProto(initialization=GraphProto(name="init", initializer=[t(9)])))
    return model


def test_every_place_a_tensor_can_be_is_resolved(tmp_path: Path) -> None:
    path = write_model(tmp_path / "model.onnx", _places(tmp_path))
    model = onnxcore.load(path)
    found = {t.name: t for _, t in iter_tensors(model)}
    assert sorted(found) == [f"t{i}" for i in range(10)]
    for i in range(10):
        assert is_resolved(found[f"t{i}"])
        assert np.array_equal(np.frombuffer(found[f"t{i}"].raw_data, "<f4"), floats(8, 100 * i))


@pytest.mark.parametrize("only", range(10))
def test_a_lone_external_tensor_is_resolved_wherever_it_is(tmp_path: Path, only: int) -> None:
    # A load resolves when the decode listed an EXTERNAL tensor (decoder.decode_recording): the one external tensor
    # of the model, in each place in turn, the others inline, is found and resolved however deep it is.
    model = _places(tmp_path)
    for _, t in iter_tensors(model):
        if t.name != f"t{only}":
            t.data_location = TensorProto.DataLocation.DEFAULT
            del t.external_data[:]
            t.raw_data = floats(8).tobytes()
    path = write_model(tmp_path / "model.onnx", model)
    found = {t.name: t for _, t in iter_tensors(onnxcore.load(path))}
    assert is_resolved(found[f"t{only}"])
    assert np.array_equal(np.frombuffer(found[f"t{only}"].raw_data, "<f4"), floats(8, 100 * only))


def test_the_decode_records_every_tensor_it_makes(tmp_path: Path) -> None:
    from onnxcore.proto.decoder import decode_recording

    data = onnxcore.encode(_places(tmp_path))
    for source in (data, memoryview(bytearray(data))[0:]):  # the bytes decoders and the memoryview ones
        model, recorded = decode_recording(onnxcore.ModelProto, source)
        assert sorted(map(id, recorded)) == sorted(id(t) for _, t in iter_tensors(model))
    tensor, recorded = decode_recording(TensorProto, onnxcore.encode(TensorProto(name="t", dims=[0])))
    assert recorded == [tensor]


def test_a_model_without_external_tensors_is_not_walked_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its inline tensors were listed by the decode, none EXTERNAL: the walk over every node is skipped.
    import onnxcore.external.read as read

    def walk(*args: object) -> None:
        raise AssertionError("walked")

    model = _places(tmp_path)
    for _, t in iter_tensors(model):
        t.data_location = TensorProto.DataLocation.DEFAULT
        del t.external_data[:]
        t.raw_data = floats(8).tobytes()
    path = write_model(tmp_path / "model.onnx", model)
    monkeypatch.setattr(read, "iter_tensors", walk)
    assert onnxcore.load(path) == model


def test_every_place_is_checked(tmp_path: Path) -> None:
    model = _places(tmp_path)
    for _, t in iter_tensors(model):
        t.external_data[0].value = "../" + t.external_data[0].value
    path = write_model(tmp_path / "model.onnx", model)
    errors = verify_references(onnxcore.load(path, external_data=False), tmp_path)
    assert sorted(e.tensor for e in errors) == [f"t{i}" for i in range(10)]  # type: ignore[type-var]
    assert {e.rule for e in errors} == {ReferenceRule.LOCATION_PARENT}
    with pytest.raises(ExternalDataError):
        onnxcore.load(path)


def test_verify_references_on_a_resolved_model(tmp_path: Path) -> None:
    path, _ = _big(tmp_path, 1024)
    model = onnxcore.load(path)
    assert verify_references(model, None) == []  # verified at load
    assert verify_references(model, tmp_path) == []  # and again on disk
    (tmp_path / "w.bin").write_bytes(b"short")
    assert [e.rule for e in verify_references(model, tmp_path)] == [ReferenceRule.OUT_OF_BOUNDS]


def test_read_external_tensor_bytes(tmp_path: Path) -> None:
    path, data = _big(tmp_path, 1024)
    lazy = onnxcore.load(path, external_data=False)
    t = lazy.graph.initializer[0]
    view = read_external_tensor_bytes(t, tmp_path)
    assert bytes(view) == data.tobytes()
    with pytest.raises(ExternalDataError) as info:
        read_external_tensor_bytes(t)
    assert info.value.rule == ReferenceRule.NO_BASE_DIR
    resolved = onnxcore.load(path).graph.initializer[0]
    assert read_external_tensor_bytes(resolved) is resolved.raw_data
    with pytest.raises(ExternalDataError) as info:
        read_external_tensor_bytes(TensorProto(name="x", data_type=1, dims=[1], raw_data=b"\0" * 4))
    assert info.value.rule == ReferenceRule.NOT_EXTERNAL


def test_copies_stay_resolved_and_replacing_raw_data_does_not(tmp_path: Path) -> None:
    path, data = _big(tmp_path, 1024)
    model = onnxcore.load(path)
    dup = copy.deepcopy(model)
    assert is_resolved(dup.graph.initializer[0])
    t = model.graph.initializer[0]
    t.raw_data = memoryview(data.tobytes())  # a view, but not the registered one
    assert not is_resolved(t)
    assert [e.rule for e in verify_references(model, None)] == [ReferenceRule.INLINE_AND_EXTERNAL]


def test_side_table_holds_nothing_alive(tmp_path: Path) -> None:
    path, _ = _big(tmp_path, 1024)
    gc.collect()
    before = len(side_table._TABLE)
    model = onnxcore.load(path)
    assert len(side_table._TABLE) == before + 1
    del model
    gc.collect()
    assert len(side_table._TABLE) == before


def test_model_without_external_data_from_octets(tmp_path: Path) -> None:
    model = add_model([TensorProto(name="w", data_type=1, dims=[2], raw_data=floats(2).tobytes())])
    loaded = onnxcore.load(onnxcore.encode(model))  # nothing to resolve, no directory needed
    assert loaded == model


def test_parse_reference_tells_a_resolved_view_from_inline_contents(tmp_path: Path) -> None:
    from onnxcore.external import parse_reference

    path, _ = _big(tmp_path, 1024)
    t = onnxcore.load(path).graph.initializer[0]
    assert parse_reference(t, "w").location == "w.bin"  # the side table says it is the resolution
    with pytest.raises(ExternalDataError) as info:
        parse_reference(t, "w", inline_ok=False)
    assert info.value.rule == ReferenceRule.INLINE_AND_EXTERNAL


def test_check_accepts_a_model_loaded_with_external_data(tmp_path: Path) -> None:
    check = onnxcore.check
    path, _ = _big(tmp_path, 1024)
    report = check(onnxcore.load(path))
    assert not [f for f in report.errors if "13" in f.clause or "15" in f.clause], report.errors


def test_walk_order_and_paths(tmp_path: Path) -> None:
    found = list(iter_tensors(_places(tmp_path)))
    # Document order: Annex B's field order at every level (graph.node before graph.initializer,
    # ModelProto.training_info before ModelProto.functions).
    assert [t.name for _, t in found] == ["t2", "t3", "t4", "t5", "t1", "t0", "t6", "t7", "t9", "t8"]
    paths = {t.name: p for p, t in found}
    assert paths["t1"] == "graph.node[1].attribute[3].graphs[0].node[0].attribute[0].g.initializer[0]"
    assert paths["t5"] == "graph.node[1].attribute[2].sparse_tensor.indices"
    assert paths["t8"] == "functions[0].node[0].attribute[0].t"
    assert paths["t9"] == "training_info[0].initialization.initializer[0]"
    assert list(iter_tensors(found[0][1], "x")) == [("x", found[0][1])]


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_verifying_many_files_holds_few_descriptors(tmp_path: Path) -> None:
    import hashlib
    import resource

    ts = []
    for i in range(150):
        blob = floats(8, i).tobytes()
        (tmp_path / f"t{i}.bin").write_bytes(blob)
        entries = ref(f"t{i}.bin")
        if i % 2:
            entries.append(("checksum", hashlib.sha1(blob).hexdigest()))
        ts.append(ext_tensor(f"t{i}", entries))
    model = add_model(ts)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(list(Path("/proc/self/fd").iterdir()))
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 16, hard))
    try:
        errors = verify_references(model, tmp_path)
        load_external_data(model, tmp_path)  # small files are read, not mapped: no descriptor kept
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert errors == []
    assert np.array_equal(np.frombuffer(model.graph.initializer[149].raw_data, "<f4"), floats(8, 149))


def test_a_file_reopened_for_its_checksum_must_be_the_same_file(tmp_path: Path) -> None:
    import hashlib

    from onnxcore.external.reference import parse_reference
    from onnxcore.external.resolve import Resolver

    blob = floats(8).tobytes()
    (tmp_path / "w.bin").write_bytes(blob)
    first = parse_reference(ext_tensor("a", ref("w.bin")), "a")
    second = parse_reference(ext_tensor("b", [*ref("w.bin"), ("checksum", hashlib.sha1(blob).hexdigest())]), "b")
    with Resolver(tmp_path, keep_open=False) as r:
        r.check("a", first)
        (tmp_path / "new.bin").write_bytes(blob)
        (tmp_path / "new.bin").replace(tmp_path / "w.bin")  # same octets, another file
        with pytest.raises(ExternalDataError) as info:
            r.check("b", second)
    assert info.value.rule == ReferenceRule.IDENTITY


def test_base_dir_of_sources(tmp_path: Path) -> None:
    import io

    from onnxcore.external import base_dir_of

    path, _ = _big(tmp_path, 1024)
    assert base_dir_of(path) == str(tmp_path.resolve())
    assert base_dir_of(str(path)) == str(tmp_path.resolve())
    assert base_dir_of(path.read_bytes()) is None
    assert base_dir_of(io.BytesIO(path.read_bytes())) is None
    with open(path, "rb") as fh:
        assert base_dir_of(fh) == str(tmp_path.resolve())
        path.rename(tmp_path / "moved.onnx")
        (tmp_path / "model.onnx").write_bytes(b"")  # the name now names another file
        assert base_dir_of(fh) is None
        with pytest.raises(ExternalDataError) as info:
            onnxcore.load(fh)
        assert info.value.rule == ReferenceRule.NO_BASE_DIR
