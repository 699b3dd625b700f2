"""benchmarks/reproduce.py: the subset, resumable cells, verdicts and RESULTS.md rendered from the cells."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import reproduce  # noqa: E402  (benchmarks/reproduce.py)
import reproduce_report  # noqa: E402
from convergence import check_convergence, rechecked  # noqa: E402


def _folder(root, per_class):
    for split, n in per_class.items():
        for cls in ("cat", "dog"):
            (root / split / cls).mkdir(parents=True)
            for i in range(n):
                (root / split / cls / f"{i:04d}.jpg").write_bytes(b"x" * (i + 1))
    (root / "train" / ".ipynb_checkpoints").mkdir()


def test_subset_takes_the_first_files_of_every_class_and_is_idempotent(tmp_path):
    _folder(tmp_path / "src", {"train": 5, "test": 4})
    (tmp_path / "src" / "train" / "cat" / ".hidden.jpg").write_bytes(b"h")
    dest = reproduce.make_subset(tmp_path / "src", tmp_path / "sub", 3, 2)
    assert sorted(p.name for p in (dest / "train" / "cat").iterdir()) == ["0000.jpg", "0001.jpg",
                                                                          "0002.jpg"]
    assert sorted(p.name for p in (dest / "train").iterdir()) == ["cat", "dog"]
    assert len(list((dest / "test" / "dog").iterdir())) == 2
    stamp = (dest / "train" / "cat" / "0000.jpg").stat().st_mtime_ns
    reproduce.make_subset(tmp_path / "src", tmp_path / "sub", 3, 2)  # finished: not copied again
    assert (dest / "train" / "cat" / "0000.jpg").stat().st_mtime_ns == stamp
    reproduce.make_subset(tmp_path / "src", tmp_path / "sub", 2, 2)  # other size: redone
    assert len(list((dest / "train" / "cat").iterdir())) == 2


def test_subset_refuses_a_folder_without_splits_or_images(tmp_path):
    _folder(tmp_path / "src", {"train": 2})
    with pytest.raises(SystemExit, match="no test/ folder"):
        reproduce.make_subset(tmp_path / "src", tmp_path / "sub", 1, 1)
    _folder(tmp_path / "src2", {"train": 2, "test": 1})
    with pytest.raises(SystemExit, match="fewer than the 2 asked for"):
        reproduce.make_subset(tmp_path / "src2", tmp_path / "sub", 2, 2)


def _fake_clzoo(calls, curves):
    """A stand-in `clzoo`: train writes the loss curve `curves[epochs]`, eval and embed their files."""
    def run(args, log):
        calls.append(args)
        if args[0] == "train":
            run_dir = Path(args[args.index("--output") + 1] if "--output" in args else args[2])
            epochs = int(next(a for a in args if a.startswith("training.epochs=")).split("=")[1]) \
                if "--output" in args else 40
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "eval").mkdir(exist_ok=True)
            if "--output" in args:  # a fresh stage; a resumed one keeps its recipe
                name = reproduce.recipe_name(reproduce.ROOT / args[1])
                (run_dir / "recipe.yaml").write_text(f"name: {name}\n")
            (run_dir / "history.jsonl").write_text(
                "".join(json.dumps({"loss": v}) + "\n" for v in curves[epochs]))
            (run_dir / "metrics.json").write_text(json.dumps(
                {"wall_seconds": 60.0, "knn_top1": 0.5, "knn_top1_k": 20,
                 "knn_top1_by_k": {"k20": 0.5}}))
            (run_dir / "eval" / "metrics.json").write_text(json.dumps(
                {"knn": {"k20": 0.5}, "probe": {"accuracy": 0.6},
                 "separation": {"margin": 0.01}}))
        elif args[0] == "embed":  # 8 train and 4 test rows of two classes
            rng = np.random.default_rng(len(calls))
            np.savez(args[args.index("--output") + 1], embeddings=rng.normal(size=(12, 3)),
                     labels=np.arange(12) % 2, split=np.array(["train"] * 8 + ["test"] * 4))
        elif args[0] == "eval":
            out = Path(args[args.index("--output") + 1])
            out.mkdir(parents=True)
            (out / "metrics.json").write_text(json.dumps({"separation": {"margin": 0.02},
                                                          "knn": {"k20": 0.4}}))
    return run


FALLING = [5.0 - 0.1 * i for i in range(25)]  # still falling: not converged
FLAT = [5.0 / (1 + i) ** 2 + 1.0 for i in range(50)]  # flattened: converged


def test_a_cell_climbs_the_ladder_until_converged_and_is_then_skipped(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(reproduce, "_clzoo", _fake_clzoo(calls, {40: FALLING, 80: FLAT}))
    config, scale = reproduce.CONFIGS["sincere"], reproduce.Scale()
    numbers = reproduce.run_cell(config, 0, scale, (tmp_path / "data", tmp_path), tmp_path / "c")
    assert [c[0] for c in calls] == ["train", "train", "embed", "embed"]
    assert "training.epochs=40" in calls[0] and "training.epochs=80" in calls[1]
    assert "seed=0" in calls[0] and "--data" in calls[0]
    assert numbers["converged"] and numbers["epochs"] == 80 and numbers["budgets"] == [40, 80]
    assert numbers["final_loss"] == FLAT[-1] and numbers["loss_curve"] == FLAT
    assert numbers["wall_seconds"] == 120.0 and numbers["margin_encoder"] != 0.01  # from encoder.npz
    assert numbers["margin_projection_low"] <= numbers["margin_projection_mean"] <= numbers[
        "margin_projection_high"]
    assert numbers["recipe"] == "sincere_cifar10_fast"  # read from the last stage's run folder
    assert numbers["knn_k20"] == 0.5 and numbers["probe"] == 0.6
    reproduce.run_cell(config, 0, scale, (tmp_path / "data", tmp_path), tmp_path / "c")
    assert len(calls) == 4  # cell.json: nothing runs again


def test_a_cut_short_stage_resumes_and_finished_stages_are_not_redone(tmp_path, monkeypatch):
    calls = []
    config, scale = reproduce.CONFIGS["nscl"], reproduce.Scale()
    monkeypatch.setattr(reproduce, "_clzoo", _fake_clzoo(calls, dict.fromkeys(scale.budgets,
                                                                              FALLING)))
    cell = tmp_path / "nscl_seed1"
    reproduce.run_stage(config, 1, scale, "d", cell, 40)  # an earlier sitting finished e40
    (cell / "e80" / "run").mkdir(parents=True)
    (cell / "e80" / "run" / "checkpoint.keras").write_bytes(b"")  # and was killed in e80
    calls.clear()
    numbers = reproduce.run_cell(config, 1, scale, (tmp_path / "data", tmp_path), cell)
    assert calls[0][:2] == ["train", "--resume"] and "training.epochs=160" in calls[1]
    assert not numbers["converged"] and numbers["epochs"] == scale.budgets[-1]  # at the cap


def _capped_then_raised(tmp_path, monkeypatch, key):
    """Run `key`'s seed-0 cell capped at the ladder's second budget (still falling), then uncapped
    (flat at the third); return the capped cell, the `clzoo` calls of the second sitting and its
    cell."""
    ladder, calls = reproduce.Scale().budgets, []
    monkeypatch.setattr(reproduce, "_clzoo", _fake_clzoo(
        calls, {ladder[0]: FALLING, ladder[1]: FALLING, ladder[2]: FLAT}))
    config, cell = reproduce.CONFIGS[key], tmp_path / f"{key}_seed0"
    capped = reproduce.run_cell(config, 0, reproduce.Scale(max_epochs=ladder[1]), ("d", tmp_path),
                                cell)
    calls.clear()
    return capped, calls, reproduce.run_cell(config, 0, reproduce.Scale(), ("d", tmp_path), cell)


def test_a_cell_at_a_sittings_cap_climbs_on_when_the_cap_is_raised(tmp_path, monkeypatch):
    capped, calls, numbers = _capped_then_raised(tmp_path, monkeypatch, "nscl")
    assert capped["budgets"] == [40, 80] and not capped["converged"]
    assert [c[0] for c in calls] == ["train"] and "training.epochs=160" in calls[0]
    assert numbers["converged"] and numbers["budgets"] == [40, 80, 160]


def test_a_budget_another_seed_did_not_converge_in_is_skipped(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(reproduce, "_clzoo", _fake_clzoo(calls, {40: FALLING, 80: FLAT}))
    config, scale = reproduce.CONFIGS["dcl"], reproduce.Scale()
    reproduce.run_stage(config, 0, scale, "d", tmp_path / "dcl_seed0", 40)
    calls.clear()
    reproduce.run_cell(config, 1, scale, (tmp_path / "data", tmp_path), tmp_path / "dcl_seed1")
    assert [a for a in calls[0] if a.startswith("training.epochs")] == ["training.epochs=80"]


def test_each_override_key_is_set_once_and_the_configuration_wins():
    args = reproduce.train_command(reproduce.CONFIGS["sincere"], 2, reproduce.Scale(), "d", "r", 25)
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    keys = [s.split("=", 1)[0] for s in sets]
    assert len(keys) == len(set(keys))
    assert "eval.baselines=[raw_pixels, random_init]" in sets and "seed=2" in sets
    cifar2 = reproduce.train_command(reproduce.CONFIGS["supcon_cifar2"], 0, reproduce.Scale(),
                                     "src@cifar2", "r", 40)
    assert not any(a.startswith("training.batch_size") for a in cifar2)  # the recipe's batch
    assert "model.test_time_flip=false" in cifar2 and "src@cifar2" in cifar2


def test_convergence_rule():
    assert check_convergence(FLAT).converged and not check_convergence(FALLING).converged
    assert check_convergence([3.0] * 6).ratio == float("inf")  # never fell: not converged
    with pytest.raises(ValueError, match="at least 5 epochs"):
        check_convergence([1.0, 0.5])
    with pytest.raises(ValueError, match="finite"):
        check_convergence([1.0, 0.5, float("nan"), 0.2, 0.1])


def _flat_noisy_curve():
    """100 epochs of a decayed loss with epoch-to-epoch noise of +-1% of its drop."""
    noise = [0.04 * (-1) ** (i + 1) for i in range(100)]
    return [1.0 + 4.0 * 0.9 ** i + e for i, e in enumerate(noise)]


def _still_falling(curve):
    """`curve` falling a further 3% of its drop across its last 20 epochs."""
    return [v - 0.006 * max(0, i - 79) for i, v in enumerate(curve)]


def test_convergence_reads_the_trend_not_single_noisy_epochs():
    # A flattened curve with epoch-to-epoch noise of +-1% of its drop (a contrastive loss's
    # sampled views): converged, though its window's highest and lowest epochs are 2% apart.
    flat = _flat_noisy_curve()
    status = check_convergence(flat)
    assert status.converged and abs(status.ratio) < 0.005
    assert (flat[-21] - min(flat[-20:])) / (flat[0] - min(flat)) > 0.02  # end points would fail it
    # The same noise on a curve still falling 3% of its drop across the window: not converged.
    falling = _still_falling(flat)
    status = check_convergence(falling)
    assert not status.converged and status.ratio == pytest.approx(0.03, abs=0.005)
    assert status.window == 20


def test_merge_drops_cells_of_another_recipe_and_finished_cells_replace_saved_ones(capsys):
    old = {"config": "sincere", "seed": 0, "recipe": "sincere_cifar10_small", "final_loss": 5.0,
           "converged": None}
    kept = {"config": "nscl", "seed": 0, "recipe": "nscl_cifar10_small", "final_loss": 3.0,
            "converged": None}
    new = {**old, "recipe": "sincere_cifar10_fast", "final_loss": 0.1, "converged": True,
           "loss_curve": FLAT, "epochs": 50}
    recipes = {"sincere": "sincere_cifar10_fast", "nscl": "nscl_cifar10_small"}
    saved = {"cells": [old, kept], "pairs": {}}
    assert [c["config"] for c in reproduce_report.merge(saved, [], {}, {"budgets": [1]},
                                                        recipes)["cells"]] == ["nscl"]
    assert "dropped sincere seed 0: trained with recipe sincere_cifar10_small" in capsys.readouterr().err
    merged = reproduce_report.merge(saved, [new], {}, {"budgets": [1]}, recipes)["cells"]
    assert [(c["config"], c["final_loss"]) for c in merged] == [("nscl", 3.0), ("sincere", 0.1)]
    assert capsys.readouterr().err == ""


def test_merge_keeps_a_margin_pair_only_while_both_of_its_cells_are_kept():
    cells = [{"config": c, "seed": s, "recipe": c + "_r", "converged": None}
             for c in ("sincere_cifar2", "supcon_cifar2") for s in (0, 1)]
    pairs = {"sincere_cifar2-supcon_cifar2": {"0": {"m": [1, 0, 2]}, "1": {"m": [1, 0, 2]}}}
    recipes = {"sincere_cifar2": "sincere_cifar2_r", "supcon_cifar2": "supcon_cifar2_r"}
    merged = reproduce_report.merge({"cells": cells, "pairs": pairs}, [], {}, {"budgets": [1]},
                                    recipes)
    assert sorted(merged["pairs"]["sincere_cifar2-supcon_cifar2"]) == ["0", "1"]
    cells[1]["recipe"] = "old"  # sincere_cifar2 seed 1 is dropped, so is its pair
    merged = reproduce_report.merge({"cells": cells, "pairs": pairs}, [], {}, {"budgets": [1]},
                                    recipes)
    assert sorted(merged["pairs"]["sincere_cifar2-supcon_cifar2"]) == ["0"]


def test_a_folder_with_stages_of_another_recipe_is_refused_and_listed_stale(tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.setattr(reproduce, "_clzoo", lambda args, log: pytest.fail(f"ran clzoo {args[0]}"))
    cell = tmp_path / "400x200_b128" / "sincere_seed0"
    (cell / "e100" / "run").mkdir(parents=True)
    (cell / "e100" / "run" / "recipe.yaml").write_text("name: sincere_cifar10_small\n")
    with pytest.raises(RuntimeError, match="trained with recipe sincere_cifar10_small .* now "
                                           "trains with sincere_cifar10_fast"):
        reproduce.run_cell(reproduce.CONFIGS["sincere"], 0, reproduce.Scale(), ("d", tmp_path), cell)
    assert not (cell / "e40").exists()  # refused before any work
    reproduce._list([(reproduce.CONFIGS["sincere"], 0, cell)], reproduce.Scale())
    assert capsys.readouterr().out.startswith("stale")


def test_a_cell_that_climbs_in_a_later_sitting_is_measured_again(tmp_path, monkeypatch):
    capped, calls, numbers = _capped_then_raised(tmp_path, monkeypatch, "sincere")
    assert capped["budgets"] == [40, 80] and (tmp_path / "sincere_seed0" / "projection.npz").exists()
    assert [c[0] for c in calls] == ["train", "embed", "embed"]  # e80's are not reused
    assert "e160" in calls[1][1] and numbers["converged"]


def test_a_finished_cell_gets_the_outputs_its_configuration_now_asks_for(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(reproduce, "_clzoo", _fake_clzoo(calls, {40: FLAT}))
    config, cell = reproduce.CONFIGS["sincere"], tmp_path / "sincere_seed0"
    first = reproduce.run_cell(config, 0, reproduce.Scale(), ("d", tmp_path), cell)
    calls.clear()
    assert reproduce.run_cell(config, 0, reproduce.Scale(), ("d", tmp_path), cell) == first
    assert calls == []  # finished and measured: nothing runs
    (cell / "encoder.npz").unlink()  # as a cell trained before embeddings were asked for
    old = {k: v for k, v in first.items() if not k.startswith("margin_encoder")}
    (cell / "cell.json").write_text(json.dumps(old))
    again = reproduce.run_cell(config, 0, reproduce.Scale(), ("d", tmp_path), cell)
    assert [c[0] for c in calls] == ["embed"] and "encoder" in calls[0]  # only what is missing
    assert {k: again[k] for k in ("epochs", "budgets", "wall_seconds", "loss_curve")} == {
        k: first[k] for k in ("epochs", "budgets", "wall_seconds", "loss_curve")}
    assert "margin_encoder_mean" in again
    assert json.loads((cell / "cell.json").read_text())["margin_encoder_mean"] == again[
        "margin_encoder_mean"]
    (cell / "outputs_of.txt").write_text("e80")  # outputs of another stage: measured again
    calls.clear()
    reproduce.run_cell(config, 0, reproduce.Scale(), ("d", tmp_path), cell)
    assert [c[0] for c in calls] == ["embed", "embed"]


def test_a_grid_saved_with_one_plot_keeps_it_under_its_claim():
    merged = reproduce_report.merge({"cells": [], "pairs": {}, "plot": "reproduce_cifar2.png"},
                                    [], {}, {"budgets": [1]}, {})
    assert merged["plots"] == {"sincere_cifar2-supcon_cifar2": "reproduce_cifar2.png"}


def test_a_finished_cell_without_a_recipe_field_reads_it_from_its_run(tmp_path):
    (tmp_path / "e160" / "run").mkdir(parents=True)
    (tmp_path / "e160" / "run" / "recipe.yaml").write_text("name: sincere_cifar10_fast\nseed: 0\n")
    (tmp_path / "cell.json").write_text(json.dumps({"config": "sincere", "epochs": 160}))
    assert reproduce._finished(tmp_path)["recipe"] == "sincere_cifar10_fast"
    assert reproduce.recipe_name(tmp_path / "missing.yaml") is None


def test_saved_stages_are_re_read_by_todays_rule(tmp_path):
    # A stage written by older code says "not converged" for a curve today's rule calls flat: the
    # ladder (skip, climb) and --list must follow the curve; a record without one keeps its flag.
    flat = _flat_noisy_curve()
    stage = tmp_path / "sincere_seed1" / "e100" / "stage.json"
    stage.parent.mkdir(parents=True)
    stage.write_text(json.dumps({"epochs": 100, "converged": False, "losses": flat}))
    assert rechecked(json.loads(stage.read_text()))["converged"]
    assert not reproduce._failed_elsewhere(tmp_path / "sincere_seed0", 100)
    assert rechecked({"epochs": 40, "converged": False}) == {"epochs": 40,
                                                                       "converged": False}


def test_plot_legend_reads_convergence_from_the_curve_not_a_saved_flag():
    # A cell saved by an older rule says "not converged"; the legend must agree with the table,
    # which re-checks every curve.
    import reproduce_plots

    flat = _flat_noisy_curve()
    assert "seed 3, converged: last 20% took" in reproduce_plots.curve_label("sincere", 3, flat)
    falling = _still_falling(flat)
    assert "not converged: last 20% took 3.0%" in reproduce_plots.curve_label("sincere", 3, falling)


@pytest.mark.parametrize("direction, low, high, expected", [
    (">", 0.1, 0.3, "agrees"), (">", -0.3, -0.1, "disagrees"), ("<", -0.3, -0.1, "agrees"),
    (">", -0.1, 0.2, "not resolved (interval spans 0)"), ("=", -0.1, 0.2, "agrees (no difference)"),
    ("=", 0.1, 0.2, "disagrees (a difference)"), ("", 0.1, 0.2, "no paper figure")])
def test_verdict(direction, low, high, expected):
    assert reproduce_report.verdict(direction, low, high) == expected


def test_claim_rows_pair_the_seeds_and_count_wins():
    claim = reproduce_report.Claim("t", "a", "b", "src", (
        reproduce_report.Row("m", "margin", ">", "0.9 vs 0.3"),
        reproduce_report.Row("missing", "absent", ">", "-")))
    done = {"converged": True, "epochs": 50}
    by_config = {"a": {s: {"m": 0.5 + s / 100, **done} for s in range(3)},
                 "b": {s: {"m": 0.1, **done} for s in range(4)}}
    rows = reproduce_report.claim_rows(claim, by_config)
    assert rows[0].startswith("| margin | 0.9 vs 0.3 | 0.5100 | 0.1000 | 0.4100 [0.4000, 0.4200]")
    assert rows[0].endswith("| 3/3 | agrees |")
    assert rows[1].endswith("| not run |")
    by_config["b"] = {s: {"m": 0.1, **done} for s in (0, 1)}  # two paired seeds: no verdict yet
    assert reproduce_report.claim_rows(claim, by_config)[0].endswith("| 2/2 | pending: 2 of 3 seeds |")
    by_config["b"] = {s: {"m": 0.1, "converged": s != 1, "epochs": 100} for s in range(3)}
    assert reproduce_report.claim_rows(claim, by_config)[0].endswith(
        "| 3/3 | no verdict: not converged at cap (100 epochs) |")
    by_config["a"] = {0: {"m": 0.5, "converged": False, "epochs": 320}}  # one seed, at its cap
    assert reproduce_report.claim_rows(claim, by_config)[0].endswith(
        "| 1/1 | no verdict: not converged at cap (320 epochs) |")
    by_config["a"] = {s: {"m": 0.5 + s / 100, **done} for s in range(3)}
    by_config["b"][1]["converged"] = None
    assert "convergence not recorded" in reproduce_report.claim_rows(claim, by_config)[0]


def test_results_md_is_rendered_from_the_saved_cells():
    assert not reproduce.check(), "run python benchmarks/reproduce.py --report-only"


def test_a_failed_cell_is_one_line_and_the_grid_goes_on(tmp_path, monkeypatch, capsys):
    def fail_sincere(config, seed, scale, subset, folder):
        if config.key == "sincere":
            raise RuntimeError("clzoo train failed (exit 1)")
        return {"config": config.key, "seed": seed}

    monkeypatch.setattr(reproduce, "run_cell", fail_sincere)
    grid = [(reproduce.CONFIGS[k], 0, tmp_path / k) for k in ("sincere", "supcon")]
    assert reproduce._run_grid(grid, reproduce.Scale(), tmp_path) == 1
    out, err = capsys.readouterr()
    assert err == "error: clzoo train failed (exit 1)\n" and '"config": "supcon"' in out


def test_a_failed_clzoo_command_logs_one_line_per_call_and_raises_with_the_logs_tail(
        tmp_path, monkeypatch):
    def fail(args, cwd, stdout, stderr):
        stdout.write("Traceback ...\nValueError: bad\n")
        return 2

    monkeypatch.setattr(reproduce.subprocess, "call", fail)
    log = tmp_path / "log.txt"
    with pytest.raises(RuntimeError) as error:
        reproduce._clzoo(["train", "r.yaml"], log)
    assert log.read_text().splitlines() == ["$ clzoo train r.yaml", "Traceback ...", "ValueError: bad"]
    assert str(error.value).splitlines()[-1] == "ValueError: bad"
    assert "exit 2" in str(error.value)


def test_a_cap_below_every_budget_is_refused(capsys):
    with pytest.raises(SystemExit):
        reproduce._parse(["--only", "sincere_cifar2", "--max-epochs", "10"])
    assert "--max-epochs 10 is below the first budget (40 epochs)" in capsys.readouterr().err
