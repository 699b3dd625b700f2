# %% [markdown]
# # Soft-target InfoNCE with MixUp, CutMix and label smoothing
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/clzoo/clzoo/blob/main/notebooks/soft_target_mixup.ipynb)
#
# Hugger and Uhlmann (eq. 12) turn InfoNCE into a classification loss for *soft* targets:
# the logits score the batch's own soft targets, and the other soft targets in the batch
# are the noise. It trains as well as soft-target cross-entropy (their sec. 4). Here both
# train the same ResNet-20 classifier on CIFAR-10 with MixUp / CutMix / label smoothing,
# then we compare accuracy and calibration (expected calibration error, reliability
# diagram).
#
# The full settings (CIFAR-10, 15 epochs per loss) want a GPU: on 2 CPU cores they take
# about 1.5 hours (estimated from the 8-epoch recipes in
# [`recipes/README.md`](https://github.com/clzoo/clzoo/blob/main/recipes/README.md): 49 minutes
# for the two side by side). **The outputs saved with this notebook** come from
# `CLZOO_NOTEBOOK_DATA=digits`: the same 15 epochs per loss on scikit-learn's digits (1,437
# training images, no flips), 3 min 21 s on 2 CPU cores shared with a training run.

# %%
# Colab: install clzoo from its repository (skipped where clzoo is already installed).
import importlib.util

if importlib.util.find_spec("clzoo") is None:
    !pip install -q "clzoo[tfds] @ git+https://github.com/clzoo/clzoo"
    importlib.invalidate_caches()

# %%
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras
import matplotlib.pyplot as plt
import numpy as np

import clzoo

TINY = bool(os.environ.get("CLZOO_NOTEBOOK_TINY"))  # CI runs every notebook with tiny settings
# CIFAR-10 as an image folder `<folder>/{train,test}/<class>/<image>`; where there is none
# (Colab), tensorflow-datasets downloads it: "tfds:cifar10" (the [tfds] extra above).
CIFAR10_FOLDER = os.environ.get("CLZOO_CIFAR10", "cifar10")
DATA = "digits" if TINY else (CIFAR10_FOLDER if os.path.isdir(CIFAR10_FOLDER) else "tfds:cifar10")
DATA = os.environ.get("CLZOO_NOTEBOOK_DATA", DATA)  # smaller settings: see the top
EPOCHS = int(os.environ.get("CLZOO_NOTEBOOK_EPOCHS", 1 if TINY else 15))
ENCODER = "resnet8" if TINY else "resnet20"  # tiny settings: the 6n+2 CIFAR ResNet at n=1

# %% [markdown]
# ## Soft targets
#
# `MixConfig` holds the paper's ImageNet settings (DeiT's): MixUp alpha 0.8, CutMix alpha
# 1.0, one of the two per batch, label smoothing 0.1. CutMix targets are mixed by the exact
# fraction of pasted pixels. Every target row sums to 1.

# %%
train = clzoo.data.load_split(DATA, "train")
test = clzoo.data.load_split(DATA, "test")
classes = len(train.class_names)
mix = clzoo.data.MixConfig(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1)
views = clzoo.data.ViewConfig(views=1, crop_scale=(0.5, 1.0), jitter_p=0.0, grayscale_p=0.0,
                              flip=not DATA.startswith("digits"))  # digits are not mirrored
dataset = clzoo.data.batches(train, "soft_targets", batch_size=128, epochs=EPOCHS, views=views, mix=mix)
images, targets = next(iter(dataset))
print(images.shape, targets.shape, "row sums:", np.unique(np.round(targets.numpy().sum(1), 5)))

# %% [markdown]
# ## Two classifiers, two losses
#
# The paper uses temperature 1 and the same recipe for both losses, tuning only the
# learning rate. The classifier outputs logits; `SoftTargetInfoNCELoss` and soft-target
# cross-entropy both take them.

# %%
losses = {
    "soft-target InfoNCE": clzoo.losses.SoftTargetInfoNCELoss(temperature=1.0),
    "soft-target cross-entropy": keras.losses.CategoricalCrossentropy(from_logits=True),
}
results = {}
for name, loss in losses.items():
    keras.utils.set_random_seed(0)
    model = clzoo.models.build_classifier(clzoo.models.get_encoder(ENCODER), classes)
    schedule = keras.optimizers.schedules.CosineDecay(1e-3, EPOCHS * (len(train) // 128))
    model.compile(optimizer=keras.optimizers.AdamW(schedule, weight_decay=0.05), loss=loss)
    model.fit(dataset, epochs=EPOCHS, steps_per_epoch=len(train) // 128,
              shuffle=False, verbose=0 if TINY else 1)  # the dataset shuffles itself
    test_images = clzoo.data.eval_dataset(test.images, size=32)
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(model.predict(test_images, verbose=0)))
    rel = clzoo.eval.reliability(probabilities, test.labels)
    results[name] = rel
    print(f"{name}: top-1 {np.mean(probabilities.argmax(1) == test.labels):.2%}, ECE {rel.ece:.4f}")

# %% [markdown]
# ## Reliability diagrams
#
# Bars below the diagonal are over-confident bins, bars above it under-confident ones; the
# expected calibration error is the bin-weighted gap.

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
for ax, (name, rel) in zip(axes, results.items()):
    centers = (rel.edges[:-1] + rel.edges[1:]) / 2
    ax.bar(centers, rel.accuracy, width=1 / len(centers), edgecolor="k", alpha=0.7)
    ax.plot([0, 1], [0, 1], "k--")
    ax.set_title(f"{name}\nECE {rel.ece:.4f}")
    ax.set_xlabel("confidence")
axes[0].set_ylabel("accuracy")
plt.show()
