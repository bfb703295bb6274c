"""Issue 41 item 10: a release folder holds its own bytes; links are refused.

Replacing ``config.json`` in an approved folder with a symbolic link to an identical file elsewhere
still launched, so the approved bytes lived outside the folder (and could change there). Through the
studio's draft and approve views and the GPU host's ``sglang-command --release`` as a subprocess.
"""

from __future__ import annotations

import shutil

import pytest

from harness.checkpoints import CheckpointError, folder_files
from studio.releases.models import Release
from tests.security import test_release_integrity as integrity
from tests.security.test_release_integrity import _approve, _download, _draft, _launch

pytestmark = pytest.mark.django_db
checkpoint = integrity.checkpoint  # the fixture: a finished SFT run holding the tiny model


def test_a_file_replaced_by_a_link_to_an_identical_copy_does_not_launch(
    personas, demo_version, checkpoint, tmp_path
):
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    release = Release.objects.get()
    _approve(personas, release)
    manifest, key = _download(personas, release, tmp_path)
    assert _launch(manifest, key).returncode == 0
    config = checkpoint.final_dir / "config.json"
    elsewhere = tmp_path / "elsewhere-config.json"
    shutil.copy(config, elsewhere)
    config.unlink()
    config.symlink_to(elsewhere)
    done = _launch(manifest, key)
    assert done.returncode == 2, done.stdout
    assert f"{config} is a symbolic link to {elsewhere}; copy the file in instead" in done.stderr, (
        done.stderr
    )


def test_a_folder_that_is_a_link_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "config.json").write_text("{}")
    link = tmp_path / "final"
    link.symlink_to(real)
    with pytest.raises(
        CheckpointError, match=f"{link} is a symbolic link to {real}; give the folder itself"
    ):
        folder_files(link)
