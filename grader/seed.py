"""The grading seed: given, configured, derived from an instructor secret, or random.

Students see the kit's tests and may fit their code to the data of a known seed; the
grading seed is therefore hidden. With an instructor secret it is
HMAC-SHA256(secret, identity of the submission) cut to 31 bits: the same submission
always gets the same seed (a grade can be redone), another submission another one, and
without the secret nobody can compute it. The identity is the SHA-256 of the student-
editable files (paths and contents). The report records the seed and how it was
chosen, never the secret; `--seed N` reproduces a grade.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

SECRET_ENV = "LABKIT_GRADER_SECRET"
SEED_BITS = 31  # fits every integer type a lab may parse the seed into
MAX_IDENTITY_BYTES = 16 * 1024 * 1024  # larger files are not graded either (overlay.py)


class SecretError(Exception):
    """The secret cannot be used; the message says what to do."""


@dataclass(frozen=True)
class SeedChoice:
    """The seed of a grading run and where it came from (for the report)."""

    seed: int
    how: str  # "command line", "secret file", "secret from $LABKIT_GRADER_SECRET", "config", "random"
    identity: str | None = None  # what a secret-derived seed was derived from

    def as_dict(self) -> dict[str, object]:
        return {"seed": self.seed, "how": self.how, "identity": self.identity}


def derive(secret: bytes, identity: str) -> int:
    """HMAC-SHA256(secret, identity) as a seed in 1 .. 2**31 - 1."""
    digest = hmac.new(secret, identity.encode(), hashlib.sha256).digest()
    value = int.from_bytes(digest[:8], "big") & ((1 << SEED_BITS) - 1)
    return value or 1


def identity(files: Iterable[tuple[str, Path]]) -> str:
    """`sha256:<hex>` over the (relative path, content) pairs, in path order; a missing
    file counts as absent, so the identity still exists for an incomplete submission."""
    h = hashlib.sha256()
    for rel, path in sorted(files, key=lambda item: item[0]):
        try:
            info = path.lstat()
            # Regular files only: a FIFO would block the read, a link may point anywhere.
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IDENTITY_BYTES:
                continue
            content = path.read_bytes()
        except OSError:
            continue
        h.update(rel.encode() + b"\0" + str(len(content)).encode() + b"\0" + content)
    return "sha256:" + h.hexdigest()


def read_secret(path: Path) -> bytes:
    """The secret in `path` (surrounding whitespace removed); SecretError when unusable."""
    try:
        secret = path.read_bytes().strip()
    except OSError as exc:
        raise SecretError(f"cannot read the secret file {path}: {exc.strerror or exc}") from exc
    if not secret:
        raise SecretError(f"the secret file {path} is empty: write a long random string into it "
                          "(e.g. `python3 -c 'import secrets; print(secrets.token_hex(32))' > FILE`)")
    return secret


def choose(*, cli_seed: int | None, secret_file: Path | None, config_seed: int | str,
           identity_of: Callable[[], str]) -> SeedChoice:
    """The run's seed, in this order: --seed, --secret-file, $LABKIT_GRADER_SECRET, a fixed
    seed in the config, random. `identity_of()` names the submission (only called when a
    secret is used)."""
    if cli_seed is not None:
        return SeedChoice(cli_seed, "command line")
    if secret_file is not None:
        ident = identity_of()
        return SeedChoice(derive(read_secret(secret_file), ident), "secret file", ident)
    env_secret = os.environ.get(SECRET_ENV, "").strip()
    if env_secret:
        ident = identity_of()
        return SeedChoice(derive(env_secret.encode(), ident), f"secret from ${SECRET_ENV}", ident)
    if config_seed != "random":
        return SeedChoice(int(config_seed), "config")
    return SeedChoice(secrets.randbelow(2**SEED_BITS - 1) + 1, "random")
