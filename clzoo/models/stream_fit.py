"""How `ContrastiveModel.fit` takes a clzoo training stream (`clzoo.data.streams`): one of its
epochs per fit epoch, and a fit longer than the stream refused with the `epochs` to build it with."""


def fit_tf_data_stream(stream, kwargs):
    """`steps_per_epoch` for a `clzoo.data.batches` stream fitted for several epochs; a fit
    longer than the stream refused with the `epochs` to build it with."""
    epochs = kwargs.get("epochs", 1) - kwargs.get("initial_epoch", 0)
    if kwargs.get("steps_per_epoch") is None and epochs > 1:
        kwargs["steps_per_epoch"] = stream["steps_per_epoch"]
    steps = kwargs.get("steps_per_epoch")
    if steps is not None and epochs * steps > stream["batches"]:
        needed = -(-(stream["start_step"] + epochs * steps) // stream["steps_per_epoch"])
        raise ValueError(f"fit asks for {epochs * steps} steps ({epochs} epochs of {steps}) but the "
                         f"stream holds {stream['batches']} batches: build it with "
                         f"clzoo.data.batches(..., epochs={needed})")


def fit_device_stream(stream, kwargs):
    """The stream's generator for `fit`, `steps_per_epoch` defaulting to one of its epochs; a fit
    longer than the stream is refused here (Keras would stop with a warning when it runs dry)."""
    facts = stream.clzoo_stream
    if kwargs.get("steps_per_epoch") is None:
        kwargs["steps_per_epoch"] = facts["steps_per_epoch"]
    steps = kwargs["steps_per_epoch"]
    wanted = (kwargs.get("epochs", 1) - kwargs.get("initial_epoch", 0)) * steps
    if wanted > facts["batches"]:
        epochs = -(-(facts["start_step"] + wanted) // facts["steps_per_epoch"])
        raise ValueError(f"fit asks for {wanted} steps ({kwargs.get('epochs', 1)} epochs of {steps}) but "
                         f"the stream holds {facts['batches']} batches: build it with "
                         f"device_batches(..., epochs={epochs})")
    return iter(stream)
