"""What the corpus knows about each script: the lines allowed to differ (with why) and the known gaps.

Every entry here is listed in docs/compatibility.md. A script without an entry must print the same in both
runs, up to the normalisation of ``runner.normalise`` and the number tolerance of ``runner.compare_outputs``.
"""

from __future__ import annotations

from tests.compat.runner import Expected, Mask

_TIMING = Mask(r"^(Average |time with )", "a timing: differs between any two runs", volatile=True)

EXPECTED: dict[str, Expected] = {
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
