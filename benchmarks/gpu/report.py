"""Markdown tables of one GPU call's `results.jsonl` (`benchmarks/gpu/run.sh`), for benchmarks/README.md.

    python benchmarks/gpu/report.py /work/.device/.../results.jsonl

Training runs are shown beside their baselines: the CPU preset of the same recipe (90.9% kNN),
airbench94 (94% linear-head accuracy in 2.59 s on an A100, Jordan 2024) and lightly's SimCLR
benchmark (84.8% kNN in 87 GPU-minutes); kernel rows beside the same run's three-matmul floor.
"""

import json
import sys

BASELINES = ("| baseline | kNN / accuracy | time |\n| --- | --- | --- |\n"
             "| this recipe on 2 CPU cores (the `supcon_cifar10_airbench` preset) | 90.9% kNN | < 1 h |\n"
             "| airbench94 (supervised, A100; not a kNN) | 94% | 2.59 s |\n"
             "| lightly SimCLR benchmark (ResNet-18, 200 epochs) | 84.8% kNN | 87 GPU-minutes |")


def _ms(value):
    return f"{value:,.2f}" if isinstance(value, (int, float)) else "-"


def kernels(result, title):
    lines = [f"{title} ({result.get('device', '?')})", "",
             "| N | inputs | what | ms fwd+bwd | x floor |", "| --- | --- | --- | --- | --- |"]
    for row in result.get("rows", []):
        ratio = f"{row['x_floor']:.2f}" if "x_floor" in row else row.get("skipped", "-")
        lines.append(f"| {row['n']:,} | {row['dtype']} | {row['row']} | {_ms(row.get('ms'))} | {ratio} |")
    return lines


def training(results):
    lines = ["| run | precision | epochs | kNN top-1 | s / epoch | images/s | fit s | wall s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in ("airbench_jax_float32", "airbench_jax_mixed_bfloat16", "airbench_torch"):
        r = results.get(name, {})
        if not r.get("ok"):
            lines.append(f"| {name} | | | {r.get('skipped') or r.get('unread') or 'not run'} | | | | |")
            continue
        lines.append(f"| {name} | {r['precision']} | {r['epochs']} | {100 * r['knn_top1']:.2f}% | "
                     f"{_ms(r['seconds_per_epoch'])} | {r['images_per_second']:,.0f} | "
                     f"{_ms(r['fit_seconds'])} | {_ms(r['wall_seconds'])} |")
    return lines + ["", BASELINES]


def other(results):
    lines = ["| check | result |", "| --- | --- |"]
    for name in ("triton_check", "pallas_check"):
        r = results.get(name, {})
        lines.append(f"| {name} | {r.get('passed', 0)} of {r.get('cases', 0)} cases within tolerance; "
                     f"largest errors {json.dumps(r.get('max_errors', {}))} |")
    for name in ("fit_auto_torch", "fit_auto_jax"):
        r = results.get(name, {})
        if r.get("ok"):
            lines.append(f"| {name} | path: {r['auto_path']}; ms/step auto {_ms(r['auto']['ms_per_step'])}, "
                         f"xla {_ms(r['xla']['ms_per_step'])}; first losses agree: "
                         f"{r['first_losses_agree']} |")
    for row in results.get("file_stream", {}).get("rows", []):
        lines.append(f"| file stream: {row['stream']} ({row['backend']}) | "
                     f"{row['images_per_s']:,.0f} images/s |")
    return lines


def report(path):
    results = {}
    for line in open(path).read().splitlines():
        result = json.loads(line)
        results[result["step"]] = result
    env = results.get("environment", {})
    lines = [f"GPU: {env.get('gpu')}; torch {env.get('torch')}, JAX {env.get('jax')}, "
             f"Keras {env.get('keras')}, Triton {env.get('triton')}, {env.get('cpus')} CPUs", ""]
    lines += training(results) + [""]
    lines += kernels(results.get("triton_timing", {}), "Triton (torch)") + [""]
    lines += kernels(results.get("pallas_timing", {}), "Pallas (JAX)") + [""]
    return "\n".join(lines + other(results))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/gpu/report.py RESULTS.jsonl")
    print(report(sys.argv[1]))
