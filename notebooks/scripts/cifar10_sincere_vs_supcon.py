# %% [markdown]
# # CIFAR-10: SINCERE vs SupCon, and the target-noise separation
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/clzoo/clzoo/blob/main/notebooks/cifar10_sincere_vs_supcon.ipynb)
#
# SINCERE (Feeney and Hughes) removes the other same-class images from SupCon's
# denominators. Its paper finds the same accuracy but a larger gap between an image's
# similarity to its nearest *target* (same class) and nearest *noise* (other class)
# training image (sec. 4.1, Table 1, Fig. 2). This notebook trains both losses with the
# same seed, views and schedule, and draws those similarities.
#
# On a Colab GPU, 6 epochs of the CIFAR ResNet-20 take a few minutes per loss; on 2 CPU
# cores about 55 minutes for the two (26 and 28 minutes for
# [`recipes/sincere/cifar10_small.yaml`](https://github.com/clzoo/clzoo/blob/main/recipes/sincere/cifar10_small.yaml), the same run,
# and its SupCon twin).
#
# **The outputs saved with this notebook** come from smaller settings, 12 minutes on 2 shared
# CPU cores: `CLZOO_NOTEBOOK_DATA=<CIFAR-10 folder>@cifar2 CLZOO_NOTEBOOK_EPOCHS=1`, i.e. cat vs
# dog only (CIFAR-2, the paper's Table 1 task: 10,000 training images) and one epoch per loss.
# One epoch leaves both encoders barely trained, so their histograms overlap; the last section
# draws the same histograms for clzoo's two CIFAR-10 presets (airbench stack, 24 epochs).

# %%
# Colab: install clzoo from its repository (skipped where clzoo is already installed).
import importlib.util

if importlib.util.find_spec("clzoo") is None:
    !pip install -q "clzoo[tfds] @ git+https://github.com/clzoo/clzoo"
    importlib.invalidate_caches()

# %%
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import matplotlib.pyplot as plt
import numpy as np

import clzoo
from clzoo.train import load_recipe, train

TINY = bool(os.environ.get("CLZOO_NOTEBOOK_TINY"))  # CI runs every notebook with tiny settings
# CIFAR-10 as an image folder `<folder>/{train,test}/<class>/<image>`; where there is none
# (Colab), tensorflow-datasets downloads it: "tfds:cifar10" (the [tfds] extra above).
CIFAR10_FOLDER = os.environ.get("CLZOO_CIFAR10", "cifar10")
DATA = "digits" if TINY else (CIFAR10_FOLDER if os.path.isdir(CIFAR10_FOLDER) else "tfds:cifar10")
DATA = os.environ.get("CLZOO_NOTEBOOK_DATA", DATA)  # smaller settings: see the top
EPOCHS = int(os.environ.get("CLZOO_NOTEBOOK_EPOCHS", 1 if TINY else 6))

# %% [markdown]
# ## Train both losses with the same recipe
#
# The settings are those of
# [`recipes/sincere/cifar10_small.yaml`](https://github.com/clzoo/clzoo/blob/main/recipes/sincere/cifar10_small.yaml):
# ResNet-20, batch 128 x 2 views, AdamW 2e-3 with one warm-up epoch and cosine decay, temperature 0.1. Only
# `loss.name` differs. Each run folder gets checkpoints, logs and an evaluation report.
# The `learning_rate` in each epoch's log line is the schedule's value at the epoch's end: 0 after the
# last epoch, where the cosine decay ends.

# %%
settings = [f"data={DATA}", f"training.epochs={EPOCHS}", "training.batch_size=128",
            "training.optimizer=adamw", "training.learning_rate=2e-3",
            "training.weight_decay=0.05", "views.recipe=supcon", "eval.metrics=[knn,ncc]"]
if TINY:
    settings += ["views.flip=false", "model.encoder.name=resnet8", "model.embedding_dim=32",
                 "eval.knn_k=[1,5]", "eval.knn_headline_k=5"]
runs = {}
for loss in ("SINCERELoss", "SupConLoss"):
    config = load_recipe(None, settings + [f"loss.name={loss}", "loss.temperature=0.1"])
    runs[loss] = train(config, f"runs/notebook_{loss}_{os.getpid()}", verbose=0 if TINY else 1)
    print(loss, {k: f"{v:.2%}" for k, v in runs[loss].knn.items()})

# %% [markdown]
# ## Nearest target and nearest noise similarity
#
# For each test image: cosine similarity to the most similar training image of its class
# (target) and of any other class (noise), in the encoder's feature space. The margin is
# the median difference, averaged over classes.

# %%
import keras

train_split = clzoo.data.load_split(DATA, "train")
test_split = clzoo.data.load_split(DATA, "test")
separations = {}
for loss in runs:
    encoder = keras.saving.load_model(f"runs/notebook_{loss}_{os.getpid()}/encoder.keras")
    separations[loss] = clzoo.eval.target_noise_separation(
        clzoo.eval.embed(encoder, train_split.images, verbose=False), train_split.labels,
        clzoo.eval.embed(encoder, test_split.images, verbose=False), test_split.labels)
    print(f"{loss}: margin {separations[loss].margin:.3g}")


def plot_separations(separations):
    fig, axes = plt.subplots(1, len(separations), figsize=(10, 3.5), sharey=True)
    for ax, (name, sep) in zip(axes, separations.items()):
        bins = np.linspace(min(sep.noise.min(), sep.target.min()), 1, 60)
        ax.hist(sep.target, bins=bins, alpha=0.6, label="nearest target")
        ax.hist(sep.noise, bins=bins, alpha=0.6, label="nearest noise")
        ax.set_title(f"{name} (margin {sep.margin:.3g})")
        ax.set_xlabel("cosine similarity")
    axes[0].legend()
    plt.show()


plot_separations(separations)

# %% [markdown]
# ## The same comparison on clzoo's pretrained encoders
#
# clzoo ships a SINCERE and a SupCon encoder trained on all of CIFAR-10 with airbench's training
# stack (`clzoo.presets.Encoder.presets()`; recipes `recipes/sincere/cifar10_airbench.yaml` and
# `recipes/supcon/cifar10_airbench.yaml`, 24 epochs each, about 90% kNN on the full test set).
# Here they embed the same `DATA`; the cards in
# [`pretrained/`](https://github.com/clzoo/clzoo/tree/main/pretrained) give their full reports.

# %%
pretrained = {}
for name in ("sincere_airbench_cifar10", "supcon_airbench_cifar10"):
    encoder = clzoo.presets.Encoder.from_preset(name)
    pretrained[name] = clzoo.eval.target_noise_separation(
        clzoo.eval.embed(encoder, train_split.images, verbose=False), train_split.labels,
        clzoo.eval.embed(encoder, test_split.images, verbose=False), test_split.labels)
    print(f"{name}: margin {pretrained[name].margin:.3g}")
plot_separations(pretrained)
