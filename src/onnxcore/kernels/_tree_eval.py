"""A tree ensemble compiled once into flat arrays, evaluated for a whole batch a tree level at a time.

The state of a (tree, row) pair is twice the index of the node it is at; every table is indexed by that state:
``feature``, ``threshold`` (at even entries) and ``child`` (``child[2i]`` the false child of node ``i``,
``child[2i + 1]`` the true one, both times two). A step of every pair is then a handful of whole-array numpy
operations: gather the feature and the threshold, compare, add the outcome, gather the child. A leaf is its own
child both ways, so pairs that reached a leaf stay there and no pair is ever removed; trees are sorted deepest
first and a level evaluates only the trees that still have interior nodes at that depth (a prefix of the
state, which is laid out ``[tree, row]``).

Comparisons are made in float32 when the input is float32 and every threshold is a float32 value (the same
outcome as in float64, at half the memory traffic), else in float64. NaN routing and BRANCH_MEMBER are handled
on the general path only when the model or the batch needs them.

The traversal of a large batch is split over the kernel threads (:mod:`onnxcore.kernels.threads`) by blocks of
trees; each block writes only its own trees' states, and the aggregation runs afterwards in one fixed order, so
the result does not depend on the number of threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._util import distinct
from onnxcore.kernels.threads import active_threads, parallel_for

__all__ = ["CompiledForest"]

_LEAF = 7
_MEMBER = 6
_COMPARE = (np.less_equal, np.less, np.greater_equal, np.greater, np.equal, np.not_equal)
_PARALLEL_PAIRS = 1 << 15  # (tree, row) pairs below which the traversal stays on one thread
# Strict comparison code -> (the non-strict code it becomes in the compiled walk's tables, the side the threshold
# moves toward): BRANCH_LT -> BRANCH_LEQ, BRANCH_GT -> BRANCH_GTE (see CompiledForest._validated_tables).
_STRICT = {1: (0, -np.inf), 3: (2, np.inf)}
# No base values to add: empty (nothing to write), and writeable so that the compiled walk sees one array type.
_NO_BASE = np.zeros(0)
# No softmax shift asked of the compiled walk (see CompiledForest.sum_plus_shift): empty, as _NO_BASE.
_NO_SHIFT = np.zeros(0)


class CompiledForest:
    """A validated forest (``_Forest`` of :mod:`onnxcore.kernels.ml_tree`) as evaluation tables."""

    __slots__ = (
        "acc_dtype",
        "accel_code",
        "accel_packed",
        "accel_sum",
        "accel_tables",
        "active",
        "all_vote",
        "always_has",
        "child",
        "depth",
        "feature",
        "group_matrix",
        "groups",
        "has_rows",
        "jump",
        "leaf_value",
        "max_feature",
        "member_row",
        "member_sets",
        "miss",
        "mode",
        "n_targets",
        "n_trees",
        "no_votes",
        "position",
        "roots",
        "state_mode",
        "thr32",
        "thr64",
        "tree_depth",
        "uniform",
        "uniform_code",
        "w_max",
        "w_min",
        "w_row",
        "w_sum",
    )

    def __init__(self, forest: Any, acc_dtype: Any = np.float64) -> None:
        mode = forest.mode
        m = mode.size
        leaf = mode == _LEAF
        self.n_targets = int(forest.n_targets)
        inner_modes = distinct(mode[~leaf])
        # One comparison for every interior node (what exporters write): one ufunc per level.
        self.uniform = _COMPARE[int(inner_modes[0])] if inner_modes.size == 1 and inner_modes[0] < _MEMBER else None
        if self.uniform is None and inner_modes.size == 0:
            self.uniform = np.less_equal
        self.uniform_code = _COMPARE.index(self.uniform) if self.uniform is not None else -1
        self.state_mode = np.repeat(mode, 2)
        self.mode = None if self.uniform is not None else self.state_mode
        nodes = np.arange(m)
        child = np.empty(2 * m, np.intp)
        child[0::2] = np.where(leaf, nodes, forest.false_idx) * 2
        child[1::2] = np.where(leaf, nodes, forest.true_idx) * 2
        self.child = child
        self.feature = np.repeat(np.where(leaf, 0, forest.feature), 2).astype(np.intp)
        self.max_feature = int(forest.feature[~leaf].max()) if (~leaf).any() else -1
        self.thr64 = np.repeat(np.where(leaf, 0.0, forest.threshold), 2)
        thr32 = self.thr64.astype(np.float32)
        self.thr32 = thr32 if np.array_equal(thr32.astype(np.float64), self.thr64) else None
        miss = forest.missing_true & ~leaf
        self.miss = np.repeat(miss, 2) if miss.any() else None
        self.member_row = np.repeat(forest.member_row, 2)
        self.member_sets = forest.member_sets
        roots = forest.roots
        depth, leaves_of = _depths(forest, roots)
        order = np.argsort(-depth, kind="stable")
        self.roots = roots[order] * 2
        self.n_trees = int(roots.size)
        self.depth = int(depth.max()) if depth.size else 0
        self.tree_depth = depth[order]
        self.accel_tables: tuple[Any, ...] | None = None  # made by _accel_states on first use
        self.accel_code = self.uniform_code  # the comparison the compiled tables make (set with them)
        self.accel_sum: tuple[np.ndarray, np.ndarray] | None = None  # made by _accel_sum on first use
        self.accel_packed: tuple[Any, ...] | None = None  # made by _accel_predict on first use
        # Trees still descending at each level: a prefix of the depth-sorted trees.
        self.active = [int((depth > lvl).sum()) for lvl in range(self.depth)]
        # A small forest evaluates one row faster by deciding every node at once and then following the decided
        # children (one gather per level): (feature of each node, child nodes by state, 2 * node) when it pays.
        self.jump = None
        if self.uniform is not None and m <= 600 * max(self.depth, 1):
            self.jump = (np.where(leaf, 0, forest.feature).astype(np.intp), child // 2, 2 * nodes)
        # Weights by state: the weight row of each leaf.
        self.w_row = np.repeat(forest.w_row, 2)
        self.w_sum = forest.w_sum
        self.has_rows = forest.w_has
        self.w_min = forest._extreme(np.minimum, np.inf)
        self.w_max = forest._extreme(np.maximum, -np.inf)
        # A target every row gets a vote for: some tree all of whose reachable leaves carry a weight for it.
        k = self.n_targets
        always = np.zeros(k, dtype=bool)
        for t_leaves in leaves_of:
            always |= forest.w_has[forest.w_row[t_leaves]].all(axis=0)
        self.always_has = always
        self.all_vote = bool(always.all())
        self.no_votes = np.zeros((0, k), dtype=bool)  # the votes of aggregate(need_has=False): not read (empty)
        # Sums are made in the weights' own precision and in the trees' order, as onnxruntime makes them: a
        # float32 model's class scores then tie (two classes at exactly 0.5) where onnxruntime's do.
        self.acc_dtype = np.dtype(acc_dtype)
        self.w_sum = self.w_sum.astype(self.acc_dtype)
        self.w_min, self.w_max = self.w_min.astype(self.acc_dtype), self.w_max.astype(self.acc_dtype)
        position = np.empty(self.n_trees, np.intp)  # where each tree (in model order) is in the depth order
        position[order] = np.arange(self.n_trees)
        self.position = position
        # Trees whose leaves all vote for one target (boosted models): per target, one [tree, row] sum.
        self.groups: list[np.ndarray] | None = None
        self.leaf_value: np.ndarray | None = None
        per_row = forest.w_has.sum(axis=1)
        if not (per_row > 1).any():
            target = np.argmax(forest.w_has, axis=1)
            tree_target = np.full(self.n_trees, -1)
            single = True
            for t, t_leaves in enumerate(leaves_of):
                rows = forest.w_row[t_leaves]
                carried = distinct(target[rows[per_row[rows] > 0]])
                if carried.size > 1:
                    single = False
                    break
                tree_target[t] = carried[0] if carried.size else 0
            if single:
                value = forest.w_sum[np.arange(per_row.size), target].astype(self.acc_dtype)
                self.leaf_value = np.repeat(value[forest.w_row], 2)
                self.groups = [position[np.flatnonzero(tree_target == j)] for j in range(k)]
        # Every target with as many trees (a boosted multiclass model): the groups side by side, [trees per target,
        # K], so the numpy path sums all targets in one reduction over the outer axis (row after row, the order of
        # the per-group sums).
        self.group_matrix: np.ndarray | None = None
        if self.groups and len({g.size for g in self.groups}) == 1 and self.groups[0].size:
            self.group_matrix = np.stack(self.groups, axis=1)

    def check(self, x: np.ndarray) -> None:
        """Refuse an input with fewer features than the forest reads."""
        if self.max_feature >= x.shape[1]:
            raise EvaluationError(f"tree ensemble: feature id {self.max_feature} but X has {x.shape[1]} features")

    def states(self, x: np.ndarray) -> np.ndarray:
        """The leaf each row reaches in each tree, as states ``2 * leaf``, ``[trees, rows]`` (depth-sorted trees)."""
        self.check(x)
        n = x.shape[0]
        use32 = x.dtype == np.float32 and self.thr32 is not None
        cmp_dtype = np.float32 if use32 else np.float64
        thr = self.thr32 if use32 else self.thr64
        assert thr is not None
        if accel.enabled():
            xc = x if x.dtype == cmp_dtype and x.flags.c_contiguous else np.ascontiguousarray(x, dtype=cmp_dtype)
            nan = self.miss is not None and bool(np.isnan(xc).any())
            return self._accel_states(xc, thr, use32, general=self.uniform is None or nan)
        if n == 1 and x.dtype == cmp_dtype:
            xt = x.reshape(-1)
        else:
            xt = np.ascontiguousarray(x.T, dtype=cmp_dtype).ravel()
        nan = self.miss is not None and bool(np.isnan(xt).any())
        if n == 1 and self.uniform is not None and not nan:
            return self._states_one(xt, thr[0::2] if self.jump is not None else thr)[:, None]
        feat = self.feature * n if n > 1 else self.feature
        s = np.empty((self.n_trees, n), np.intp)
        s[:] = self.roots[:, None]
        col = np.arange(n, dtype=np.intp)

        def run(a: int, b: int) -> None:
            # Hot loop: bound methods and views made once per change of the active prefix (numpy's per-call cost
            # dominates a batch of one row).
            block = s[a:b]
            f_buf, v_buf = np.empty(block.shape, np.intp), np.empty(block.shape, cmp_dtype)
            t_buf, c_buf = np.empty(block.shape, cmp_dtype), np.empty(block.shape, bool)
            feat_take, x_take, thr_take, child_take = feat.take, xt.take, thr.take, self.child.take
            cmp, add = self.uniform, np.add
            last = -1
            sv: np.ndarray = block
            f: np.ndarray = block
            v: np.ndarray = block
            t: np.ndarray = block
            c: np.ndarray = block
            for k_act in self.active:
                k = min(k_act, b) - a
                if k <= 0:
                    break
                if k != last:
                    sv, f, v, t, c = block[:k], f_buf[:k], v_buf[:k], t_buf[:k], c_buf[:k]
                    last = k
                feat_take(sv, None, f, "clip")
                if n > 1:
                    add(f, col, out=f)
                x_take(f, None, v, "clip")
                thr_take(sv, None, t, "clip")
                if cmp is not None:
                    cmp(v, t, out=c)
                else:
                    self._mixed(sv, v, t, c)
                if nan:
                    assert self.miss is not None
                    c |= self.miss[sv] & np.isnan(v)
                add(sv, c, out=sv)
                child_take(sv, None, sv, "clip")

        pairs = self.n_trees * n
        threads = active_threads() if pairs >= _PARALLEL_PAIRS else 1
        parallel_for(run, self.n_trees, threads=threads, min_block=1, size=pairs)
        # No cycle reaches here (_depths refused it): after `depth` steps every pair is at a leaf.
        return s

    def _accel_states(self, x: np.ndarray, thr: np.ndarray, use32: bool, *, general: bool) -> np.ndarray:
        """:meth:`states` by the compiled traversal (:mod:`onnxcore.kernels.accel`): rows walk each tree sixteen
        at a time; ``general`` for mixed comparisons, set membership or NaN routing, else the uniform walk over
        node tables.

        numba does not check bounds, so the tables are validated once here and ``x``'s width by :meth:`check`
        before the call: a hostile model gets an EvaluationError, never a read outside an array."""
        if self.accel_tables is None:
            self.accel_tables = self._validated_tables()
        mode, miss, member_row, roots, depth, nodes32, nodes64, roots_n = self.accel_tables
        code = self.accel_code
        nodes_u = nodes32 if use32 else nodes64
        n = x.shape[0]
        s = np.empty((self.n_trees, n), np.intp)
        jit = accel.jit_tree()
        if not general and self.n_trees * n < _PARALLEL_PAIRS:
            # One thread (a small batch): the compiled walk called directly, no closure or blocks per call.
            jit.tree_states_uniform(x, nodes_u, code, roots_n, depth, s, 0, self.n_trees)
            return s
        if general:
            fn = jit.tree_states
            member_sets = np.ascontiguousarray(self.member_sets, dtype=np.float64)
            if member_sets.shape[0] == 0:
                member_sets = np.full((1, 1), np.nan)

            def run(a: int, b: int) -> None:
                fn(x, self.feature, thr, self.child, mode, miss, member_row, member_sets, roots, depth, s, a, b)

        else:
            fu = jit.tree_states_uniform

            def run(a: int, b: int) -> None:
                fu(x, nodes_u, code, roots_n, depth, s, a, b)

        threads = active_threads() if self.n_trees * n >= _PARALLEL_PAIRS else 1
        parallel_for(run, self.n_trees, threads=threads, min_block=1, size=self.n_trees * n)
        return s

    def sum_plus(self, x: np.ndarray, base: np.ndarray) -> np.ndarray:
        """The SUM of :meth:`aggregate`, then ``acc[:, :base.size] += base`` (``base`` float64, at most
        :attr:`n_targets` values): a small batch in one compiled call when the accelerator runs."""
        if (
            self.uniform is not None
            and self.n_trees
            and self.n_trees * x.shape[0] < _PARALLEL_PAIRS
            and accel.enabled()
        ):
            fast = self._accel_predict(x, base, _NO_SHIFT)
            if fast is not None:
                return fast[0]
        acc, _ = self.aggregate(x, "SUM", need_has=False)
        if base.size:
            acc[:, : base.size] += base
        return acc

    def sum_plus_shift(self, x: np.ndarray, base: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, int] | None:
        """For one row (``x`` ``[1, F]``): :meth:`sum_plus`, then in the same compiled call the softmax's first step
        on the row's scores, ``e = s - max(s)`` in float64 (``e`` float64 of :attr:`n_targets` values) and the index
        of the first largest score, -1 when a score is NaN. The scores and that index; None when the compiled walk
        does not apply (the accelerator off, mixed comparisons, a NaN to route): the caller takes
        :meth:`sum_plus`."""
        if self.uniform is None or not self.n_trees or not accel.enabled():
            return None
        return self._accel_predict(x, base, e)

    def _accel_predict(self, x: np.ndarray, base: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, int] | None:
        """The SUM of :meth:`aggregate` for a small batch, uniform comparison, by one compiled call that walks and
        sums (the same leaves and the same additions in the same order as :meth:`_accel_states` then
        :meth:`_accel_sum`), then adds ``base`` as :meth:`sum_plus` does (and, with ``e`` not empty, shifts the one
        row into it as :meth:`sum_plus_shift` says): the sums and the compiled call's result. None when a NaN must
        be routed (the general walk handles it)."""
        if self.max_feature >= x.shape[1]:
            self.check(x)
        packed = self.accel_packed
        if packed is None:
            packed = self.accel_packed = self._packed_tables()
        fn, nodes32, nodes64, idx, values, code, t = packed
        if x.dtype == np.float32 and nodes32 is not None:
            nodes = nodes32
            xc = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        else:
            nodes = nodes64
            xc = x if x.dtype == np.float64 and x.flags.c_contiguous else np.ascontiguousarray(x, dtype=np.float64)
        if self.miss is not None and xc.size:
            # A NaN to route: numpy's minimum propagates NaN (one reduction instead of isnan, then any).
            low = np.minimum.reduce(xc, axis=None)
            if low != low:
                return None
        acc = np.zeros((x.shape[0], self.n_targets), self.acc_dtype)
        return acc, fn(xc, nodes, idx, base, values, acc, code, t, e)

    def _packed_tables(self) -> tuple[Any, ...]:
        """The arguments of the compiled walk-and-sum (:meth:`_accel_predict`) made once, its tables packed into
        few arrays (numba's dispatch cost grows with the number of arguments): the function, the node records with
        float32 thresholds (None where float32 comparisons are not exact) and with float64 ones, tree tables
        (roots, depths, order, then offsets or weight rows), the leaf values or weight sums, the comparison code,
        and the number of trees. Every index comes from the validated tables."""
        if self.accel_tables is None:
            self.accel_tables = self._validated_tables()
        if self.accel_sum is None:
            self.accel_sum = self._validated_sum_tables()
        _, _, _, _, depth, nodes32, nodes64, roots_n = self.accel_tables
        order, other = self.accel_sum
        idx = np.ascontiguousarray(np.concatenate([roots_n, depth, order, other]), dtype=np.intp)
        jit = accel.jit_tree()
        if self.groups is not None and self.leaf_value is not None:
            fn, values = jit.tree_predict_groups, np.ascontiguousarray(self.leaf_value)
        else:
            fn, values = jit.tree_predict_rows, np.ascontiguousarray(self.w_sum)
        t = int(self.n_trees)
        if roots_n.size != t or depth.size != t or order.size != t:
            raise EvaluationError("tree ensemble: the compiled tables have an index out of range")
        return fn, nodes32, nodes64, idx, values, self.accel_code, t

    def _accel_sum(self, s: np.ndarray, n: int) -> np.ndarray:
        """The SUM aggregation of :meth:`aggregate` by the compiled loops, tree after tree in the model's order as
        the numpy path adds them (the same sums, bit for bit). ``s`` comes from :meth:`states`, whose states are
        within the tables; the orders are checked here once."""
        if self.accel_sum is None:
            self.accel_sum = self._validated_sum_tables()
        acc = np.zeros((n, self.n_targets), self.acc_dtype)
        jit = accel.jit_tree()
        if self.groups is not None and self.leaf_value is not None:
            order, offsets = self.accel_sum
            jit.tree_sum_groups(s, self.leaf_value, order, offsets, acc)
        else:
            order, w_row = self.accel_sum
            jit.tree_sum_rows(s, w_row, self.w_sum, order, acc)
        return acc

    def _validated_sum_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The tree orders (and weight rows) of :meth:`_accel_sum`, every index in them checked."""
        self.w_sum = np.ascontiguousarray(self.w_sum)
        if self.groups is not None and self.leaf_value is not None:
            order = np.concatenate(self.groups).astype(np.intp) if self.groups else np.zeros(0, np.intp)
            offsets = np.cumsum([0] + [g.size for g in self.groups]).astype(np.intp)
            self._check_order(order, int(offsets[-1]), self.leaf_value.size)
            return order, offsets
        order = np.ascontiguousarray(self.position, dtype=np.intp)
        w_row = np.ascontiguousarray(self.w_row, dtype=np.intp)
        self._check_order(order, order.size, w_row.size)
        if w_row.size and (w_row.min() < 0 or w_row.max() >= self.w_sum.shape[0]):
            raise EvaluationError("tree ensemble: the compiled tables have an index out of range")
        return order, w_row

    def _check_order(self, order: np.ndarray, total: int, n_states: int) -> None:
        if (
            order.size != total
            or n_states != self.child.size
            or (order.size and (order.min() < 0 or order.max() >= self.n_trees))
        ):
            raise EvaluationError("tree ensemble: the compiled tables have an index out of range")

    def _validated_tables(self) -> tuple[Any, ...]:
        """The per-state tables of the compiled traversal, every index in them checked: mode, NaN routing, member
        row, roots and depths (the feature ids are checked against X by :meth:`check`); sets :attr:`accel_code`,
        the comparison the uniform walk's tables are made for."""
        n_states = self.child.size
        mode = np.ascontiguousarray(self.state_mode, dtype=np.int8)
        leaf = mode == _LEAF
        miss = np.zeros(n_states, bool) if self.miss is None else np.ascontiguousarray(self.miss, dtype=bool)
        member_row = np.ascontiguousarray(self.member_row, dtype=np.intp)
        roots = np.ascontiguousarray(self.roots, dtype=np.intp)
        depth = np.ascontiguousarray(self.tree_depth, dtype=np.intp)
        sizes = {mode.size, miss.size, member_row.size, self.feature.size, self.thr64.size}
        ok = (
            sizes == {n_states}
            and n_states % 2 == 0
            and self.child.dtype == np.intp
            and self.feature.dtype == np.intp
            and bool(((self.child >= 0) & (self.child < n_states) & (self.child % 2 == 0)).all())
            and bool(((mode >= 0) & (mode <= _LEAF)).all())
            and bool((self.feature[~leaf] >= 0).all())
            and roots.size == depth.size == self.n_trees
            and bool(((roots >= 0) & (roots < n_states) & (roots % 2 == 0)).all())
            and bool((depth >= 0).all())
        )
        members = mode == _MEMBER
        if ok and members.any():
            rows = member_row[members]
            ok = bool(((rows >= 0) & (rows < self.member_sets.shape[0])).all())
        if not ok:
            raise EvaluationError("tree ensemble: the compiled tables have an index out of range")
        # Node records of the uniform walk (int32 fields where they fit: a record of 16 octets with a float32
        # threshold, 24 with a float64 one).
        small = n_states < 2**31 and (self.feature.size == 0 or int(self.feature.max()) < 2**31)
        idx = np.int32 if small else np.intp
        thr_n64 = np.ascontiguousarray(self.thr64[0::2])
        thr_n32 = None if self.thr32 is None else np.ascontiguousarray(self.thr32[0::2])
        roots_n = np.ascontiguousarray(roots >> 1)
        code = self.uniform_code
        if code in _STRICT:
            # x < t is x <= (the largest value below t), and x > t is x >= (the smallest above t), in the type both
            # are compared in, NaN on either side false both ways; below -inf or above +inf there is none, and a
            # NaN threshold makes the comparison false for every x as the strict one is. The walk compiled for
            # BRANCH_LEQ is the fastest (the compiler keeps it apart from the others), and BRANCH_LT is
            # XGBoost's, so each strict comparison becomes the other kind on tables of its own.
            code, toward = _STRICT[code]
            thr_n64 = _beside(thr_n64, toward)
            thr_n32 = None if thr_n32 is None else _beside(thr_n32, toward)
        self.accel_code = code
        # Records with float32 thresholds only where float32 comparisons are exact (a float32 input then uses them).
        nodes32 = None if thr_n32 is None else _node_records(self.feature[0::2], thr_n32, self.child >> 1, idx)
        nodes64 = _node_records(self.feature[0::2], thr_n64, self.child >> 1, idx)
        return mode, miss, member_row, roots, depth, nodes32, nodes64, roots_n

    def _states_one(self, xrow: np.ndarray, thr: np.ndarray) -> np.ndarray:
        """:meth:`states` of one row, uniform comparison, no NaN routing: the fewest numpy calls per level.

        With :attr:`jump`, ``thr`` holds one threshold per node (not per state)."""
        feat, child, cmp = self.feature, self.child, self.uniform
        assert cmp is not None
        if self.jump is not None:
            node_feat, child_node, base = self.jump
            nxt = child_node[base + cmp(xrow[node_feat], thr)]
            s = self.roots >> 1
            for _ in self.active:
                s = nxt[s]
            return s << 1
        s = self.roots.copy()
        last = -1
        sv = s
        for k in self.active:
            if k != last:
                sv = s[:k]
                last = k
            sv += cmp(xrow[feat[sv]], thr[sv])
            sv[...] = child[sv]
        return s

    def _mixed(self, sv: np.ndarray, v: np.ndarray, t: np.ndarray, c: np.ndarray) -> None:
        assert self.mode is not None
        md = self.mode[sv]
        c[...] = False
        for code, fn in enumerate(_COMPARE):
            sel = md == code
            if sel.any():
                c[sel] = fn(v[sel], t[sel])
        mem = md == _MEMBER
        if mem.any():
            sets = self.member_sets[self.member_row[sv[mem]]]
            c[mem] = (sets == v[mem][:, None]).any(axis=1)

    def aggregate(self, x: np.ndarray, aggregate: str, *, need_has: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Per-target aggregate of the reached leaves' weights, ``[N, K]`` in :attr:`acc_dtype`, and whether any
        leaf voted. Sums run tree by tree in the model's order (``cumsum`` is sequential).

        With ``need_has=False`` (a caller that does not read the votes) the second array may be an empty
        ``[0, K]`` one."""
        n, k = x.shape[0], self.n_targets
        if (
            aggregate in ("SUM", "AVERAGE")
            and self.uniform is not None
            and self.n_trees
            and (self.all_vote or not need_has)
            and self.n_trees * n < _PARALLEL_PAIRS
            and accel.enabled()
        ):
            found = self._accel_predict(x, _NO_BASE, _NO_SHIFT)
            if found is not None:
                fast = found[0]
                if aggregate == "AVERAGE":
                    fast /= self.acc_dtype.type(self.n_trees)
                return fast, np.ones((n, k), dtype=bool) if need_has else self.no_votes
        s = self.states(x)
        if not need_has and aggregate in ("SUM", "AVERAGE"):
            has = self.no_votes  # not read (MIN and MAX read it themselves)
        elif self.all_vote:
            has = np.ones((n, k), dtype=bool)
        else:
            has = self.has_rows[self.w_row[s]].any(axis=0) if self.n_trees else np.zeros((n, k), dtype=bool)
        if not self.n_trees:
            return np.zeros((n, k), self.acc_dtype), has
        if aggregate in ("SUM", "AVERAGE"):
            if accel.enabled() and s.dtype == np.intp:
                acc = self._accel_sum(s, n)
            elif self.group_matrix is not None and self.leaf_value is not None:
                acc = np.ascontiguousarray(_sum_trees(self.leaf_value[s[self.group_matrix]]).reshape(k, n).T)
            elif self.groups is not None and self.leaf_value is not None:
                vals = self.leaf_value[s]
                acc = np.zeros((n, k), self.acc_dtype)
                for j, rows in enumerate(self.groups):
                    if rows.size:
                        acc[:, j] = _sum_trees(vals[rows])
            else:
                acc = _sum_trees(self.w_sum[self.w_row[s[self.position]]])
            if aggregate == "AVERAGE":
                acc /= self.acc_dtype.type(self.n_trees)
            return acc, has
        rows = self.w_row[s]
        acc = self.w_min[rows].min(axis=0) if aggregate == "MIN" else self.w_max[rows].max(axis=0)
        return np.where(has, acc, self.acc_dtype.type(0)), has


def _node_records(feature: np.ndarray, threshold: np.ndarray, child: np.ndarray, index: Any) -> np.ndarray:
    """The uniform walk's node records: per node its ``feature``, ``threshold`` (of ``threshold``'s type) and
    ``false`` and ``true`` child nodes (``child[0::2]``, ``child[1::2]``), the indices of type ``index``."""
    fields = [("feature", index), ("false", index), ("true", index), ("threshold", threshold.dtype)]
    if threshold.dtype.itemsize == np.dtype(index).itemsize:
        fields = [fields[0], fields[3], fields[1], fields[2]]  # 16 octets for int32 indices and float32 thresholds
    records = np.empty(feature.size, np.dtype(fields, align=True))
    records["feature"] = feature
    records["threshold"] = threshold
    records["false"] = child[0::2]
    records["true"] = child[1::2]
    return records


def _beside(thr: np.ndarray, toward: float) -> np.ndarray:
    """Each threshold moved to the next value of its type toward ``toward`` (-inf or +inf); an infinity on that
    side, which has no such value, becomes NaN (see :data:`_STRICT`)."""
    with np.errstate(over="ignore"):  # the largest finite value moves to infinity, as it should
        moved = np.nextafter(thr, thr.dtype.type(toward))
    moved[thr == toward] = np.nan
    return np.ascontiguousarray(moved)


def _sum_trees(v: np.ndarray) -> np.ndarray:
    """The sum over axis 0 (trees) of ``v``, added tree after tree. Over the outer axis of an array with several
    columns numpy's ``sum`` accumulates row after row; a single column would be summed pairwise, so it goes
    through ``cumsum``, which is sequential by definition."""
    if v.ndim > 1 and v[0].size > 1:
        return np.asarray(v.sum(axis=0))
    return np.asarray(v.cumsum(axis=0)[-1])


def _depths(forest: Any, roots: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each tree's depth (interior levels on its longest path) and the leaves reachable from its root."""
    mode = forest.mode
    m = mode.size
    t_count = roots.size
    depth = np.zeros(t_count, np.int64)
    tree = np.arange(t_count)
    node = roots.astype(np.int64)
    leaf_tree: list[np.ndarray] = []
    leaf_node: list[np.ndarray] = []
    for level in range(m + 1):
        if node.size == 0:
            break
        is_leaf = mode[node] == _LEAF
        leaf_tree.append(tree[is_leaf])
        leaf_node.append(node[is_leaf])
        tree, node = tree[~is_leaf], node[~is_leaf]
        depth[tree] = level + 1
        tree = np.concatenate([tree, tree])
        node = np.concatenate([forest.true_idx[node], forest.false_idx[node]])
        key = distinct(tree * m + node)
        tree, node = key // m, key % m
    else:
        raise EvaluationError("tree ensemble: a tree contains a cycle")
    lt = np.concatenate(leaf_tree) if leaf_tree else np.zeros(0, np.int64)
    ln = np.concatenate(leaf_node) if leaf_node else np.zeros(0, np.int64)
    order = np.argsort(lt, kind="stable")
    lt, ln = lt[order], ln[order]
    cuts = np.searchsorted(lt, np.arange(t_count + 1))
    return depth, [ln[cuts[i] : cuts[i + 1]] for i in range(t_count)]
