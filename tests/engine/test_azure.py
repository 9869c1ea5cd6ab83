"""Azure Blob Storage through obstore, against Azurite: every way of giving credentials (account
key, connection string, SAS token, anonymous, ``AZURE_STORAGE_*`` variables), the URL forms
(``az://``, ``abfs://``, ``https://ACCOUNT.blob.core.windows.net``), refusals, and arrays
written by zarr-python read back bit for bit (sharded ones too: Azure takes no suffix range)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import zarrfs
from tests.azurite import ACCOUNT, KEY
from zarrfs.engine import AccessDeniedError, NodeNotFoundError
from zarrfs.engine.store import Store
from zarrfs.engine.store_obstore import service
from zarrfs.storage_options import StorageOptionError

_AZURE_ENV = (
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_SAS_KEY",
)


@pytest.fixture(autouse=True)
def _no_azure_environment(monkeypatch):
    for name in _AZURE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stored(zarr_writer, azurite):
    """(container, data): a chunked and a sharded array, written by zarr-python, uploaded."""
    rng = np.random.default_rng(3)
    data = rng.integers(0, 60000, size=(3, 96, 80), dtype=np.uint16)
    plain = zarr_writer(data, path="plain", chunks=(1, 32, 32))
    zarr_writer(data, path="sharded", chunks=(1, 16, 16), shards=(1, 48, 48), root=plain.root)
    container = azurite.create_container()
    azurite.upload_dir(plain.root, container, prefix="data.zarr")
    return container, data


def _endpoint(azurite) -> dict:
    return {"endpoint_url": azurite.endpoint}


@pytest.mark.parametrize("path", ["plain", "sharded"])
def test_account_key_reads_match_zarr_python(azurite, stored, path):
    container, data = stored
    arr = zarrfs.open(f"az://{container}/data.zarr/{path}", **azurite.storage_options())
    np.testing.assert_array_equal(arr[...], data)
    np.testing.assert_array_equal(arr[1, 5:70, 3:77], data[1, 5:70, 3:77])


def test_connection_string_in_the_environment(azurite, stored, monkeypatch):
    container, data = stored
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    np.testing.assert_array_equal(zarrfs.open(f"az://{container}/data.zarr/plain")[2], data[2])


def test_connection_string_as_an_option(azurite, stored):
    container, data = stored
    arr = zarrfs.open(
        f"abfs://{container}/data.zarr/sharded", connection_string=azurite.connection_string
    )
    np.testing.assert_array_equal(arr[0], data[0])


def test_account_name_and_key_variables(azurite, stored, monkeypatch):
    container, data = stored
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", KEY)
    arr = zarrfs.open(f"az://{container}/data.zarr/plain", **_endpoint(azurite))
    np.testing.assert_array_equal(arr[...], data)


def test_sas_token(azurite, stored):
    container, data = stored
    token = azurite.sas_token(container)
    url = f"az://{container}/data.zarr"
    options = {"account_name": ACCOUNT, "sas_token": "?" + token, **_endpoint(azurite)}
    group = zarrfs.open(url, **options)
    assert sorted(group.keys()) == ["plain", "sharded"]  # a listing, signed by the token
    np.testing.assert_array_equal(zarrfs.open(url + "/sharded", **options)[...], data)


def test_anonymous_reads_of_a_public_container(azurite, zarr_writer):
    data = np.arange(600, dtype="f4").reshape(20, 30)
    written = zarr_writer(data, path="a", chunks=(7, 11))
    container = azurite.create_container(public=True)
    azurite.upload_dir(written.root, container)
    arr = zarrfs.open(f"az://{container}/a", anon=True, account_name=ACCOUNT, **_endpoint(azurite))
    np.testing.assert_array_equal(arr[...], data)


def test_a_wrong_key_is_access_denied_never_absent(azurite, stored):
    container, _ = stored
    wrong = {**azurite.storage_options(), "account_key": base64.b64encode(bytes(64)).decode()}
    with pytest.raises(AccessDeniedError) as err:
        zarrfs.open(f"az://{container}/data.zarr/plain", **wrong)
    assert not isinstance(err.value, NodeNotFoundError)


def test_a_missing_node_is_not_found(azurite, stored):
    container, _ = stored
    with pytest.raises(NodeNotFoundError):
        zarrfs.open(f"az://{container}/data.zarr/nothing", **azurite.storage_options())


def test_stored_sizes_come_from_the_listing(azurite, stored):
    container, _ = stored
    store = Store.from_url(f"az://{container}/data.zarr", **azurite.storage_options())
    sizes = store.list_prefix_sizes("plain")
    assert "plain/zarr.json" in sizes and sizes["plain/zarr.json"] > 0
    assert sum(1 for k in sizes if k.startswith("plain/c/")) == 3 * 3 * 3


def test_url_forms_are_azure():
    assert service("az://c/p") == service("abfs://c/p") == "azure"
    assert service("abfss://c@acct.dfs.core.windows.net/p") == "azure"
    assert service("https://acct.blob.core.windows.net/c/p") == "azure"
    assert service("https://example.org/c/p") == "http"
    assert service("simplecache::https://acct.blob.core.windows.net/c") is None


def test_an_unknown_option_is_a_clear_error(azurite, stored):
    container, _ = stored
    with pytest.raises(StorageOptionError, match="transport=fsspec"):
        Store.from_url(f"az://{container}", client_kwargs={"x": 1}, **azurite.storage_options())
