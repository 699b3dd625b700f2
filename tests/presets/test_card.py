"""Generated model cards parse as Hugging Face cards and can be copied from."""

import re

import pytest

from clzoo.losses import LOSSES
from clzoo.presets.card import PAPERS, PIPELINE_TAG, clzoo_bibtex, hub_dataset, model_card

huggingface_hub = pytest.importorskip("huggingface_hub")


def _metadata(data="tfds:cifar10", loss="SINCERELoss", probe=0.7):
    metrics = {"train": {"knn_top1": 0.65, "knn_top1_k": 20, "knn_top1_by_k": {"k5": 0.6, "k20": 0.65}}}
    if probe is not None:
        metrics["eval"] = {"probe": {"accuracy": probe}}
    return {"name": "tiny", "architecture": "resnet20", "dataset": data, "loss": {"name": loss},
            "recipe": {"data": data}, "metrics": metrics, "feature_dim": 64,
            "clzoo_version": "0.1.0", "keras_version": "3", "commit": "abc", "created": "2026-11-27"}


@pytest.mark.parametrize("data, hub_id", [
    ("tfds:cifar10", "uoft-cs/cifar10"), ("../shared/data/cifar10", "uoft-cs/cifar10"),
    ("../shared/data/cifar10@cifar2", "uoft-cs/cifar10"), ("tfds:cifar100", "uoft-cs/cifar100"),
    ("tfds:cifar100@cifar100_coarse", "uoft-cs/cifar100"),
])
def test_card_metadata_parses_with_hub_dataset_ids_and_one_task_type(data, hub_id):
    card = huggingface_hub.ModelCard(model_card(_metadata(data), handle="hf://someone/tiny"))
    assert card.data.library_name == "keras" and card.data.pipeline_tag == PIPELINE_TAG
    assert card.data.datasets == [hub_id]
    results = card.data.eval_results
    assert len(results) == 3 and {r.task_type for r in results} == {PIPELINE_TAG}
    assert {r.dataset_type for r in results} == {hub_id}
    assert [r.metric_value for r in results] == [60.0, 65.0, 70.0]
    assert 'Encoder.from_preset("hf://someone/tiny")' in card.text


def test_data_without_a_hub_id_gets_no_dataset_entry_but_a_model_index_by_its_name():
    for data, name in (("digits", "digits"), ("/data/imagenet100", "imagenet100")):
        card = huggingface_hub.ModelCard(model_card(_metadata(data)))
        assert card.data.datasets is None  # no wrong Hub id
        assert {r.dataset_type for r in card.data.eval_results} == {name}  # the Hub shows the figures
        assert "/data" not in str(card.data.to_dict())  # never a machine path
        assert "Weighted kNN top-1 on the test split: k5: 60.00%" in card.text
    assert hub_dataset("digits") == (None, "digits")


def test_the_card_names_the_backend_the_test_split_size_and_a_missing_commit():
    metadata = _metadata()
    metadata["metrics"]["train"].update(backend="jax", test_images=360)
    text = model_card(metadata)
    assert "on the jax backend, commit `abc`." in text
    assert "Weighted kNN top-1 on the test split (360 images): k5" in text
    metadata["commit"] = None  # built from a pip-installed clzoo
    text = model_card(metadata)
    assert "not from a git checkout" in text and "None" not in text.split("## Training")[1].split("```")[2]


def test_usage_without_a_handle_shows_the_placeholder_to_replace():
    text = model_card(_metadata())
    assert 'from_preset("hf://<owner>/<repo>")' in text and "uploaded to" in text


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_every_loss_cites_its_paper_with_year_venue_and_bibtex(loss):
    paper = PAPERS[loss]
    assert re.search(r"\b20\d\d\.$", paper.cite), paper.cite  # ends with the year
    assert re.search(r"arXiv:\d{4}\.\d{5}|NeurIPS|ICML|ICLR|ECCV", paper.cite), paper.cite
    year = re.search(r"year\s*=\s*\{(\d{4})\}", paper.bibtex).group(1)
    assert paper.cite.endswith(f"{year}.")
    text = model_card(_metadata(loss=loss))
    blocks = re.findall(r"```bibtex\n(.*?)\n```", text, flags=re.S)
    assert blocks == [paper.bibtex, clzoo_bibtex("0.1.0", 2026)]
    for block in blocks:
        assert re.match(r"@\w+\{\w+,\n", block) and block.count("{") == block.count("}")
        assert re.search(r"\btitle\s*=", block) and re.search(r"\byear\s*=\s*\{\d{4}\}", block)


def test_clzoo_bibtex_is_a_software_entry_with_version_and_url():
    entry = clzoo_bibtex(year=2026)
    assert entry.startswith("@software{clzoo,\n") and "year      = {2026}" in entry
    assert "version   = {0.1.0}" in entry and "https://github.com/clzoo/clzoo" in entry


def test_push_dry_run_card_names_the_target_repo(tmp_path):
    from clzoo.presets import push_preset
    from tests.presets.test_presets import _run

    run, _ = _run(tmp_path)
    out = push_preset(run, "hf://someone/tiny", dry_run=tmp_path / "dry")
    card = huggingface_hub.ModelCard.load(out / "README.md")
    assert 'clzoo.presets.Encoder.from_preset("hf://someone/tiny")' in card.text
    assert card.data.datasets == ["uoft-cs/cifar10"]
    assert {r.task_type for r in card.data.eval_results} == {card.data.pipeline_tag}


def test_a_card_is_the_same_whenever_and_by_whichever_version_it_is_rendered(monkeypatch):
    import datetime

    import clzoo.presets.citation as citation

    first = model_card(_metadata())
    monkeypatch.setattr(citation, "__version__", "9.9.9")  # clzoo's own BibTeX entry reads it
    real = datetime.date
    monkeypatch.setattr(datetime, "date", type("D", (real,), {"today": staticmethod(
        lambda: real(2031, 1, 2))}))
    assert model_card(_metadata()) == first and "{0.1.0}" in first and "{2026}" in first
    undated = {k: v for k, v in _metadata().items() if k != "created"}
    assert "year      =" not in model_card(undated).split("@software")[1]


def test_a_preset_trained_with_an_auxiliary_head_says_so_in_its_name_and_card(tmp_path):
    import yaml

    from clzoo.presets import build_preset
    from clzoo.presets.format import PresetError
    from tests.presets.test_presets import _run

    run, _ = _run(tmp_path)
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    recipe["model"].update(auxiliary_cross_entropy_weight=0.5, auxiliary_label_smoothing=0.2,
                           auxiliary_logit_scale=0.25)
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    with pytest.raises(PresetError, match="name must say so, e.g. tiny_aux_ce"):
        build_preset(run, tmp_path / "preset", name="tiny")
    assert not (tmp_path / "preset").exists()
    out = build_preset(run, tmp_path / "preset", name="tiny_aux_ce")
    card = huggingface_hub.ModelCard.load(out / "README.md")
    assert "## Auxiliary cross-entropy head" in card.text
    assert "(weight 0.5, label smoothing 0.2, logits times 0.25)" in card.text
    assert "supervised encoder" in card.text
    assert "Auxiliary" not in model_card(_metadata())  # only where the head trained
