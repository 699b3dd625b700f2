"""Issue 69 item 10: tf.data's crop followed SimCLR-TF's sampler (mean area 0.50 for a 0.2-1 scale)
and the device stream torchvision's (0.55), so `auto` trained one recipe on other crops per backend.
Both now draw torchvision's distribution; here tf.data's boxes against the device stream's."""

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from clzoo.data.device_view_draws import crop_boxes
from clzoo.data.tf_data_views import crop_box


@pytest.mark.parametrize("shape, scale", [((32, 32), (0.2, 1.0)), ((32, 32), (0.08, 1.0)),
                                          ((24, 40), (0.08, 1.0))])
def test_tf_data_crops_have_the_device_streams_distribution(shape, scale):
    ratio, count = (3 / 4, 4 / 3), 3000
    device = crop_boxes(np.random.default_rng(0), count, *shape, scale, ratio)
    graph = tf.function(lambda s: crop_box(tf.constant([*shape, 3]), s, scale, ratio))
    boxes = np.array([graph(tf.constant([7, i], tf.int64)).numpy() for i in range(count)])
    for column in range(4):  # top, left, height, width
        assert stats.ks_2samp(boxes[:, column], device[:, column]).statistic < 0.05, column
    areas = boxes[:, 2] * boxes[:, 3] / (shape[0] * shape[1])
    assert abs(areas.mean() - (device[:, 2] * device[:, 3]).mean() / (shape[0] * shape[1])) < 0.02
    assert (boxes[:, 0] + boxes[:, 2] <= shape[0]).all() and (boxes[:, 1] + boxes[:, 3] <= shape[1]).all()
    assert (boxes[:, 2:] > 0).all()
