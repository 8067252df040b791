"""fsbench: compare filesystems and their mkfs/mount options with real workloads."""

__version__ = "0.1.0"
