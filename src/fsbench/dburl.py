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

from fsbench.errors import FsbenchError


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fsbench" / "results.db"


def to_url(db: str | Path | None) -> str:
    """A path or a URL as the engine takes it: `postgresql://` means psycopg 3; any other
    kind of database is refused in one line (fsbench stores results in SQLite or
    PostgreSQL)."""
    if db is None:
        db = default_db_path()
    given = str(db)
    if given.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + given.split("://", 1)[1]
    if given.startswith(("postgresql+psycopg://", "sqlite://")):
        return given
    if "://" in given:
        raise FsbenchError(
            f"cannot use {without_password(given)} as a result store: give a file path, "
            "sqlite:///PATH or postgresql://[USER[:PASSWORD]@][HOST][:PORT]/DATABASE"
        )
    path = Path(given).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


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
    URL with a password, so that a fleet host connects without the password in its URL."""
    u, password = make_url(url), password_of(url)
    if not password:
        return ""
    # A socket directory is matched as given (localhost only matches the default one).
    host = u.host or str(u.query.get("host") or "*")
    fields = [host, str(u.port or "*"), u.database or "*", u.username or "*", password]
    return ":".join(f.replace("\\", "\\\\").replace(":", "\\:") for f in fields)
