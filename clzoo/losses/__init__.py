"""Contrastive losses as `keras.losses.Loss` subclasses, each with a function twin."""

from clzoo.losses.dcl_loss import DCLLoss, dcl_loss
from clzoo.losses.info_nce_loss import InfoNCELoss, info_nce_loss
from clzoo.losses.nscl_loss import NSCLLoss, nscl_loss
from clzoo.losses.sincere_loss import SINCERELoss, sincere_loss
from clzoo.losses.soft_target_info_nce_loss import (
    SoftTargetInfoNCELoss,
    soft_target_info_nce_loss,
)
from clzoo.losses.spread_loss import SpreadLoss, spread_loss
from clzoo.losses.sup_con_loss import SupConLoss, sup_con_loss
from clzoo.losses.sup_info_nce_loss import SupInfoNCELoss, sup_info_nce_loss

ALL_OBJECTS = (InfoNCELoss, DCLLoss, SupConLoss, SINCERELoss, SupInfoNCELoss, SpreadLoss, NSCLLoss,
               SoftTargetInfoNCELoss)
ALL_OBJECTS_DICT = {cls.__name__: cls for cls in ALL_OBJECTS}


def get(identifier):
    """Return a loss instance from a class name, a config dict or an instance."""
    if isinstance(identifier, str) and identifier in ALL_OBJECTS_DICT:
        return ALL_OBJECTS_DICT[identifier]()
    if isinstance(identifier, dict):
        return ALL_OBJECTS_DICT[identifier["class_name"]].from_config(
            identifier["config"]
        )
    if hasattr(identifier, "call"):
        return identifier
    raise ValueError(
        f"Unknown loss: expected one of {sorted(ALL_OBJECTS_DICT)}, a config "
        f"dict or a Loss instance. Received: {identifier!r}"
    )


__all__ = [
    "ALL_OBJECTS", "DCLLoss", "InfoNCELoss", "NSCLLoss", "SINCERELoss", "SupConLoss",
    "SoftTargetInfoNCELoss", "SpreadLoss", "SupInfoNCELoss", "soft_target_info_nce_loss", "dcl_loss", "get", "info_nce_loss", "nscl_loss",
    "sincere_loss", "spread_loss", "sup_con_loss", "sup_info_nce_loss",
]
