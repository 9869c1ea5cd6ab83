"""Azurite, Microsoft's Azure Blob Storage emulator, on 127.0.0.1 for the Azure store tests.

``packaging/setup.sh`` installs it with npm into ``.node/`` beside the repository (or set
``ZARRFS_AZURITE`` to an ``azurite-blob`` executable). It runs on a free port with its data in a
temporary folder, and stops (the folder removed) on :meth:`AzuriteServer.close`. Containers and
uploads go through azure-storage-blob, Microsoft's own client; the tests read through zarrfs.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

#: Azurite's well-known development account (public, in Microsoft's documentation)
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_LISTENING = re.compile(r"Blob service (?:is )?successfully listens on (http://\S+)")


def azurite_executable() -> str | None:
    """``azurite-blob`` from ``ZARRFS_AZURITE``, the repository's ``.node/``, or the PATH."""
    given = os.environ.get("ZARRFS_AZURITE")
    if given:
        return given
    local = Path(__file__).resolve().parent.parent / ".node/node_modules/.bin/azurite-blob"
    return str(local) if local.exists() else shutil.which("azurite-blob")


class AzuriteServer:
    """One Azurite blob service: start, containers, uploads, credentials, close."""

    def __init__(self):
        self._process: subprocess.Popen | None = None
        self._folder: str | None = None
        self.endpoint = ""  # http://127.0.0.1:PORT/devstoreaccount1

    def start(self, timeout: float = 60.0) -> AzuriteServer:
        executable = azurite_executable()
        if executable is None:
            raise RuntimeError("azurite is not installed: run packaging/setup.sh")
        self._folder = tempfile.mkdtemp(prefix="zarrfs-azurite-")
        log = Path(self._folder) / "azurite.log"
        try:
            with open(log, "wb") as out:
                self._process = subprocess.Popen(
                    [executable, "--blobHost", "127.0.0.1", "--blobPort", "0"]
                    + ["--location", f"{self._folder}/data", "--skipApiVersionCheck"]
                    + ["--loose", "--disableTelemetry"],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            end = time.monotonic() + timeout
            while not self.endpoint:
                found = _LISTENING.search(log.read_text(errors="replace"))
                if found:
                    self.endpoint = f"{found.group(1).rstrip('/')}/{ACCOUNT}"
                elif self._process.poll() is not None or time.monotonic() > end:
                    raise RuntimeError(f"azurite did not start:\n{log.read_text()}")
                else:
                    time.sleep(0.1)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        try:
            if self._process is not None and self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(10)
        finally:
            self._process = None
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = None

    def __enter__(self) -> AzuriteServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ credentials
    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint={self.endpoint};"
        )

    def storage_options(self) -> dict:
        """adlfs' spelling of what reaches Azurite with the account key."""
        return {"account_name": ACCOUNT, "account_key": KEY, "endpoint_url": self.endpoint}

    def sas_token(self, container: str) -> str:
        """A read and list SAS token for ``container``, valid for an hour."""
        from azure.storage.blob import ContainerSasPermissions, generate_container_sas

        return generate_container_sas(
            ACCOUNT,
            container,
            account_key=KEY,
            permission=ContainerSasPermissions(read=True, list=True),
            expiry=datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1),
        )

    # ------------------------------------------------------------------ contents
    def service(self):
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def create_container(self, name: str | None = None, public: bool = False) -> str:
        """A new container; ``public``: anyone may read and list it."""
        name = name or f"zarrfs-{uuid.uuid4().hex[:12]}"
        self.service().create_container(name, public_access="container" if public else None)
        return name

    def upload_dir(self, local: str | Path, container: str | None = None, prefix: str = "") -> str:
        """Every file under ``local`` to ``container/prefix``; the ``az://`` URL."""
        local = Path(local)
        if not local.is_dir():
            raise NotADirectoryError(f"nothing to upload: {local} is not a directory")
        container = container or self.create_container()
        client = self.service().get_container_client(container)
        prefix = prefix.strip("/")
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            relative = path.relative_to(local).as_posix()
            client.upload_blob(f"{prefix}/{relative}" if prefix else relative, path.read_bytes())
        return f"az://{container}/{prefix}" if prefix else f"az://{container}"
