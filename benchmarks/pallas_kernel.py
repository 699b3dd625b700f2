"""The Pallas kernel (the fused loss on JAX) on a GPU: exact against float64, timed against the floor.

`--check`: every loss the kernel covers, with `kernel="fused"`, on every mask case of
`tests/losses/fused_cases.py` with sample weights: the weighted sum against the float64 loop
reference and its gradient against central differences (one JSON line per case, exit 1 on a
mismatch), as `tests/losses/fused_check.py` does for Triton.
Timing (the default): for each N (embeddings, D = 128) and input dtype, forward + backward of
`clzoo.losses.fused.function_jax.anchor_loss` for SupCon L_out, SINCERE (100 classes) and InfoNCE
(instance ids), beside the floor (three N x N x D products in row chunks of 8,192, float32 at
`Precision.HIGHEST`, as the kernel multiplies) and `SupConLoss(kernel="xla")` unchunked (float32).
Each timing is the median of wall-clock times of the jitted step after its compilation.

    KERAS_BACKEND=jax python benchmarks/pallas_kernel.py --check
    KERAS_BACKEND=jax python benchmarks/pallas_kernel.py --sizes 16384 65536 --json pallas.json

`kernel="fused"` refuses the Pallas kernel on a GPU until it is measured (`dispatch`): this script
is that measurement, so it lifts the refusal for its own process. `--interpret` runs the kernels
in Pallas' interpret mode on the CPU (the dry run of `benchmarks/gpu/run.sh`).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

CHUNK = 8192


def _lift_the_refusal():
    """Let `kernel="fused"` take the Pallas kernel here, where it is being measured."""
    from clzoo.losses.fused import dispatch

    pallas = dispatch.IMPLEMENTATIONS["pallas"]
    dispatch.IMPLEMENTATIONS["pallas"] = pallas._replace(refusal=lambda z: None)


def check():
    """One JSON line per (family, mask case); returns 1 on the first mismatch."""
    import numpy as np

    from tests.losses.fused_cases import FAMILIES, MASK_CASES

    rng = np.random.default_rng(0)
    for family, (function, _, options, reference) in FAMILIES.items():
        for name, labels, views in MASK_CASES:
            if family == "info_nce" and views < 2:
                continue  # InfoNCE refuses one view (its positives are the other views)
            errors = check_case(function, options, reference, np.array(labels), views, rng)
            ok = errors["value"] < 2e-5 and errors["gradient"] < 1e-4
            print(json.dumps({"family": family, "case": name, "ok": ok, **errors}), flush=True)
            if not ok:
                return 1
    return 0


def check_case(function, options, reference, labels, views, rng):
    """The weighted loss through the kernel against float64: relative value and gradient errors."""
    import jax
    import keras
    import numpy as np

    from tests.losses.autodiff import numeric_gradient
    from tests.losses.fused_cases import T

    z = rng.normal(size=(len(labels), views, 5))
    weights = rng.uniform(0.2, 2.0, size=len(labels))

    def total(x):
        return keras.ops.sum(weights * function(labels, x, temperature=T, kernel="fused", **options))

    def expected_total(x):
        return float(np.sum(weights * reference(labels, x)))
    value, grad = jax.value_and_grad(total)(jax.numpy.asarray(z, "float32"))
    expected = expected_total(z)
    expected_grad = numeric_gradient(expected_total, z)
    return {"value": abs(float(value) - expected) / max(1.0, abs(expected)),
            "gradient": float(np.max(np.abs(np.asarray(grad, "float64") - expected_grad)))}


def floor_fn(n):
    """Three N x N x D products in row chunks: Z_c Z^T, G_c Z and G_c W, where W is a copy of Z
    given as a second argument (XLA merges two identical G_c Z products into one)."""
    import jax
    import jax.numpy as jnp

    highest = jax.lax.Precision.HIGHEST

    def fn(z, w):
        total = jnp.zeros((), "float32")
        for start in range(0, n, CHUNK):
            block = jnp.matmul(z[start:start + CHUNK], z.T, precision=highest)
            for right in (z, w):
                total = total + jnp.sum(jnp.matmul(block, right, precision=highest).astype("float32"))
        return total
    return fn


def fused_fn(labels, mode):
    """The gradient of the summed per-anchor loss (forward + backward through the kernel)."""
    import jax

    from clzoo.losses.fused.function_jax import anchor_loss

    return jax.grad(lambda z: anchor_loss(z, labels, 10.0, mode)[0].sum())


def dense_fn(labels):
    """`SupConLoss(kernel="xla")`, unchunked, forward + backward."""
    import jax

    import clzoo.losses as L

    loss = L.SupConLoss(kernel="xla")
    return jax.grad(lambda z: loss(labels, z))


def timed(fn, args, budget_s=3.0, reps=5):
    """Median wall-clock ms of `jax.jit(fn)(*args)`, after a compiling call."""
    import jax

    step = jax.jit(fn)
    jax.block_until_ready(step(*args))
    times, start = [], time.perf_counter()
    while len(times) < reps and (not times or time.perf_counter() - start < budget_s):
        begin = time.perf_counter()
        jax.block_until_ready(step(*args))
        times.append((time.perf_counter() - begin) * 1e3)
    return sorted(times)[len(times) // 2]


def rows_for(n, dtype, args):
    """(name, function, its arguments) of every row measured at this size and dtype."""
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    z = jax.random.normal(keys[0], (n, args.dim))
    z = (z / jnp.linalg.norm(z, axis=1, keepdims=True)).astype(dtype)
    classes = jax.random.randint(keys[1], (n,), 0, 100)
    instances = jnp.arange(n) // 2
    rows = [("floor (3 products)", floor_fn(n), (z, jnp.array(z, copy=True))),
            ("fused SupCon L_out", fused_fn(classes, "supcon_out"), (z,)),
            ("fused SINCERE", fused_fn(classes, "noise_contrastive"), (z,)),
            ("fused InfoNCE", fused_fn(instances, "noise_contrastive"), (z,))]
    if dtype == "float32" and n <= args.max_dense:
        rows.append(("keras.ops dense SupCon", dense_fn(classes), (z,)))
    return rows


def measure(args):
    import jax

    results, start = [], time.perf_counter()
    device = str(jax.devices()[0].device_kind) + (" (Pallas interpret mode)" if args.interpret else "")
    for n in args.sizes:  # size outermost: the budget skips the largest sizes, not a dtype
        for dtype in args.dtypes:
            for name, fn, inputs in rows_for(n, dtype, args):
                row = {"n": n, "dim": args.dim, "dtype": dtype, "row": name}
                if time.perf_counter() - start > args.budget:
                    row["skipped"] = "time budget"
                else:
                    try:
                        row["ms"] = timed(fn, inputs)
                    except Exception as error:  # noqa: BLE001  (out of memory, a lowering error)
                        row["skipped"] = f"{type(error).__name__}: {str(error)[:300]}"
                results.append(row)
                print(json.dumps(row), flush=True)
                if args.json:
                    with open(args.json, "w") as f:
                        json.dump({"device": device, "jax": jax.__version__, "rows": results}, f, indent=1)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exactness against float64, not timings")
    parser.add_argument("--sizes", type=int, nargs="+", default=[16384, 65536])
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"],
                        choices=["bfloat16", "float32"])
    parser.add_argument("--max-dense", type=int, default=16384)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds before rows are skipped")
    parser.add_argument("--interpret", action="store_true", help="Pallas' interpret mode (the CPU)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    os.environ["KERAS_BACKEND"] = "jax"  # before Keras loads (every import here is inside a function)
    if args.interpret:
        os.environ["CLZOO_PALLAS_INTERPRET"] = "1"
    _lift_the_refusal()
    if args.check:
        sys.exit(check())
    measure(args)


if __name__ == "__main__":
    main()
