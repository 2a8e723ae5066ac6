#!/usr/bin/env python3
"""Planning study: what do two vs three tiers and 200 vs 400 Gb/s NICs do to a dense 70B job and
an MoE job on 1,024 H100 GPUs, and what do they cost?

    PYTHONPATH=build/python python3 examples/plan_fabric.py [fabric-study.png]

Prints one row per (job, tiers, NIC speed) and saves time to train vs capex, one marker per job.
"""
import pathlib
import sys

import clustertwin as ct

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASE = ROOT / "scenarios" / "capacity" / "1024-2tier.yaml"

# Two jobs on the same 1,024 GPUs: dense Llama 3 70B (TP 8 x PP 4 x DP 32) and a DBRX-like MoE
# with expert parallelism across nodes (TP 4 x PP 4 x DP 64, EP 8), whose all-to-alls load the
# fabric on every MoE layer.
JOBS = {
    "llama3-70b": {},
    "dbrx (EP 8)": {"model.preset": "dbrx", "parallelism.tp": 4, "parallelism.pp": 4,
                    "parallelism.dp": 64, "parallelism.ep": 8, "parallelism.virtual_stages": 1,
                    "training.global_batch": 2048},
}
VARY = {"fabric.tiers": [2, 3], "cluster.nic_gbps": [200, 400]}


def study(threads: int = 0):
    rows = []
    for job, fields in JOBS.items():
        scenario = ct.Scenario.load(BASE)
        for key, value in fields.items():
            scenario.set(key, value)
        for row in ct.sweep(scenario, VARY, threads=threads, as_frame=False):
            row["job"] = job
            rows.append(row)
    return rows


def main() -> int:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "fabric-study.png")
    rows = study()
    print(f"{'job':<14}{'point':<44}{'capex M$':>10}{'step s':>9}{'MFU':>7}{'days':>8}")
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['job']:<14}{r['point']:<44}  {r['status']}: {r['reason']}")
            continue
        print(f"{r['job']:<14}{r['point']:<44}{r['capex_usd'] / 1e6:>10.1f}"
              f"{r['step_time_s']:>9.3f}{r['mfu']:>7.1%}{r['time_to_train_days']:>8.1f}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for job, marker in zip(JOBS, "os"):
        ok = [r for r in rows if r["job"] == job and r["status"] == "ok"]
        ax.scatter([r["capex_usd"] / 1e6 for r in ok], [r["time_to_train_days"] for r in ok],
                   marker=marker, s=60, label=job)
        for r in ok:
            label = r["point"].replace("fabric.tiers=", "").replace(";cluster.nic_gbps=", "T ")
            ax.annotate(label + "G", (r["capex_usd"] / 1e6, r["time_to_train_days"]),
                        textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("capex (M$)")
    ax.set_ylabel("time to train (days, failure-free)")
    ax.set_title("1,024 H100: fabric tiers x NIC speed")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
