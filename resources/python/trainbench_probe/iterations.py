"""Training iterations from what the script does: one iteration is one step however many step() calls it makes.

The probe sees events (a DataLoader fetch, a training forward, an outermost backward, an
optimizer's step, a skipped step) and turns them into iterations; the rule is ADR 0022's:

- Activity is gathered in a *segment* from the end of one optimizer step to the end of the next.
- An optimizer that already stepped in the open iteration, stepping again after training activity
  (a backward, a training forward or a fetched batch) since the last step, starts a new iteration:
  the open one ended with the previous step. So two optimizers (a GAN, Muon beside AdamW),
  per-group inner steps (DeepSpeed ZeRO), one optimizer per parameter (optimizer-in-backward) and
  closures all make one iteration each time round.
- That is known only when the next iteration steps; once an iteration is known, the next one
  whose steps repeat its sequence of optimizers closes at once, so steps are not held back.
- Fetched batches count only when training uses them (a backward or a training forward follows);
  batches that only an evaluation pass (a forward with grad disabled) uses are evaluation, and the
  span of such a pass is taken out of the iteration's time (evalMs).
- A forward of a model in eval mode with grad enabled (an evaluation written without no_grad) is
  evaluation too, unless training uses its batch before the next batch or step: a backward
  (fine-tuning with frozen batch norm trains in eval mode) or a train-mode forward (a
  distillation's teacher). Its batches and phases wait until one or the other comes.

Times are host seconds (time.perf_counter); nothing here imports torch.
"""

PHASES = ("forward", "loss", "backward", "optimizer")


class Segment:
    """What happened since the end of the last optimizer step (or since the start). The segment an optimizer step
    ends becomes the open iteration (the segments of its later steps are added to it): one object a step."""

    __slots__ = ("samples", "batches", "data_ms", "eval_ms", "phases_ms", "cuda", "losses", "trained", "start", "end", "steps", "skipped", "probe_ms")

    def __init__(self):
        self.samples = 0
        self.batches = 0
        self.data_ms = 0.0
        self.eval_ms = 0.0
        self.phases_ms = dict.fromkeys(PHASES, 0.0)
        self.cuda = []  # (phase, start event, end event)
        self.losses = []  # the losses given to backward() (losses.py's scalar_of)
        self.trained = False  # a backward, a training forward or a used batch
        # As an iteration:
        self.start = None
        self.end = None
        self.steps = ()  # optimizer keys in the order they stepped
        self.skipped = False
        self.probe_ms = 0.0

    def add(self, other):
        self.samples += other.samples
        self.batches += other.batches
        self.data_ms += other.data_ms
        self.eval_ms += other.eval_ms
        for k in PHASES:
            self.phases_ms[k] += other.phases_ms[k]
        self.cuda.extend(other.cuda)
        self.losses.extend(other.losses)
        self.trained = self.trained or other.trained


class Fetch:
    """A training batch's fetch, held until training is seen to use it."""

    __slots__ = ("t0", "t1", "samples")

    def __init__(self, t0, t1, samples):
        self.t0 = t0
        self.t1 = t1
        self.samples = samples


class Tentative:
    """An eval-mode forward with grad enabled: training if a backward follows, else evaluation."""

    __slots__ = ("start", "fetches", "phases", "cuda")

    def __init__(self, start, fetches):
        self.start = start
        self.fetches = fetches
        self.phases = []  # (phase, ms)
        self.cuda = []  # (phase, start event, end event)


class Iterations:
    """The boundary rule over a stream of events; `emit(number, iteration)` gets each closed iteration."""

    def __init__(self, emit, start):
        self.emit = emit  # the probe swaps it for a shorter one once its first steps are done
        self.closed = 0
        self.seg = Segment()
        self.open = None  # the iteration (a Segment) with at least one step
        self.signature = None  # the optimizer sequence of the last closed iteration
        self.pending = []  # fetches not yet known to be training or evaluation
        self.tentative = None  # an eval-mode forward with grad, not yet known to be training or evaluation
        self.eval_start = None
        self.first_activity = None
        self.t_start = start
        self.last_end = None
        self.probe_spans = []

    # ---- data -----------------------------------------------------------------------------
    def fetched(self, t0, t1, samples, grad_enabled):
        """A DataLoader batch; made with grad disabled it is evaluation at once."""
        # A new batch before any backward: the eval-mode forward before it was evaluation.
        if self.tentative is not None:
            self._tentative_was_eval()
        if not grad_enabled:
            self._eval_from(t0)
        else:
            self.pending.append(Fetch(t0, t1, samples))

    def _claim(self, now):
        """Training uses the fetched batches: they count, and an evaluation span before them ends."""
        if self.tentative is not None:
            self._tentative_trained()
        seg = self.seg
        if self.pending:
            first = self.pending[0]
            if self.eval_start is not None:
                self._eval_until(first.t0)
            for f in self.pending:
                seg.batches += 1
                seg.samples += f.samples or 0
                seg.data_ms += (f.t1 - f.t0) * 1000
            self.pending = []
            now = first.t0
        elif self.eval_start is not None:
            self._eval_until(now)
        if self.first_activity is None:
            self.first_activity = now
        seg.trained = True

    def eval_mode_forward(self, t0):
        """A forward of a module in eval mode with grad enabled: held until a backward (training) or the next batch or step (evaluation)."""
        if self.tentative is None:
            self.tentative = Tentative(self.pending[0].t0 if self.pending else t0, self.pending)
            self.pending = []

    def _tentative_trained(self):
        """Training used the held forward's batch: it trained (frozen batch norm, a teacher); its batches and phases count."""
        t, self.tentative = self.tentative, None
        if t is None:
            return
        self.pending = t.fetches + self.pending
        for phase, ms in t.phases:
            self.seg.phases_ms[phase] += ms
        self.seg.cuda.extend(t.cuda)

    def _tentative_was_eval(self):
        """No backward came: the held forward was evaluation, from its first batch's fetch on."""
        t, self.tentative = self.tentative, None
        if t is not None:
            self._eval_from(t.start)

    def _eval_from(self, t):
        if self.eval_start is None:
            self.eval_start = t

    def _eval_until(self, t):
        if self.eval_start is not None:
            # Only the part inside the open iteration: an evaluation before training began (a sanity check) is in none.
            lower = self.last_end if self.closed else self.first_activity
            if lower is not None:
                self.seg.eval_ms += max(0.0, (t - max(self.eval_start, lower)) * 1000)
            self.eval_start = None

    # ---- compute ------------------------------------------------------------------------------
    # A train-mode forward (on the batch a held eval-mode forward read, a distillation's teacher: both train) and a
    # backward claim the fetched batches. Aliases, not calls: one call fewer each in a step (issue 38).
    training_forward = _claim
    backward = _claim

    @property
    def evaluating(self):
        return self.eval_start is not None or self.tentative is not None

    def eval_forward(self, t0):
        """A forward of a model in eval mode with grad disabled: the batches it reads are evaluation, and so is its time."""
        self._tentative_was_eval()
        if self.pending:
            self._eval_from(self.pending[0].t0)
            self.pending = []
        else:
            self._eval_from(t0)

    def cuda_phase(self, phase, start, end):
        if self.tentative is not None:
            self.tentative.cuda.append((phase, start, end))
        else:
            self.seg.cuda.append((phase, start, end))

    def probe_time(self, t0, t1):
        """The probe's own work (finding the model's modules): taken out of the iteration it falls in."""
        self.probe_spans.append((t0, t1))

    # ---- steps --------------------------------------------------------------------------------
    def stepped(self, key, t_end, skipped=False):
        """An optimizer's step ended (or a GradScaler skipped it). Returns how many iterations closed."""
        if self.open is None and self.tentative is None and self.eval_start is None and not self.probe_spans and self.signature == (key,):
            # The usual step of a loop whose iterations are known to be one step of this optimizer: it closes at
            # once, as the rule below would close it, without its checks (issue 38: this runs at every step).
            it, self.seg = self.seg, Segment()
            it.start = self.last_end
            it.steps = self.signature
            it.skipped = skipped
            it.end = t_end
            self.closed += 1
            self.last_end = t_end
            self.emit(self.closed, it)
            return 1
        before = self.closed
        if self.tentative is not None:
            self._tentative_was_eval()
        if self.eval_start is not None:
            self._eval_until(t_end)
        if self.open is not None and key in self.open.steps and self.seg.trained:
            self._close()
        if self.open is None:
            it = self.open = self.seg
            it.start = self.last_end if self.closed else (self.first_activity or self.t_start)
        else:
            it = self.open
            it.add(self.seg)
        self.seg = Segment()
        it.steps += (key,)
        it.skipped = it.skipped or skipped
        it.end = t_end
        if it.steps == self.signature:
            self._close()
        return self.closed - before

    def _close(self):
        it, self.open = self.open, None
        if self.probe_spans:
            spans = [(max(a, it.start), min(b, it.end)) for a, b in self.probe_spans if b > it.start]
            it.probe_ms = sum(max(0.0, b - a) for a, b in spans) * 1000
            self.probe_spans = [(a, b) for a, b in self.probe_spans if b > it.end]
        self.signature = it.steps
        self.closed += 1
        self.last_end = it.end
        self.emit(self.closed, it)

    def finish(self):
        """At the end of the run: the open iteration is whole (what came after its last step is not)."""
        self.tentative = None
        if self.open is not None:
            self._close()
