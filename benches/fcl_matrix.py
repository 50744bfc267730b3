"""FCL's side of `kdop bench matrix`: the same meshes, cells and poses, run by python-fcl.

Run by `kdop bench matrix` inside the virtual environment it creates (python-fcl and numpy
from PyPI); not a dependency of the crate.

    python fcl_matrix.py PLAN.json OUT_DIR [MIN_MS [ROUNDS]]

PLAN.json (written by kdop): {"meshes": [{"name", "file", "vertices", "triangles"}],
"cells": [{"env", "object", "poses": [[r00 r01 r02 tx r10 ... tz], ...]}]}. Each mesh file
is little-endian: u32 vertex count, u32 triangle count, f64 xyz per vertex, u32 x3 per
triangle, exactly the arrays kdop queries (so triangle indices agree).

OUT_DIR/fcl.json: per cell, per mode, the total time in microseconds and the number of
queries (the poses run in order, and again until MIN_MS have passed; of ROUNDS such
rounds, the one of the lowest mean), and whether each
pose collided; OUT_DIR/pairs_<cell>.u32: the report-mode triangle pairs as u32 triples
(pose, environment triangle, object triangle). The timer covers fcl.collide alone, the
Python call and the conversion of FCL's contacts into Python objects included; the
per-call overhead on a pair that cannot collide is measured and written too.
"""

import json
import os
import sys
import time

import fcl
import numpy as np


def load(path):
    raw = open(path, "rb").read()
    nv, nt = np.frombuffer(raw, dtype="<u4", count=2)
    verts = np.frombuffer(raw, dtype="<f8", count=3 * int(nv), offset=8).reshape(-1, 3)
    tris = np.frombuffer(
        raw, dtype="<u4", count=3 * int(nt), offset=8 + 24 * int(nv)
    ).reshape(-1, 3)
    return np.ascontiguousarray(verts), np.ascontiguousarray(tris.astype(np.int64))


def model(verts, tris):
    m = fcl.BVHModel()
    m.beginModel(len(verts), len(tris))
    m.addSubModel(verts, tris)
    m.endModel()
    return m


def transform(row):
    r = np.array(row, dtype=np.float64).reshape(3, 4)
    return fcl.Transform(np.ascontiguousarray(r[:, :3]), np.ascontiguousarray(r[:, 3]))


def main():
    plan = json.load(open(sys.argv[1]))
    out_dir = sys.argv[2]
    min_ms = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    rounds = max(1, int(sys.argv[4])) if len(sys.argv) > 4 else 1
    base = os.path.dirname(os.path.abspath(sys.argv[1]))
    models = {}
    for m in plan["meshes"]:
        verts, tris = load(os.path.join(base, m["file"]))
        models[m["name"]] = model(verts, tris)
    detect = dict(num_max_contacts=1, enable_contact=False)
    report = dict(num_max_contacts=1 << 30, enable_contact=False)

    # The cost of one call that does no work: two one-triangle models far apart.
    tri = model(np.eye(3), np.array([[0, 1, 2]]))
    a = fcl.CollisionObject(tri, fcl.Transform())
    b = fcl.CollisionObject(tri, fcl.Transform(np.eye(3), np.array([100.0, 0.0, 0.0])))
    calls = []
    for _ in range(2000):
        req, res = fcl.CollisionRequest(**detect), fcl.CollisionResult()
        t0 = time.perf_counter()
        fcl.collide(a, b, req, res)
        calls.append(time.perf_counter() - t0)
    overhead_us = float(np.median(calls) * 1e6)

    cells = []
    for ci, cell in enumerate(plan["cells"]):
        env = fcl.CollisionObject(models[cell["env"]], fcl.Transform())
        obj = fcl.CollisionObject(models[cell["object"]], fcl.Transform())
        result = {}
        pairs = []
        transforms = [transform(row) for row in cell["poses"]]
        for mode, kw in (("detect", detect), ("report", report)):
            best, hit = None, []
            for rnd in range(rounds):
                total, queries = 0.0, 0
                for rep in range(1 << 30):
                    for pi, tf in enumerate(transforms):
                        obj.setTransform(tf)
                        req, res = fcl.CollisionRequest(**kw), fcl.CollisionResult()
                        t0 = time.perf_counter()
                        fcl.collide(env, obj, req, res)
                        total += (time.perf_counter() - t0) * 1e6
                        queries += 1
                        if rep > 0 or rnd > 0:
                            continue
                        hit.append(bool(res.is_collision))
                        if mode == "report":
                            pairs.extend((pi, c.b1, c.b2) for c in res.contacts)
                    if len(transforms) < 2 or total >= min_ms * 1e3:
                        break
                if best is None or total / queries < best[0] / best[1]:
                    best = (total, queries)
            result[mode] = {"total_us": best[0], "queries": best[1], "collides": hit}
        np.array(pairs, dtype="<u4").reshape(-1, 3).tofile(
            os.path.join(out_dir, f"pairs_{ci}.u32")
        )
        cells.append(result)
        print(
            f"fcl: cell {ci + 1}/{len(plan['cells'])} {cell['env']} x {cell['object']}",
            file=sys.stderr,
            flush=True,
        )
    json.dump(
        {
            "fcl_version": fcl.__version__ if hasattr(fcl, "__version__") else "?",
            "call_overhead_us": overhead_us,
            "cells": cells,
        },
        open(os.path.join(out_dir, "fcl.json"), "w"),
    )


if __name__ == "__main__":
    main()
