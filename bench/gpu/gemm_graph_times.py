#!/usr/bin/env python3
"""GEMM device times without the host: each shape's products (rotating input buffers) are
captured in a CUDA graph and the graph is replayed, so small GEMMs are timed on the GPU rather
than at eager PyTorch's launch pace (about 16 us per torch.matmul call on the machine measured,
which bounds the eager timings of bench/gpu/measure_kernels.py below that). NVML samples power
and SM clock during the replays.

  python3 bench/gpu/gemm_graph_times.py OUT.json
"""
import json
import statistics
import sys
import threading
import time

import torch

SHAPES = [
    (2048, 6144, 2304), (256, 6144, 2304), (2048, 2304, 6144), (256, 2304, 6144),
    (2048, 4096, 4096), (256, 4096, 4096), (2048, 12288, 3072), (256, 12288, 3072),
    (2048, 3072, 12288), (256, 3072, 12288), (2048, 1536, 4096), (256, 1536, 4096),
    (2048, 4096, 1024), (256, 4096, 1024),
    (4096, 2304, 768), (4096, 768, 768), (4096, 3072, 768), (4096, 768, 3072), (4096, 3072, 1024),
    (512, 512, 4096), (768, 768, 4096), (1024, 1024, 4096), (1536, 1536, 4096), (2048, 2048, 4096),
    (64, 8192, 8192), (128, 8192, 8192), (512, 8192, 8192),
    (1024, 2304, 768), (512, 2304, 768), (256, 2304, 768), (1024, 768, 2304), (256, 768, 2304),
    (8192, 8192, 8192),
]


def sampler():
    try:
        import pynvml as N
        N.nvmlInit()
        h = N.nvmlDeviceGetHandleByIndex(0)
    except Exception:
        return None
    samples = []
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            try:
                samples.append((N.nvmlDeviceGetPowerUsage(h) / 1000.0, N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM)))
            except Exception:
                pass
            time.sleep(0.01)
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return samples, stop, t


def graph_time(fn, per_graph, seconds):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per_graph):
            fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / per_graph)
    return statistics.median(times)


def main():
    out = {"format": "clustertwin-gemm-graph-times", "torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "method": "CUDA graph of per_graph products, rotating 4 input sets; median over replays"}
    rows = []
    for m, n, k in SHAPES:
        sets = 4
        A = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
        B = [torch.randn(k, n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
        C = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
        i = [0]

        def fn():
            j = i[0] % sets
            i[0] += 1
            torch.matmul(A[j], B[j], out=C[j])

        est_us = 2.0 * m * n * k / 600e12 * 1e6 + 3
        per_graph = max(8, min(400, int(20000 / est_us)))
        smp = sampler()
        t = graph_time(fn, per_graph, 0.4 if m * n * k < 2 ** 36 else 1.0)
        r = {"m": m, "n": n, "k": k, "time_us": t * 1e6, "tflops": 2.0 * m * n * k / t / 1e12, "per_graph": per_graph}
        if smp:
            samples, stop, th = smp
            stop.set()
            th.join()
            tail = samples[len(samples) // 3:] or samples
            if tail:
                r["power_W"] = statistics.median(x[0] for x in tail)
                r["sm_clock_MHz"] = statistics.median(x[1] for x in tail)
        rows.append(r)
        print(f"{m:6d}x{n:6d}x{k:6d} {r['time_us']:8.2f} us {r['tflops']:7.1f} TFLOP/s {r.get('power_W', 0):6.1f} W {r.get('sm_clock_MHz', 0):6.0f} MHz", flush=True)
        del A, B, C
    out["bf16"] = rows
    # a 2048-row GEMM against its eight 256-row chunks run back to back (the weights re-read)
    pairs = []
    for n, k in [(6144, 2304), (2304, 6144), (4096, 4096), (12288, 3072), (3072, 12288)]:
        A = torch.randn(2048, k, device="cuda", dtype=torch.bfloat16)
        B = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        C = torch.empty(2048, n, device="cuda", dtype=torch.bfloat16)
        whole = graph_time(lambda: torch.matmul(A, B, out=C), 20, 0.3)
        chunks = graph_time(lambda: [torch.matmul(A[c * 256:(c + 1) * 256], B, out=C[c * 256:(c + 1) * 256]) for c in range(8)], 10, 0.3)
        pairs.append({"n": n, "k": k, "whole_us": whole * 1e6, "eight_chunks_us": chunks * 1e6, "ratio": chunks / whole})
        print(f"2048x{n}x{k}: whole {whole*1e6:.1f} us, 8 chunks {chunks*1e6:.1f} us, ratio {chunks/whole:.2f}", flush=True)
    out["split_8"] = pairs
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
