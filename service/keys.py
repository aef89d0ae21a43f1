"""The server's two secrets, kept in the data directory and never in the database:
the Ed25519 signing key, and the AES-256-GCM key that seals server seeds, and the
records of a live hand, at rest until their reveal (FAIRNESS.md; docs/fairness.md §16)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from verifier.signing import Signer

SIGNING_KEY_FILE = "signing-ed25519.key"
SEED_KEY_FILE = "seed-aesgcm.key"


def _load_or_create(path: Path, size: int) -> bytes:
    if path.exists():
        raw = path.read_bytes()
        if len(raw) != size:
            raise RuntimeError(f"{path} holds {len(raw)} bytes, not {size}: refusing to guess")
        return raw
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = secrets.token_bytes(size)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    return raw


@dataclass
class ServerKeys:
    signer: Signer
    seed_key: bytes

    @classmethod
    def load(cls, data_dir: Path) -> ServerKeys:
        signer = Signer.from_seed(_load_or_create(data_dir / SIGNING_KEY_FILE, 32))
        return cls(signer, _load_or_create(data_dir / SEED_KEY_FILE, 32))

    def seal_seed(self, seed: bytes, table_id: str, hand_no: int) -> tuple[bytes, bytes]:
        """(nonce, ciphertext) of a server seed, bound to its hand."""
        nonce = secrets.token_bytes(12)
        return nonce, AESGCM(self.seed_key).encrypt(nonce, seed, _aad(table_id, hand_no))

    def open_seed(self, nonce: bytes, sealed: bytes, table_id: str, hand_no: int) -> bytes:
        return AESGCM(self.seed_key).decrypt(nonce, sealed, _aad(table_id, hand_no))

    def seal_record(self, data: bytes, table_id: str, hand_no: int, i: int) -> bytes:
        """nonce ‖ ciphertext of a live hand's record, bound to its place in the log."""
        nonce = secrets.token_bytes(12)
        return nonce + AESGCM(self.seed_key).encrypt(nonce, data, _record_aad(table_id, hand_no, i))

    def open_record(self, sealed: bytes, table_id: str, hand_no: int, i: int) -> bytes:
        return AESGCM(self.seed_key).decrypt(sealed[:12], sealed[12:], _record_aad(table_id, hand_no, i))


def _aad(table_id: str, hand_no: int) -> bytes:
    return f"rummy-pf/v1/seed|{table_id}|{hand_no}".encode()


def _record_aad(table_id: str, hand_no: int, i: int) -> bytes:
    return f"rummy/record|{table_id}|{hand_no}|{i}".encode()
