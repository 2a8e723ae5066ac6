#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU through PyTorch, the figures the step model's kernel, host and
power models are calibrated with, and writes them as JSON with the machine's provenance.

  python3 bench/gpu/measure_kernels.py OUT.json [--quick]

What it measures (each figure is a median of CUDA-event-timed batches after a warm-up; inputs
are random normal, never zeros, and rotate among several buffers where one set would fit in L2):
  gemm        cuBLAS(Lt) BF16 GEMMs (torch.matmul) of chosen shapes, each run for a sustained
              interval while a thread samples board power, SM clock and the clock-event reasons
              through NVML: TFLOP/s, W, MHz per shape. Shapes: large squares, transformer layer
              GEMMs, a 2048-row GEMM and its 256-row chunks (Transformer Engine's TP-overlap
              split), small-model shapes, a K sweep and an M = N sweep (tile and wave effects).
  gemm_fp8    the same through torch._scaled_mm (FP8 E4M3, per-tensor scales) where it runs.
  host        eager PyTorch's host cost per operation (a long chain of tiny kernels timed on the
              wall clock) against the same chain replayed as a CUDA graph (the device's own time
              per kernel), for element-wise ops, a small linear layer and a tiny transformer
              layer's forward + backward (kernels counted by the profiler).
  attention   scaled_dot_product_attention (flash and cuDNN back ends), causal, BF16, forward
              and forward + backward TFLOP/s by head width and sequence length.
  memory      memory-bound kernels at large sizes: copy, add, GELU, LayerNorm, softmax over
              attention-score rows, and the unfused chain scale -> mask -> softmax -> dropout
              against the one softmax pass a fused kernel makes: GB/s each.
  idle        board power and SM clock with nothing running.
The card's settings (clocks, power limit) are read, never changed.
"""
import json
import math
import os
import platform
import statistics
import sys
import threading
import time

import torch

QUICK = "--quick" in sys.argv


def nvml_handle():
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as e:  # NVML absent: figures without power and clock
        print("NVML unavailable:", e, flush=True)
        return None, None


NVML, HANDLE = nvml_handle()


def reasons_now():
    if NVML is None:
        return None
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        fn = getattr(NVML, name, None)
        if fn is not None:
            try:
                return int(fn(HANDLE))
            except Exception:
                pass
    return None


def instant_power_W():
    """Hopper's instantaneous board power (NVML_FI_DEV_POWER_INSTANT), where NVML has it:
    nvmlDeviceGetPowerUsage averages over about a second."""
    field = getattr(NVML, "NVML_FI_DEV_POWER_INSTANT", None)
    if field is None:
        return None
    try:
        v = NVML.nvmlDeviceGetFieldValues(HANDLE, [field])[0]
        if v.nvmlReturn != 0:
            return None
        return float(v.value.uiVal) / 1000.0
    except Exception:
        return None


class Sampler:
    """Samples board power (W), SM clock (MHz) and clock-event reasons every 10 ms."""

    def __init__(self):
        self.samples = []
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        if NVML is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self):
        t0 = time.perf_counter()
        while not self._stop.is_set():
            try:
                p = NVML.nvmlDeviceGetPowerUsage(HANDLE) / 1000.0
                inst = instant_power_W()
                if inst is not None:
                    p = inst
                c = NVML.nvmlDeviceGetClockInfo(HANDLE, NVML.NVML_CLOCK_SM)
                m = NVML.nvmlDeviceGetClockInfo(HANDLE, NVML.NVML_CLOCK_MEM)
                self.samples.append((time.perf_counter() - t0, p, c, m, reasons_now()))
            except Exception:
                pass
            time.sleep(0.01)

    def __exit__(self, *a):
        self._stop.set()
        if self._thread:
            self._thread.join()

    def summary(self, skip_s):
        """Medians over the samples after the first skip_s seconds (NVML's power is averaged)."""
        s = [x for x in self.samples if x[0] >= skip_s] or self.samples
        if not s:
            return {}
        reasons = 0
        for x in s:
            reasons |= x[4] or 0
        return {
            "power_W": statistics.median(x[1] for x in s),
            "power_max_W": max(x[1] for x in s),
            "sm_clock_MHz": statistics.median(x[2] for x in s),
            "sm_clock_min_MHz": min(x[2] for x in s),
            "mem_clock_MHz": statistics.median(x[3] for x in s),
            "clock_event_reasons": reasons,
            "samples": len(s),
            "trace": [[round(x[0], 3), round(x[1], 1), x[2]] for x in self.samples[::10]],
        }


def timed(fn, seconds, warm_s=0.15, batch_target_s=0.01):
    """Runs fn repeatedly for `seconds`; returns (median s per call, calls)."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    n = 0
    while time.perf_counter() - t < warm_s or n < 3:
        fn()
        n += 1
        if n % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    # calls per batch from the warm-up's pace
    per = max((time.perf_counter() - t) / n, 1e-6)
    batch = max(1, int(batch_target_s / per))
    times = []
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < seconds or len(times) < 5:
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(batch):
            fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / batch)
        calls += batch
    return statistics.median(times), calls


def gemm_case(m, n, k, seconds, dtype=torch.bfloat16, fp8=False):
    dev = "cuda"
    size = (m * k + k * n + m * n) * 2
    sets = max(1, min(8, int(math.ceil(3 * 60e6 / size))))  # past the 60 MB L2
    if fp8:
        f8 = torch.float8_e4m3fn
        As = [torch.randn(m, k, device=dev).to(f8) for _ in range(sets)]
        Bs = [torch.randn(n, k, device=dev).to(f8).t() for _ in range(sets)]  # column-major
        one = torch.tensor(1.0, device=dev)
        i = [0]

        def fn():
            j = i[0] % sets
            i[0] += 1
            torch._scaled_mm(As[j], Bs[j], scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    else:
        As = [torch.randn(m, k, device=dev, dtype=dtype) for _ in range(sets)]
        Bs = [torch.randn(k, n, device=dev, dtype=dtype) for _ in range(sets)]
        Cs = [torch.empty(m, n, device=dev, dtype=dtype) for _ in range(sets)]
        i = [0]

        def fn():
            j = i[0] % sets
            i[0] += 1
            torch.matmul(As[j], Bs[j], out=Cs[j])

        # correctness once: against float64 on a slice
        a, b = As[0][:64].double(), Bs[0].double()
        torch.matmul(As[0], Bs[0], out=Cs[0])
        ref = a @ b
        err = float((Cs[0][:64].double() - ref).norm() / ref.norm())
        if not err < 2e-2:
            raise RuntimeError(f"GEMM {m}x{n}x{k} relative error {err}")
    with Sampler() as smp:
        t, calls = timed(fn, seconds)
    out = {"m": m, "n": n, "k": k, "time_us": t * 1e6, "tflops": 2.0 * m * n * k / t / 1e12, "calls": calls}
    out.update(smp.summary(skip_s=min(0.3, seconds / 2)))
    del As, Bs
    torch.cuda.empty_cache()
    return out


def gemm_shapes():
    s = []
    # large squares: the sustained rate (held long enough for the power limit to act)
    s += [("square", 8192, 8192, 8192, 2.0), ("square", 16384, 16384, 16384, 1.5), ("square", 4096, 4096, 4096, 0.8)]
    # transformer layer GEMMs, 8192 tokens, Llama-3-8B (h 4096, ffn 14336, 8 KV heads) and 70B TP 8
    for name, n, k in [("qkv", 6144, 4096), ("proj", 4096, 4096), ("fc1", 28672, 4096), ("fc2", 4096, 14336),
                       ("70b-tp8-fc1", 7168, 8192), ("70b-tp8-fc2", 8192, 3584)]:
        s.append(("layer-" + name, 8192, n, k, 0.6))
    # a 2048-row GEMM and its 256-row chunks (TP overlap's split into 8)
    for n, k in [(6144, 2304), (2304, 6144), (4096, 4096), (12288, 3072), (3072, 12288), (1536, 4096), (4096, 1024)]:
        s.append(("split-whole", 2048, n, k, 0.5))
        s.append(("split-chunk8", 256, n, k, 0.5))
    # small models (hidden 768-2048) at 4096 tokens
    for n, k in [(2304, 768), (768, 768), (3072, 768), (768, 3072), (6144, 2048), (8192, 2048), (2048, 8192), (3072, 1024), (1024, 4096)]:
        s.append(("small", 4096, n, k, 0.4))
    # K sweep at M = N = 8192
    for k in [128, 256, 512, 1024, 2048]:
        s.append(("k-sweep", 8192, 8192, k, 0.4))
    # M = N sweep at K = 4096: tile and wave quantization
    for mn in [512, 768, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144]:
        s.append(("mn-sweep", mn, mn, 4096, 0.4))
    # skinny M (chunk sizes of TP overlap at larger t)
    for m in [64, 128, 512, 1024]:
        s.append(("m-sweep", m, 8192, 8192, 0.4))
    if QUICK:
        s = s[:6]
    return s


def run_gemms(results):
    rows = []
    for tag, m, n, k, sec in gemm_shapes():
        try:
            r = gemm_case(m, n, k, sec)
            r["set"] = tag
            rows.append(r)
            print(f"gemm {tag:14s} {m:6d}x{n:6d}x{k:6d} {r['tflops']:7.1f} TFLOP/s "
                  f"{r.get('power_W', 0):6.1f} W {r.get('sm_clock_MHz', 0):6.0f} MHz reasons={r.get('clock_event_reasons')}", flush=True)
        except Exception as e:
            rows.append({"set": tag, "m": m, "n": n, "k": k, "error": str(e)})
            print("gemm failed", m, n, k, e, flush=True)
    results["gemm_bf16"] = rows
    fp8 = []
    for tag, m, n, k, sec in [("square", 8192, 8192, 8192, 1.0), ("square", 4096, 4096, 4096, 0.5),
                              ("split-whole", 2048, 6144, 2304, 0.4), ("split-chunk8", 256, 6144, 2304, 0.4),
                              ("layer-fc1", 8192, 28672, 4096, 0.5), ("small", 4096, 2304, 768, 0.3)]:
        try:
            r = gemm_case(m, n, k, sec, fp8=True)
            r["set"] = tag
            fp8.append(r)
            print(f"fp8  {tag:14s} {m:6d}x{n:6d}x{k:6d} {r['tflops']:7.1f} TFLOP/s {r.get('power_W', 0):6.1f} W "
                  f"{r.get('sm_clock_MHz', 0):6.0f} MHz", flush=True)
        except Exception as e:
            fp8.append({"set": tag, "m": m, "n": n, "k": k, "error": str(e)})
            print("fp8 failed", m, n, k, e, flush=True)
            break
    results["gemm_fp8"] = fp8


def host_chain(make_ops, n_ops, label):
    """Wall time per op of an eager chain (host-bound when the kernels are tiny) and the device
    time per op of the same chain captured as a CUDA graph."""
    ops = make_ops()
    for _ in range(3):
        ops()
    torch.cuda.synchronize()
    reps = 20
    walls = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        ops()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t)
    wall = statistics.median(walls) / n_ops
    # host only: the launch loop's own time (queue deep enough for one chain)
    hosts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        ops()
        hosts.append(time.perf_counter() - t)
        torch.cuda.synchronize()
    host = statistics.median(hosts) / n_ops
    graph_t = None
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                ops()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            ops()
        g.replay()
        torch.cuda.synchronize()
        gt = []
        for _ in range(reps):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            gt.append(e0.elapsed_time(e1) / 1e3)
        graph_t = statistics.median(gt) / n_ops
    except Exception as e:
        print("graph capture failed for", label, e, flush=True)
    r = {"op": label, "ops": n_ops, "eager_wall_us_per_op": wall * 1e6, "eager_host_us_per_op": host * 1e6,
         "graph_device_us_per_op": None if graph_t is None else graph_t * 1e6}
    print(f"host {label:28s} eager wall {wall*1e6:6.2f} us/op, host {host*1e6:6.2f}, graph "
          f"{'-' if graph_t is None else f'{graph_t*1e6:6.2f}'} us/op", flush=True)
    return r


def count_kernels(fn):
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    except Exception as e:
        print("profiler failed", e, flush=True)
        return None


def run_host(results):
    dev = "cuda"
    rows = []
    n = 1000
    x = torch.randn(256, device=dev)
    y = torch.randn(256, device=dev)

    def adds():
        z = x
        for _ in range(n):
            z = torch.add(z, y)
        return z

    rows.append(host_chain(lambda: adds, n, "torch.add 256 elements"))
    w = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    a = torch.randn(32, 64, device=dev, dtype=torch.bfloat16)

    def linears():
        z = a
        for _ in range(n):
            z = torch.nn.functional.linear(z, w)
        return z

    rows.append(host_chain(lambda: linears, n, "F.linear 32x64x64 bf16"))
    # a tiny transformer layer, forward + backward, eager: kernels per layer and time per kernel
    layer = torch.nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, batch_first=True, device=dev, dtype=torch.bfloat16)
    inp = torch.randn(2, 16, 64, device=dev, dtype=torch.bfloat16, requires_grad=True)

    def fwd_bwd():
        out = layer(inp)
        out.sum().backward()

    for _ in range(3):
        fwd_bwd()
    torch.cuda.synchronize()
    kernels = count_kernels(fwd_bwd)
    walls = []
    for _ in range(20):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(10):
            fwd_bwd()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t) / 10)
    wall = statistics.median(walls)
    rows.append({"op": "tiny transformer layer fwd+bwd (eager)", "kernels": kernels, "eager_wall_us_per_step": wall * 1e6,
                 "eager_wall_us_per_kernel": None if not kernels else wall * 1e6 / kernels})
    print(f"host tiny layer fwd+bwd: {wall*1e6:.1f} us, {kernels} kernels", flush=True)
    results["host"] = rows
    results["host_cpu"] = {"processor": platform.processor(), "machine": platform.machine(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    results["host_cpu"]["model_name"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass


def run_attention(results):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    tokens_heads = 2 ** 17 if not QUICK else 2 ** 15  # sequences x heads x length held about constant
    for backend, name in [(SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.CUDNN_ATTENTION, "cudnn")]:
        for d in (64, 128):
            for s in (2048, 4096, 8192, 16384):
                bh = max(1, tokens_heads // s)
                heads = 16
                b = max(1, bh // heads)
                try:
                    q = torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                    k = torch.randn_like(q, requires_grad=True)
                    v = torch.randn_like(q, requires_grad=True)
                    go = torch.randn_like(q)
                    with sdpa_kernel([backend]):
                        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        out = fwd()

                        def fb():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                            o.backward(go)

                        tf, _ = timed(fwd, 0.25)
                        tb, _ = timed(fb, 0.35)
                    flops_f = 4.0 * b * heads * s * s * d / 2  # causal: half the square
                    r = {"backend": name, "head_dim": d, "seq": s, "batch": b, "heads": heads,
                         "fwd_tflops": flops_f / tf / 1e12, "fwd_bwd_tflops": 3.5 * flops_f / tb / 1e12,
                         "bwd_tflops": 2.5 * flops_f / max(tb - tf, 1e-9) / 1e12,
                         "fwd_us": tf * 1e6, "fwd_bwd_us": tb * 1e6}
                    rows.append(r)
                    print(f"attn {name:5s} d {d:3d} s {s:5d}: fwd {r['fwd_tflops']:6.1f} bwd {r['bwd_tflops']:6.1f} "
                          f"fwd+bwd {r['fwd_bwd_tflops']:6.1f} TFLOP/s", flush=True)
                    del q, k, v, go, out
                except Exception as e:
                    rows.append({"backend": name, "head_dim": d, "seq": s, "error": str(e)[:300]})
                    print("attn failed", name, d, s, str(e)[:200], flush=True)
                    break
    results["attention"] = rows


def run_memory(results):
    import torch.nn.functional as F

    rows = []

    def bw(label, fn, bytes_moved, seconds=0.3):
        t, _ = timed(fn, seconds)
        r = {"kernel": label, "bytes": bytes_moved, "time_us": t * 1e6, "GBps": bytes_moved / t / 1e9}
        rows.append(r)
        print(f"mem  {label:40s} {r['GBps']:7.0f} GB/s", flush=True)

    n = 2 ** 28  # 512 MiB in bf16
    a = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    bw("copy bf16", lambda: c.copy_(a), 4 * n)
    bw("add bf16", lambda: torch.add(a, b, out=c), 6 * n)
    bw("gelu bf16", lambda: torch.nn.functional.gelu(a), 4 * n)
    h = 4096
    x = a.view(-1, h)
    wln = torch.ones(h, device="cuda", dtype=torch.bfloat16)
    bln = torch.zeros(h, device="cuda", dtype=torch.bfloat16)
    bw("layer_norm bf16 (h 4096)", lambda: F.layer_norm(x, (h,), wln, bln), 4 * n)
    del a, b, c, x
    torch.cuda.empty_cache()
    # attention scores [b*h, s, s]
    bh, s = 32, 4096
    sc = torch.randn(bh, s, s, device="cuda", dtype=torch.bfloat16)
    mask = torch.ones(s, s, device="cuda", dtype=torch.bool).triu(1)
    e = bh * s * s
    bw("softmax bf16 (s 4096 rows)", lambda: torch.softmax(sc, dim=-1), 4 * e)
    bw("scale (mul) bf16 scores", lambda: sc * 0.088, 4 * e)
    bw("masked_fill bf16 scores", lambda: sc.masked_fill(mask, float("-inf")), 4 * e)
    bw("dropout p=0.1 bf16 scores", lambda: torch.nn.functional.dropout(sc, 0.1, True), 4 * e)

    def chain():
        t = sc * 0.088
        t = t.masked_fill(mask, float("-inf"))
        t = torch.softmax(t, dim=-1)
        return t

    t_chain, _ = timed(chain, 0.3)
    t_soft, _ = timed(lambda: torch.softmax(sc, dim=-1), 0.3)
    rows.append({"kernel": "unfused scale+mask+softmax chain", "time_us": t_chain * 1e6,
                 "softmax_alone_us": t_soft * 1e6, "ratio_chain_over_softmax": t_chain / t_soft})
    print(f"mem  unfused chain {t_chain*1e6:.0f} us vs softmax alone {t_soft*1e6:.0f} us", flush=True)
    results["memory"] = rows


def run_idle(results):
    torch.cuda.synchronize()
    time.sleep(1.0)
    with Sampler() as smp:
        time.sleep(1.5)
    results["idle"] = smp.summary(skip_s=0.5)
    print("idle", results["idle"], flush=True)


def device_info():
    p = torch.cuda.get_device_properties(0)
    info = {"name": p.name, "sm_count": p.multi_processor_count, "memory_GiB": p.total_memory / 2 ** 30,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        info["cublas"] = torch._C._cuda_getCompiledVersion()
    except Exception:
        pass
    if NVML is not None:
        def q(name, *args):
            try:
                v = getattr(NVML, name)(HANDLE, *args)
                return v.decode() if isinstance(v, bytes) else v
            except Exception as e:
                return f"n/a ({e})"

        info["driver"] = NVML.nvmlSystemGetDriverVersion()
        info["power_limit_W"] = q("nvmlDeviceGetPowerManagementLimit") / 1000.0 if isinstance(q("nvmlDeviceGetPowerManagementLimit"), int) else None
        info["enforced_power_limit_W"] = q("nvmlDeviceGetEnforcedPowerLimit") / 1000.0 if isinstance(q("nvmlDeviceGetEnforcedPowerLimit"), int) else None
        c = q("nvmlDeviceGetPowerManagementLimitConstraints")
        info["power_limit_range_W"] = [c[0] / 1000.0, c[1] / 1000.0] if isinstance(c, (list, tuple)) else str(c)
        info["max_sm_clock_MHz"] = q("nvmlDeviceGetMaxClockInfo", NVML.NVML_CLOCK_SM)
        info["max_mem_clock_MHz"] = q("nvmlDeviceGetMaxClockInfo", NVML.NVML_CLOCK_MEM)
        info["app_sm_clock_MHz"] = q("nvmlDeviceGetApplicationsClock", NVML.NVML_CLOCK_SM)
        info["default_app_sm_clock_MHz"] = q("nvmlDeviceGetDefaultApplicationsClock", NVML.NVML_CLOCK_SM)
        try:
            info["supported_sm_clocks_MHz"] = sorted(NVML.nvmlDeviceGetSupportedGraphicsClocks(
                HANDLE, NVML.nvmlDeviceGetMaxClockInfo(HANDLE, NVML.NVML_CLOCK_MEM)))
        except Exception as e:
            info["supported_sm_clocks_MHz"] = f"n/a ({e})"
    return info


def main():
    out = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "measure_kernels.json"
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"format": "clustertwin-gpu-measurements", "version": 1, "script": "bench/gpu/measure_kernels.py",
               "device": device_info()}
    print(json.dumps(results["device"]), flush=True)

    def save():
        with open(out, "w") as f:
            json.dump(results, f, indent=1)

    for step in (run_idle, run_gemms, run_host, run_memory, run_attention):
        t = time.perf_counter()
        try:
            step(results)
        except Exception as e:
            results.setdefault("errors", []).append(f"{step.__name__}: {e}")
            print("step failed", step.__name__, e, flush=True)
        print(f"-- {step.__name__} took {time.perf_counter() - t:.1f} s", flush=True)
        save()
    save()


if __name__ == "__main__":
    main()
