"""Forward and loss phases from hooks on the modules that matter, never global module hooks.

Global hooks (register_module_forward_pre_hook) cost every module call ~1 µs (they take
nn.Module's slow call path), make torch.compile warn on 2.8+, and run inside dataset
transforms. Instead, once an optimizer exists, the modules that hold its parameters (and
their sub-modules) and the loss modules get per-module hooks; during the next training
iteration the probe sees which of them the script calls outermost, and after it keeps hooks
on those alone. Inner module calls then take torch's fast path and pay nothing.
"""
import gc
import time
import weakref


def compiling_check(torch):
    """torch.compiler.is_compiling where it exists (True while dynamo traces, so hooks trace as no-ops)."""
    for owner, name in ((getattr(torch, "compiler", None), "is_compiling"), (getattr(torch, "_dynamo", None), "is_compiling")):
        fn = getattr(owner, name, None) if owner is not None else None
        if fn is not None:
            return fn
    return lambda: False


class ModuleHooks:
    def __init__(self, torch, probe):
        self.torch = torch
        self.probe = probe
        self.Module = torch.nn.Module
        self.loss_base = getattr(torch.nn.modules.loss, "_Loss", ())
        self.compiling = compiling_check(torch)
        self.params = {}  # id(parameter) -> weakref: tensors compare elementwise, so no WeakSet
        self.hooked = {}  # id(module) -> (weakref to module, [hook handles])
        self.outermost = set()  # ids of hooked modules called outermost while training
        self.discovering = False
        self.watch_until = 0
        self.scans = 0
        self.scan_ms = 0.0
        self.pre, self.post = self._make_hooks()
        self._keep_out_of_copies()

    # ---- which modules ----------------------------------------------------------------------
    def add_optimizer(self, optimizer):
        for group in getattr(optimizer, "param_groups", []):
            for p in group.get("params", []):
                self.params[id(p)] = weakref.ref(p)
        self.discover()

    def discover(self):
        """Hooks every module that holds (or contains one that holds) an optimizer's parameter, and every loss module."""
        t0 = time.perf_counter()
        Module = self.Module
        # type(o), not isinstance: isinstance reads __class__, which some lazy objects answer with a warning.
        kinds = {}
        modules = []
        for o in gc.get_objects():
            t = type(o)
            is_module = kinds.get(t)
            if is_module is None:
                is_module = kinds[t] = issubclass(t, Module)
            if is_module:
                modules.append(o)
        parents = {}
        owners = []
        for m in modules:
            for child in getattr(m, "_modules", {}).values():
                if child is not None:
                    parents.setdefault(id(child), []).append(m)
            if any(self._optimized(p) for p in getattr(m, "_parameters", {}).values()):
                owners.append(m)
        roots = {}
        stack = list(owners)
        seen = set()
        while stack:
            m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            up = parents.get(id(m))
            if up:
                stack.extend(up)
            else:
                roots[id(m)] = m
        self.probe.model.roots_found(list(roots.values()))
        self.probe.flops.roots_found(list(roots.values()))
        wanted = {}
        for root in roots.values():
            for m in root.modules():
                wanted[id(m)] = m
        for m in modules:
            if isinstance(m, self.loss_base):
                wanted[id(m)] = m
        added = 0
        for key, m in wanted.items():
            entry = self.hooked.get(key)
            if entry is not None and entry[0]() is m:
                continue
            self._hook(m)
            added += 1
        self.scans += 1
        t1 = time.perf_counter()
        self.scan_ms += (t1 - t0) * 1000
        self.probe.iterations.probe_time(t0, t1)  # the probe's own work is not the script's step
        if added:
            self.discovering = True
            # hooks added while iteration N+1 runs see all of iteration N+2 first
            self.watch_until = self.probe.iterations.closed + 2
        return added

    def _optimized(self, p):
        ref = self.params.get(id(p)) if p is not None else None
        return ref is not None and ref() is p

    def iteration_closed(self, number):
        """After a training iteration seen whole with hooks on every candidate: keep only the outermost ones."""
        if not self.discovering or number < self.watch_until:
            return
        if self.discover():
            return  # modules appeared (a torch.compile wrapper, a new model): watch them for a whole iteration
        if self.probe.dynamo_kept_out:
            # torch.compile is in use: compiled code traced these hooks (as no-ops) and guards on them, so
            # removing them would recompile; inside compiled code they cost nothing, so they stay.
            self.discovering = False
            return
        for key in list(self.hooked):
            if key not in self.outermost:
                ref, handles = self.hooked.pop(key)
                for h in handles:
                    h.remove()
        self.discovering = False

    def hooked_modules(self):
        return [ref() for ref, _ in self.hooked.values() if ref() is not None]

    def _hook(self, m):
        # One registration for every torch (no always_call): a forward that raised is closed at the next backward.
        handles = [m.register_forward_pre_hook(self.pre), m.register_forward_hook(self.post)]
        self.hooked[id(m)] = (weakref.ref(m), handles)

    def _keep_out_of_copies(self):
        """torch.save(model) pickles each module's hook dicts, and the probe's hooks are closures that cannot be
        pickled: a module's state leaves them (and the probe's marks) out, so a checkpoint is the script's own (and loads where no probe
        is), and a copy of a model (an EMA) is not taken for the training forward."""
        Module = self.Module
        ours = (self.pre, self.post)
        own = Module.__dict__.get("__getstate__")
        if getattr(own, "_trainbench", False):
            return

        def __getstate__(module):
            state = own(module) if own is not None else module.__dict__
            if type(state) is not dict:
                return state
            # The probe's marks (a model it has seen) are its own too.
            out = {k: v for k, v in state.items() if not k.startswith("_trainbench")} if any(k.startswith("_trainbench") for k in state) else None
            for key in ("_forward_pre_hooks", "_forward_hooks"):
                hooks = state.get(key)
                mine = lambda h: h is ours[0] or h is ours[1] or getattr(h, "_trainbench_hook", False)  # noqa: E731
                if hooks and any(mine(h) for h in hooks.values()):
                    out = out if out is not None else dict(state)
                    kept = type(hooks)()
                    for k, h in hooks.items():
                        if not mine(h):
                            kept[k] = h
                    out[key] = kept
            return out if out is not None else state

        __getstate__._trainbench = True
        Module.__getstate__ = __getstate__

    # ---- the hooks --------------------------------------------------------------------------
    def _make_hooks(self):
        probe = self.probe
        compiling = self.compiling
        torch = self.torch
        loss_base = self.loss_base
        outermost = self.outermost
        owner = self

        def pre(module, args):
            if compiling():  # traced by dynamo: nothing of ours may enter the graph
                return None
            local = probe.threads.state
            if probe.backward_depth or local.in_fetch:  # probe.quiet(): a DataLoader fetch (transforms), a backward (recomputation)
                return None
            depth = local.depth
            local.depth = depth + 1
            if depth:
                return None
            phase = "loss" if isinstance(module, loss_base) else "forward"
            now = time.perf_counter()
            if torch.is_grad_enabled():
                if owner.discovering:
                    outermost.add(id(module))
                if not probe.model.own_autocast_checked:
                    probe.model.check_own_autocast(module)
                if phase == "loss" and probe.iterations.tentative is not None:
                    pass  # the loss of a held eval-mode forward: decided with it
                elif phase == "forward" and not module.training:
                    # Evaluation written without no_grad, or training in eval mode (frozen batch norm): the next backward tells.
                    probe.iterations.eval_mode_forward(now)
                else:
                    probe.iterations.training_forward(now)
            elif not module.training:
                probe.iterations.eval_forward(now)
                phase = None
            elif probe.iterations.evaluating:
                phase = None
            local.call = (phase, (now, None) if probe.device is None else probe.mark(now))  # mark() inlined on the CPU (issue 38)
            if probe.stop_due:
                probe.stop_if_due()
            return None

        def post(module, args, output):
            if compiling():
                return None
            local = probe.threads.state
            if probe.backward_depth or local.in_fetch:  # probe.quiet()
                return None
            depth = local.depth - 1
            if depth > 0:
                local.depth = depth
                return None
            local.depth = 0
            call = local.call
            local.call = None
            if call is not None and call[0] is not None:
                probe.phase_done(call[0], call[1])
            return None

        return pre, post

