"""The fused contrastive kernel on a GPU: ms forward + backward and peak memory against the floor.

For each N (embeddings, D = 128) and input dtype (float32: the kernel multiplies in 3xTF32, float32
accuracy, and cuBLAS in IEEE float32, no TF32; bfloat16 with float32 accumulation):
- floor: three N x N x D products timed in the same run (one `Z Z^T`-shaped, two `G Z`-shaped,
  row chunks of 8,192 into a reused buffer, cuBLAS), the work a forward + backward must do;
- fused: `clzoo.losses.fused.function.anchor_loss` for SupCon L_out, SINCERE (100 classes)
  and InfoNCE (2 views: instance ids), forward + backward of the summed per-anchor loss;
- dense / chunked: `clzoo.losses.SupConLoss(kernel="xla")` unchunked and with `chunk_size=4096`
  (float32 only, where it fits);
- Inf-CL: `inf_cl.cal_flash_loss(z, z)` (CLIP InfoNCE, one direction, self not masked) where the
  package is importable.
Peak memory is `torch.cuda.max_memory_allocated` during the step minus what was allocated
before it (inputs included there). Each timing is the median of CUDA-event times after a warm-up.

    python benchmarks/fused_kernel.py --json benchmarks/fused_kernel.json

Needs a CUDA device, PyTorch and Triton (and keras with KERAS_BACKEND=torch for the dense rows).
`--device cpu` (with `TRITON_INTERPRET=1`, float32 only) runs the same rows in Triton's interpreter,
timed by the wall clock with no memory figure: the dry run of `benchmarks/gpu/run.sh` uses it.
"""

import argparse
import json
import os
import time

os.environ.setdefault("KERAS_BACKEND", "torch")

import torch  # noqa: E402
import triton  # noqa: E402, F401  (before anything can import TensorFlow)

from clzoo.losses.fused.function import BLOCKS, anchor_loss  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
CHUNK = 8192
SWEEPS = []  # what --sweep measured, written beside the rows
DEVICE = "cuda"  # --device
# Tile shapes tried by --sweep, (BLOCK_M, BLOCK_N, num_warps, num_stages), forward then backward;
# float32 (3xTF32) tiles hold a high and a low TF32 half: only these fit Hopper's 227 KiB.
SWEEP = {"bfloat16": ([(64, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 128, 4, 3),
                       (128, 64, 4, 3), (128, 128, 8, 2)],
                      [(64, 32, 4, 3), (64, 64, 4, 3), (128, 64, 8, 3), (64, 128, 8, 3),
                       (128, 32, 8, 3), (64, 64, 8, 2)]),
         "float32": ([(64, 64, 4, 3), (64, 64, 8, 2), (64, 32, 4, 3)],
                     [(64, 32, 4, 3), (64, 64, 4, 3), (128, 32, 8, 3), (64, 64, 8, 2)])}


def timed(step, budget_s=3.0, reps=5):
    """(median ms, peak MiB above the memory held before) of `step()`, after one warm-up.
    On the CPU (the interpreter's dry run): wall-clock ms and no peak (None)."""
    if DEVICE == "cpu":
        return _timed_on_cpu(step, budget_s, reps)
    torch.cuda.synchronize()
    step()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times, start = [], time.perf_counter()
    while len(times) < reps and (not times or time.perf_counter() - start < budget_s):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end))
    peak = (torch.cuda.max_memory_allocated() - before) / 2**20
    return sorted(times)[len(times) // 2], peak


def _timed_on_cpu(step, budget_s, reps):
    step()
    times, start = [], time.perf_counter()
    while len(times) < reps and (not times or time.perf_counter() - start < budget_s):
        begin = time.perf_counter()
        step()
        times.append((time.perf_counter() - begin) * 1e3)
    return sorted(times)[len(times) // 2], None


def floor_step(z):
    """Three N x N x D products in row chunks: Z_c Z^T, and G_c Z twice."""
    n = z.shape[0]
    out = torch.empty(min(CHUNK, n), n, dtype=z.dtype, device=z.device)
    grad = torch.empty(min(CHUNK, n), z.shape[1], dtype=z.dtype, device=z.device)

    def step():
        for start in range(0, n, CHUNK):
            rows = z[start:start + CHUNK]
            block = out[:rows.shape[0]]
            torch.matmul(rows, z.T, out=block)
            torch.matmul(block, z, out=grad[:rows.shape[0]])
            torch.matmul(block, z, out=grad[:rows.shape[0]])
    return step


def fused_step(z, labels, mode, blocks=None, backward=True):
    leaf = z.detach().requires_grad_(backward)

    def step():
        loss, _ = anchor_loss(leaf, labels, 10.0, mode, blocks=blocks)
        if backward:
            loss.sum().backward()
            leaf.grad = None
    return step


def sweep(n, dtype_name, args):
    """The fastest (forward, backward) tiles for SupCon L_out at size n: forward alone first,
    then forward + backward with that forward."""
    z = torch.nn.functional.normalize(torch.randn(n, args.dim, device=DEVICE), dim=1)
    z = z.to(DTYPES[dtype_name])
    labels = torch.randint(0, 100, (n,), device=DEVICE)
    forwards, backwards = SWEEP[dtype_name]
    default = BLOCKS[DTYPES[dtype_name]]
    timings = _time_each(forwards, lambda c: fused_step(z, labels, "supcon_out", (c, default[1]), False))
    best_forward = min(timings, key=timings.get)
    both = _time_each(backwards, lambda c: fused_step(z, labels, "supcon_out", (best_forward, c)))
    best = (best_forward, min(both, key=both.get))
    SWEEPS.append({"dtype": dtype_name, "n": n, "forward_ms": {str(k): v for k, v in timings.items()},
                   "forward_backward_ms": {str(k): v for k, v in both.items()}, "best": best})
    print(json.dumps(SWEEPS[-1]), flush=True)
    return best


def keras_step(z, labels, chunk_size):
    import clzoo.losses as L

    loss_fn = L.SupConLoss(kernel="xla", chunk_size=chunk_size)
    leaf = z.detach().requires_grad_(True)

    def step():
        loss_fn(labels, leaf).backward()
        leaf.grad = None
    return step


def infcl_step(z):
    from inf_cl import cal_flash_loss

    leaf = z.detach().requires_grad_(True)

    def step():
        cal_flash_loss(leaf, leaf, scale=10.0, head_dim=z.shape[1]).sum().backward()
        leaf.grad = None
    return step


def _time_each(configs, factory):
    """{config: ms} of the configs that compile and launch (a tile too big for the chip is left out)."""
    timings = {}
    for config in configs:
        try:
            timings[config] = timed(factory(config))[0]
        except Exception as error:  # noqa: BLE001  (Triton's OutOfResources and compile errors)
            print(json.dumps({"config": config, "error": str(error)[:200]}), flush=True)
    return timings


def rows_for(n, dtype_name, args, blocks):
    """(name, step factory) of every row measured at this size and dtype."""
    dtype = DTYPES[dtype_name]
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(n, args.dim, device=DEVICE, generator=gen), dim=1)
    z = z.to(dtype)
    classes = torch.randint(0, 100, (n,), device=DEVICE, generator=gen)
    instances = torch.arange(n, device=DEVICE) // 2
    rows = [("floor (3 products)", lambda: floor_step(z)),
            ("fused SupCon L_out", lambda: fused_step(z, classes, "supcon_out", blocks)),
            ("fused SINCERE", lambda: fused_step(z, classes, "noise_contrastive", blocks)),
            ("fused InfoNCE", lambda: fused_step(z, instances, "noise_contrastive", blocks))]
    if dtype == torch.float32 and n <= args.max_dense:
        rows.append(("keras.ops dense SupCon", lambda: keras_step(z, classes, None)))
    if dtype == torch.float32 and n <= args.max_chunked:
        rows.append(("keras.ops chunked SupCon (4096)", lambda: keras_step(z, classes, 4096)))
    if n <= args.max_infcl and _has_infcl():
        rows.append(("Inf-CL flash (CLIP InfoNCE)", lambda: infcl_step(z)))
    return rows


def _has_infcl():
    try:
        import inf_cl  # noqa: F401
    except ImportError:
        return False
    return True


def measure(args):
    torch.backends.cuda.matmul.allow_tf32 = False  # IEEE float32 products in the floor and dense rows
    blocks = {name: sweep(args.sweep, name, args) if args.sweep else None for name in args.dtypes}
    results, start = [], time.perf_counter()
    for n in args.sizes:  # size outermost: the budget skips the largest sizes, not a dtype
        for dtype_name in args.dtypes:
            for name, factory in rows_for(n, dtype_name, args, blocks[dtype_name]):
                row = {"n": n, "dim": args.dim, "dtype": dtype_name, "row": name}
                if name.startswith("fused"):
                    row["blocks"] = blocks[dtype_name] or BLOCKS[DTYPES[dtype_name]]
                if time.perf_counter() - start > args.budget:
                    row["skipped"] = "time budget"
                else:
                    try:
                        row["ms"], row["peak_mib"] = timed(factory())
                    except torch.OutOfMemoryError:
                        row["skipped"] = "out of memory"
                    if DEVICE == "cuda":
                        torch.cuda.empty_cache()
                results.append(row)
                print(json.dumps(row), flush=True)
                if args.json:
                    _write(args.json, results)
    return results


def _write(path, results):
    with open(path, "w") as f:
        device = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (Triton's interpreter)"
        json.dump({"device": device, "torch": torch.__version__,
                   "triton": triton.__version__, "sweeps": SWEEPS, "rows": results}, f, indent=1)


def table(path):
    """Markdown rows of a --json file: ms, multiple of the same run's floor, peak MiB."""
    with open(path) as f:
        data = json.load(f)
    floors = {(r["n"], r["dtype"]): r["ms"] for r in data["rows"] if r["row"].startswith("floor")}
    lines = [f"{data['device']}, torch {data['torch']}, Triton {data['triton']}", "",
             "| N | inputs | what | ms fwd+bwd | x floor | peak MiB |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in data["rows"]:
        if "ms" not in r:
            lines.append(f"| {r['n']:,} | {r['dtype']} | {r['row']} | {r['skipped']} | | |")
            continue
        ratio = r["ms"] / floors[(r["n"], r["dtype"])]
        peak = "" if r["peak_mib"] is None else f"{r['peak_mib']:,.0f}"
        lines.append(f"| {r['n']:,} | {r['dtype']} | {r['row']} | {r['ms']:,.1f} | {ratio:.2f} | {peak} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16384, 65536, 262144, 1048576])
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"], choices=list(DTYPES))
    parser.add_argument("--max-dense", type=int, default=65536)
    parser.add_argument("--max-chunked", type=int, default=262144)
    parser.add_argument("--max-infcl", type=int, default=262144)
    parser.add_argument("--budget", type=float, default=400.0, help="seconds before rows are skipped")
    parser.add_argument("--sweep", type=int, default=0,
                        help="first time the SWEEP tiles at this N and use the fastest (0: BLOCKS)")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                        help="cpu: Triton's interpreter (TRITON_INTERPRET=1), float32, for dry runs")
    parser.add_argument("--table", metavar="JSON", help="only print a --json file as a markdown table")
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cpu" and (os.environ.get("TRITON_INTERPRET") != "1" or "bfloat16" in args.dtypes):
        parser.error("--device cpu runs in Triton's interpreter: set TRITON_INTERPRET=1 and --dtypes float32")
    measure(args)


if __name__ == "__main__":
    main()
