"""Zero error findings on the ONNX 1-3 node test vectors and on the models shipped in the onnx wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

import onnxcore

corpus = pytest.importorskip("corpus")


def _errors(paths: list[Path]) -> list[str]:
    bad = []
    for p in paths:
        report = onnxcore.check(p)
        bad.extend(f"{p.parent.name}: {f}" for f in report.errors)
    return bad


def test_node_test_vectors_have_no_errors(node_cases: list[Path]) -> None:
    paths = [d / "model.onnx" for d in node_cases]
    assert len(paths) > 1000
    assert _errors(paths) == []


def test_shipped_models_have_no_errors() -> None:
    paths = corpus.shipped_models()
    assert paths
    assert _errors(paths) == []


def test_torch_export_has_no_errors(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x: object) -> object:
            y = torch.relu(self.conv(x)).mean(dim=(2, 3))
            return torch.softmax(self.fc(y), dim=-1)

    path = tmp_path / "net.onnx"
    torch.onnx.export(Net().eval(), (torch.randn(1, 3, 8, 8),), str(path))
    report = onnxcore.check(path)
    assert report.errors == [], str(report)


def test_skl2onnx_export_has_no_errors(tmp_path: Path) -> None:
    skl2onnx = pytest.importorskip("skl2onnx")
    np = pytest.importorskip("numpy")
    linear = pytest.importorskip("sklearn.linear_model")
    x = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    clf = linear.LogisticRegression().fit(x, y)
    onx = skl2onnx.to_onnx(clf, x[:1])
    path = tmp_path / "lr.onnx"
    path.write_bytes(onx.SerializeToString())
    report = onnxcore.check(path)
    assert report.errors == [], str(report)


def test_the_bundled_model_has_no_errors() -> None:
    bundled = Path(onnxcore.__file__).parent / "data" / "iris_mlp.onnx"
    if not bundled.exists():
        pytest.skip("no bundled model")
    assert onnxcore.check(bundled).errors == []
