"""Credentials and options through obstore, as the requests carry them: the loopback server plays
an S3 endpoint (path-style GETs of a folder) and records each request's headers, so a test sees
which key signed it, for which region, or that nothing did (``--anon``). fsspec's spellings
(``key``, ``secret``, ``client_kwargs.region_name``, ``endpoint_url``), AWS profiles from the
shared files and ``AWS_PROFILE``, the ``AWS_*`` variables; and the translation table itself."""

from __future__ import annotations

import re

import numpy as np
import pytest

import zarrfs
from zarrfs.engine import store_obstore
from zarrfs.storage_options import StorageOptionError, azure_connection_string, obstore_options

_AWS_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
)


@pytest.fixture
def endpoint(tmp_path, zarr_writer, http_server, monkeypatch):
    """(server, data): bucket ``b`` holding ``store/a``, no AWS setting in the environment."""
    for name in _AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    data = np.arange(40 * 30, dtype="<u2").reshape(40, 30)
    zarr_writer(data, path="a", chunks=(16, 16), root=tmp_path / "b" / "store")
    return http_server(tmp_path), data


def _signatures(server) -> set[str | None]:
    """The ``Credential=KEY/DATE/REGION`` of each request (None: unsigned)."""
    out = set()
    for record in server.stats.records():
        auth = {k.lower(): v for k, v in record.headers}.get("authorization")
        found = re.search(r"Credential=([^/]+)/\d+/([^/]+)/s3/", auth or "")
        out.add(f"{found.group(1)}@{found.group(2)}" if found else None)
    return out


def test_fsspec_spelling_signs_with_the_key_and_region(endpoint):
    server, data = endpoint
    options = {
        "endpoint_url": server.url,
        "key": "AKIDEXAMPLE",
        "secret": "s3cr3t",
        "client_kwargs": {"region_name": "eu-west-3"},
    }
    np.testing.assert_array_equal(zarrfs.open("s3://b/store/a", **options)[...], data)
    assert _signatures(server) == {"AKIDEXAMPLE@eu-west-3"}


def test_anon_sends_unsigned_requests(endpoint):
    server, data = endpoint
    np.testing.assert_array_equal(
        zarrfs.open("s3://b/store/a", anon=True, endpoint_url=server.url)[...], data
    )
    assert _signatures(server) == {None}


def test_aws_variables(endpoint, monkeypatch):
    server, data = endpoint
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
    np.testing.assert_array_equal(zarrfs.open("s3://b/store/a")[...], data)
    assert _signatures(server) == {"AKIDENV@ap-south-1"}


@pytest.mark.parametrize("how", ["option", "AWS_PROFILE"])
def test_a_profile_from_the_shared_files(endpoint, tmp_path, monkeypatch, how):
    server, data = endpoint
    (tmp_path / "credentials").write_text(
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = x\n"
        "[lab]\naws_access_key_id = AKIDLAB\naws_secret_access_key = y\n"
    )
    (tmp_path / "config").write_text("[profile lab]\nregion = eu-north-1\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    options: dict = {"endpoint_url": server.url}
    if how == "option":
        options["profile"] = "lab"
    else:
        monkeypatch.setenv("AWS_PROFILE", "lab")
    np.testing.assert_array_equal(zarrfs.open("s3://b/store/a", **options)[...], data)
    assert _signatures(server) == {"AKIDLAB@eu-north-1"}
    server.stats.reset()
    monkeypatch.delenv("AWS_PROFILE", raising=False)  # no profile named: the default one
    zarrfs.open("s3://b/store/a", endpoint_url=server.url)[0]
    assert {s.split("@")[0] for s in _signatures(server)} == {"AKIDDEFAULT"}


def test_an_unknown_profile_is_a_clear_error(endpoint):
    server, _ = endpoint
    with pytest.raises(StorageOptionError, match="nope"):
        zarrfs.open("s3://b/store/a", profile="nope", endpoint_url=server.url)


@pytest.mark.parametrize(
    ("service", "given", "config", "client"),
    [
        ("s3", {"anon": True}, {"skip_signature": "true"}, {}),
        (
            "s3",
            {"key": "k", "secret": "s", "token": "t", "requester_pays": True},
            {
                "access_key_id": "k",
                "secret_access_key": "s",
                "session_token": "t",
                "request_payer": "true",
            },
            {},
        ),
        (
            "s3",
            {"endpoint_url": "http://minio:9000", "use_ssl": False},
            {"endpoint": "http://minio:9000"},
            {"allow_http": "true"},
        ),
        ("gcs", {"token": "anon"}, {"skip_signature": "true"}, {}),
        ("gcs", {"token": "/k.json", "project": "p"}, {"application_credentials": "/k.json"}, {}),
        (
            "azure",
            {"sas_token": "?sv=1", "account_name": "a"},
            {"sas_key": "sv=1", "account_name": "a"},
            {},
        ),
        ("http", {"client_kwargs": {"headers": {"A": "1"}}}, {}, {"default_headers": {"A": "1"}}),
        ("s3", {"client_options": {"timeout": "5s"}}, {}, {"timeout": "5s"}),
    ],
)
def test_translation(service, given, config, client):
    assert obstore_options(service, given)[:2] == (config, client)


@pytest.mark.parametrize(
    ("service", "given"),
    [
        ("s3", {"config_kwargs": {"max_pool_connections": 5}}),
        ("s3", {"client_kwargs": {"verify": False}}),
        ("http", {"block_size": 0}),
        ("azure", {"connection_string": "Foo=bar"}),
    ],
)
def test_what_obstore_cannot_honour_is_refused(service, given):
    with pytest.raises(StorageOptionError):
        obstore_options(service, given)


def test_azure_connection_strings():
    text = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net"
    assert azure_connection_string(text) == {
        "account_name": "acct",
        "account_key": "a2V5",
        "endpoint": "https://acct.blob.core.windows.net",
    }
    assert azure_connection_string("UseDevelopmentStorage=true") == {"use_emulator": "true"}


def test_an_aws_bucket_without_a_region_asks_aws_for_it(endpoint, monkeypatch):
    """No region and no endpoint anywhere: one HEAD to the bucket's AWS address, whose answer
    (403 here, as for a private bucket) names the region the requests are then signed for."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    server, data = endpoint
    asked = []

    class Region(BaseHTTPRequestHandler):
        def do_HEAD(self):
            asked.append(self.path)
            self.send_response(403)
            self.send_header("x-amz-bucket-region", "sa-east-1")
            self.end_headers()

        def log_message(self, *args):
            pass

    aws = ThreadingHTTPServer(("127.0.0.1", 0), Region)
    threading.Thread(target=aws.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(
            store_obstore, "REGION_URL", f"http://127.0.0.1:{aws.server_port}/{{bucket}}"
        )
        assert store_obstore.bucket_region("b") == "sa-east-1" and asked == ["/b"]
        # the endpoint given: no question to AWS, the default region
        zarrfs.open("s3://b/store/a", key="K", secret="S", endpoint_url=server.url)[0]
        assert asked == ["/b"] and _signatures(server) == {"K@us-east-1"}
    finally:
        aws.shutdown()
        aws.server_close()


@pytest.mark.parametrize(
    ("url", "service", "prefix"),
    [
        ("gs://bucket/a/b.zarr", "gcs", "a/b.zarr"),
        ("gcs://bucket/a", "gcs", "a"),
        ("s3a://bucket/x/", "s3", "x"),
        ("abfs://container/p/q", "azure", "p/q"),
        ("https://acct.blob.core.windows.net/container/p%20q", "azure", "p q"),
    ],
)
def test_urls_open_without_a_request(url, service, prefix):
    """Opening asks nothing of the network (anonymous, no region to find: an endpoint or
    a region is given); the store's path in its bucket or container is its keys' prefix."""
    from zarrfs.engine.store import Store

    options = {"anon": True}
    if service == "s3":
        options["client_kwargs"] = {"region_name": "eu-west-1"}
    if service == "azure" and url.startswith("abfs"):
        options["account_name"] = "acct"
    store = Store.from_url(url, **options)
    assert store.objects is not None and store.objects.service == service
    assert (
        store.objects.prefix == prefix and store.objects.key("zarr.json") == f"{prefix}/zarr.json"
    )
