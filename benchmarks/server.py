"""The cost of serving: ``graphmem serve`` over HTTP against the same memory in-process.

    python -m benchmarks.server [--size 10000] [--queries 200] [--seconds 8] [--clients 8]
                                [--embedder hash|minilm] [--mode processes|threads|both]
                                [--db PATH] [--profile] [--save | --json-out PATH]

Results go to benchmarks/results/local/server.json (ignored); ``--save`` writes
benchmarks/results/server.json, the figures the README quotes.

It builds a file of ``--size`` learnings over five users (the generator of benchmarks/scale.py;
``--db PATH`` builds it there once and reuses it, runs then add to it), then, in one run:

1. in-process: ``Memory.context()`` p50/p95 over ``--queries`` queries, with the default Settings
   (the server's too: the Application is written off the request's path), and with the
   Application written inline, for reference;
2. starts ``graphmem serve`` on the file as a subprocess (one owner) and measures ``Client.context()``
   p50/p95 over HTTP for the same queries (one client, sequential);
3. throughput of contexts for ``--seconds`` with one client, then with ``--clients`` concurrent
   clients (one Client each, on the five users' keys in turn): requests/s, p50/p95, errors, and
   the ratio. ``--mode``: the clients are separate processes (as real agents are), threads of the
   benchmark's process (they share its interpreter lock and its CPU), or both (default; the
   processes' figures are the headline ones). Every client connects first; the window opens when
   all are ready;
   then the interleaved measure: the same queries in turn, in-process (on a copy of the file),
   over HTTP, and over HTTP with the Client on httpx alone (its previous transport), so each
   difference is taken in one machine state (a busy machine blurs separate phases);
4. adds/s with ``--clients`` concurrent clients (every client told "committed" is counted), and that
   every acknowledged learning is there afterwards;
5. the server's resident memory (VmRSS) at the end.

Beside the latencies it reports CPU time, which a busy machine blurs less than wall time: per
context, the server process's (all its threads, /proc), its main thread's alone (the event loop),
the request threads' inside ``Memory.context`` (the server's ``graphmem_context_cpu_seconds``
counter), and the clients' own. The event loop and ``context()`` run Python under the interpreter
lock: their sum bounds the contexts/s one server process can reach however many clients ask.
``--profile`` runs the server with ``GRAPHMEM_SERVER_PROFILE`` (cProfile per thread, slower) and
adds the CPU by thread and the top functions to the JSON.

The machine may be shared and busy: figures are indicative, rerun on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import scale

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of ``values`` (ms)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def in_process(db: Path, qs: list[dict[str, Any]], embedder: Any, user: str, inline: bool) -> list[float]:
    """context() latencies (ms) in this process."""
    from graphmem import Memory, Settings

    settings = Settings(defer_application_writes=not inline)
    out = []
    with Memory(db, user=user, embedder=embedder, settings=settings) as mem:
        for q in qs[:10]:  # warm caches as the server's warm-up would
            mem.context(q["query"], tool=q["tool"], entities=q["entities"])
        for q in qs:
            t = time.perf_counter()
            mem.context(q["query"], tool=q["tool"], entities=q["entities"])
            out.append((time.perf_counter() - t) * 1e3)
    return out


def interleaved(copy: Path, url: str, key: str, qs: list[dict[str, Any]], embedder: Any, user: str) -> dict[str, Any]:
    """The same queries in turn, query by query (the order rotating): ``Memory.context()`` in this
    process on a copy of the file, ``Client.context()`` over HTTP, and the same Client on httpx
    alone (its previous transport). Each pair of figures saw the same machine state, so their
    differences hold on a busy machine where separate phases do not."""
    import httpx

    from graphmem import Memory, Settings
    from graphmem.client import Client

    lat: dict[str, list[float]] = {"in_process": [], "http": [], "http_httpx": []}
    cpu = dict.fromkeys(lat, 0.0)
    with Memory(copy, user=user, embedder=embedder, settings=Settings()) as mem, \
            Client(url, api_key=key) as plain, Client(url, api_key=key, transport=httpx.HTTPTransport()) as hx:
        calls = {"in_process": mem.context, "http": plain.context, "http_httpx": hx.context}
        for q in qs[:10]:
            for fn in calls.values():
                fn(q["query"], tool=q["tool"], entities=q["entities"])
        names = list(calls)
        for i, q in enumerate(qs):
            for name in names[i % 3:] + names[: i % 3]:
                c, t = time.thread_time(), time.perf_counter()
                calls[name](q["query"], tool=q["tool"], entities=q["entities"])
                lat[name].append((time.perf_counter() - t) * 1e3)
                if name != "in_process":
                    cpu[name] += time.thread_time() - c
    out: dict[str, Any] = {k: {"p50_ms": pct(v, 50), "p95_ms": pct(v, 95)} for k, v in lat.items()}
    for name in ("http", "http_httpx"):
        out[name]["client_cpu_ms"] = cpu[name] * 1e3 / len(qs)
        out[name + "_overhead_p50_ms"] = out[name]["p50_ms"] - out["in_process"]["p50_ms"]
    return out


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_ms(pid: int, tid: int | None = None) -> float:
    """CPU time (user + system, all threads) a process has used so far, in ms (Linux /proc);
    with ``tid``, that one thread's (the server's main thread runs its event loop)."""
    path = f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf("SC_CLK_TCK")


def _client_loop(url: str, key: str, n: int, qs: list[dict[str, Any]], op: str, seconds: float,
                 ready: Any, go: Any) -> dict[str, Any]:
    """One client (one Client, one connection) doing ``op`` for ``seconds`` once ``go`` is set
    (after it said ``ready``); its latencies, errors, acknowledged ids and CPU time."""
    from graphmem.client import Client

    lat: list[float] = []
    errors: list[str] = []
    acked: list[str] = []
    with Client(url, api_key=key, retries=20) as c:
        try:
            c.whoami()  # connected before the window opens
        finally:
            ready.release()  # a client that failed to connect is reported, not waited for
        if not go.wait(timeout=300):
            raise RuntimeError("the load never started")
        stop = time.perf_counter() + seconds
        cpu0, tcpu0 = time.process_time(), time.thread_time()
        i = 0
        while time.perf_counter() < stop:
            q = qs[(n * 7919 + i) % len(qs)]
            i += 1
            t = time.perf_counter()
            try:
                if op == "context":
                    c.context(q["query"], tool=q["tool"], entities=q["entities"])
                    ident = ""
                else:
                    ident = c.add_learning(f"bench client {n} learning {i}: {q['query']}", tool=q["tool"]).id
            except Exception as e:  # counted and reported
                errors.append(f"{type(e).__name__}: {e}")
                continue
            lat.append((time.perf_counter() - t) * 1e3)
            if ident:
                acked.append(ident)
        cpu = time.process_time() - cpu0, time.thread_time() - tcpu0
    return {"lat": lat, "errors": errors, "acked": acked, "process_cpu_s": cpu[0], "thread_cpu_s": cpu[1]}


def _process_client(job: tuple[Any, ...], ready: Any, go: Any, out: Any) -> None:
    try:
        out.put(_client_loop(*job, ready, go))
    except Exception as e:  # reported as one error
        out.put({"lat": [], "errors": [f"{type(e).__name__}: {e}"], "acked": [], "process_cpu_s": 0.0,
                 "thread_cpu_s": 0.0})


def context_cpu_ms(url: str, key: str) -> float:
    """The CPU time the server's request threads spent inside Memory.context so far (ms; its
    /metrics counter; NaN when the server has none)."""
    import httpx

    text = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {key}"}, timeout=30).text
    for line in text.splitlines():
        if line.startswith("graphmem_context_cpu_seconds_total "):
            return float(line.split()[1]) * 1e3
    return float("nan")


def load(url: str, keys: list[str], clients: int, seconds: float, qs: list[dict[str, Any]], op: str,
         mode: str = "processes", server_pid: int | None = None) -> dict[str, Any]:
    """``clients`` clients doing ``op`` (context | add) for ``seconds``: separate processes (as
    real agents are; default) or threads of this process (they share its GIL and its CPU).
    Every client connects first; the window opens when all are ready. Latencies, errors,
    acknowledged ids; CPU time per request of the clients and (``server_pid``) of the server, all
    its threads and its main thread (the event loop) alone."""
    jobs = [(url, keys[n % len(keys)], n, qs, op, seconds) for n in range(clients)]
    results: list[dict[str, Any]] = []
    if mode == "processes":
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_process_client, args=(job, ready, go, out), daemon=True) for job in jobs]
    else:
        import queue

        ready, go, out = threading.Semaphore(0), threading.Event(), queue.Queue()
        procs = [threading.Thread(target=_process_client, args=(job, ready, go, out), daemon=True) for job in jobs]
    for p in procs:
        p.start()
    for _ in procs:
        if not ready.acquire(timeout=300):
            go.set()
            raise RuntimeError("a client did not connect")
    before = (cpu_ms(server_pid), cpu_ms(server_pid, server_pid)) if server_pid else (0.0, 0.0)
    ctx_before = context_cpu_ms(url, keys[0])
    t0 = time.perf_counter()
    go.set()
    for _ in procs:
        results.append(out.get(timeout=seconds + 300))
    elapsed = time.perf_counter() - t0
    after = (cpu_ms(server_pid), cpu_ms(server_pid, server_pid)) if server_pid else (0.0, 0.0)
    ctx_after = context_cpu_ms(url, keys[0])
    for p in procs:
        p.join(timeout=60)
    lat = [x for r in results for x in r["lat"]]
    errors = [x for r in results for x in r["errors"]]
    n = max(1, len(lat))
    out_ = {"clients": clients, "mode": mode, "requests": len(lat), "per_s": len(lat) / elapsed,
            "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "errors": len(errors), "first_errors": errors[:3],
            "client_cpu_ms_per_request": sum(r["thread_cpu_s"] if mode == "threads" else r["process_cpu_s"]
                                             for r in results) * 1e3 / n,
            "acked": [x for r in results for x in r["acked"]]}
    if server_pid:
        out_["server_cpu_ms_per_request"] = (after[0] - before[0]) / n
        out_["server_loop_cpu_ms_per_request"] = (after[1] - before[1]) / n
        out_["server_context_cpu_ms_per_request"] = (ctx_after - ctx_before) / n
    return out_


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Command-line entry point; returns the results."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.server", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="hash")
    ap.add_argument("--mode", choices=["processes", "threads", "both"], default="both",
                    help="the concurrent clients: separate processes (as real agents), threads of this process "
                         "(sharing its GIL), or both (default; processes are the headline figure)")
    ap.add_argument("--db", type=Path, default=None,
                    help="reuse this built file (built there on the first run; the runs add to it)")
    ap.add_argument("--profile", action="store_true",
                    help="run the server with GRAPHMEM_SERVER_PROFILE: per-thread CPU and the top functions")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/ (default: results/local/)")
    ap.add_argument("--json-out", type=Path, default=None, help="write the results here instead")
    args = ap.parse_args(argv)

    from graphmem.client import Client
    from graphmem.server.auth import KeyStore

    embedder = scale.make_embedder(args.embedder)
    specs = scale.generate(args.size)
    qs = scale.queries(args.queries)
    work = Path(tempfile.mkdtemp(prefix="graphmem-server-bench-"))
    db = args.db or work / "bench.kuzu"
    if not db.exists():
        vectors = scale.embeddings(specs, embedder, args.embedder, 0)
        print(f"building {args.size} learnings in {db} ...", flush=True)
        scale.build(db, specs, vectors, embedder)
    user = "alice"
    res: dict[str, Any] = {"size": args.size, "embedder": args.embedder, "queries": len(qs),
                           "cpus": os.cpu_count(), "loadavg": os.getloadavg()}
    default = in_process(db, qs, embedder, user, inline=False)
    inline = in_process(db, qs, embedder, user, inline=True)
    res["in_process"] = {"p50_ms": pct(default, 50), "p95_ms": pct(default, 95)}
    res["in_process_inline_application"] = {"p50_ms": pct(inline, 50), "p95_ms": pct(inline, 95)}

    copy = work / "in-process-copy.kuzu"  # for the interleaved measure, beside the served file
    import shutil

    shutil.copyfile(db, copy)
    keys = KeyStore()
    users = sorted({s["user"] for s in specs})
    key_list = [keys.add(u, "agent")[0] for u in users]
    alice_key = key_list[users.index(user)]
    keys.save(work / "keys.json")
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", HF_HUB_OFFLINE="1")
    env.pop("ANTHROPIC_API_KEY", None)
    if args.profile:
        env["GRAPHMEM_SERVER_PROFILE"] = str(work / "profile.json")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from graphmem.cli import main; main()", "--embedder", args.embedder, "--db", str(db),
         "serve", "--port", str(port), "--keys", str(work / "keys.json"), "--no-mcp"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with Client(url, api_key=alice_key) as c:
                    c.whoami()
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.2)
        http: list[float] = []
        inside: list[float] = []
        fixed: list[float] = []
        with Client(url, api_key=alice_key) as c:
            for _ in range(len(qs)):  # the fixed cost of one authenticated round trip
                t = time.perf_counter()
                c.whoami()
                fixed.append((time.perf_counter() - t) * 1e3)
            for q in qs[:10]:
                c.context(q["query"], tool=q["tool"], entities=q["entities"])
            cpu0 = cpu_ms(proc.pid)
            for q in qs:
                t = time.perf_counter()
                ctx = c.context(q["query"], tool=q["tool"], entities=q["entities"])
                http.append((time.perf_counter() - t) * 1e3)
                inside.append(ctx.timings_ms.get("total", float("nan")))
            res["server_cpu_ms_per_context"] = (cpu_ms(proc.pid) - cpu0) / len(qs)
        res["http"] = {"p50_ms": pct(http, 50), "p95_ms": pct(http, 95)}
        res["in_server"] = {"p50_ms": pct(inside, 50), "p95_ms": pct(inside, 95)}
        res["round_trip"] = {"p50_ms": pct(fixed, 50), "p95_ms": pct(fixed, 95)}
        res["http_overhead_p50_ms"] = res["http"]["p50_ms"] - res["in_process"]["p50_ms"]
        res["interleaved"] = interleaved(copy, url, alice_key, qs, embedder, user)
        modes = ["processes", "threads"] if args.mode == "both" else [args.mode]
        for mode in modes:
            one = load(url, key_list, 1, args.seconds, qs, "context", mode, proc.pid)
            many = load(url, key_list, args.clients, args.seconds, qs, "context", mode, proc.pid)
            res[mode] = {"context_1_client": {k: v for k, v in one.items() if k != "acked"},
                         "context_n_clients": {k: v for k, v in many.items() if k != "acked"},
                         "throughput_ratio": many["per_s"] / one["per_s"] if one["per_s"] else float("nan")}
        head = res[modes[0]]
        res["context_1_client"] = head["context_1_client"]
        res["context_n_clients"] = head["context_n_clients"]
        res["throughput_ratio"] = head["throughput_ratio"]
        res["server_cpu_ms_per_context_n_clients"] = head["context_n_clients"]["server_cpu_ms_per_request"]
        adds = load(url, key_list, args.clients, args.seconds, qs, "add", modes[0], proc.pid)
        res["adds_n_clients"] = {k: v for k, v in adds.items() if k != "acked"}
        found: set[str] = set()
        for k in key_list:
            with Client(url, api_key=k) as c:
                found |= {l.id for l in c.learnings(limit=1_000_000)}
        res["adds_lost"] = len(set(adds["acked"]) - found)
        res["server_rss_mb"] = rss_mb(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    res["loadavg_after"] = os.getloadavg()
    if args.profile and (work / "profile.json").exists():
        res["profile"] = json.loads((work / "profile.json").read_text())
        res["profile"]["pstats"] = str(work / "profile.json.prof")
    print_table(res)
    out = args.json_out or (RESULTS if args.save else RESULTS / "local") / "server.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"wrote {out}")
    return res


def _cpu_row(m: dict[str, Any]) -> str:
    return (f"{m['server_cpu_ms_per_request']:.1f} ({m['server_loop_cpu_ms_per_request']:.1f} + "
            f"{m.get('server_context_cpu_ms_per_request', float('nan')):.1f}) / {m['client_cpu_ms_per_request']:.1f}")


def print_table(r: dict[str, Any]) -> None:
    """The figures as a small text table."""
    n = r["context_n_clients"]["clients"]
    rows = [
        ("context in-process p50 / p95 (ms)", f"{r['in_process']['p50_ms']:.1f} / {r['in_process']['p95_ms']:.1f}"),
        ("  same, Application written inline (reference)",
         f"{r['in_process_inline_application']['p50_ms']:.1f} / {r['in_process_inline_application']['p95_ms']:.1f}"),
        ("context over HTTP p50 / p95 (ms)", f"{r['http']['p50_ms']:.1f} / {r['http']['p95_ms']:.1f}"),
        ("HTTP overhead at p50 (ms)", f"{r['http_overhead_p50_ms']:.1f}"),
        ("  Memory.context() inside the server p50 / p95 (ms)",
         f"{r['in_server']['p50_ms']:.1f} / {r['in_server']['p95_ms']:.1f}"),
        ("  server CPU per context, sequential / " + f"{n} clients (ms)",
         f"{r['server_cpu_ms_per_context']:.1f} / {r['server_cpu_ms_per_context_n_clients']:.1f}"),
        ("authenticated round trip (GET /v1/whoami) p50 / p95 (ms)",
         f"{r['round_trip']['p50_ms']:.1f} / {r['round_trip']['p95_ms']:.1f}"),
    ]
    it = r.get("interleaved")
    if it:
        rows += [
            ("interleaved, query by query: in-process / HTTP / HTTP on httpx, p50 (ms)",
             f"{it['in_process']['p50_ms']:.1f} / {it['http']['p50_ms']:.1f} / {it['http_httpx']['p50_ms']:.1f}"),
            ("  HTTP overhead at p50, interleaved (ms): Client / on httpx",
             f"{it['http_overhead_p50_ms']:.1f} / {it['http_httpx_overhead_p50_ms']:.1f}"),
            ("  client CPU per context (ms): Client / on httpx",
             f"{it['http']['client_cpu_ms']:.2f} / {it['http_httpx']['client_cpu_ms']:.2f}"),
        ]
    for mode in ("processes", "threads"):
        m = r.get(mode)
        if m is None:
            continue
        one, many = m["context_1_client"], m["context_n_clients"]
        rows += [
            (f"contexts/s, 1 client ({mode})", f"{one['per_s']:.0f} (p95 {one['p95_ms']:.1f} ms)"),
            (f"contexts/s, {n} clients ({mode})", f"{many['per_s']:.0f} (p95 {many['p95_ms']:.1f} ms, "
                                                  f"{many['errors']} errors)"),
            (f"  throughput {n} clients / 1 client ({mode})", f"{m['throughput_ratio']:.2f}x"),
            ("  CPU per context, server (event loop + context()) / clients, 1 client (ms)", _cpu_row(one)),
            (f"  CPU per context, server (event loop + context()) / clients, {n} clients (ms)", _cpu_row(many)),
        ]
        locked = many["server_loop_cpu_ms_per_request"] + many.get("server_context_cpu_ms_per_request", float("nan"))
        if locked == locked and locked > 0:  # not NaN
            rows.append(("  bound from the interpreter lock: 1000 / (event loop + context()) (contexts/s)",
                         f"{1000 / locked:.0f} ({1000 / locked / one['per_s']:.2f}x the 1-client rate)"))
    rows += [
        (f"adds/s, {n} clients", f"{r['adds_n_clients']['per_s']:.0f} (p95 {r['adds_n_clients']['p95_ms']:.1f} ms, "
                                 f"{r['adds_n_clients']['errors']} errors, {r['adds_lost']} lost)"),
        ("server RSS (MB)", f"{r['server_rss_mb']:.0f}"),
        ("load average before / after", f"{r['loadavg'][0]:.1f} / {r['loadavg_after'][0]:.1f} on {r['cpus']} cores"),
    ]
    prof = r.get("profile")
    if prof:
        by_role: dict[str, float] = {}
        for t in prof["threads"]:
            by_role[t["role"]] = by_role.get(t["role"], 0.0) + t["cpu_ms"]
        total = sum(by_role.values()) or 1.0
        rows.append(("server CPU by thread role, whole run (s, share)",
                     ", ".join(f"{k} {v / 1e3:.1f} ({v / total:.0%})" for k, v in sorted(by_role.items(), key=lambda kv: -kv[1]))))
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"{a:<{width}}  {b}")


if __name__ == "__main__":
    main()
