"""Hugging Face model card (`README.md`) of a preset, generated from its metadata."""

import yaml

_PAPERS = {
    "SINCERELoss": ("SINCERE: Supervised Information Noise-Contrastive Estimation REvisited",
                    "Feeney, P. and Hughes, M. C."),
    "SupConLoss": ("Supervised Contrastive Learning", "Khosla, P. et al. (2020)"),
    "SupInfoNCELoss": ("Unbiased Supervised Contrastive Learning", "Barbano, C. A. et al. (2023)"),
    "SpreadLoss": ("Perfectly Balanced: Improving Transfer and Robustness of Supervised "
                   "Contrastive Learning", "Chen, M. F. et al. (2022)"),
    "NSCLLoss": ("Self-Supervised Contrastive Learning is Approximately Supervised Contrastive "
                 "Learning", "Luthra, A., Yang, T. and Galanti, T."),
    "DCLLoss": ("Decoupled Contrastive Learning", "Yeh, C.-H. et al. (2022)"),
    "InfoNCELoss": ("A Simple Framework for Contrastive Learning of Visual Representations",
                    "Chen, T. et al. (2020)"),
}


def dataset_id(spec):
    """`tfds:cifar10` / `../shared/data/cifar10` / `...@cifar2` -> a dataset name for the card."""
    spec = str(spec)
    base, _, label_set = spec.partition("@")
    name = base[len("tfds:"):] if base.startswith("tfds:") else base.rstrip("/").split("/")[-1]
    return f"{name}-{label_set}" if label_set else name


def probe_accuracy(metadata):
    """Linear-probe top-1 of the preset's `clzoo eval` report, or None.

    Reports name it `probe` (the metric's registry name); presets made before
    that rename (the built-in ones, checksummed) call it `linear_probe`.

    Example:

    >>> from clzoo.presets.card import probe_accuracy
    >>> probe_accuracy({"metrics": {"eval": {"probe": {"accuracy": 0.5}}}})
    0.5
    >>> probe_accuracy({"metrics": {"eval": {"linear_probe": {"accuracy": 0.25}}}})
    0.25
    """
    report = metadata.get("metrics", {}).get("eval", {})
    probe = report.get("probe") or report.get("linear_probe")
    return probe["accuracy"] if probe else None


def _model_index(metadata):
    train = metadata.get("metrics", {}).get("train", {})
    dataset = dataset_id(metadata.get("dataset"))
    metrics = [{"type": "accuracy", "value": round(100 * value, 2),
                "name": f"weighted kNN top-1 ({k}, cosine)"}
               for k, value in train.get("knn_top1_by_k", {}).items()]
    probe = probe_accuracy(metadata)
    if probe is not None:
        metrics.append({"type": "accuracy", "value": round(100 * probe, 2),
                        "name": "linear probe top-1 (logistic regression)"})
    return [{"name": metadata["name"], "results": [{
        "task": {"type": "image-classification"},
        "dataset": {"name": dataset, "type": dataset, "split": "test"}, "metrics": metrics}]}]


def model_card(metadata, license="apache-2.0"):
    """Markdown model card with Hugging Face YAML metadata (`library_name: keras`, `model-index`)."""
    loss = metadata.get("loss", {}).get("name", "unknown")
    title, authors = _PAPERS.get(loss, (loss, ""))
    header = {
        "library_name": "keras", "license": license,
        "tags": ["clzoo", "contrastive-learning", "image-feature-extraction", loss],
        "datasets": [dataset_id(metadata.get("dataset"))], "pipeline_tag": "image-feature-extraction",
        "model-index": _model_index(metadata),
    }
    train = metadata.get("metrics", {}).get("train", {})
    knn = ", ".join(f"{k}: {v:.2%}" for k, v in train.get("knn_top1_by_k", {}).items())
    lines = [
        "---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
        f"# {metadata['name']}", "",
        f"A {metadata.get('architecture')} image encoder trained with `{loss}` "
        f"({title}) on {dataset_id(metadata.get('dataset'))} by [clzoo](https://github.com/clzoo).",
        "", "```python", "import clzoo",
        f"encoder = clzoo.models.Encoder.from_preset(\"{metadata['name']}\")  # images in [0, 1]",
        f"features = encoder.predict(images)  # (N, {metadata.get('feature_dim', 0):d})",
        "```", "",
        "## Evaluation", "",
        f"Weighted kNN top-1 on the test split: {knn or 'n/a'}.", "",
    ]
    lines += _flip_lines(metadata)
    probe = probe_accuracy(metadata)
    if probe is not None:
        lines += [f"Linear probe (logistic regression on frozen features): {probe:.2%}.", ""]
    lines += _compute_lines(metadata) + _curve_lines(metadata)
    lines += ["## Training", "", "Recipe (`clzoo train` resolved config):", "", "```yaml",
              yaml.safe_dump(metadata.get("recipe", {}), sort_keys=False).strip(), "```", "",
              f"clzoo {metadata.get('clzoo_version')}, keras {metadata.get('keras_version')}, "
              f"commit `{metadata.get('commit')}`.", "",
              "## Citation", "", f"{authors}. *{title}*." if authors else title, "",
              "Files are listed with their SHA-256 in `checksums.json`; clzoo checks them on load.", ""]
    return "\n".join(lines)


def _compute_lines(metadata):
    """The card's "Compute" section: images seen, wall time, CPU-hours (when recorded)."""
    compute = metadata.get("compute")
    if not compute or not compute.get("images_seen"):
        return []
    hours = compute["fit_seconds"] / 3600
    where = f"{compute['cores']} CPU cores" if compute.get("cores") else "the devices below"
    line = (f"Trained on {compute['images_seen']:,} images ({compute['views_seen']:,} augmented "
            f"views) in {hours:.2f} h of wall time on {where}")
    if compute.get("cpu_hours") is not None:
        line += f" ({compute['cpu_hours']:.2f} CPU-hours)"
    return ["## Compute", "", line + f"; devices: {', '.join(compute.get('devices') or ['n/a'])}.", ""]


def _curve_lines(metadata):
    """The card's "Accuracy during training" table: the online kNN monitor, epoch by epoch."""
    curve = metadata.get("curve") or {}
    rows = [r for r in curve.get("rows", []) if "knn_top1_k20" in r]
    if not rows:
        return []
    monitor = curve.get("monitor", {})
    lines = ["## Accuracy during training", "",
             f"Weighted kNN top-1 (k=20) of the encoder while it trained: "
             f"{monitor.get('monitor_memory'):,} training images as memory, "
             f"{monitor.get('monitor_queries'):,} test images as queries.", "",
             "| epoch | images seen | training loss | kNN top-1 (k=20) |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['epoch']} | {r['images_seen']:,} | {r['loss']:.4f} | {r['knn_top1_k20']:.2%} |"
              for r in rows]
    return lines + [""]


def _flip_lines(metadata):
    """With a test-time-flip preset: say so, and give the kNN measured with the shipped features."""
    if not metadata.get("test_time_flip"):
        return []
    knn = metadata.get("metrics", {}).get("eval", {}).get("knn", {})
    shown = ", ".join(f"{k}: {v:.2%}" for k, v in knn.items())
    return ["The preset's features are the mean over each image and its mirror image "
            "(`clzoo.models.flip_averaged`, test-time flip; twice the inference cost). The numbers "
            "above are the trained encoder's own; with the flip, as shipped, weighted kNN top-1: "
            f"{shown or 'n/a'}. The linear probe below is measured on the shipped features.", ""]
