"""Encoders, projection heads and the multi-view contrastive model."""

from clzoo.models.contrastive_model import ContrastiveModel
from clzoo.models.projection_head import ProjectionHead
from clzoo.models.resnet import ARCHITECTURES, cifar_resnet

__all__ = ["ARCHITECTURES", "ContrastiveModel", "ProjectionHead", "cifar_resnet"]
