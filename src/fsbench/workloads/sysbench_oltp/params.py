"""sysbench-oltp's parameters and the sizes they imply."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from fsbench.system.units import Bytes, format_size
from fsbench.workloads.base import Params

Test = Literal["oltp_read_write", "oltp_read_only", "oltp_write_only"]
FlushMethod = Literal["O_DIRECT", "O_DIRECT_NO_FSYNC", "fsync", "O_DSYNC"]
KIB = 1 << 10
MIB = 1 << 20
PAGE_SIZES = tuple(n * KIB for n in (4, 8, 16, 32, 64))

USER = "mysql"  # Debian's package makes it; mariadbd refuses to run as root
NAME = "mariadb"  # the data directory on the filesystem, and the run's socket directory
DATABASE = "sbtest"
PERCENTILE = 95  # sysbench's --percentile: what its per-second lines report
# Bytes of table per row by page size (sysbench's rows: an int key, an int, char(120),
# char(60); the primary and the secondary index), measured after a 60 s read-write run on
# 8 tables of 100k rows (378 B at 16k pages, 461 at 32k, 629 at 64k), with room.
ROW_BYTES = {4 * KIB: 400, 8 * KIB: 400, 16 * KIB: 400, 32 * KIB: 500, 64 * KIB: 680}
# What a table takes before its first row at the largest page size (64k: 4 MiB extents).
TABLE_MIN = 8 * MIB
# The server's own files: redo log (96 MiB, MariaDB's default), the system tablespace with
# its undo log (12 MiB, 76 MiB after that run), the mysql schema, the temporary tablespace.
SERVER_BYTES = 384 * MIB
_ROWS_PER_S = 20_000  # slowest prepare we allow for (this machine: ~170k rows/s)
_TIMEOUT_SLACK = 600.0
_READY_S = 60.0


class SysbenchOltpParams(Params):
    test: Test = Field(
        default="oltp_read_write",
        description="sysbench's OLTP test: oltp_read_write, oltp_read_only, oltp_write_only",
    )
    tables: Annotated[int, Field(ge=1, le=1024, description="tables (--tables)")]
    table_size: Annotated[int, Field(ge=1, description="rows per table (--table-size)")]
    threads: Annotated[int, Field(ge=1, le=1024, description="client threads (--threads)")]
    duration: Annotated[int, Field(ge=1, le=86400, description="seconds of the run (--time)")]
    doublewrite: bool = Field(
        default=True,
        description="innodb_doublewrite: every page written twice (first to the doublewrite "
        "buffer) so a torn write can be repaired; off: trust the filesystem and device",
    )
    page_size: Bytes = Field(
        default=16 * KIB,
        description="innodb_page_size (4k, 8k, 16k, 32k, 64k), fixed when the data directory "
        "is initialized",
    )
    buffer_pool: Bytes = Field(
        default=64 * MIB,
        description="innodb_buffer_pool_size: smaller than the tables, so that the "
        "filesystem is read and written (32k pages need >= 11M, 64k >= 21M)",
    )
    flush_method: FlushMethod = Field(
        default="O_DIRECT",
        description="innodb_flush_method: O_DIRECT (data files bypass the page cache), "
        "O_DIRECT_NO_FSYNC, fsync, O_DSYNC",
    )

    @field_validator("page_size")
    @classmethod
    def _innodb_page_size(cls, value: int) -> int:
        if value not in PAGE_SIZES:
            sizes = ", ".join(format_size(p).lower() for p in PAGE_SIZES)
            raise ValueError(f"innodb_page_size must be one of {sizes}")
        return value
