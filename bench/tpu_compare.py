"""Compare probe_hlox.npz with probe_jax.npz (same machine, same device)."""
import json, os, sys
import numpy as np
OUT = os.environ.get("OUT", "/tmp")
h = np.load(os.path.join(OUT, "probe_hlox.npz")); j = np.load(os.path.join(OUT, "probe_jax.npz"))
sh = json.load(open(os.path.join(OUT, "status_hlox.json"))); sj = json.load(open(os.path.join(OUT, "status_jax.json")))
for name in sj:
  if not sh.get(name, "").startswith("ok") or not sj[name].startswith("ok"):
    print(f"STATUS {name}: hlox={sh.get(name)} jax={sj[name]}")
for k in sorted(set(h.files) | set(j.files)):
  if k not in h.files or k not in j.files:
    continue
  a, b = h[k], j[k]
  if a.shape != b.shape or a.dtype != b.dtype:
    print(f"DIFF {k}: shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}"); continue
  if a.dtype.kind in "fc":
    err = np.max(np.abs(a.astype(np.complex128) - b.astype(np.complex128)) / (np.abs(b.astype(np.complex128)) + 1e-3)) if a.size else 0.0
    print(f"{'SAME' if np.array_equal(a, b, equal_nan=True) else 'DIFF'} {k}: max rel err {err:.2e}")
  else:
    print(f"{'SAME' if np.array_equal(a, b) else 'DIFF'} {k}: {np.sum(a != b)} differing of {a.size}")
