"""An S3-compatible server on 127.0.0.1 (moto's server mode) for the S3 store tests.

moto runs in this process on a free port; boto3 uploads, s3fs reads through ``endpoint_url``
like any real S3 endpoint. ``faults`` (the HTTP server's :class:`~tests.servers.Faults`) make
moto's answers fail on purpose: a status with S3's XML error (403 ``AccessDenied``, 503
``SlowDown`` ...), or a stall, for requests whose ``bucket/key?query`` matches a pattern.
Dummy credentials are put in the environment while the server
runs (and AWS config files pointed nowhere) so no developer or CI AWS setup leaks in or is
needed; the previous environment comes back on :meth:`S3Server.close`.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path

from tests.servers import Faults

logger = logging.getLogger(__name__)

REGION = "us-east-1"
KEY = "testing"
SECRET = "testing"

_DUMMY_ENV = {
    "AWS_ACCESS_KEY_ID": KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_SESSION_TOKEN": None,
    "AWS_SECURITY_TOKEN": None,
    "AWS_PROFILE": None,
}


class S3Server:
    """moto's ThreadedMotoServer plus helpers to make buckets and upload directory trees."""

    def __init__(self):
        self.faults = Faults()
        self._server = None
        self._saved_env: dict[str, str | None] = {}
        self.endpoint_url = ""

    def start(self) -> S3Server:
        self._set_dummy_env()
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
        try:
            self._server = _moto_server(self.faults)
            self._server.start()
        except BaseException:
            self._restore_env()
            raise
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        return self

    def close(self) -> None:
        try:
            if self._server is not None:
                self._server.stop()
        finally:
            self._server = None
            self._restore_env()

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _set_dummy_env(self) -> None:
        self._saved_env = {name: os.environ.get(name) for name in _DUMMY_ENV}
        for name, value in _DUMMY_ENV.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _restore_env(self) -> None:
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env = {}

    def storage_options(self) -> dict:
        """What ``s3fs.S3FileSystem(**options)`` (and so the engine) needs to reach moto."""
        return {
            "endpoint_url": self.endpoint_url,
            "key": KEY,
            "secret": SECRET,
            "anon": False,
            "client_kwargs": {"region_name": REGION},
        }

    def client(self):
        """A boto3 S3 client for setting up fixtures (tests read through s3fs)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )

    def create_bucket(self, name: str | None = None) -> str:
        name = name or f"zarrfs-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def upload_dir(self, local: str | Path, bucket: str | None = None, prefix: str = "") -> str:
        """Upload every file under ``local`` to ``bucket/prefix``; return the ``s3://`` URL."""
        local = Path(local)
        if not local.is_dir():
            raise NotADirectoryError(f"nothing to upload: {local} is not a directory")
        bucket = bucket or self.create_bucket()
        prefix = prefix.strip("/")
        client = self.client()
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            relative = path.relative_to(local).as_posix()
            key = f"{prefix}/{relative}" if prefix else relative
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"


#: S3's error code for each status a fault answers with
_S3_CODES = {403: "AccessDenied", 404: "NoSuchKey", 500: "InternalError", 503: "SlowDown"}


def _moto_server(faults: Faults):
    """moto's threaded server, its WSGI app wrapped so that ``faults`` apply first."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    class FaultyMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            from moto.moto_server import werkzeug_app
            from werkzeug.serving import make_server

            app = werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app)
            self._server = make_server(
                self._ip_address,
                self._port,
                _with_faults(app, faults),
                True,
                request_handler=werkzeug_app.MotoRequestHandler,
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    return FaultyMotoServer(ip_address="127.0.0.1", port=0, verbose=False)


def _with_faults(app, faults: Faults):
    def serve(environ, start_response):
        target = environ.get("PATH_INFO", "").lstrip("/")
        if environ.get("QUERY_STRING"):
            target += "?" + environ["QUERY_STRING"]
        rule = faults.take(environ["REQUEST_METHOD"], target)
        if rule is not None and rule.kind == "stall":
            end = time.monotonic() + rule.seconds
            while time.monotonic() < end and rule in faults.rules:  # cleared: answer now
                time.sleep(0.02)
        elif rule is not None and rule.kind == "status":
            code = _S3_CODES.get(rule.status, "InternalError")
            body = f"<Error><Code>{code}</Code><Message>injected</Message></Error>".encode()
            start_response(
                f"{rule.status} {code}",
                [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
            )
            return [body]
        elif rule is not None:
            raise ValueError(f"the S3 server cannot inject {rule.kind!r} faults")
        return app(environ, start_response)

    return serve
