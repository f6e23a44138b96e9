"""The package as installed: license, metadata, one version, type information, and
NPURT_HBM_SIZE so npurt starts on small machines and under `ulimit -v`."""
from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import npurt

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_license_is_apache_2_in_a_file_and_as_an_spdx_expression():
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License\n                           Version 2.0")
    assert PYPROJECT["license"] == "Apache-2.0"
    assert metadata.metadata("npurt")["License-Expression"] == "Apache-2.0"


def test_the_version_has_one_source():
    assert PYPROJECT["dynamic"] == ["version"] and "version" not in PYPROJECT
    assert metadata.version("npurt") == npurt.__version__
    from npurt import _version
    assert _version.__version__ == npurt.__version__


def test_the_package_declares_classifiers_urls_and_ships_type_information():
    assert "Typing :: Typed" in PYPROJECT["classifiers"]
    assert any(c.startswith("Operating System :: POSIX :: Linux") for c in PYPROJECT["classifiers"])
    assert {"Homepage", "Documentation", "Changelog"} <= set(PYPROJECT["urls"])
    assert (Path(npurt.__file__).parent / "py.typed").exists()


def test_the_test_extra_includes_the_docs_extra():
    extras = PYPROJECT["optional-dependencies"]
    assert set(extras["docs"]) <= set(extras["test"])


def test_npurt_hbm_size_simulates_less_device_memory(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_HBM_SIZE", "256M")
    total = npurt.mem_get_info()[1]                  # less the driver's reserve: its share of 64 GiB
    assert 240 << 20 <= total < 256 << 20 and npurt.get_device_properties().total_memory == total
    with pytest.raises(npurt.OutOfMemoryError):
        npurt.empty(300 << 20, "uint8")
    assert npurt.ones(4).to_host().tolist() == [1, 1, 1, 1]      # still usable


@pytest.mark.parametrize("raw, why", [("lots", "is not a size"), ("1M", "below the minimum"),
                                      ("1T", "can only simulate less memory")])
def test_a_bad_npurt_hbm_size_is_refused_with_what_is_wrong(fresh_runtime, monkeypatch, raw, why):
    monkeypatch.setenv("NPURT_HBM_SIZE", raw)
    with pytest.raises(npurt.InvalidValueError, match=why):
        npurt.zeros(1)


def test_npurt_starts_under_ulimit_v_with_a_smaller_hbm_size(isolated):
    # 3 GiB of address space: the default 2 x 64 GiB arenas cannot be mapped, the message says
    # what to do, and after setting NPURT_HBM_SIZE the same process starts
    code, out = isolated("""
        import resource, os
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        import npurt
        try:
            npurt.zeros(1)
        except npurt.NpuError as exc:
            print("refused:", exc.code, exc.message)
        os.environ["NPURT_HBM_SIZE"] = "512M"
        print("then:", npurt.ones(3).to_host().tolist(), npurt.mem_get_info()[1] >> 20)
    """, env={"OPENBLAS_NUM_THREADS": "1"})
    assert code == 0, out
    assert "refused: 200000 cannot map the simulated device memory: 2 device(s) of 64 GiB each" in out
    assert "set NPURT_HBM_SIZE" not in out and "NPURT_HBM_SIZE (e.g. NPURT_HBM_SIZE=2G)" in out
    assert "then: [1.0, 1.0, 1.0] 488" in out     # 512 MiB less the reserve's share


def test_the_all_extra_installs_every_user_extra():
    import tomllib
    from pathlib import Path
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    users = ("ops", "models", "plot", "media", "dist", "capi", "torch", "progress")
    assert set(users) <= set(extras)
    assert {r for e in users for r in extras[e]} <= set(extras["all"])
