#!/usr/bin/env python3
"""Which kernel cuBLAS runs for each GEMM shape (its name carries the CTA tile, the cluster and
whether the K loop is split or streamed), and a fine trace of board power and SM clock while a
large GEMM starts from idle (the power controller pulling the clock down to the limit).

  python3 bench/gpu/gemm_kernel_choice.py OUT.json

Kernel names come from torch.profiler's CUDA activity; the trace from NVML every 5 ms
(instantaneous power where NVML has it). The card's settings are read, never changed.
"""
import json
import sys
import threading
import time

import torch
from torch.profiler import ProfilerActivity, profile

SHAPES = [
    # (M, N, K): the measured set of bench/gpu/measure_kernels.py
    (8192, 8192, 8192), (16384, 16384, 16384), (4096, 4096, 4096),
    (8192, 6144, 4096), (8192, 4096, 4096), (8192, 28672, 4096), (8192, 4096, 14336),
    (8192, 7168, 8192), (8192, 8192, 3584),
    (2048, 6144, 2304), (256, 6144, 2304), (2048, 2304, 6144), (256, 2304, 6144),
    (2048, 4096, 4096), (256, 4096, 4096), (2048, 12288, 3072), (256, 12288, 3072),
    (2048, 3072, 12288), (256, 3072, 12288), (2048, 1536, 4096), (256, 1536, 4096),
    (2048, 4096, 1024), (256, 4096, 1024),
    (4096, 2304, 768), (4096, 768, 768), (4096, 3072, 768), (4096, 768, 3072), (4096, 6144, 2048),
    (4096, 8192, 2048), (4096, 2048, 8192), (4096, 3072, 1024), (4096, 1024, 4096),
    (8192, 8192, 128), (8192, 8192, 256), (8192, 8192, 512), (8192, 8192, 1024), (8192, 8192, 2048),
    (512, 512, 4096), (768, 768, 4096), (1024, 1024, 4096), (1536, 1536, 4096), (2048, 2048, 4096),
    (2560, 2560, 4096), (3072, 3072, 4096), (3584, 3584, 4096), (5120, 5120, 4096), (6144, 6144, 4096),
    (64, 8192, 8192), (128, 8192, 8192), (512, 8192, 8192), (1024, 8192, 8192),
]


def kernel_names(m, n, k, fp8=False):
    if fp8:
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        fn = lambda: torch.matmul(a, b)
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return names


def power_trace(seconds=2.5):
    import pynvml as N

    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    field = getattr(N, "NVML_FI_DEV_POWER_INSTANT", None)
    samples = []
    stop = threading.Event()

    def loop():
        t0 = time.perf_counter()
        while not stop.is_set():
            p = None
            if field is not None:
                v = N.nvmlDeviceGetFieldValues(h, [field])[0]
                if v.nvmlReturn == 0:
                    p = v.value.uiVal / 1000.0
            if p is None:
                p = N.nvmlDeviceGetPowerUsage(h) / 1000.0
            samples.append((round(time.perf_counter() - t0, 4), p, N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM)))
            time.sleep(0.005)

    a = [torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    b = [torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    torch.matmul(a[0], b[0])
    torch.cuda.synchronize()
    time.sleep(2.0)  # back to idle
    th = threading.Thread(target=loop, daemon=True)
    th.start()
    time.sleep(0.3)
    start = time.perf_counter()
    i = 0
    events = []
    while time.perf_counter() - start < seconds:
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(4):
            torch.matmul(a[i % 2], b[i % 2])
            i += 1
        e1.record()
        e1.synchronize()
        events.append((round(time.perf_counter() - start + 0.3, 4), 4 * 2 * 8192 ** 3 / (e0.elapsed_time(e1) / 1e3) / 1e12))
    torch.cuda.synchronize()
    time.sleep(0.3)
    stop.set()
    th.join()
    return {"gemm": "8192x8192x8192 bf16, started 0.3 s into the trace after 2 s idle",
            "samples_t_s_W_MHz": samples, "tflops_by_t_s": events}


def main():
    out = {"format": "clustertwin-gemm-kernel-choice", "torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    rows = []
    for m, n, k in SHAPES:
        try:
            names = kernel_names(m, n, k)
        except Exception as e:
            names = [f"error: {e}"]
        rows.append({"m": m, "n": n, "k": k, "kernels": names})
        print(m, n, k, names, flush=True)
    out["bf16"] = rows
    fp8 = []
    for m, n, k in [(8192, 8192, 8192), (2048, 6144, 2304), (256, 6144, 2304), (4096, 2304, 768)]:
        try:
            names = kernel_names(m, n, k, fp8=True)
        except Exception as e:
            names = [f"error: {e}"]
        fp8.append({"m": m, "n": n, "k": k, "kernels": names})
        print("fp8", m, n, k, names, flush=True)
    out["fp8"] = fp8
    try:
        out["power_trace"] = power_trace()
        s = out["power_trace"]["samples_t_s_W_MHz"]
        print("trace", s[::8], flush=True)
    except Exception as e:
        out["power_trace"] = {"error": str(e)}
        print("trace failed", e, flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
