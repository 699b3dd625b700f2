"""Encoders (by name in one registry), projection heads, the multi-view model and a classifier."""

from clzoo.models.airbench import airbench_net
from clzoo.models.backbones import hub_resnet, vit
from clzoo.models.batch_norm import BatchNormalization
from clzoo.models.classifier import build_classifier
from clzoo.models.contrastive_model import ContrastiveModel
from clzoo.models.image_encoder import ImageEncoder, as_image_encoder
from clzoo.models.initializers import DiracInitializer
from clzoo.models.projection_head import ProjectionHead
from clzoo.models.registry import ENCODERS, check_encoder_options, get_encoder, list_encoders
from clzoo.models.resnet import ARCHITECTURES, cifar_resnet
from clzoo.models.test_time_augmentation import (
    HorizontalFlip,
    ReflectTranslate,
    bare_encoder,
    flip_averaged,
    test_time_averaged,
)
from clzoo.models.whitening import PatchWhitening, adapt_whitening
from clzoo.parts.memory_queue import MemoryQueue
from clzoo.parts.momentum import MomentumEncoder

__all__ = ["ARCHITECTURES", "ENCODERS", "BatchNormalization", "ContrastiveModel",
           "DiracInitializer", "HorizontalFlip", "ImageEncoder", "MemoryQueue", "MomentumEncoder",
           "PatchWhitening", "ProjectionHead", "ReflectTranslate", "adapt_whitening",
           "airbench_net", "as_image_encoder", "bare_encoder", "build_classifier",
           "check_encoder_options", "cifar_resnet",
           "flip_averaged", "get_encoder", "hub_resnet", "list_encoders",
           "test_time_averaged", "vit"]


def __getattr__(name):
    if name == "Encoder":  # moved up: presets load models, models never import presets
        raise AttributeError("clzoo.models.Encoder is now clzoo.presets.Encoder: "
                             "clzoo.presets.Encoder.from_preset(handle)")
    raise AttributeError(f"module 'clzoo.models' has no attribute {name!r}")
