"""Input validation shared by the losses, models and metrics: every check names what it expected.

`checks` (dtypes, ranks, value checks that behave alike eager, in a TensorFlow graph and in a JAX
trace), `arguments` (numbers, temperatures, flags), `inputs` (embeddings `y_pred`), `labels`
(class ids `y_true`, never coerced) and `sample_weights` (`sample_weight` and Keras' reduction).
"""
