"""The URL dialog reads storage options by the rules every command follows."""

from __future__ import annotations

from zarrfs.viewer.open_dialog import OpenUrlDialog


def test_dialog_fields_follow_the_command_line_rules(qtbot):
    """The endpoint goes where ``--endpoint-url`` puts it, and dotted keys nest."""
    dialog = OpenUrlDialog(None, "s3://bucket/data.zarr")
    qtbot.addWidget(dialog)
    dialog.endpoint.setText("http://127.0.0.1:9000")
    dialog.extra.setPlainText("client_kwargs.region_name=eu-west-1\nuse_ssl=false")
    assert dialog.result_options() == (
        "s3://bucket/data.zarr",
        {
            "endpoint_url": "http://127.0.0.1:9000",
            "client_kwargs": {"region_name": "eu-west-1"},
            "use_ssl": False,
        },
    )


def test_dialog_gives_back_the_options_it_was_opened_with(qtbot):
    """Reopening a store (File > Open URL, a recent store) keeps every option, nested ones
    included."""
    options = {
        "anon": True,
        "endpoint_url": "http://127.0.0.1:9000",
        "profile": "dev",
        "client_kwargs": {"region_name": "eu-west-1", "headers": {"X-Probe": "abc"}},
        "requester_pays": True,
    }
    dialog = OpenUrlDialog(None, "s3://bucket/data.zarr", options)
    qtbot.addWidget(dialog)
    assert dialog.result_options() == ("s3://bucket/data.zarr", options)
