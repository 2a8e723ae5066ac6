#!/usr/bin/env python3
"""Kernel measurements on one GPU with PyTorch, beside clustertwin-calib's cuBLASLt/HBM/NCCL sweeps.

clustertwin-calib measures what cuBLASLt, a copy kernel and NCCL do. The step model also needs
figures that only a training framework's kernels show; this script measures them on the GPU it
runs on and writes one JSON file (`kernels.json`) with the machine's provenance:

  gemm       torch.matmul (BF16) and torch._scaled_mm (FP8 E4M3, per-tensor scales) over
             transformer shapes: tokens M from 128 to 16,384 against the QKV, attention-output,
             MLP-up and MLP-down weights of hidden sizes 2,048 / 4,096 / 8,192, in both
             orientations (so a GEMM and the chunk a tensor-parallel overlap makes of it are
             both measured). This is cuBLAS's own kernel choice per shape: the data a model of
             tile, wave and split-K selection is checked against. L2 is flushed before every
             timed call; the median of the timed calls is kept, with the SM clock and board
             power sampled while the shape ran.
  sustained  the clock and power trace of a sustained 8192^3 BF16 GEMM (the warm-up), and the
             board's power limits: a (power, clock) point of the GPU's power/clock curve.
  attention  scaled_dot_product_attention forward and forward+backward, flash and cuDNN
             back ends, causal and not, head width 64 and 128, sequence 1k-64k.
  host       the host's cost per eager PyTorch op (tiny kernels, so the host is the limit), per
             op of a small MLP's forward and backward, and the device's cost per kernel when a
             CUDA graph replays the same ops (no host in the way).
  memory     achieved HBM bandwidth of copy, add, layer norm, softmax and GELU on tensors far
             larger than L2 (bytes read + written over time).

Usage: measure-kernels.py --out DIR [--quick] [--budget-s SECONDS]
Each section is written as soon as it finishes, so a run stopped early keeps what it measured.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import torch
import torch.nn.functional as F


def now():
    return time.monotonic()


class Sampler:
    """Samples SM clock, power and temperature through NVML every 20 ms while active."""

    def __init__(self):
        self.handle = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        except Exception as e:  # NVML missing: figures are recorded as null
            print(f"measure-kernels: NVML unavailable ({e}); clocks and power not recorded")
        self.samples = []
        self.running = False
        self.thread = None

    def read(self):
        if self.handle is None:
            return None
        n = self.nvml
        return {
            "t": now(),
            "sm_MHz": n.nvmlDeviceGetClockInfo(self.handle, n.NVML_CLOCK_SM),
            "mem_MHz": n.nvmlDeviceGetClockInfo(self.handle, n.NVML_CLOCK_MEM),
            "power_W": n.nvmlDeviceGetPowerUsage(self.handle) / 1000.0,
            "temp_C": n.nvmlDeviceGetTemperature(self.handle, n.NVML_TEMPERATURE_GPU),
        }

    def _loop(self):
        while self.running:
            s = self.read()
            if s is not None:
                self.samples.append(s)
            time.sleep(0.02)

    def __enter__(self):
        self.samples = []
        if self.handle is not None:
            self.running = True
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *args):
        self.running = False
        if self.thread is not None:
            self.thread.join()

    def summary(self):
        if not self.samples:
            return {"sm_MHz": None, "power_W": None, "temp_C": None}
        return {
            "sm_MHz": statistics.mean(s["sm_MHz"] for s in self.samples),
            "power_W": statistics.mean(s["power_W"] for s in self.samples),
            "temp_C": max(s["temp_C"] for s in self.samples),
        }

    def limits(self):
        if self.handle is None:
            return {}
        n = self.nvml
        out = {}
        for key, fn in [
            ("power_limit_W", lambda: n.nvmlDeviceGetPowerManagementLimit(self.handle) / 1000.0),
            ("enforced_power_limit_W", lambda: n.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000.0),
            ("power_limit_range_W",
             lambda: [v / 1000.0 for v in n.nvmlDeviceGetPowerManagementLimitConstraints(self.handle)]),
            ("max_sm_MHz", lambda: n.nvmlDeviceGetMaxClockInfo(self.handle, n.NVML_CLOCK_SM)),
            ("max_mem_MHz", lambda: n.nvmlDeviceGetMaxClockInfo(self.handle, n.NVML_CLOCK_MEM)),
            ("driver", lambda: n.nvmlSystemGetDriverVersion()),
        ]:
            try:
                v = fn()
                out[key] = v.decode() if isinstance(v, bytes) else v
            except Exception as e:
                out[key] = f"unavailable: {e}"
        return out


class Results:
    """The output file, rewritten atomically after every section."""

    def __init__(self, path):
        self.path = path
        self.data = {}

    def put(self, key, value):
        self.data[key] = value
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def provenance(sampler):
    p = torch.cuda.get_device_properties(0)
    return {
        "gpu": p.name,
        "sm_count": p.multi_processor_count,
        "memory_GiB": p.total_memory / 2**30,
        "l2_bytes": getattr(p, "L2_cache_size", None),
        "compute_capability": f"{p.major}.{p.minor}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **sampler.limits(),
    }


class Flusher:
    """Writes a buffer of twice the L2 so that no operand of the next call is served from L2."""

    def __init__(self):
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20) or (50 << 20)
        self.buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")

    def __call__(self):
        self.buf.fill_(1.0)


def time_calls(fn, flush, warmup, iters, max_s):
    """Median seconds per call, each call timed alone between two events after an L2 flush."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    t0 = now()
    done = 0
    for i in range(iters):
        if flush is not None:
            flush()
        starts[i].record()
        fn()
        ends[i].record()
        done += 1
        if i % 8 == 7:
            torch.cuda.synchronize()
            if now() - t0 > max_s:
                break
    torch.cuda.synchronize()
    times = [starts[i].elapsed_time(ends[i]) * 1e-3 for i in range(done)]
    return statistics.median(times), done


def sustained(sampler, seconds):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    with sampler:
        t0 = now()
        calls = 0
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        while now() - t0 < seconds:
            for _ in range(20):
                torch.matmul(a, b)
            calls += 20
            torch.cuda.synchronize()
        end.record()
        torch.cuda.synchronize()
    elapsed = start.elapsed_time(end) * 1e-3
    trace = [{k: (round(v - t0, 3) if k == "t" else v) for k, v in s.items()} for s in sampler.samples]
    return {
        "shape": [8192, 8192, 8192],
        "dtype": "bf16",
        "seconds": elapsed,
        "calls": calls,
        "mean_TFLOPs": calls * 2 * 8192**3 / elapsed / 1e12,
        "trace": trace[:: max(1, len(trace) // 400)],
        **{"mean_" + k: v for k, v in sampler.summary().items()},
    }


def gemm_shapes(quick):
    ms = [256, 1024, 4096] if quick else [128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    hs = [4096] if quick else [2048, 4096, 8192]
    shapes = []
    for h in hs:
        for name, n, k in [("qkv", 3 * h, h), ("proj", h, h), ("fc1", 4 * h, h), ("fc2", h, 4 * h)]:
            for m in ms:
                shapes.append((f"h{h}-{name}", m, n, k))
    # The A100 example: a TE TP-overlap GEMM and the chunks it is split into.
    for m in [2048, 1024, 512, 256]:
        shapes.append(("overlap-rs", m, 2304, 6144))
        shapes.append(("overlap-ag", m, 6144, 2304))
    return shapes


def gemm_section(sampler, flush, quick, deadline):
    out = []
    for dtype in ["bf16", "fp8"]:
        for label, m, n, k in gemm_shapes(quick):
            if now() > deadline:
                out.append({"skipped": "time budget", "dtype": dtype})
                return out
            try:
                if dtype == "bf16":
                    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
                    fn = lambda: torch.matmul(a, b)  # noqa: E731
                else:
                    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
                    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
                    one = torch.tensor(1.0, device="cuda")
                    fn = lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)  # noqa: E731
                flops = 2.0 * m * n * k
                iters = 60 if flops < 1e12 else 30
                with sampler:
                    s, done = time_calls(fn, flush, 5, iters, 2.0)
                out.append({"label": label, "dtype": dtype, "m": m, "n": n, "k": k,
                            "median_s": s, "calls": done, "TFLOPs": flops / s / 1e12,
                            **sampler.summary()})
            except Exception as e:
                out.append({"label": label, "dtype": dtype, "m": m, "n": n, "k": k,
                            "error": str(e)[:200]})
            finally:
                a = b = None
    return out


def attention_section(sampler, flush, quick, deadline):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    seqs = [2048, 8192, 32768] if quick else [1024, 2048, 4096, 8192, 16384, 32768, 65536]
    out = []
    for name, backend in backends:
        for d in [64, 128]:
            heads = 2048 // d  # a 2,048-wide attention layer on one GPU
            for s in seqs:
                for causal in [True, False]:
                    if now() > deadline:
                        out.append({"skipped": "time budget"})
                        return out
                    batch = max(1, 16384 // s)
                    rec = {"backend": name, "head_dim": d, "heads": heads, "seq": s,
                           "batch": batch, "causal": causal}
                    try:
                        q, k, v = (torch.randn(batch, heads, s, d, device="cuda",
                                               dtype=torch.bfloat16, requires_grad=True)
                                   for _ in range(3))
                        grad = torch.randn(batch, heads, s, d, device="cuda", dtype=torch.bfloat16)
                        pairs = s * s / 2 if causal else s * s
                        fwd_flops = 4.0 * batch * heads * pairs * d
                        with sdpa_kernel([backend]):
                            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731

                            def fwd_bwd():
                                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                o.backward(grad)

                            with sampler:
                                tf, _ = time_calls(fwd, None, 3, 10, 1.5)
                                tfb, _ = time_calls(fwd_bwd, None, 3, 10, 3.0)
                        rec.update({"fwd_s": tf, "fwd_bwd_s": tfb,
                                    "fwd_TFLOPs": fwd_flops / tf / 1e12,
                                    "bwd_TFLOPs": 2.5 * fwd_flops / max(tfb - tf, 1e-9) / 1e12,
                                    **sampler.summary()})
                    except Exception as e:
                        rec["error"] = str(e)[:200]
                    finally:
                        q = k = v = grad = None
                    out.append(rec)
    return out


def host_section():
    out = {}
    x = torch.zeros(16, device="cuda")
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize()
    n = 20000
    t0 = now()
    for _ in range(n):
        x.add_(1)
    t_host = now() - t0
    torch.cuda.synchronize()
    t_all = now() - t0
    out["eager_add_host_us_per_op"] = 1e6 * t_host / n
    out["eager_add_wall_us_per_op"] = 1e6 * t_all / n

    # The same ops replayed by a CUDA graph: the device's own cost per tiny kernel.
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(1000):
            x.add_(1)
    g.replay()
    torch.cuda.synchronize()
    t0 = now()
    for _ in range(20):
        g.replay()
    torch.cuda.synchronize()
    out["graph_add_device_us_per_kernel"] = 1e6 * (now() - t0) / 20000

    # A small MLP (host-bound): per op forward, and per op forward + backward.
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
    mlp = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
    inp = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    for _ in range(20):
        mlp(inp).sum().backward()
    torch.cuda.synchronize()
    reps = 300
    t0 = now()
    for _ in range(reps):
        mlp(inp)
    torch.cuda.synchronize()
    fwd = (now() - t0) / reps
    t0 = now()
    for _ in range(reps):
        mlp(inp).sum().backward()
    torch.cuda.synchronize()
    fwd_bwd = (now() - t0) / reps
    out["mlp_modules"] = len(layers)
    out["mlp_forward_us_per_module"] = 1e6 * fwd / len(layers)
    out["mlp_forward_backward_us_per_module"] = 1e6 * fwd_bwd / len(layers)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        mlp(inp).sum().backward()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    out["mlp_forward_backward_kernels"] = len(kernels)
    out["mlp_forward_backward_host_us_per_kernel"] = (
        1e6 * fwd_bwd / len(kernels) if kernels else None)
    return out


def memory_section(flush):
    out = []
    n = 1 << 28  # 512 MiB of BF16
    a = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    h = 8192
    rows = n // h
    x2 = a.view(rows, h)
    w = torch.ones(h, device="cuda", dtype=torch.bfloat16)
    sm_rows = n // 32768
    xs = a.view(sm_rows, 32768)
    cases = [
        ("copy", lambda: c.copy_(a), 2 * 2 * n),
        ("add", lambda: torch.add(a, b, out=c), 3 * 2 * n),
        ("gelu", lambda: F.gelu(a), 2 * 2 * n),
        ("layer_norm", lambda: F.layer_norm(x2, (h,), w, w), 2 * 2 * n),
        ("softmax_fp32_out", lambda: torch.softmax(xs, dim=-1, dtype=torch.float32), 2 * n + 4 * n),
    ]
    for name, fn, nbytes in cases:
        s, done = time_calls(fn, None, 3, 20, 2.0)
        out.append({"kernel": name, "bytes": nbytes, "median_s": s, "calls": done,
                    "GBps": nbytes / s / 1e9})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (kernels.json is written there)")
    ap.add_argument("--quick", action="store_true", help="fewer shapes and lengths")
    ap.add_argument("--budget-s", type=float, default=300, help="stop starting new work after this")
    ap.add_argument("--sustain-s", type=float, default=20, help="sustained GEMM before the sweeps")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("measure-kernels: no CUDA device visible to PyTorch; nothing measured", file=sys.stderr)
        return 3
    os.makedirs(args.out, exist_ok=True)
    start = now()
    deadline = start + args.budget_s
    res = Results(os.path.join(args.out, "kernels.json"))
    sampler = Sampler()
    res.put("provenance", provenance(sampler))
    flush = Flusher()
    print(f"measure-kernels: {res.data['provenance']['gpu']}, sustained GEMM {args.sustain_s:.0f} s")
    res.put("sustained", sustained(sampler, args.sustain_s))
    print(f"  sustained: {res.data['sustained']['mean_TFLOPs']:.1f} TFLOP/s at "
          f"{res.data['sustained']['mean_sm_MHz']} MHz, {res.data['sustained']['mean_power_W']} W")
    for key, fn in [("host", host_section), ("memory", lambda: memory_section(flush)),
                    ("gemm", lambda: gemm_section(sampler, flush, args.quick, deadline - 90)),
                    ("attention", lambda: attention_section(sampler, flush, args.quick, deadline))]:
        t0 = now()
        try:
            res.put(key, fn())
        except Exception as e:
            res.put(key, {"error": str(e)[:500]})
        print(f"  {key}: {now() - t0:.1f} s")
    res.put("elapsed_s", now() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
