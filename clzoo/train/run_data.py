"""The run's data against its recipe: what this data makes impossible, and both splits read.

`clzoo.train.runner` calls `check_against_data` before any image is decoded or file written, and
`load_data` once the run owns its folder. An unlabelled folder (`clzoo.data.unlabelled`) gives no
test split, and a recipe whose loss, task or parts read labels is refused on it.
"""

from pathlib import Path

from clzoo.data.resize import MixedImageSizes
from clzoo.data.split_overlap import check_splits_apart
from clzoo.train.recipe_errors import RecipeError


def _unlabelled_problems(recipe):
    """What reads labels in `recipe`: its loss, a soft-target task, the classifier parts."""
    from clzoo.losses import LOSSES

    problems = []
    loss = recipe.loss.name
    if getattr(LOSSES.get(loss), "uses_labels", True):
        self_supervised = sorted(name for name in LOSSES
                                 if getattr(LOSSES.get(name), "uses_labels", True) is False)
        problems.append(f"loss.name = {loss}: it reads class labels, and the data is an unlabelled "
                        f"folder (no train/<class>/ folders); a self-supervised loss needs none "
                        f"({', '.join(self_supervised)}: e.g. clzoo train simclr/cifar10_small "
                        "--data FOLDER --image-size 32)")
    if recipe.task != "contrastive":
        problems.append(f"task = {recipe.task}: it trains a classifier on labels; an unlabelled "
                        "folder has none (task contrastive)")
    for part in set(recipe.model.parts) & {"auxiliary", "online_probe"}:
        problems.append(f"model.{part}: a classifier trained on labels; an unlabelled folder has "
                        f"none (--set model.{part}=null)")
    return problems


def check_against_data(recipe, data, source, output):
    """Recipe values that are valid alone but impossible for this data or output (issue 44)."""
    problems = []
    images = data.train_images
    if images is not None:
        steps = recipe.training.epochs * (images // recipe.training.batch_size)
        if steps > 2**24:
            problems.append(f"training.epochs = {recipe.training.epochs}: {steps:,} steps; the "
                            "learning-rate schedule counts steps in float32, exact up to "
                            "16,777,216 steps")
        every = recipe.training.optimizer.setting("lookahead_every")
        if recipe.training.optimizer.name == "lookahead_sgd" and every > steps:
            problems.append(f"training.optimizer.lookahead_every = {every}: more than the run's "
                            f"{steps:,} steps; it ends on the slow weights, which no Lookahead step "
                            "would update (the untrained weights): lower it, or 0 for no Lookahead")
        headline = recipe.eval.knn_headline_k  # other k above the images are skipped, by design
        if headline > images and data.labelled:  # no kNN without labels
            problems.append(f"eval.knn_headline_k = {headline}: more than the {images:,} training "
                            "images the kNN takes its neighbours from (the headline kNN would not exist)")
    folder = source.folder
    read = [folder / split for split in ("train", "test")] if folder is not None else []
    if not data.labelled:
        read = [folder]  # every image below it is read
    if any(_inside(Path(output), split) for split in read):
        where = "train/ or test/ folder" if data.labelled else "unlabelled folder"
        problems.append(f"--output {output} is inside the data's {where} "
                        f"({folder}): the run's files would be read as images next time; choose "
                        "a folder outside them")
    problems += _unlabelled_problems(recipe) if not data.labelled else []
    if problems:
        raise RecipeError(problems)


def _inside(path, folder):
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def load_data(source, stream=False, view_size=None):
    """Both splits of a `DataSource` (left in their files when `stream`; the test split None for an
    unlabelled folder); one that cannot be read is a `RecipeError` naming the spec (images of
    several sizes: naming the recipe's view size)."""
    try:
        train = source.load("train", stream=stream)
        if not train.labelled:
            return train, None
        test = source.load("test", stream=stream)
        check_splits_apart(train, test, source.spec)
    except MixedImageSizes as error:
        raise RecipeError([f"data = {source.spec!r}: {error} This recipe's views are {view_size} px: "
                           f"--image-size {view_size} resizes every image to that on load (a larger "
                           "size keeps more detail for the views' crops)."]) from None
    except ValueError as error:
        raise RecipeError([f"data = {source.spec!r}: {error}"]) from None
    return train, test
