"""Contrastive losses as `keras.losses.Loss` subclasses, each with a function twin."""

from clzoo.losses.dcl_loss import DCLLoss, dcl_loss
from clzoo.losses.info_nce_loss import InfoNCELoss, info_nce_loss
from clzoo.losses.learnable_temperature import LearnableTemperature
from clzoo.losses.memory_bank import with_memory
from clzoo.losses.nscl_loss import NSCLLoss, nscl_loss
from clzoo.losses.sincere_loss import SINCERELoss, sincere_loss
from clzoo.losses.soft_target_info_nce_loss import (
    SoftTargetInfoNCELoss,
    soft_target_info_nce_loss,
)
from clzoo.losses.spread_loss import SpreadLoss, spread_loss
from clzoo.losses.sup_con_loss import SupConLoss, sup_con_loss
from clzoo.losses.sup_info_nce_loss import SupInfoNCELoss, sup_info_nce_loss
from clzoo.registry import Registry

ALL_OBJECTS = (InfoNCELoss, DCLLoss, SupConLoss, SINCERELoss, SupInfoNCELoss, SpreadLoss, NSCLLoss,
               SoftTargetInfoNCELoss)
ALL_OBJECTS_DICT = {cls.__name__: cls for cls in ALL_OBJECTS}

# name -> class, with a one-line description and the paper / equation it implements.
LOSSES = Registry("loss")
for _cls, _description, _paper in (
    (InfoNCELoss, "NT-Xent / SimCLR instance discrimination; labels ignored",
     "Chen et al. 2020 (SimCLR) eq. 1, arXiv:2002.05709"),
    (DCLLoss, "InfoNCE without the positive in the denominator; labels ignored",
     "Yeh et al. 2022 (Decoupled Contrastive Learning), arXiv:2110.06848; Luthra, Yang and Galanti eq. 1"),
    (SupConLoss, "supervised contrastive loss, L_out (default) or L_in",
     "Khosla et al. 2020 (SupCon) supplement eqs. 1-2, arXiv:2004.11362"),
    (SINCERELoss, "supervised InfoNCE whose denominator holds only other classes",
     "Feeney and Hughes (SINCERE) eq. 12, arXiv:2309.14277"),
    (SupInfoNCELoss, "SINCERE with an epsilon margin on the positive",
     "Barbano et al. 2023, arXiv:2211.05568; SINCERE paper eq. 15"),
    (SpreadLoss, "alpha * SINCERE-form attraction + (1 - alpha) * class-conditional InfoNCE",
     "Chen et al. 2022 (Perfectly Balanced, ICML) eqs. 1-3"),
    (NSCLLoss, "negatives-only supervised contrastive loss",
     "Luthra, Yang and Galanti (Self-Supervised Contrastive Learning is Approximately "
     "Supervised Contrastive Learning) sec. 3.1"),
    (SoftTargetInfoNCELoss, "soft-target InfoNCE on classifier logits (MixUp, label smoothing)",
     "Hugger and Uhlmann, soft-target InfoNCE eq. 12"),
):
    LOSSES.register(_cls.__name__, _cls, description=_description, paper=_paper)
del _cls, _description, _paper


def get(identifier):
    """Return a loss instance from a registered class name, a config dict or an instance.

    Raises:
        ValueError: for an unknown name (listing the known ones, with the
            closest as a suggestion) or anything else.
    """
    if isinstance(identifier, str):
        return LOSSES.get(identifier)()
    if isinstance(identifier, dict) and "class_name" in identifier:
        return LOSSES.get(identifier["class_name"]).from_config(identifier.get("config", {}))
    if hasattr(identifier, "call"):
        return identifier
    raise ValueError(
        f"Unknown loss: expected one of {sorted(ALL_OBJECTS_DICT)}, a config "
        f"dict or a Loss instance. Received: {identifier!r}"
    )


__all__ = [
    "ALL_OBJECTS", "ALL_OBJECTS_DICT", "LOSSES", "DCLLoss", "InfoNCELoss", "LearnableTemperature", "NSCLLoss",
    "SINCERELoss",
    "SupConLoss", "SoftTargetInfoNCELoss", "SpreadLoss", "SupInfoNCELoss", "soft_target_info_nce_loss",
    "dcl_loss", "get", "info_nce_loss", "nscl_loss", "sincere_loss", "spread_loss", "sup_con_loss",
    "sup_info_nce_loss", "with_memory",
]
