"""What the corpus knows about each script: the lines allowed to differ (with why) and the known gaps.

Every entry here is listed in docs/compatibility.md. A script without an entry must print the same in both
runs, up to the normalisation of ``runner.normalise`` and the number tolerance of ``runner.compare_outputs``.
"""

from __future__ import annotations

from tests.compat.runner import Expected, Mask

_TIMING = Mask(r"^(Average |time with )", "a timing: differs between any two runs", volatile=True)

EXPECTED: dict[str, Expected] = {
    "skl_plot_dbegin_options_list": Expected(
        masks=[Mask(r"^\d+\.\d+(e-?\d+)?$", "a timing (`print(timeit(...))`)", volatile=True)]
    ),
    "skl_plot_gexternal_lightgbm": Expected(
        masks=[Mask(r"^\[LightGBM\] \[Info\] Auto-choosing", "LightGBM's training log gives a timing", volatile=True)]
    ),
    "skl_plot_gbegin_dataframe": Expected(
        masks=[
            Mask(
                r"^('numpy.ndarray' object is not callable|.*got DataFrame)",
                "a DataFrame given as the whole feed, which both refuse: onnxruntime's message is an accident of "
                "its implementation (it calls the frame's `values` as a method), onnxcore's says the feed must be "
                "a dict of input names",
            )
        ]
    ),
    "ort_plot_train_convert_predict": Expected(masks=[_TIMING]),
    "ort_plot_profiling": Expected(
        masks=[
            Mask(
                r"\.json$",
                "the profile: its file name holds the time of the run, its events their durations, and the two "
                "runtimes name their events differently (both write a JSON list of Chrome trace events)",
                volatile=True,
                rest=True,
            )
        ]
    ),
}
