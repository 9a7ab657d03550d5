"""Consistency of the attributes of the ONNX operators whose attributes size each other or their output (Clause
7.3.1): ``Constant`` (exactly one value), ``ConstantOfShape`` (a one-element value), ``TfIdfVectorizer`` (the pool,
its n-gram starts, the output indexes and the weights). Like :mod:`onnxcore.validate.rules_ml`, one rule per
operator, naming the attribute; a model breaking one cannot be evaluated as defined.
"""

from __future__ import annotations

from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context
from onnxcore.validate.sized import Attrs, Found, nodes_of, one_of

__all__: list[str] = []

CLAUSE = "7.3.1"

_CONSTANT_VALUES = (
    "value",
    "value_float",
    "value_floats",
    "value_int",
    "value_ints",
    "value_string",
    "value_strings",
    "sparse_value",
)


@rule("E-OP-CONSTANT", CLAUSE, "Constant: not exactly one of its value attributes")
def constant(ctx: Context) -> Found:
    for ref in nodes_of(ctx, "", "Constant"):
        at = Attrs(ref)
        # Presence, not length: value_floats=[] is a valid empty tensor. A reference (ref_attr_name) in a function
        # body counts as given.
        given = [a.name for a in ref.node.attribute if a.name in _CONSTANT_VALUES]
        if len(given) > 1:
            yield at.where(given[1]), f"Constant: give one value attribute, not {' and '.join(given)}"
        elif not given:
            yield ref.loc, f"Constant: one of {', '.join(_CONSTANT_VALUES)} is required"


@rule("E-OP-CONSTANT-OF-SHAPE", CLAUSE, "ConstantOfShape: a value attribute that is not a one-element tensor")
def constant_of_shape(ctx: Context) -> Found:
    for ref in nodes_of(ctx, "", "ConstantOfShape"):
        at = Attrs(ref)
        n = at.size("value")
        if n is not None and n != 1:
            a = at.get("value")
            dims = list(a.t.dims) if a is not None and a.t is not None else []
            yield at.where("value"), f"ConstantOfShape: value holds {n} elements (dims {dims}); one expected"


@rule(
    "E-OP-TFIDF-VECTORIZER",
    CLAUSE,
    "TfIdfVectorizer: both or neither pools, n-gram starts not ascending within the pool or not whole n-grams, "
    "ngram_indexes or weights not one per n-gram of the pool",
)
def tfidf_vectorizer(ctx: Context) -> Found:
    for ref in nodes_of(ctx, "", "TfIdfVectorizer"):
        at = Attrs(ref)
        pools = ("pool_strings", "pool_int64s")
        found = list(one_of(at, pools))
        yield from found
        starts = at.ints("ngram_counts")
        if found or starts is None:
            continue
        (pool,) = at.given(*pools)
        size = at.size(pool) or 0
        ends = [*starts[1:], size]
        if any(not 0 <= a <= b <= size for a, b in zip(starts, ends)):
            yield (
                at.where("ngram_counts"),
                f"TfIdfVectorizer: ngram_counts {starts[:8]} are not ascending starts within {pool} ({size} values)",
            )
            continue
        grams = 0
        broken = False
        for n, (lo, hi) in enumerate(zip(starts, ends), start=1):
            if (hi - lo) % n:
                yield (
                    at.where("ngram_counts"),
                    f"TfIdfVectorizer: {pool}[{lo}:{hi}] ({hi - lo} values) does not hold whole {n}-grams",
                )
                broken = True
                break
            grams += (hi - lo) // n
        if broken:
            continue
        k = at.size("ngram_indexes") or 0
        if k != grams:
            yield (
                at.where("ngram_indexes"),
                f"TfIdfVectorizer: {k} ngram_indexes for the {grams} n-grams of {pool} (by ngram_counts)",
            )
        w = at.size("weights")
        if w and w != k:
            yield at.where("weights"), f"TfIdfVectorizer: {w} weights for {k} ngram_indexes"
