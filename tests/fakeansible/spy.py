#!/usr/bin/env python3
"""A stand-in for ansible-playbook that checks how the fleet controller hands it the
database password (docs/fleet.md): only start.yml may get it, and only as the memfd its
variable `fsbench_secret_fd` names, inherited, with no path on any filesystem. It must not
be on the command line, in the environment, in a file the call was given (the vars file,
the inventory, the playbook, a file the variables name) or behind any other descriptor.

Each call appends one JSON line to $FSBENCH_SPY_LOG: the playbook, its hosts, how the
password came ("memfd" or null) and every violation (described, never quoted). A call
with a violation fails loudly: each violation on stderr (ansible.log), exit status 97,
and the real Ansible never runs it.

After its checks, the spy runs the real ansible-playbook ($FSBENCH_SPY_REAL, the same
process: exec) or, without one, answers as a fake: every host of --limit starts its job
at start.yml and has finished it (rc 0) at the first status.yml.

A test that kills the controller while a call is in flight sets $FSBENCH_SPY_BLOCK to the
playbook's name and $FSBENCH_SPY_READY to a file: that call blocks at the end of its play
(callbacks/fsbench_spy_block.py, inside the real ansible-playbook, after every task ran
on every host and before Ansible cleans up), or in the spy when it refused the call, and
writes the file first. The password is given to the spy hex-encoded
($FSBENCH_SPY_SECRET_HEX), so that the spy's environment does not hold it as is.

Standard library only: the controller's PATH finds the python3 that runs it.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

SECRET_HEX = "FSBENCH_SPY_SECRET_HEX"
REAL = "FSBENCH_SPY_REAL"
LOG = "FSBENCH_SPY_LOG"
BLOCK = "FSBENCH_SPY_BLOCK"
READY = "FSBENCH_SPY_READY"
BLOCK_NOW = "FSBENCH_SPY_BLOCK_NOW"  # set by the spy for the real ansible-playbook only
REFUSED = 97
CALLBACK = "fsbench_spy_block"
CALLBACKS = Path(__file__).resolve().parent / "callbacks"
BLOCK_LIMIT = 900.0  # seconds a blocked call waits for its kill before it goes on
SCAN_LIMIT = 64 << 20  # bytes read of one file or descriptor


def parse(argv: list[str]) -> dict[str, Any]:
    """The arguments fsbench's Ansible.run passes: -i INVENTORY PLAYBOOK -e @VARS
    [--limit HOSTS]."""
    out: dict[str, Any] = {"inventory": None, "playbook": None, "vars": [], "limit": []}
    args = iter(argv)
    for arg in args:
        if arg == "-i":
            out["inventory"] = next(args)
        elif arg == "-e":
            value = next(args)
            if value.startswith("@"):
                out["vars"].append(value[1:])
        elif arg == "--limit":
            out["limit"] = [h for h in next(args).split(",") if h]
        elif not arg.startswith("-"):
            out["playbook"] = arg
    return out


def _holds(path: str, secret: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return secret in f.read(SCAN_LIMIT)
    except OSError:
        return False


def _regular(fd: int) -> bool:
    """A file or a memfd (not a pipe, socket or terminal, which reading could block)."""
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def check(argv: list[str], secret: bytes) -> tuple[str, dict[str, Any], str | None, list[str]]:
    """The playbook's name, the call's variables, how the password came ("memfd" or None)
    and every way it came that it must not."""
    given = parse(argv)
    name = Path(given["playbook"] or "?").stem
    variables: dict[str, Any] = {}
    bad: list[str] = []
    for path in given["vars"]:
        mode = os.stat(path).st_mode & 0o777
        if mode != 0o600:
            bad.append(f"{name}: the vars file {path} has mode {mode:o}, not 600")
        variables.update(json.loads(Path(path).read_text(encoding="utf-8")))
    if not secret:
        return name, variables, None, bad
    text = secret.decode()
    for i, arg in enumerate(argv):
        if text in arg:
            bad.append(f"{name}: the password is on the command line (argument {i})")
    for key, value in os.environ.items():
        if text in key or text in value:
            bad.append(f"{name}: the password is in the environment ({key})")
    files = [given["inventory"], given["playbook"], *given["vars"]]
    for path in files:
        if path and _holds(path, secret):
            bad.append(f"{name}: the password is in {path}, a file it was given")
    named = [v for v in variables.values() if isinstance(v, str) and v.startswith("/")]
    for path in named:
        if os.path.isfile(path) and _holds(path, secret):
            bad.append(f"{name}: the password is in {path}, a file its variables name")
    via = None
    secret_fd = variables.get("fsbench_secret_fd")
    for entry in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(entry)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the descriptor listdir used
        if fd == secret_fd:
            if name != "start":
                bad.append(f"{name}: given the password's descriptor (start alone carries it)")
            if not target.startswith("/memfd:"):
                bad.append(
                    f"{name}: fsbench_secret_fd {fd} is {target}, a file on disk, not a memfd"
                )
            if _holds(f"/proc/self/fd/{fd}", secret):
                via = "memfd" if target.startswith("/memfd:") else None
            else:
                bad.append(f"{name}: fsbench_secret_fd {fd} does not hold the password")
        elif _regular(fd) and _holds(f"/proc/self/fd/{fd}", secret):
            bad.append(f"{name}: descriptor {fd} ({target}) holds the password")
    if name == "start" and variables.get("fsbench_db_direct") and via is None:
        bad.append("start: the password did not come as the memfd fsbench_secret_fd names")
    return name, variables, via, bad


def block(ready: str, playbook: str) -> None:
    """Say so in `ready`, then wait to be killed (at most BLOCK_LIMIT seconds)."""
    tmp = f"{ready}.tmp"
    Path(tmp).write_text(json.dumps({"pid": os.getpid(), "playbook": playbook}))
    os.replace(tmp, ready)
    deadline = time.monotonic() + BLOCK_LIMIT
    while time.monotonic() < deadline:
        time.sleep(0.2)


def answer(name: str, hosts: list[str]) -> None:
    """What the playbook's tasks would report through fsbench's callback plugin."""
    lines: list[dict[str, Any]] = []
    for host in hosts:
        if name == "start":
            lines.append({"host": host, "task": "workdir", "status": "ok"})
            job = {"ansible_job_id": f"j-{host}", "started": 1}
            lines.append({"host": host, "task": "run", "status": "ok", **job})
        elif name == "status":
            done = {"finished": 1, "rc": 0}
            lines.append({"host": host, "task": "job", "status": "ok", **done})
    with open(os.environ["FSBENCH_EVENTS"], "a", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)


def main(argv: list[str]) -> int:
    secret = bytes.fromhex(os.environ.get(SECRET_HEX, ""))
    name, _, via, bad = check(argv[1:], secret)
    log = os.environ.get(LOG)
    if log:
        hosts = parse(argv[1:])["limit"]
        line = {"playbook": name, "hosts": hosts, "secret_via": via, "violations": bad}
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    blocking = os.environ.get(BLOCK) == name and bool(os.environ.get(READY))
    if bad:
        for text in bad:
            print(f"fake ansible-playbook: REFUSED: {text}", file=sys.stderr, flush=True)
        if blocking:
            block(os.environ[READY], name)
        return REFUSED
    real = os.environ.get(REAL)
    if not real:
        answer(name, parse(argv[1:])["limit"])
        return 0
    env = dict(os.environ)
    env["PATH"] = f"{Path(real).parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    if blocking:
        plugins = [env.get("ANSIBLE_CALLBACK_PLUGINS", ""), str(CALLBACKS)]
        enabled = [env.get("ANSIBLE_CALLBACKS_ENABLED", ""), CALLBACK]
        env["ANSIBLE_CALLBACK_PLUGINS"] = os.pathsep.join(p for p in plugins if p)
        env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(c for c in enabled if c)
        env[BLOCK_NOW] = name
    os.execve(real, [real, *argv[1:]], env)  # the same process: it keeps the memfd


if __name__ == "__main__":
    sys.exit(main(sys.argv))
