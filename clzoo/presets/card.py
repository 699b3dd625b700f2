"""Hugging Face model card (`README.md`) of a preset, generated from its metadata.

The card is written to be copied from: the `Encoder.from_preset("hf://owner/repo")`
line names the repository the preset is pushed to, `datasets:` and the
model-index give Hub dataset ids (or are left out when the data has none, such
as scikit-learn's digits), the model-index task is the `pipeline_tag`
(`image-feature-extraction`), and the citation section has a BibTeX entry for
the loss's paper and for clzoo.
"""

import yaml

from clzoo.eval.records import EvalReport, RunResult
from clzoo.presets.citation import PAPERS, REPOSITORY, clzoo_bibtex

PIPELINE_TAG = "image-feature-extraction"


# Years and venues checked against the papers themselves and their proceedings pages.

# Data name -> (Hub dataset id, display name). Data without a Hub id (scikit-learn's digits,
# an ImageNet-100 folder) gets no `datasets:` entry and no model-index rather than a wrong id.
HUB_DATASETS = {
    "cifar10": ("uoft-cs/cifar10", "CIFAR-10"),
    "cifar100": ("uoft-cs/cifar100", "CIFAR-100"),
}


def hub_dataset(spec):
    """`(Hub dataset id or None, display name)` of a recipe's `data`.

    A derived label set (`@cifar2`, `@cifar10_coarse`) keeps its source's
    Hub id: the images are that dataset's.

    Example:

    >>> from clzoo.presets.card import hub_dataset
    >>> hub_dataset("data/cifar10@cifar2")
    ('uoft-cs/cifar10', 'CIFAR-10 (cifar2 labels: 2 classes, cat vs dog)')
    >>> hub_dataset("digits")
    (None, 'digits')
    """
    base, _, label_set = str(spec).partition("@")
    name = base[len("tfds:"):] if base.startswith("tfds:") else base.rstrip("/").split("/")[-1]
    hub_id, display = HUB_DATASETS.get(name, (None, name))
    if not label_set:
        return hub_id, display
    what = LABEL_SET_CLASSES.get(label_set)
    return hub_id, f"{display} ({label_set} labels" + (f": {what})" if what else ")")


# What each derived label set asks, so a card's accuracy is read against the right chance level.
LABEL_SET_CLASSES = {"cifar2": "2 classes, cat vs dog",
                     "cifar10_coarse": "2 classes, animal vs vehicle",
                     "cifar100_coarse": "20 superclasses"}


def probe_accuracy(metadata):
    """Linear-probe top-1 of the preset's `clzoo eval` report, or None.

    Reports name it `probe` (the metric's registry name); presets made before
    that rename (the built-in ones, checksummed) call it `linear_probe`
    (`clzoo.eval.records.EvalReport` reads both).

    Example:

    >>> from clzoo.presets.card import probe_accuracy
    >>> probe_accuracy({"metrics": {"eval": {"probe": {"accuracy": 0.5}}}})
    0.5
    >>> probe_accuracy({"metrics": {"eval": {"linear_probe": {"accuracy": 0.25}}}})
    0.25
    """
    report = _eval_record(metadata)
    return None if report is None else report.probe


def _eval_record(metadata):
    """The `EvalReport` of the preset's `clzoo eval` report (`metrics.eval`), or None."""
    report = metadata.get("metrics", {}).get("eval")
    return EvalReport.from_metrics(report, where="metadata.json: metrics.eval") if report else None


def _train_record(metadata):
    """The `RunResult` of the run's summary (`metrics.train`), or None when it has no kNN."""
    summary = metadata.get("metrics", {}).get("train") or {}
    if not {"knn_top1", "knn_top1_k", "knn_top1_by_k"} <= set(summary):
        return None
    return RunResult.from_summary(summary, where="metadata.json: metrics.train")


def _label_free_lines(metadata):
    """For an encoder trained on an unlabelled folder: that, and its label-free figures."""
    figures = (metadata.get("metrics", {}).get("train") or {}).get("label_free")
    if not isinstance(figures, dict):
        return []
    try:
        return [f"Trained without labels (an unlabelled image folder); the kNN above is on the "
                f"labelled data it was evaluated on. On {int(figures['images']):,} training images, "
                f"two views each: alignment {float(figures['alignment']):.4f}, uniformity "
                f"{float(figures['uniformity']):.4f}, effective rank "
                f"{float(figures['effective_rank']):.1f} (`clzoo.eval.label_free`).", ""]
    except (KeyError, TypeError, ValueError):  # a hand-edited record: the card says nothing of it
        return []


def _model_index(metadata, hub_id, display, run, report):
    metrics = [{"type": "accuracy", "value": round(100 * value, 2),
                "name": f"weighted kNN top-1 ({k}, cosine)"}
               for k, value in (run.knn if run else {}).items()]
    if report is not None and report.probe is not None:
        metrics.append({"type": "accuracy", "value": round(100 * report.probe, 2),
                        "name": "linear probe top-1 (logistic regression)"})
    dataset = {"name": display, "type": hub_id or display, "split": "test"}
    return [{"name": metadata["name"], "results": [{
        "task": {"type": PIPELINE_TAG, "name": "Image Feature Extraction"},
        "dataset": dataset, "metrics": metrics}]}]


def _header(metadata, loss, license, run, report):
    hub_id, display = hub_dataset(metadata.get("dataset"))
    header = {"library_name": "keras", "license": license,
              "tags": ["clzoo", "contrastive-learning", PIPELINE_TAG, loss]}
    if hub_id:
        header["datasets"] = [hub_id]
    header["pipeline_tag"] = PIPELINE_TAG
    # data without a Hub id (digits, a user's folder) is named by its display name (never a
    # machine path), so the Hub still shows the figures
    if (run and run.knn) or (report and report.probe is not None):
        header["model-index"] = _model_index(metadata, hub_id, display, run, report)
    return header


def _usage(metadata, handle):
    repo = handle or "hf://<owner>/<repo>"
    where = ("" if handle else "  # the Hub repository this folder is uploaded to")
    return ["## Use", "", "```python",
            "import clzoo  # pip install \"clzoo[hub] @ git+https://github.com/clzoo/clzoo\"",
            "import numpy as np",
            "from PIL import Image",
            "",
            f"encoder = clzoo.presets.Encoder.from_preset(\"{repo}\"){where}",
            "width_height = encoder.input_shape[2:0:-1]  # PIL sizes are (width, height)",
            "images = np.stack([np.asarray(Image.open(path).convert(\"RGB\").resize(width_height))",
            "                   for path in [\"image.png\"]])  # your files: uint8 (N, H, W, 3)",
            f"features = encoder.predict(images)  # uint8 or float in [0, 1], (N, H, W, 3) "
            f"-> (N, {metadata.get('feature_dim', 0):d})",
            "```", "",
            "`Encoder.from_preset` also takes this folder's local path; it checks every file "
            "against `checksums.json` before loading. The encoder's layers are clzoo's: Keras "
            "alone (`keras.saving` or the Hub's Keras snippet) reads them only after `import clzoo`.",
            ""]


def _citation(paper, metadata):
    lines = ["## Citation", ""]
    if paper is not None:
        lines += ["The loss:", "", paper.cite, "", "```bibtex", paper.bibtex, "```", ""]
    lines += [f"clzoo, which trained and packaged this encoder ({REPOSITORY}):", "",
              "```bibtex", clzoo_bibtex(metadata.get("clzoo_version"), _built_year(metadata)),
              "```", ""]
    return lines


def model_card(metadata, license="apache-2.0", handle=None):
    """Markdown model card with Hugging Face YAML metadata (`library_name: keras`, `model-index`).

    Args:
        metadata: the preset's `metadata.json` content (`name`, `loss`,
            `architecture`, `dataset`, `recipe`, `metrics`, `feature_dim`, ...).
        license: SPDX-style license id. Defaults to `"apache-2.0"`.
        handle: `"hf://owner/repo"` the preset is pushed to, shown in the
            usage example. Defaults to `None` (a `hf://<owner>/<repo>` placeholder).

    Returns:
        The card text; `huggingface_hub.ModelCard(text)` parses its metadata.
    """
    loss = metadata.get("loss", {}).get("name", "unknown")
    paper = PAPERS.get(loss)
    _, display = hub_dataset(metadata.get("dataset"))
    run, report = _train_record(metadata), _eval_record(metadata)  # parsed once, read below
    scores = run.knn if run else (report.knn if report is not None else {})  # unlabelled: the report's
    knn = ", ".join(f"{k}: {v:.2%}" for k, v in (scores or {}).items())
    header = _header(metadata, loss, license, run, report)
    lines = ["---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
             f"# {metadata['name']}", "",
             f"{_article(metadata.get('architecture'))} {metadata.get('architecture')} image encoder "
             f"trained with `{loss}` on {display} "
             f"with [clzoo]({REPOSITORY})" + ("; the loss's paper is cited below." if paper else "."), ""]
    lines += _usage(metadata, handle)
    tested = _test_images(metadata)
    lines += ["## Evaluation", "", f"Weighted kNN top-1 on the test split"
              f"{f' ({tested:,} images)' if tested else ''}: {knn or 'n/a'}.", "",
              "kNN protocol: the whole training split as memory, the k training features of "
              "highest cosine similarity vote for their class with that similarity as weight "
              "(`clzoo.eval.knn_predict`, weighting `cosine`).", ""]
    lines += _flip_lines(metadata, report) + _label_free_lines(metadata)
    if report is not None and report.probe is not None:
        lines += [f"Linear probe ({_probe_protocol(report)}): {report.probe:.2%}.", ""]
    lines += _auxiliary_lines(metadata)
    lines += _alternative_lines(metadata, run)
    lines += _compute_lines(metadata, run) + _curve_lines(metadata) + _limitations(metadata)
    lines += ["## Training", "", "Recipe (`clzoo train` resolved config, in today's recipe keys):", "",
              "```yaml", _recipe_yaml(metadata.get("recipe", {})), "```", "",
              _versions_line(metadata), ""]
    lines += _citation(paper, metadata)
    lines += ["Files are listed with their SHA-256 in `checksums.json`; clzoo checks them on load.", ""]
    return "\n".join(lines)


def _test_images(metadata):
    """The test split's size the figures were measured on, where the run or report recorded it."""
    metrics = metadata.get("metrics") or {}
    samples = ((metrics.get("eval") or {}).get("samples") or {}).get("test")
    return samples or (metrics.get("train") or {}).get("test_images")


def _versions_line(metadata):
    """clzoo and Keras versions, the backend that trained, and the commit (or that there was none)."""
    backend = ((metadata.get("metrics") or {}).get("train") or {}).get("backend")
    commit = metadata.get("commit")
    return (f"clzoo {metadata.get('clzoo_version')}, keras {metadata.get('keras_version')}"
            + (f" on the {backend} backend" if backend else "")
            + (f", commit `{commit}`." if commit else ", not from a git checkout (no commit recorded)."))


def _recipe_yaml(stored):
    """The stored recipe as YAML in today's spelling (a recipe stored in the flat keys of earlier
    versions is upgraded; as stored when it no longer reads), its `data` line saying what it names:
    the run's data under its public name, its folder path left out."""
    from clzoo.train.recipe import RECIPE_VERSION, Recipe, validate_recipe

    recipe = stored  # today's spelling, stored whole (Recipe.to_dict): nothing to resolve
    if not (isinstance(stored, dict) and stored.get("recipe_version") == RECIPE_VERSION
            and set(Recipe.model_fields) <= set(stored)):
        try:
            recipe = validate_recipe(stored, stored=True).to_dict()
        except ValueError:
            pass
    text = yaml.safe_dump(recipe, sort_keys=False).strip()
    note = "  # the training data's public name; give your copy's folder, or a tfds:NAME"
    return "\n".join(line + note if line.startswith("data: ") else line for line in text.splitlines())


# Encoders a user could pick instead, with no training on the data: (hub id, line, source).
ALTERNATIVES = {
    "uoft-cs/cifar10": ("CLIP ViT-B/32 (LAION-2B, open_clip `laion2b_s34b_b79k`) zero-shot: 93.56% top-1 "
                        "on the test split, with no CIFAR-10 training (clip_benchmark's protocol: "
                        "class names and 18 prompt templates), at 224 px and about 88M parameters "
                        "in its image tower",
                        "https://github.com/LAION-AI/CLIP_benchmark"),
}


def _alternative_lines(metadata, run):
    """What a user could use instead, measured the same way: raw pixels and the untrained encoder
    (the run's own baselines) and, for known datasets, a large pretrained encoder's figure."""
    lines = []
    for name, label in (("raw_pixels", "raw pixels"), ("random_init", "the untrained encoder")):
        row = (run.baselines if run else {}).get(name)
        if row is None:
            continue
        knn = ", ".join(f"{k}: {v:.2%}" for k, v in row.knn.items())
        probe = "" if row.probe is None else f"; linear probe {row.probe:.2%}"
        lines.append(f"- {label}: weighted kNN top-1 {knn}{probe} (measured with this run)")
    hub_id, _ = hub_dataset(metadata.get("dataset"))
    if hub_id in ALTERNATIVES:
        text, source = ALTERNATIVES[hub_id]
        lines.append(f"- {text} ({source})")
    if not lines:
        return []
    return ["## What else you could use", "", "On the same test split, with no training on this data:", "",
            *lines, ""]


def _auxiliary_lines(metadata):
    """What an auxiliary cross-entropy head (the recipe's `model.auxiliary`) did."""
    auxiliary = _auxiliary_section((metadata.get("recipe") or {}).get("model") or {})
    if not auxiliary or not auxiliary.get("weight"):
        return []
    return ["## Auxiliary cross-entropy head", "",
            f"Besides `{(metadata.get('loss') or {}).get('name', 'the loss')}`, a linear classifier "
            f"on the encoder's features was trained with cross-entropy (weight {auxiliary['weight']:g}, "
            f"label smoothing {auxiliary.get('label_smoothing', 0.2):g}{_logit_scale(auxiliary)}) and "
            "dropped afterwards: the labels shaped this encoder directly, so it is a supervised "
            "encoder whatever the contrastive loss is.", ""]


def _auxiliary_section(model):
    """The stored recipe's `model.auxiliary` as a dict, whichever spelling the recipe was stored in."""
    from clzoo.train.recipe_upgrade import reading_stored_recipe, upgrade

    try:
        with reading_stored_recipe():
            model = upgrade({"model": model})[0].get("model")
    except ValueError:  # a recipe that would not load: no head to describe
        return None
    return model.get("auxiliary") if isinstance(model, dict) else None


def _logit_scale(auxiliary):
    """`, logits times S` where the recipe recorded S (recipes before the key had an unscaled head)."""
    scale = auxiliary.get("logit_scale")
    return "" if scale is None else f", logits times {scale:.4g}"


def _built_year(metadata):
    """The year the preset was built (`metadata["created"]`, an ISO date), or None for presets
    built before that was recorded."""
    created = str(metadata.get("created") or "")
    return int(created[:4]) if created[:4].isdigit() else None


def _article(word):
    return "An" if str(word)[:1].lower() in "aeiou" else "A"


def _probe_protocol(report):
    """How the probe was fitted, from the report (`EvalReport`): protocol and its regularization C."""
    stored = report.metrics  # the protocol and C are facts, not measurements
    probe = stored.get("probe") or stored.get("linear_probe") or {}
    protocol = probe.get("protocol") or "logistic regression"
    c = f", C = {probe['C']:g}" if isinstance(probe.get("C"), (int, float)) else ""
    return f"{protocol}{c}, on frozen features of the training split"


def _limitations(metadata):
    """Intended use, the input contract and where the training data came from."""
    _, display = hub_dataset(metadata.get("dataset"))
    lines = ["## Intended use and limitations", "",
             f"A frozen feature extractor for images like {display}'s (linear probes, kNN "
             "retrieval, transfer studies) and a baseline for research on contrastive losses. "
             "It was trained and measured on one dataset only: features of images far from it "
             f"can be worse than raw pixels ({REPOSITORY}/blob/main/benchmarks/README.md, digits "
             "transfer). The encoder "
             "takes uint8 images in [0, 255] or float images in [0, 1] (the same features: "
             "`from_preset` divides uint8 pixels by 255 inside the model) and refuses other "
             "integer types, float values outside [0, 1] and other image sizes. It was not "
             "evaluated for fairness or robustness.", ""]
    data = metadata.get("data_provenance") or {}
    if data.get("file_types"):
        count = data.get("train_images")
        count = f"{count:,} " if isinstance(count, int) else ""
        lines += [f"Training data: an image folder named {display} ({count}training images stored "
                  f"as {', '.join(data['file_types'])} files"
                  + ("; JPEG is lossy, so if they were converted from another release their "
                     "pixels differ slightly from it" if any(t in (".jpg", ".jpeg") for t in
                                                            data["file_types"]) else "") + ").", ""]
    return lines


def _compute_lines(metadata, run):
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
    rate = run.images_per_second if run else None
    if rate:
        line += f", {rate:,.0f} training images/s"
    precision = ((metadata.get("recipe") or {}).get("training") or {}).get("precision", "float32")
    if precision != "float32":  # a half-precision run says so beside its speed
        line += f", in {precision} (`training.precision`)"
    return ["## Compute", "", line + f"; devices: {', '.join(compute.get('devices') or ['n/a'])}.", ""]


def _curve_lines(metadata):
    """The card's "Accuracy during training" table: the online kNN monitor, and the top-1 a model
    part logs (`model.online_probe`'s, over the epoch's training views), epoch by epoch."""
    curve = metadata.get("curve") or {}
    every = curve.get("rows", [])
    parts = sorted({key for row in every for key in row if key.endswith("_top1")})
    knn = any("knn_top1_k20" in row for row in every)
    rows = [row for row in every if "knn_top1_k20" in row or any(key in row for key in parts)]
    if not rows:
        return []
    monitor = curve.get("monitor", {})
    about = (f"Weighted kNN top-1 (k=20) of the encoder while it trained: "
             f"{monitor.get('monitor_memory'):,} training images as memory, "
             f"{monitor.get('monitor_queries'):,} test images as queries." if knn else "")
    if parts:
        about += (" " if about else "") + ", ".join(f"`{key}`" for key in parts) + (
            ": the top-1 a model part logs over the epoch's augmented training views "
            "(`model.online_probe`: the online linear probe on the encoder's stop-gradient features).")
    columns = (["kNN top-1 (k=20)"] if knn else []) + [f"`{key}`" for key in parts]
    lines = ["## Accuracy during training", "", about, "",
             "| epoch | images seen | training loss | " + " | ".join(columns) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in columns) + " |"]
    for row in rows:
        cells = [_percent(row.get(key)) for key in (["knn_top1_k20"] if knn else []) + parts]
        lines.append(f"| {row['epoch']} | {row['images_seen']:,} | {row['loss']:.4f} | "
                     + " | ".join(cells) + " |")
    return lines + [""]


def _percent(value):
    return "-" if value is None else f"{value:.2%}"


def _test_time_lines(metadata):
    """A preset whose run measured its metrics on the shipped, test-time averaged features."""
    translate = metadata.get("test_time_translate") or 0
    if translate:
        views = (f"6 views of each image: the image and the two shifted by ({-translate}, "
                 f"{-translate}) and (+{translate}, +{translate}) pixels (reflect-padded), each "
                 "with its mirror image; weight 1/4 on each unshifted view, 1/8 on each shifted one "
                 "(airbench's multi-crop test-time augmentation, "
                 "`clzoo.models.test_time_averaged`; 6x the inference cost)")
    else:
        views = ("the image and its mirror image (`clzoo.models.flip_averaged`; twice the "
                 "inference cost)")
    return [f"The preset's features are the weighted mean of the encoder's features over {views}. "
            "Every number on this card is measured on these shipped features, except the "
            "accuracy during training (the bare encoder).", ""]


def _flip_lines(metadata, report):
    """With a test-time-flip preset: say so, and give the kNN measured with the shipped features."""
    if not metadata.get("test_time_flip"):
        return []
    if metadata.get("test_time_measured"):
        return _test_time_lines(metadata)
    shown = ", ".join(f"{k}: {v:.2%}" for k, v in (report.knn if report else {}).items())
    return ["The preset's features are the mean over each image and its mirror image "
            "(`clzoo.models.flip_averaged`, test-time flip; twice the inference cost). The numbers "
            "above are the trained encoder's own; with the flip, as shipped, weighted kNN top-1: "
            f"{shown or 'n/a'}. The linear probe below is measured on the shipped features.", ""]
