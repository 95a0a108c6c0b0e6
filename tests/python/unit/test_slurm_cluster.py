"""Why the test cluster cannot start here, in words (support/slurm_cluster.py): not root, or
which Debian packages are missing, for the plain cluster and for the one with accounting."""

from __future__ import annotations

import pytest

from support import slurm_cluster as sc


def test_unavailable_reason_names_root_and_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sc.os, "geteuid", lambda: 1000)
    assert "needs root" in (sc.unavailable_reason() or "")
    monkeypatch.setattr(sc.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sc.shutil, "which", lambda _name: None)
    reason = sc.unavailable_reason() or ""
    assert "srun" in reason and sc.PACKAGES_HINT in reason


def test_unavailable_reason_names_what_accounting_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sc.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sc.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(sc.os, "access", lambda path, _mode: "slurmdbd" not in str(path))
    assert sc.unavailable_reason() is None  # the plain cluster needs none of it
    reason = sc.unavailable_reason(accounting=True) or ""
    assert "/usr/sbin/slurmdbd" in reason and sc.ACCOUNTING_PACKAGES_HINT in reason, reason
    monkeypatch.setattr(sc.os, "geteuid", lambda: 1000)
    assert "needs root" in (sc.unavailable_reason(accounting=True) or "")
