"""Trainbench's probe, injected through PYTHONPATH (see docs/adr/0013-script-probe.md).

Python imports the first `sitecustomize` on sys.path, so this one hides any the
environment already has (Debian's, a virtualenv's, the user's): it runs that one
first, then starts the probe only when Trainbench launched this process.
"""
import os
import sys


def _chain_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        folder = os.path.abspath(entry or os.getcwd())
        if folder == here:
            continue
        candidate = os.path.join(folder, "sitecustomize.py")
        if not os.path.isfile(candidate):
            continue
        import importlib.util

        spec = importlib.util.spec_from_file_location("_trainbench_chained_sitecustomize", candidate)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as err:  # as Python's own site.py does: say so and go on
            sys.stderr.write("Error in sitecustomize (%s, chained by Trainbench's probe): %r\n" % (candidate, err))
        return


_chain_next_sitecustomize()

if os.environ.get("TB_PROBE_ADDR"):
    try:
        import trainbench_probe

        trainbench_probe.install()
    except Exception as err:  # the probe must never stop the user's script from starting
        sys.stderr.write("trainbench probe: not started: %r\n" % (err,))
