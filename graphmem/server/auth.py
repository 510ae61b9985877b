"""API keys and roles of the graphmem server.

Each key is bound to one user and one role:

- ``agent``: reads and writes its own user's memory (learnings, events, context, outcomes...);
- ``analyst``: read-only: Cypher, insights, stats, learnings and search over the users it is
  granted (``users``; ``["*"]`` for all), never writes;
- ``admin``: everything an agent can do for its user, Cypher over all users, the lifecycle cycle,
  refreshes for every user.

Keys are stored hashed (sha256 of the key, which is 32 random bytes: a slow hash adds nothing for
keys nobody picks by hand): the key itself is printed once by ``graphmem keys add`` and never
stored. The key file is JSON: ``{"keys": [{"id", "hash", "user", "role", "users", "created_at"}]}``.
The same JSON can be given in the environment variable ``GRAPHMEM_SERVER_KEYS`` instead of a file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInputError

ROLES = ("agent", "analyst", "admin")
KEY_PREFIX = "gm_"


@dataclass(frozen=True)
class Principal:
    """Who a request is from: the key's id, user and role, and the users an analyst may read."""

    key_id: str
    user: str
    role: str
    users: tuple[str, ...] = field(default_factory=tuple)

    def can_read(self, user: str) -> bool:
        """True if this key may read ``user``'s memory."""
        if self.role == "admin" or user == self.user:
            return True
        return self.role == "analyst" and ("*" in self.users or user in self.users)

    @property
    def writes(self) -> bool:
        """True for roles that may write (agent, admin)."""
        return self.role in ("agent", "admin")


def hash_key(key: str) -> str:
    """The stored form of a key: ``sha256:<hex>``."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random API key (``gm_`` + 43 url-safe characters)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


class KeyStore:
    """The keys a server accepts, looked up by hash."""

    def __init__(self, entries: list[dict[str, Any]] | None = None) -> None:
        self.entries: list[dict[str, Any]] = []
        self._by_hash: dict[str, Principal] = {}
        for entry in entries or []:
            self._add_entry(entry)

    def _add_entry(self, entry: dict[str, Any]) -> None:
        role = entry.get("role")
        if role not in ROLES:
            raise InvalidInputError(f"key {entry.get('id')!r}: unknown role {role!r}; use one of {', '.join(ROLES)}")
        digest, user = entry.get("hash"), entry.get("user")
        if not isinstance(digest, str) or not digest.startswith("sha256:"):
            raise InvalidInputError(f"key {entry.get('id')!r}: 'hash' must be 'sha256:<hex>' (made by graphmem keys add)")
        if not isinstance(user, str) or not user.strip():
            raise InvalidInputError(f"key {entry.get('id')!r}: 'user' must be a non-empty string")
        users = tuple(str(u) for u in entry.get("users") or ())
        self.entries.append(dict(entry))
        self._by_hash[digest] = Principal(key_id=str(entry.get("id", digest[7:15])), user=user, role=role, users=users)

    # --- loading and saving -------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, env: str | None = None) -> KeyStore:
        """Keys from a JSON file (missing file: no keys) and/or JSON text (e.g. an environment variable)."""
        entries: list[dict[str, Any]] = []
        if path is not None and Path(path).exists():
            entries += _parse(Path(path).read_text(encoding="utf-8"), str(path))
        if env:
            entries += _parse(env, "GRAPHMEM_SERVER_KEYS")
        return cls(entries)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the key file (hashes only), readable by its owner only."""
        target = Path(path)
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(json.dumps({"keys": self.entries}, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o600)
        tmp.replace(target)

    def add(self, user: str, role: str, users: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        """Create a key for ``user`` with ``role``; returns (the key, its stored entry)."""
        key = new_key()
        entry = {
            "id": secrets.token_hex(4), "hash": hash_key(key), "user": user, "role": role,
            "users": list(users or []), "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._add_entry(entry)
        return key, entry

    def remove(self, key_id: str) -> bool:
        """Remove the key with this id; False if there was none."""
        kept = [e for e in self.entries if e.get("id") != key_id]
        if len(kept) == len(self.entries):
            return False
        self.__init__(kept)  # type: ignore[misc]
        return True

    # --- checking -------------------------------------------------------------------------------
    def check(self, key: str | None) -> Principal | None:
        """The principal of ``key``, or None for a missing or unknown key."""
        if not key:
            return None
        digest = hash_key(key)
        for known, principal in self._by_hash.items():  # constant-time compare, no early exit on prefix
            if hmac.compare_digest(known, digest):
                return principal
        return None

    def __len__(self) -> int:
        return len(self._by_hash)


def _parse(text: str, where: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"{where} is not valid JSON ({e}); create it with `graphmem keys add`") from e
    keys = data.get("keys") if isinstance(data, dict) else data
    if not isinstance(keys, list) or not all(isinstance(k, dict) for k in keys):
        raise InvalidInputError(f"{where} must hold {{\"keys\": [...]}}; create it with `graphmem keys add`")
    return keys


def bearer_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key from ``Authorization: Bearer K`` or ``X-API-Key: K``."""
    if x_api_key:
        return x_api_key.strip()
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None
