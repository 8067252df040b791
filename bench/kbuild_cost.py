"""What a kernel build of each of fsbench's configs costs (fsbench.vm.kconfigs, `fsbench
bisect --config NAME`), built by fsbench's own KernelBuilder as the bisection and its test
build them: a cold build (config made, every object compiled, ccache off), then a step as
the bisect test's steps are (fs/ext4/fsync.c changed, the kernel built again in the same
build directory). Each says its CPU seconds: user + system of every process make ran,
from their rusage, which unlike the wall time hardly moves with what else the machine
runs; the bzImage's size and the objects compiled. `--ccache` adds a cold build in a new
build directory with ccache on and empty (a fresh machine's first build: ccache's own
cost, for nothing).

    .venv/bin/python bench/kbuild_cost.py [--configs default,minimal,minimal-without-explain]
                                          [--ccache] [--tree DIR] [-o NAME]

The tree: Debian's linux-source tarball unpacked into a temporary directory (or --tree, a
Linux source tree). The configs are built at once, each in a process and a cache of its
own (its CPU seconds are its own). `minimal-without-explain` is the minimal config without
what fsbench explain needs (kconfigs.EXPLAIN): the price of tracing, stack symbols and
perf events. Writes bench/results/kbuild_cost.json; `summary` has each config's cold CPU
seconds and their ratio to the default's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import REPO, save  # noqa: E402

sys.path.insert(0, str(REPO / "src"))
from fsbench.system import sourcetree  # noqa: E402
from fsbench.vm import kconfigs  # noqa: E402
from fsbench.vm.kbuild import KernelBuilder  # noqa: E402

STEP_FILE = "fs/ext4/fsync.c"  # what the bisect test's steps change
WITHOUT_EXPLAIN = replace(
    kconfigs.MINIMAL,
    name="minimal-without-explain",
    summary="the minimal config without what fsbench explain needs",
    options={k: v for k, v in kconfigs.MINIMAL.options.items() if k not in kconfigs.EXPLAIN},
)
CONFIGS = {**kconfigs.NAMED, WITHOUT_EXPLAIN.name: WITHOUT_EXPLAIN}


def measured(builder: KernelBuilder, label: str) -> dict[str, Any]:
    built = builder.build(label)
    if not built.ok:
        raise SystemExit(f"{builder.named.name} {label}: {built.error}")
    objects = sum(1 for _ in builder.out.rglob("*.o"))
    assert built.bzimage is not None
    return {
        "cpu_s": built.cpu_seconds,
        "wall_s": round(built.seconds, 1),
        "bzimage_bytes": built.bzimage.stat().st_size,
        "objects": objects,
    }


def cost(tree: Path, name: str, ccache: bool, scratch: Path) -> dict[str, Any]:
    """One config's cold build and step (and the cold build with an empty ccache)."""
    config = CONFIGS[name]
    os.environ["CCACHE_DISABLE"] = "1"  # ccache, when installed, passes every compile on
    builder = KernelBuilder(
        tree, scratch / f"cache-{name}", config, log=lambda s: print(f"{name}: {s}")
    )
    out: dict[str, Any] = {"config": name, "summary": config.summary}
    out["cold"] = measured(builder, "cold")
    source = tree / STEP_FILE
    source.write_text(source.read_text() + f"\n/* fsbench kbuild_cost: {name} */\n")
    out["step"] = measured(builder, "step")
    if ccache:
        del os.environ["CCACHE_DISABLE"]
        again = KernelBuilder(
            tree, scratch / f"cache-{name}-ccache", config, log=lambda s: print(f"{name}: {s}")
        )
        out["cold_with_empty_ccache"] = measured(again, "cold")
    return out


def unpacked(scratch: Path) -> Path:
    tarball = sourcetree.find_kernel_tarball()
    if tarball is None:
        raise SystemExit("no /usr/src/linux-source-*.tar.xz: apt-get install linux-source")
    tree = scratch / "linux"
    tree.mkdir(parents=True)
    unpack = ["tar", "xJf", str(tarball), "-C", str(tree), "--strip-components=1"]
    subprocess.run(unpack, check=True)
    return tree


def summary(costs: list[dict[str, Any]]) -> dict[str, Any]:
    by = {c["config"]: c for c in costs}
    default = by.get("default")
    return {
        name: {
            "cold_cpu_s": c["cold"]["cpu_s"],
            "step_cpu_s": c["step"]["cpu_s"],
            "bzimage_bytes": c["cold"]["bzimage_bytes"],
            "objects": c["cold"]["objects"],
            "of_default": (
                round(c["cold"]["cpu_s"] / default["cold"]["cpu_s"], 3) if default else None
            ),
        }
        for name, c in by.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--ccache", action="store_true", help="also a build with ccache, empty")
    ap.add_argument("--tree", type=Path, help="a Linux source tree (changed: a copy is built)")
    ap.add_argument("-o", "--output", default="kbuild_cost")
    args = ap.parse_args()
    names = args.configs.split(",")
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        ap.error(f"--configs: no config {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    with tempfile.TemporaryDirectory(prefix="kbuild-cost-", dir="/var/tmp") as tmp:
        scratch = Path(tmp)
        trees = []
        for name in names:  # a tree each: a step changes its tree
            where = scratch / f"tree-{name}"
            if args.tree:
                shutil.copytree(args.tree, where / "linux", symlinks=True)
                trees.append(where / "linux")
            else:
                trees.append(unpacked(where))
        with ProcessPoolExecutor(max_workers=len(names)) as pool:
            futures = [
                pool.submit(cost, tree, name, args.ccache, scratch)
                for tree, name in zip(trees, names, strict=True)
            ]
            costs = [f.result() for f in futures]
    save(
        args.output,
        {"jobs": os.cpu_count(), "costs": costs, "summary": summary(costs)},
        commands={"gcc": ["gcc", "--version"], "make": ["make", "--version"]},
    )


if __name__ == "__main__":
    main()
