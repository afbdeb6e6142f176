"""Prometheus metrics of a guard, served on loopback and scraped (docs/metrics.md). Needs looptrap[prometheus]."""

import urllib.request

from prometheus_client import CollectorRegistry

from looptrap import Guard
from looptrap.observe.metrics import PrometheusMetrics, serve

registry = CollectorRegistry()  # or leave it out: the global registry
guard = Guard(observers=[PrometheusMetrics(registry)])

for _ in range(6):  # an agent stuck on the same search
    verdict = guard.check("search_docs", {"query": "refund policy"})
    if verdict.allowed:
        guard.record("search_docs", {"query": "refund policy"}, "0 results")
    guard.end_turn()

server, thread = serve(registry, port=0)  # port 9464 by default; 0: any free port
port = server.server_address[1]
with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as r:
    text = r.read().decode()
server.shutdown()
for line in text.splitlines():
    if line.startswith(("looptrap_tool_calls_total", "looptrap_signals_total", "looptrap_halts_total")):
        print(line)
