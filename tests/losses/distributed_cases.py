"""The embedding losses and settings every distribution check runs."""

import clzoo

LOSSES = {
    "InfoNCELoss": lambda: clzoo.losses.InfoNCELoss(temperature=0.2),
    "DCLLoss": lambda: clzoo.losses.DCLLoss(temperature=0.2),
    "SupConLoss": lambda: clzoo.losses.SupConLoss(temperature=0.2, max_positives=3),
    "SupConLoss_in": lambda: clzoo.losses.SupConLoss(temperature=0.2, variant="in"),
    "SINCERELoss": lambda: clzoo.losses.SINCERELoss(temperature=0.2),
    "SupInfoNCELoss": lambda: clzoo.losses.SupInfoNCELoss(temperature=0.2),
    "SpreadLoss": lambda: clzoo.losses.SpreadLoss(temperature=0.5, alpha=0.3),
    "NSCLLoss": lambda: clzoo.losses.NSCLLoss(temperature=0.2),
}
