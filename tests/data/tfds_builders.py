"""A tfds dataset prepared here from an image folder (never downloaded): the builder, and
`prepare(folder, data_dir, file_format)` -> its name. `python tests/data/tfds_builders.py FOLDER
DATA_DIR FORMAT` prepares it from the command line."""

import sys
from pathlib import Path

import tensorflow_datasets as tfds

NAME = "clzoo_test_folder"  # what `tfds:NAME` names (tfds' snake case of the class name)


class ClzooTestFolder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """`FOLDER/{train,test}/<class>/<image>` as a tfds dataset of fixed-size RGB images."""

    VERSION = tfds.core.Version("1.0.0")

    def __init__(self, folder, shape, **kwargs):
        self.folder, self.shape = Path(folder), tuple(shape)
        super().__init__(**kwargs)

    def _info(self):
        classes = sorted(p.name for p in (self.folder / "train").iterdir())
        features = tfds.features.FeaturesDict({"image": tfds.features.Image(shape=self.shape),
                                               "label": tfds.features.ClassLabel(names=classes)})
        return tfds.core.DatasetInfo(builder=self, features=features, supervised_keys=("image", "label"))

    def _split_generators(self, dl_manager):
        return {split: self._generate_examples(self.folder / split) for split in ("train", "test")}

    def _generate_examples(self, split_folder):
        for label in sorted(p.name for p in split_folder.iterdir()):
            for path in sorted((split_folder / label).iterdir()):
                yield f"{label}/{path.name}", {"image": str(path), "label": label}


def prepare(folder, data_dir, file_format, shape=(8, 8, 3)):
    builder = ClzooTestFolder(folder, shape, data_dir=str(data_dir), file_format=file_format)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(verify_ssl=False))
    return NAME


if __name__ == "__main__":
    print(prepare(sys.argv[1], sys.argv[2], sys.argv[3]))
