"""Time to first result: what `import onnxcore` and a first session load (issue 42, item 3).

ml_dtypes 0.7 takes about half a second to import; onnxcore loads it only when a model uses one of the types
numpy lacks (bfloat16, float8, float6, float4, int4, int2, ...). Each check runs in a fresh interpreter, since the
test process has loaded everything already.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnxcore

BUNDLED = sorted((Path(onnxcore.__file__).resolve().parent / "data").glob("*.onnx"))[0]


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_float_model_runs_without_importing_ml_dtypes():
    out = _fresh(
        "import sys, numpy as np, onnxcore as oc\n"
        f"s = oc.InferenceSession({str(BUNDLED)!r})\n"
        "i = s.get_inputs()[0]\n"
        "shape = [1 if not isinstance(d, int) else d for d in i.shape]\n"
        "s.run(None, {i.name: np.zeros(shape, np.float32)})\n"
        "oc.check(" + repr(str(BUNDLED)) + ")\n"
        "print('ml_dtypes' in sys.modules)"
    )
    assert out == "False"


def test_a_narrow_type_loads_ml_dtypes_on_first_use():
    out = _fresh(
        "import sys, numpy as np\n"
        "from onnxcore.types.elements import ElementType\n"
        "before = 'ml_dtypes' in sys.modules\n"
        "dt = ElementType.BFLOAT16.np_dtype\n"
        "import ml_dtypes\n"
        "print(before, dt == np.dtype(ml_dtypes.bfloat16), ElementType.from_dtype(ml_dtypes.float8_e4m3fn).name)"
    )
    assert out == "False True FLOAT8E4M3FN"


def test_from_dtype_finds_a_narrow_type_before_any_lookup():
    # A caller holding an ml_dtypes array has imported ml_dtypes; the reverse lookup must still find its type
    # although no ElementType asked for its dtype yet.
    out = _fresh(
        "import ml_dtypes, numpy as np\n"
        "from onnxcore.types.elements import ElementType\n"
        "from onnxcore.kernels._util import is_narrow_float\n"
        "print(ElementType.from_dtype(np.dtype(ml_dtypes.int4)).name, is_narrow_float(ml_dtypes.bfloat16),"
        " is_narrow_float(np.float32))"
    )
    assert out == "INT4 True False"


def test_the_check_command_loads_no_evaluator():
    # `onnxcore check` from a cold process imports the validator alone: not the runtime, the kernels' operator
    # families, conversion or the report (the evaluator's import is most of a cold command's time).
    out = _fresh(
        "import sys\n"
        "from onnxcore.cli import main\n"
        "try:\n"
        f"    main(['check', {str(BUNDLED)!r}])\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, None), e.code\n"
        "loaded = [m for m in ('onnxcore.runtime', 'onnxcore.convert', 'onnxcore.reporting', 'ml_dtypes')"
        " if m in sys.modules]\n"
        "print(loaded)"
    )
    assert out.splitlines()[-1] == "[]"
