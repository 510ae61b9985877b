"""graphmem benchmarks: labelled retrieval data, metrics, and the runners built on them."""
