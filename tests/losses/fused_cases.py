"""The cases both fused kernels are checked on (`fused_check.py` for Triton, `test_fused_kernel.py`
for Pallas): each covered loss with its float64 loop reference, and the mask cases."""

import clzoo.losses as L
from tests.losses import reference as R

T = 0.5
FAMILIES = {
    "supcon_out": (L.sup_con_loss, L.SupConLoss, {}, lambda y, z: R.supcon(y, z, T)),
    "supcon_out_base": (L.sup_con_loss, L.SupConLoss, {"base_temperature": 0.07},
                        lambda y, z: R.supcon(y, z, T, base_temperature=0.07)),
    "supcon_in": (L.sup_con_loss, L.SupConLoss, {"variant": "in"},
                  lambda y, z: R.supcon(y, z, T, variant="in")),
    "sincere": (L.sincere_loss, L.SINCERELoss, {}, lambda y, z: R.sincere(y, z, T)),
    "sup_info_nce": (L.sup_info_nce_loss, L.SupInfoNCELoss, {"epsilon": 0.25},
                     lambda y, z: R.sup_info_nce(y, z, T, 0.25)),
    "info_nce": (L.info_nce_loss, L.InfoNCELoss, {}, lambda y, z: R.info_nce(z, T)),
}
# (name, labels, views): which anchors have positives and noise differs in each.
MASK_CASES = [
    ("mixed", [0, 0, 1, 1, 2, 3], 2),
    ("one_class", [4, 4, 4, 4, 4], 2),
    ("singletons_one_view", [0, 1, 2, 3, 4, 5], 1),
    ("some_singletons_one_view", [7, 7, 1, 2, 2, 9], 1),
    ("three_views", [0, 1, 0, 1], 3),
]
