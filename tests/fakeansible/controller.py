"""`fsbench ARGS` with tests/fakeansible/spy.py in place of ansible-playbook (it checks how
the password travels, then runs the real one): the fleet controller a test kills. Run as
`python controller.py fleet run ...`.

With $FSBENCH_SPY_LEAK=start-vars the controller leaks on purpose: the function that builds
every playbook's variables (start's too) puts the libpq password line in them, as the
controller before the memfd did. The tests show that they catch it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fsbench.cli.app import main
from fsbench.fleet import ansible
from fsbench.fleet.executor import FleetExecutor
from fsbench.store.dburl import pgpass_line

LEAK = "FSBENCH_SPY_LEAK"
SPY = Path(__file__).resolve().with_name("spy.py")

_binary = ansible.binary


def _spy_binary(name: str) -> str | None:
    return str(SPY) if name == "ansible-playbook" else _binary(name)


def _leaking_vars(self: FleetExecutor) -> dict[str, object]:
    return {**_built_vars(self), "fsbench_pgpass": pgpass_line(self.store.secret_url)}


_built_vars = FleetExecutor._vars

if __name__ == "__main__":
    os.environ["FSBENCH_SPY_REAL"] = _binary("ansible-playbook") or ""
    ansible.binary = _spy_binary
    if os.environ.get(LEAK) == "start-vars":
        FleetExecutor._vars = _leaking_vars  # type: ignore[method-assign]
    elif os.environ.get(LEAK):
        sys.exit(f"controller.py: no leak named {os.environ[LEAK]!r}")
    sys.argv[0] = "fsbench"
    main()
