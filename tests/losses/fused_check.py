"""Run as `python tests/losses/fused_check.py [--device cpu|cuda] [--family NAME]`: the fused kernel
against the float64 references of `tests/losses/reference.py`.

Every loss the kernel covers, with `kernel="fused"`, on every mask case (mixed classes, one class,
singleton classes with one view so that no anchor has a positive, three views), with sample
weights: per-sample values against the loop references, the gradient of `sum_b w_b loss_b`
against central differences of the reference, and the keras class's reduced value. A learnable
temperature's gradient is checked against the `keras.ops` path. Prints one JSON line per case
and exits 1 on the first mismatch.

Its own process: on the CPU it needs `TRITON_INTERPRET=1` before Triton loads, and Triton must
load before TensorFlow (their LLVMs collide), which a pytest worker cannot promise.
"""

import argparse
import json
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
parser.add_argument("--family", default=None, help="one of FAMILIES (default: all)")
parser.add_argument("--refusals", action="store_true",
                    help="instead: check that `anchor_loss` refuses bad input with a ValueError")
parser.add_argument("--auto", action="store_true",
                    help="instead: check which path kernel='auto' takes on a (pretended) GPU")
args = parser.parse_args()
if args.device == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"
os.environ["KERAS_BACKEND"] = "torch"
sys.path.append(os.path.join(os.path.dirname(__file__), "..", ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402, F401  (before anything can import TensorFlow)

import clzoo.losses as L  # noqa: E402
from tests.losses.autodiff import numeric_gradient  # noqa: E402
from tests.losses.fused_cases import FAMILIES, MASK_CASES, T  # noqa: E402


def check_case(family, case, rng):
    """One mask case: values, gradients and the reduced value against the loop reference."""
    function, cls, options, reference = FAMILIES[family]
    name, labels, views = case
    if family == "info_nce" and views < 2:
        return None  # InfoNCE refuses one view (its positives are the other views)
    labels = np.array(labels)
    z = rng.normal(size=(len(labels), views, 5))
    weights = rng.uniform(0.2, 2.0, size=len(labels))
    z_t = torch.tensor(z, dtype=torch.float32, device=args.device, requires_grad=True)
    y_t = torch.tensor(labels, device=args.device)
    w_t = torch.tensor(weights, dtype=torch.float32, device=args.device)
    per_sample = function(y_t, z_t, temperature=T, kernel="fused", **options)
    (per_sample * w_t).sum().backward()
    expected = reference(labels, z)
    expected_grad = numeric_gradient(lambda x: float(np.sum(weights * reference(labels, x))), z)
    reduced = cls(temperature=T, kernel="fused", **options)(y_t, z_t, sample_weight=w_t)
    errors = {"value": _max_error(per_sample, expected),
              "gradient": _max_error(z_t.grad, expected_grad),
              "reduced": abs(float(reduced.detach()) - float(np.sum(weights * expected)) / len(labels))}
    return errors, errors["value"] < 2e-5 and errors["gradient"] < 1e-4 and errors["reduced"] < 2e-5


def check_many_tiles(family, rng):
    """180 embeddings in 7 shuffled classes (several 64-row tiles, the positives' pass skipping
    tiles): values and gradients against the `keras.ops` path, too large for the loop references."""
    function, _, options, _ = FAMILIES[family]
    z = rng.normal(size=(90, 2, 16))
    labels = torch.tensor(rng.integers(0, 7, size=90), device=args.device)
    weights = torch.tensor(rng.uniform(0.2, 2.0, size=90), dtype=torch.float32, device=args.device)
    found = {}
    for kernel in ("fused", "xla"):
        z_t = torch.tensor(z, dtype=torch.float32, device=args.device, requires_grad=True)
        value = function(labels, z_t, temperature=0.1, kernel=kernel, **options)
        (value * weights).sum().backward()
        found[kernel] = (value.detach().cpu().double().numpy(), z_t.grad)
    errors = {"value": _max_error(torch.tensor(found["fused"][0]), found["xla"][0]),
              "gradient": _max_error(found["fused"][1], found["xla"][1].cpu().double().numpy())}
    return errors, errors["value"] < 1e-4 and errors["gradient"] < 1e-5


def check_learnable_temperature(family, rng):
    """d loss / d log-temperature through the kernel equals the `keras.ops` path's."""
    _, cls, options, _ = FAMILIES[family]
    z = rng.normal(size=(6, 2, 5))
    labels = np.array([0, 0, 1, 1, 2, 3])
    found = {}
    for kernel in ("fused", "xla"):
        loss = cls(temperature="learnable", kernel=kernel, **options)
        z_t = torch.tensor(z, dtype=torch.float32, device=args.device)
        value = loss(torch.tensor(labels, device=args.device), z_t)
        weight = loss.temperature_layer.trainable_weights[0].value
        found[kernel] = (float(value), float(torch.autograd.grad(value, weight)[0]))
    errors = {"value": abs(found["fused"][0] - found["xla"][0]),
              "temperature_gradient": abs(found["fused"][1] - found["xla"][1])}
    return errors, errors["value"] < 2e-5 and errors["temperature_gradient"] < 1e-4


def _max_error(actual, expected):
    return float(np.max(np.abs(actual.detach().cpu().double().numpy() - expected)))


def check_refusals():
    """Each bad input to `anchor_loss` is a ValueError naming it; prints one line per refusal."""
    from clzoo.losses.fused.function import anchor_loss

    z = torch.nn.functional.normalize(torch.randn(8, 4, device=args.device), dim=1)
    y = torch.arange(8, device=args.device) // 2
    bad = {"mode": dict(mode="supcon"), "precision": dict(precision="fp16"),
           "rank": dict(z=z[None]), "dim": dict(z=torch.zeros(8, 300, device=args.device)),
           "dtype": dict(z=z.double()), "labels": dict(labels=y.float())}
    if args.device == "cpu":  # issue 58 item 6: the interpreter's bfloat16 was garbage
        bad["bfloat16 in the interpreter"] = dict(z=z.bfloat16())
    for name, change in bad.items():
        call = {"z": z, "labels": y, "inverse_temperature": 10.0, "mode": "supcon_out", **change}
        try:
            anchor_loss(**call)
        except ValueError as error:
            print("refused:", name, "-", error)
        else:
            print("accepted:", name)
            return 1
    return _refuses_second_derivatives(anchor_loss, z, y)


def _refuses_second_derivatives(anchor_loss, z, y):
    """Issue 58 item 6: a gradient of the gradient went through the kernel as wrong numbers."""
    x = z.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(anchor_loss(x, y, 10.0, "supcon_out")[0].sum(), x)  # first: fine
    assert torch.isfinite(grad).all()
    try:
        (grad,) = torch.autograd.grad(anchor_loss(x, y, 10.0, "supcon_out")[0].sum(), x,
                                      create_graph=True)
        torch.autograd.grad(grad.square().sum(), x)
    except RuntimeError as error:
        print("refused: second derivative -", str(error).splitlines()[0])
        return 0
    print("accepted: second derivative")
    return 1


def check_auto():
    """`kernel="auto"` on a CUDA tensor (pretended: the interpreter runs on the CPU) takes the kernel
    on a measured GPU and, with one warning, the keras.ops path on another; prints both counts."""
    import warnings

    from clzoo.losses.fused import dispatch, function

    calls = []
    original = function.anchor_loss
    function.anchor_loss = lambda *a, **k: calls.append(1) or original(*a, **k)
    dispatch._on_cuda = lambda z: True
    z = torch.tensor(np.random.default_rng(0).normal(size=(6, 2, 8)), dtype=torch.float32)
    y = torch.tensor([0, 0, 1, 1, 2, 3])
    dispatch._unmeasured_gpu = lambda z: None
    fused = float(L.SupConLoss()(y, z))
    taken = len(calls)
    dispatch._unmeasured_gpu = lambda z: "its tiles were measured on (9, 0), not (8, 6)"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        xla = float(L.SupConLoss()(y, z))
        float(L.SupConLoss()(y, z))
    messages = [str(w.message) for w in caught if "kernel='auto'" in str(w.message)]
    print(json.dumps({"measured_gpu_calls": taken, "unmeasured_gpu_calls": len(calls) - taken,
                      "warnings": messages, "difference": abs(fused - xla)}))
    return 0 if (taken, len(calls), len(messages)) == (1, 1, 1) and abs(fused - xla) < 1e-5 else 1


def check_unnormalized(rng):
    """`normalize=False`, D = 100 (not a power of two), 130 embeddings: against the keras.ops path."""
    z = rng.normal(size=(65, 2, 100)) * 0.3
    labels = torch.tensor(rng.integers(0, 5, size=65), device=args.device)
    found = {}
    for kernel in ("fused", "xla"):
        z_t = torch.tensor(z, dtype=torch.float32, device=args.device, requires_grad=True)
        value = L.sincere_loss(labels, z_t, temperature=0.2, normalize=False, kernel=kernel)
        value.sum().backward()
        found[kernel] = (value.detach().cpu().double().numpy(), z_t.grad.cpu().double().numpy())
    errors = {"value": float(np.max(np.abs(found["fused"][0] - found["xla"][0]))),
              "gradient": float(np.max(np.abs(found["fused"][1] - found["xla"][1]))),
              "largest_gradient": float(np.max(np.abs(found["xla"][1])))}
    # logits reach |z|^2 / T = 45 here: float32 rounding scales with them
    ok = (np.allclose(found["fused"][0], found["xla"][0], rtol=1e-5, atol=1e-5)
          and np.allclose(found["fused"][1], found["xla"][1], rtol=1e-4, atol=1e-5))
    print(json.dumps({"family": "sincere", "case": "unnormalized_dim_100", "ok": ok, **errors}))
    return 0 if ok else 1


def main():
    if args.refusals:
        return check_refusals()
    if args.auto:
        return check_auto()
    rng = np.random.default_rng(0)
    families = [args.family] if args.family else list(FAMILIES)
    failed = 0
    for family in families:
        checks = [(case[0], check_case, (case,)) for case in MASK_CASES]
        checks += [("many_tiles", check_many_tiles, ()),
                   ("learnable_temperature", check_learnable_temperature, ())]
        for name, check, extra in checks:
            result = check(family, *extra, rng)
            if result is None:
                continue
            errors, ok = result
            failed += not ok
            print(json.dumps({"family": family, "case": name, "ok": bool(ok), **errors}), flush=True)
    if args.family in (None, "sincere"):
        failed += check_unnormalized(rng)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
