#!/usr/bin/env python3
"""Host issue cost per kernel of a small transformer layer's forward + backward: eager PyTorch,
torch.compile (Inductor) and a CUDA graph of the eager step. Tiny shapes, so every kernel is
far shorter than its issue and the step runs at the host's pace; kernels counted by the
profiler.  python3 bench/gpu/host_cost.py OUT.json"""
import json, statistics, sys, time
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
dev = "cuda"
h, heads, s, b = 256, 4, 64, 2
dt = torch.bfloat16
p = {n: torch.randn(*shape, device=dev, dtype=dt, requires_grad=True) * 0.02
     for n, shape in [("qkv", (3 * h, h)), ("proj", (h, h)), ("fc1", (4 * h, h)), ("fc2", (h, 4 * h))]}
p = {n: v.detach().requires_grad_(True) for n, v in p.items()}
ln1 = torch.ones(h, device=dev, dtype=dt, requires_grad=True)
ln2 = torch.ones(h, device=dev, dtype=dt, requires_grad=True)
x = torch.randn(b, s, h, device=dev, dtype=dt, requires_grad=True)


def layer(x):
    y = F.layer_norm(x, (h,), ln1)
    q, k, v = F.linear(y, p["qkv"]).split(h, dim=-1)
    q, k, v = (t.view(b, s, heads, h // heads).transpose(1, 2) for t in (q, k, v))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, h)
    x = x + F.linear(a, p["proj"])
    y = F.layer_norm(x, (h,), ln2)
    return x + F.linear(F.gelu(F.linear(y, p["fc1"])), p["fc2"])


def step(fn, layers=8):
    z = x
    for _ in range(layers):
        z = fn(z)
    z.float().sum().backward()


def kernels(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def wall(fn, reps=30):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


out = {"format": "clustertwin-host-cost", "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
       "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "layer": "pre-norm GPT layer h 256, 4 heads, 2 x 64 tokens, 8 layers, bf16, fwd+bwd"}
try:
    with open("/proc/cpuinfo") as f:
        out["cpu"] = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
except Exception:
    pass
rows = []
eager = lambda: step(layer)
t, n = wall(eager), kernels(eager)
rows.append({"mode": "eager", "step_us": t * 1e6, "kernels": n, "us_per_kernel": t * 1e6 / n})
print(rows[-1], flush=True)
try:
    comp = torch.compile(layer)
    cstep = lambda: step(comp)
    for _ in range(3):
        cstep()
    t, n = wall(cstep), kernels(cstep)
    rows.append({"mode": "compiled", "step_us": t * 1e6, "kernels": n, "us_per_kernel": t * 1e6 / n})
    print(rows[-1], flush=True)
except Exception as e:
    rows.append({"mode": "compiled", "error": str(e)[:300]})
    print("compile failed", e, flush=True)
try:
    # forward + backward captured whole: grads accumulate into static .grad buffers
    s_ = torch.cuda.Stream()
    s_.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s_):
        for _ in range(3):
            eager()
    torch.cuda.current_stream().wait_stream(s_)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        eager()
    gt = wall(lambda: g.replay())
    n = rows[0]["kernels"]
    rows.append({"mode": "cuda_graph", "step_us": gt * 1e6, "kernels": n, "us_per_kernel": gt * 1e6 / n})
    print(rows[-1], flush=True)
except Exception as e:
    rows.append({"mode": "cuda_graph", "error": str(e)[:300]})
    print("graph failed", e, flush=True)
out["rows"] = rows
json.dump(out, open(sys.argv[1], "w"), indent=1)
