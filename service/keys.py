"""The server's two secrets, kept in the data directory and never in the database:
the Ed25519 signing key, and the AES-256-GCM key that seals server seeds, and the
records of a live hand, at rest until their reveal (FAIRNESS.md; docs/fairness.md §16)."""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from service import fastjson
from service.errors import EXIT_USAGE, ServiceError
from service.fastsig import SodiumSigner
from verifier.signing import Signer

SIGNING_KEY_FILE = "signing-ed25519.key"
SEED_KEY_FILE = "seed-aesgcm.key"


class KeyFileError(ServiceError):
    """A key file that cannot be used as it is: unreadable, not a file, or not the
    right size.  Key files are never repaired or replaced: the server refuses to start
    and names the file."""

    exit_code = EXIT_USAGE  # at start-up: never sent to a client

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"the key file {path} {problem}; restore it from your backup (the server never repairs or replaces "
            "a key file)"
        )
        self.path = path


def _load_or_create(path: Path, size: int) -> bytes:
    if path.exists() or path.is_symlink():
        try:
            raw = path.read_bytes()
        except IsADirectoryError:
            raise KeyFileError(path, "is a directory, not a file") from None
        except PermissionError:
            raise KeyFileError(path, "cannot be read (permission denied)") from None
        except OSError as e:
            raise KeyFileError(path, f"cannot be read ({e.strerror or type(e).__name__})") from None
        if len(raw) != size:
            raise KeyFileError(path, f"holds {len(raw)} bytes, not {size}: it is damaged or not a key file")
        return raw
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = secrets.token_bytes(size)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise KeyFileError(path, "appeared while it was being created (is another server starting?)") from None
    except OSError as e:
        raise KeyFileError(path, f"cannot be created ({e.strerror or type(e).__name__})") from None
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    return raw


@dataclass
class ServerKeys:
    signer: Signer
    seed_key: bytes
    data_dir: Path | None = None
    created: bool = False  # both files were made by this load (a first run, or a data directory without keys)

    @property
    def seal_check(self) -> str:
        """A one-way check value of the sealing key, to tell it from another."""
        return hashlib.sha256(b"rummy/seed-key-check|" + self.seed_key).hexdigest()

    def identity_problem(self, stored: dict[str, str]) -> KeyFileError | None:
        """Whether these keys are the card room's (as the database remembers them from
        the first start): another signing key would be another fairness identity,
        another sealing key could open no hand in progress."""
        where = self.data_dir or Path(".")
        if self.created and stored.get("signing_key_fingerprint") not in (None, self.signer.fingerprint):
            return KeyFileError(
                where / SIGNING_KEY_FILE,
                f"was missing, and this database belongs to a card room that signs with key "
                f"{stored['signing_key_fingerprint'][:16]}…; {SEED_KEY_FILE} goes back with it",
            )
        if stored.get("signing_key_fingerprint") not in (None, self.signer.fingerprint):
            return KeyFileError(
                where / SIGNING_KEY_FILE,
                f"is not this card room's signing key (its fingerprint is {self.signer.fingerprint[:16]}…, the "
                f"database's {stored['signing_key_fingerprint'][:16]}…): every server of one database signs with "
                "the same key",
            )
        if stored.get("seal_key_check") not in (None, self.seal_check):
            return KeyFileError(
                where / SEED_KEY_FILE, "is not this card room's sealing key: every server of one database needs it"
            )
        return None

    @classmethod
    def load(cls, data_dir: Path) -> ServerKeys:
        """Both keys, created together on first run.  One present without the other is
        refused: a new signing key would silently be a new fairness identity, and a new
        sealing key would void every hand in progress (D33)."""
        signing, sealing = data_dir / SIGNING_KEY_FILE, data_dir / SEED_KEY_FILE
        present = [p.exists() or p.is_symlink() for p in (signing, sealing)]
        if any(present) and not all(present):
            missing = signing if not present[0] else sealing
            raise KeyFileError(
                missing,
                f"is missing while {(sealing if not present[0] else signing).name} is there: the two are made together",
            )
        signer = SodiumSigner(_load_or_create(signing, 32), fastjson.canonical)
        return cls(signer, _load_or_create(sealing, 32), data_dir, created=not any(present))

    def forget_created(self) -> None:
        """Remove key files this load made (they belong to no card room yet), so that a
        refused start leaves the data directory as it found it."""
        if self.created and self.data_dir is not None:
            for name in (SIGNING_KEY_FILE, SEED_KEY_FILE):
                (self.data_dir / name).unlink(missing_ok=True)

    @cached_property
    def _aead(self) -> AESGCM:
        """The sealing key's cipher, made once (every record of a live hand is sealed)."""
        return AESGCM(self.seed_key)

    def seal_seed(self, seed: bytes, table_id: str, hand_no: int) -> tuple[bytes, bytes]:
        """(nonce, ciphertext) of a server seed, bound to its hand."""
        nonce = secrets.token_bytes(12)
        return nonce, self._aead.encrypt(nonce, seed, _aad(table_id, hand_no))

    def open_seed(self, nonce: bytes, sealed: bytes, table_id: str, hand_no: int) -> bytes:
        return self._aead.decrypt(nonce, sealed, _aad(table_id, hand_no))

    def seal_record(self, data: bytes, table_id: str, hand_no: int, i: int) -> bytes:
        """nonce ‖ ciphertext of a live hand's record, bound to its place in the log."""
        nonce = secrets.token_bytes(12)
        return nonce + self._aead.encrypt(nonce, data, _record_aad(table_id, hand_no, i))

    def open_record(self, sealed: bytes, table_id: str, hand_no: int, i: int) -> bytes:
        return self._aead.decrypt(sealed[:12], sealed[12:], _record_aad(table_id, hand_no, i))


def _aad(table_id: str, hand_no: int) -> bytes:
    return f"rummy-pf/v1/seed|{table_id}|{hand_no}".encode()


def _record_aad(table_id: str, hand_no: int, i: int) -> bytes:
    return f"rummy/record|{table_id}|{hand_no}|{i}".encode()
