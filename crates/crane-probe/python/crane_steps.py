
# crane's count of the steps an abridged loop's skipped iterations would have given torch's
# learning-rate schedulers.
#
# Concatenated after ``crane_padding.py``, whose ``_pad_mark`` calls ``_steps_mark`` before
# every iteration an abridged loop runs, and whose caller ``_skipped_then`` calls
# ``_steps_skipped`` where it skips; runs in the forked child only. ``crane_dependence.py``
# reads what was stepped.
#
# A scheduler's state is a count: how many times ``step()`` ran decides the rate it sets, and a
# schedule of a fixed length (``OneCycleLR``'s ``total_steps``) raises once the count passes it:
# "Tried to step 301 times. The specified number of total steps is 300", the crash of a late
# epoch when the steps per epoch were counted otherwise than the loader batches. An abridged run
# steps only in the iterations it runs, so its count stays behind and the crash never comes.
#
# So each iteration a loop runs is measured: how far every scheduler stepped while it ran
# (schedulers are known from their first ``step`` in the child: ``LRScheduler.step`` is wrapped
# there, and each one's count before it is kept). Where the iterations run since the last skip
# all stepped a scheduler by the same number, the skipped ones are counted as stepping it by that
# number too: its ``last_epoch`` is moved on, and the rate set from the count where torch
# computes it in closed form. Never past the end of a schedule of a fixed length: there the
# count stops at the end, so that the next step the run makes raises the real run's first
# error, word for word. Only a loop that runs every iteration to its end (no ``break``,
# ``return`` or ``continue`` in its body) and only torch's own schedulers whose step changes
# nothing but the count and the rate (``_COUNTED_SCHEDULERS``, exactly those classes); any
# other scheduler, or one stepped unevenly, stays behind, as it did before: an abridged run
# never steps a scheduler more often than the real run, only less.
#
# Counting from the iterations that ran is an observation, not a proof (a step only some
# middle iterations take would be missed, one only the run iterations take over-counted): a
# crash raised by a scheduler a skip stepped is certain only when the second abridgement,
# which measures two iterations before its skips, raises it with the same message
# (``crane_dependence.py``).

# torch's schedulers whose ``step`` changes only their count and the rate computed from it,
# and that call nothing of the user's.
_COUNTED_SCHEDULERS = (
    "OneCycleLR", "CyclicLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
    "CosineAnnealingLR", "PolynomialLR",
)

# Every scheduler stepped in this child: ``id -> [scheduler, its count before the first step]``.
_stepped = {}
_STEP_CODE = None


def _install_steps():
    """``LRScheduler.step`` wrapped to know the schedulers the run steps (torch imported)."""
    global _STEP_CODE
    module = sys.modules.get("torch.optim.lr_scheduler")
    base = getattr(module, "LRScheduler", None) if module is not None else None
    original = base.__dict__.get("step") if isinstance(base, type) else None
    if original is None or _STEP_CODE is not None:
        return

    def step(self, *args, **kwargs):
        if id(self) not in _stepped:
            _stepped[id(self)] = [self, getattr(self, "last_epoch", None)]
        return original(self, *args, **kwargs)

    for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(step, attribute, getattr(original, attribute, None))
    step.__wrapped__ = original
    base.step = step
    _STEP_CODE = step.__code__


def _steps_now():
    return {key: entry[0].last_epoch for key, entry in _stepped.items()}


def _steps_mark(loop):
    """Before an iteration ``loop`` runs: every scheduler's count."""
    if _STEP_CODE is not None:
        loop.step_marks.append(_steps_now())


def _steps_skipped(loop, count):
    """``count`` iterations of ``loop`` skipped: the schedulers its iterations since the last
    skip stepped evenly stepped for them too."""
    marks, loop.step_marks = loop.step_marks, []
    if count <= 0 or not marks or not _stepped:
        return
    now = _steps_now()
    for key, (scheduler, before) in list(_stepped.items()):
        counts = [mark.get(key, before) for mark in marks] + [now[key]]
        if not all(type(value) is int for value in counts):
            continue
        steps = {later - earlier for earlier, later in zip(counts, counts[1:])}
        if steps == {0}:
            continue
        if len(steps) != 1 or not loop.whole or not _counted(scheduler) or min(steps) < 0:
            continue
        try:
            moved = _advance(scheduler, steps.pop() * count)
        except Exception:
            continue
        if moved:
            name = type(scheduler).__name__
            loop.stepped[name] = loop.stepped.get(name, 0) + moved


def _counted(scheduler):
    module = sys.modules.get("torch.optim.lr_scheduler")
    kind = type(scheduler)
    return any(getattr(module, name, None) is kind for name in _COUNTED_SCHEDULERS)


def _advance(scheduler, steps):
    """``scheduler`` moved on by ``steps``, never past the end of a fixed-length schedule;
    returns how far it moved. Nothing changes where a part fails."""
    start, started = scheduler.last_epoch, scheduler._step_count
    target = start + steps
    total = getattr(scheduler, "total_steps", None) if type(scheduler).__name__ == "OneCycleLR" else None
    if type(total) is int and target > total:
        target = max(start, total)
    closed = getattr(scheduler, "_get_closed_form_lr", None)
    scheduler.last_epoch = target
    scheduler._step_count = started + (target - start)
    try:
        if closed is not None:
            rates = list(closed())
            groups = scheduler.optimizer.param_groups
            if len(rates) != len(groups):
                raise ValueError("rates")
            for group, rate in zip(groups, rates):
                current = group["lr"]
                if hasattr(current, "fill_") and not isinstance(current, (int, float)):
                    current.fill_(float(rate))
                else:
                    group["lr"] = rate
            scheduler._last_lr = [group["lr"] for group in groups]
    except BaseException:
        scheduler.last_epoch, scheduler._step_count = start, started
        raise
    return target - start


def _raised_by_scheduler(exc):
    """Whether ``exc`` was raised in torch's scheduler code."""
    tb = exc.__traceback__ if exc is not None else None
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last is not None and last.replace("\\", "/").endswith("torch/optim/lr_scheduler.py")


def _steps_counted():
    """The names of the schedulers a skip stepped."""
    return {name for loop in _abridgement.loops.values() for name in loop.stepped}
