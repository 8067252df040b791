"""Where a store is, as a URL, and the URL's secrets: what may be shown, logged or stored
(no password), what libpq reads instead (a password file line), and error text redacted.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote, quote_plus

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from fsbench.system.errors import FsbenchError


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fsbench" / "results.db"


PG_FORM = "postgresql://[USER[:PASSWORD]@][HOST][:PORT]/DATABASE"


def to_url(db: str | Path | None) -> str:
    """A path or a URL as the engine takes it: `postgresql://` means psycopg 3; any other
    kind of database is refused in one line (fsbench stores results in SQLite or
    PostgreSQL)."""
    if db is None:
        db = default_db_path()
    given = str(db)
    if given.startswith(("postgresql://", "postgres://")):
        url = "postgresql+psycopg://" + given.split("://", 1)[1]
        return with_taken_password(_parsed(url, given))
    if given.startswith("postgresql+psycopg://"):
        return with_taken_password(_parsed(given, given))
    if given.startswith("sqlite://"):
        return given
    if "://" in given:
        raise FsbenchError(
            f"cannot use {without_password(given)} as a result store: give a file path, "
            f"sqlite:///PATH or {PG_FORM}"
        )
    path = Path(given).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FsbenchError(
            f"cannot make the directory of result store {path}: {exc.strerror or exc}; "
            "give --db a path in a directory you can write"
        ) from None
    return f"sqlite:///{path}"


def _parsed(url: str, given: str) -> str:
    """`url` if SQLAlchemy can parse it; else `given` is refused in one line. The parser's
    own words are not quoted: they may hold the password."""
    try:
        make_url(url)
    except ValueError:  # the only one _parse_url raises: int() of the port
        why = "its port is not a number"
    except ArgumentError:
        why = "not a URL"
    else:
        return url
    raise FsbenchError(
        f"cannot use {without_password(given)} as a result store: {why}; give {PG_FORM}"
    )


def without_password(url: str) -> str:
    """The URL as it may be shown, logged or stored: a password (in the URL or as its
    `password` parameter) replaced by ***, the driver and the parameters as a user types
    them (postgresql://u:***@/db?host=/run/pg)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    if parsed.drivername.startswith("sqlite"):
        return url  # a file: no password, and its path as given
    if parsed.drivername == "postgresql+psycopg":
        parsed = parsed.set(drivername="postgresql")
    shown = parsed.set(query={}).render_as_string(hide_password=True)
    params = [
        f"{key}={'***' if key in _SECRET_PARAMS else value}"
        for key, values in parsed.query.items()
        for value in ((values,) if isinstance(values, str) else values)
    ]
    return shown + ("?" + "&".join(params) if params else "")


# URL parameters that libpq reads as secrets.
_SECRET_PARAMS = ("password", "sslpassword")


def secrets_of(url: str) -> list[str]:
    """The secrets a URL carries: its password and any secret parameter."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return []
    found = [parsed.password or ""]
    for key in _SECRET_PARAMS:
        value = parsed.query.get(key) or ""
        found += [value] if isinstance(value, str) else list(value)
    return [str(f) for f in found if f]


def password_of(url: str) -> str:
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return ""
    value = parsed.password or parsed.query.get("password") or ""
    return value if isinstance(value, str) else value[0]


def strip_password(url: str) -> str:
    """The URL with no password at all (libpq then reads it from PGPASSFILE)."""
    parsed = make_url(url)
    bare = parsed._replace(password=None).difference_update_query(_SECRET_PARAMS)
    return bare.render_as_string(hide_password=False)


def redact(text: str, url: str) -> str:
    """`text` with the URL's secrets (as given and URL-encoded) replaced by ***: for
    error messages that quote a driver's words."""
    for secret in secrets_of(url):
        for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
            text = text.replace(form, "***")
    return text


def redact_argv(argv: list[str]) -> list[str]:
    """A command line as it may be stored or shown: any URL in it without its password
    (`--db URL` and `--db=URL` alike)."""
    return [without_password(a) if "://" in a else a for a in argv]


def pgpass_line(url: str) -> str:
    """A libpq password file line (host:port:database:user:password) for a PostgreSQL
    URL with a password, so that a remote host connects without the password in its URL."""
    u, password = make_url(url), password_of(url)
    if not password:
        return ""
    # A socket directory is matched as given (localhost only matches the default one).
    host = u.host or str(u.query.get("host") or "*")
    fields = [host, str(u.port or "*"), u.database or "*", u.username or "*", password]
    return ":".join(f.replace("\\", "\\\\").replace(":", "\\:") for f in fields)


# A remote host's fsbench (one part of a run on many hosts) is given the database password
# in a libpq password file that it takes: reads once, deletes, and keeps in memory only
# (this environment variable names the file). The file then exists on the host for the
# second between Ansible writing it and fsbench starting, not for the whole run (nor after
# it, when the controller that would have removed it was killed).
TAKE_PGPASSFILE = "FSBENCH_TAKE_PGPASSFILE"
_taken: list[list[str]] = []  # the fields of the line taken, once per process


def parse_pgpass_line(line: str) -> list[str]:
    """The five fields of a libpq password file line (`\\:` and `\\\\` unescaped)."""
    fields: list[str] = []
    current, chars = "", iter(line.rstrip("\n"))
    for ch in chars:
        if ch == "\\":
            current += next(chars, "")
        elif ch == ":" and len(fields) < 4:
            fields.append(current)
            current = ""
        else:
            current += ch
    fields.append(current)
    if len(fields) != 5:
        raise FsbenchError("a password file line has 5 fields: host:port:database:user:password")
    return fields


def with_taken_password(url: str) -> str:
    """`url` with the password of the file $FSBENCH_TAKE_PGPASSFILE names, when it has
    none and the file's line matches it (libpq's rules: each field equal or `*`). The file
    is taken at the first call: read, deleted, and the variable (and PGPASSFILE, which
    names the same file for an older fsbench) dropped from the environment."""
    path = os.environ.pop(TAKE_PGPASSFILE, "")
    if path:
        if os.environ.get("PGPASSFILE") == path:
            del os.environ["PGPASSFILE"]
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        Path(path).unlink(missing_ok=True)
        if text.strip():
            _taken.append(parse_pgpass_line(text.splitlines()[0]))
    if not _taken or password_of(url):
        return url
    host, port, database, user, password = _taken[-1]
    u = make_url(url)
    given = [u.host or str(u.query.get("host") or "localhost"), str(u.port or 5432)]
    given += [u.database or "", u.username or ""]
    if all(f in ("*", g) for f, g in zip((host, port, database, user), given, strict=True)):
        return u.set(password=password).render_as_string(hide_password=False)
    return url
