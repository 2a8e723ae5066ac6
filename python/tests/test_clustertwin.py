"""The Python module against the CLI and against numbers derivable by hand."""
import json
import os
import signal
import subprocess
import threading
import time

import pytest

import clustertwin as ct


def cli_json(cli, *args):
    out = subprocess.run([cli, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_run_equals_cli_json(cli, scenarios):
    path = scenarios / "small-3tier.yaml"
    s = ct.Scenario.load(path).set("fabric.oversubscription", 2)
    assert ct.run(s) == cli_json(cli, "run", str(path), "--set", "fabric.oversubscription=2")


def test_default_run_equals_cli_json(cli):
    assert ct.run(ct.Scenario.default()) == cli_json(cli, "run")


def test_fabric_only_run_equals_cli_json(cli, scenarios):
    path = scenarios / "superpod-4su.yaml"
    assert ct.run(ct.Scenario.load(path)) == cli_json(cli, "run", str(path))


def test_bom_of_reference_cluster():
    bom = ct.bom(ct.Scenario.default())
    # 3-tier non-blocking fat tree of radix-64 switches for 4,096 GPUs: 128 + 128 + 64 switches,
    # 4,096 cables per tier.
    assert bom["switches"] == {"leaf": 128, "spine": 128, "core": 64, "total": 320}
    assert bom["cables"]["total"] == 3 * 4096


def test_bom_equals_cli_json(cli):
    assert ct.bom(ct.Scenario.default().set("fabric.tiers", 3)) == cli_json(cli, "bom")


def test_set_validates_like_the_cli():
    s = ct.Scenario.default()
    with pytest.raises(ct.ScenarioError) as err:
        s.set("fabric.oversubscriptio", 2)
    assert isinstance(err.value, ValueError)
    assert err.value.field == "fabric.oversubscriptio"
    assert "oversubscription" in str(err.value)  # did-you-mean
    assert s.overrides == []  # a rejected value leaves the scenario unchanged


def test_wrong_type_names_the_field():
    with pytest.raises(ct.ScenarioError) as err:
        ct.Scenario.default().set("cluster.nodes", "many")
    assert err.value.field == "cluster.nodes"
    assert err.value.value == "many"


def test_impossible_parallelism_raises_on_run():
    s = ct.Scenario.default().set("parallelism.tp", 3)
    with pytest.raises(ct.ScenarioError) as err:
        ct.run(s)
    assert err.value.field.startswith("parallelism")


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(ct.ScenarioError) as err:
        ct.Scenario.load(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(err.value)


def test_non_scenario_argument_is_a_type_error():
    with pytest.raises(TypeError):
        ct.run("scenarios/default.yaml")


def test_to_yaml_round_trips(tmp_path):
    s = ct.Scenario.default().set("cluster.nodes", 64).set("parallelism.dp", 16)
    path = tmp_path / "s.yaml"
    path.write_text(s.to_yaml())
    again = ct.Scenario.load(path)
    assert again.gpus == 512
    assert ct.run(again)["step_time_s"] == ct.run(s)["step_time_s"]


def test_sweep_of_four_points(scenarios):
    s = ct.Scenario.load(scenarios / "capacity" / "ci-64.yaml")
    rows = ct.sweep(s, {"fabric.oversubscription": [1, 2], "cluster.nic_gbps": [200, 400]},
                    threads=2, as_frame=False)
    assert len(rows) == 4
    assert [r["index"] for r in rows] == [0, 1, 2, 3]
    assert all(r["status"] == "ok" for r in rows)
    p = {r["point"]: r for r in rows}
    key = "fabric.oversubscription={};cluster.nic_gbps={}".format
    # Non-blocking: the NICs are the bottleneck, so 200 Gb/s NICs make the step slower.
    assert p[key(1, 200)]["step_time_s"] > p[key(1, 400)]["step_time_s"]
    # 2:1 halves the uplinks: slower than non-blocking at either NIC speed.
    assert p[key(2, 400)]["step_time_s"] > p[key(1, 400)]["step_time_s"]
    # The NICs cost the same on either fabric: the capex difference does not depend on it.
    nic_cost_1 = p[key(1, 400)]["capex_usd"] - p[key(1, 200)]["capex_usd"]
    nic_cost_2 = p[key(2, 400)]["capex_usd"] - p[key(2, 200)]["capex_usd"]
    assert nic_cost_1 > 0
    assert nic_cost_1 == pytest.approx(nic_cost_2, rel=1e-12)


def test_sweep_returns_a_dataframe_when_pandas_is_there(scenarios):
    pandas = pytest.importorskip("pandas")
    s = ct.Scenario.load(scenarios / "capacity" / "ci-64.yaml")
    frame = ct.sweep(s, {"fabric.oversubscription": [1, 2]}, threads=1)
    assert isinstance(frame, pandas.DataFrame)
    assert len(frame) == 2 and "step_time_s" in frame.columns


def test_collective_ring_bus_bandwidth_matches_cli(cli, scenarios):
    s = ct.Scenario.default()
    py = ct.collective(s, "all_reduce", nodes=1, gpus_per_node=8, sizes=[1 << 30], algo="ring")
    assert py == cli_json(cli, "collective", "--op", "all_reduce", "--nodes", "1",
                          "--gpus-per-node", "8", "--sizes", str(1 << 30), "--algo", "ring")
    row = py["rows"][0]
    # nccl-tests' definition: busbw = algbw x 2(n-1)/n for an all-reduce of n = 8 ranks.
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * 7 / 8, rel=1e-6)


def test_campaign_is_deterministic_and_matches_cli(cli, scenarios):
    path = scenarios / "capacity" / "ci-64.yaml"
    s = ct.Scenario.load(path)
    a = ct.campaign(s, trials=20, seed=7, threads=2)
    assert a == ct.campaign(s, trials=20, seed=7, threads=1)
    assert a == cli_json(cli, "campaign", str(path), "--trials", "20", "--seed", "7")
    assert a["trials"] == 20
    assert 0 < a["ettr"]["p50"] <= 1


def test_results_h5_opens_with_h5py(tmp_path, scenarios):
    h5py = pytest.importorskip("h5py")
    summary = ct.run(ct.Scenario.load(scenarios / "small-3tier.yaml"), out=tmp_path)
    with h5py.File(tmp_path / "results.h5", "r") as f:
        assert "timeline" in f and "links" in f
        assert f.attrs["step_time_s"] == pytest.approx(summary["step_time_s"])
    assert json.loads((tmp_path / "summary.json").read_text()) == summary


def test_validate_equals_cli_json(cli, scenarios, tmp_path):
    # Two published runs are enough to compare the module with the CLI (the whole set is the
    # CLI's own test); copy them so the directory holds just these.
    files = sorted((scenarios / "validation").rglob("*.yaml"))[:2]
    for f in files:
        (tmp_path / f.name).write_text(f.read_text())
    py = ct.validate(tmp_path, threads=1)
    assert py == cli_json(cli, "validate", str(tmp_path), "--threads", "1")
    assert len(py["runs"]) == 2


def test_validate_of_a_missing_directory_raises(tmp_path):
    with pytest.raises(ct.ScenarioError):
        ct.validate(tmp_path / "nope")


def test_ctrl_c_interrupts_a_long_campaign():
    s = ct.Scenario.default()
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ct.campaign(s, trials=200_000, threads=1)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 3.0
